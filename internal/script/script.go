// Package script runs scenario scripts: readable files of commands, each
// followed by the output it is expected to print.
//
// A script is a sequence of blocks separated by blank lines. A block is one
// or more command lines, a line "----", and the expected output:
//
//	# A comment line is kept as it is.
//	add ns/a@1
//	pop
//	----
//	pop ns/a: Added(ns/a@1)
//
// Run executes each command line in order, concatenates what the commands
// print and compares it with the expected output. With update (the test's
// -update flag), it rewrites the file with the actual output instead, to be
// reviewed as a diff.
package script

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Cmd is one command line of a script.
type Cmd struct {
	Name string
	Args []string
	Line int // 1-based line number in the file
}

// Arg returns the i-th argument, or "" if there is none.
func (c Cmd) Arg(i int) string {
	if i < len(c.Args) {
		return c.Args[i]
	}
	return ""
}

// Has reports whether one of the arguments is flag.
func (c Cmd) Has(flag string) bool {
	for _, a := range c.Args {
		if a == flag {
			return true
		}
	}
	return false
}

type block struct {
	comments []string
	cmds     []Cmd
	raw      []string // the command lines as written
	want     []string
}

// Run runs the script at path. exec runs one command and returns what it
// prints (lines ending in "\n", or nothing); a command it does not know
// should fail the test.
func Run(t *testing.T, path string, update bool, exec func(t *testing.T, c Cmd) string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parse(string(data))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out strings.Builder
	for i, b := range blocks {
		var got strings.Builder
		for _, c := range b.cmds {
			got.WriteString(exec(t, c))
		}
		gotLines := splitLines(got.String())
		if i > 0 {
			out.WriteString("\n")
		}
		for _, l := range b.comments {
			out.WriteString(l + "\n")
		}
		for _, l := range b.raw {
			out.WriteString(l + "\n")
		}
		out.WriteString("----\n")
		for _, l := range gotLines {
			out.WriteString(l + "\n")
		}
		if !update && strings.Join(gotLines, "\n") != strings.Join(b.want, "\n") {
			t.Errorf("%s:%d: output differs\ncommands:\n  %s\ngot:\n  %s\nwant:\n  %s",
				path, b.cmds[0].Line, strings.Join(b.raw, "\n  "),
				strings.Join(gotLines, "\n  "), strings.Join(b.want, "\n  "))
		}
	}
	if update {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func splitLines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func parse(data string) ([]block, error) {
	lines := strings.Split(strings.TrimRight(data, "\n"), "\n")
	var blocks []block
	for i := 0; i < len(lines); {
		for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
			i++
		}
		if i == len(lines) {
			break
		}
		var b block
		for ; i < len(lines) && lines[i] != "----"; i++ {
			l := lines[i]
			switch t := strings.TrimSpace(l); {
			case t == "":
				return nil, fmt.Errorf("line %d: blank line before ----", i+1)
			case strings.HasPrefix(t, "#"):
				if len(b.cmds) > 0 {
					return nil, fmt.Errorf("line %d: comment among commands", i+1)
				}
				b.comments = append(b.comments, l)
			default:
				f := strings.Fields(t)
				b.cmds = append(b.cmds, Cmd{Name: f[0], Args: f[1:], Line: i + 1})
				b.raw = append(b.raw, l)
			}
		}
		if i == len(lines) {
			return nil, fmt.Errorf("line %d: block without ----", i)
		}
		if len(b.cmds) == 0 {
			return nil, fmt.Errorf("line %d: ---- without a command", i+1)
		}
		i++ // past ----
		for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			b.want = append(b.want, lines[i])
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}
