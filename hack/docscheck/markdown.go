// Package docscheck checks the repository's Markdown so that its documentation cannot rot:
// every relative link and #anchor resolves (TestLinks), and every Go snippet compiles
// (TestSnippets). See snippet.go for how a snippet becomes a Go file.
package docscheck

import (
	"regexp"
	"strings"
	"unicode"
)

// Doc is a parsed Markdown file.
type Doc struct {
	Path    string          // slash-separated, relative to the repository's root
	Blocks  []Block         // fenced code blocks, in order
	Links   []Link          // link and image targets outside code
	Anchors map[string]bool // the #fragments that lead into the file
}

// Block is a fenced code block.
type Block struct {
	Info string // the fence's info string: "go", "sh", ""
	Line int    // line of the first line of code (1-based)
	Code string
	// Skip is set by an HTML comment "<!-- docs-check: skip -->" on the line before the fence:
	// a block that is meant not to compile (say, a mistake shown as one).
	Skip bool
}

// Link is a link's target, as written.
type Link struct {
	Target string
	Line   int
}

var (
	fenceRE   = regexp.MustCompile("^(\\s*)(`{3,}|~{3,})\\s*([^`\\s]*)")
	headingRE = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	// inline links and images, [text](target "title"); a text may hold one level of brackets.
	linkRE     = regexp.MustCompile(`\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refDefRE   = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	htmlAttrRE = regexp.MustCompile(`(?i)<a\s[^>]*\b(?:id|name)\s*=\s*"([^"]+)"`)
	codeSpanRE = regexp.MustCompile("`+[^`]*`+")
	skipRE     = regexp.MustCompile(`^\s*<!--\s*docs-check:\s*skip\s*-->\s*$`)
)

// Parse reads a Markdown file's blocks, links and anchors. It knows the parts of CommonMark
// the repository's files use: ATX headings, fenced blocks (indented ones too, inside lists),
// inline links and images, reference definitions, HTML comments and <a id="..."> anchors.
func Parse(path, text string) *Doc {
	d := &Doc{Path: path, Anchors: map[string]bool{}}
	lines := strings.Split(text, "\n")
	slugs := map[string]int{}
	inComment := false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if inComment {
			if strings.Contains(line, "-->") {
				inComment = false
			}
			continue
		}
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			indent, fence, info := len(m[1]), m[2], m[3]
			b := Block{Info: info, Line: i + 2, Skip: i > 0 && skipRE.MatchString(lines[i-1])}
			var code []string
			for i++; i < len(lines); i++ {
				l := lines[i]
				if t := strings.TrimSpace(l); strings.HasPrefix(t, fence[:3]) && strings.Trim(t, string(fence[0])) == "" && len(t) >= len(fence) {
					break
				}
				// Remove the fence's indentation from each line, as CommonMark does.
				for j := 0; j < indent && len(l) > 0 && l[0] == ' '; j++ {
					l = l[1:]
				}
				code = append(code, l)
			}
			b.Code = strings.Join(code, "\n") + "\n"
			d.Blocks = append(d.Blocks, b)
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(line), "<!--") {
			if !strings.Contains(line, "-->") {
				inComment = true
			}
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			s := Slug(m[2])
			if n := slugs[s]; n > 0 {
				d.Anchors[s+"-"+itoa(n)] = true
			} else {
				d.Anchors[s] = true
			}
			slugs[s]++
		}
		for _, m := range htmlAttrRE.FindAllStringSubmatch(line, -1) {
			d.Anchors[m[1]] = true
		}
		if m := refDefRE.FindStringSubmatch(line); m != nil {
			d.Links = append(d.Links, Link{Target: m[1], Line: i + 1})
			continue
		}
		plain := codeSpanRE.ReplaceAllString(line, "")
		for _, m := range linkRE.FindAllStringSubmatch(plain, -1) {
			d.Links = append(d.Links, Link{Target: m[1], Line: i + 1})
		}
	}
	return d
}

// Slug is the anchor GitHub gives a heading: its text without Markdown, lower case, with the
// punctuation removed (hyphens and underscores kept) and spaces made hyphens.
func Slug(heading string) string {
	heading = stripInline(heading)
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var (
	inlineLinkRE = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	emphasisRE   = regexp.MustCompile("[*`]")
)

// stripInline keeps the text of a heading's links and drops code and emphasis marks.
func stripInline(s string) string {
	s = inlineLinkRE.ReplaceAllString(s, "$1")
	return emphasisRE.ReplaceAllString(s, "")
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}
