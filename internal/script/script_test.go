package script

import (
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	blocks, err := parse("# c\nadd a b\npop\n----\nx\ny\n\nclose\n----\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 {
		t.Fatalf("got %d blocks, want 2", len(blocks))
	}
	b := blocks[0]
	if !slices.Equal(b.comments, []string{"# c"}) || len(b.cmds) != 2 || b.cmds[0].Name != "add" ||
		!slices.Equal(b.cmds[0].Args, []string{"a", "b"}) || b.cmds[1].Line != 3 || !slices.Equal(b.want, []string{"x", "y"}) {
		t.Errorf("first block = %+v", b)
	}
	if len(blocks[1].want) != 0 {
		t.Errorf("second block wants %q, want nothing", blocks[1].want)
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{"add a\n", "----\nx\n", "add\n\n----\n", "add\n# c\n----\n"} {
		if _, err := parse(in); err == nil {
			t.Errorf("parse(%q) succeeded, want an error", in)
		}
	}
}
