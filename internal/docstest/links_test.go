package docstest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is the directory holding go.mod, above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

var (
	fence   = regexp.MustCompile("^\\s*(```|~~~)")
	heading = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	// link is an inline Markdown link or image: [text](target) or
	// [text](target "title").
	link     = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	inlineCd = regexp.MustCompile("`[^`]*`")
)

// slug is GitHub's anchor for a heading: lower case, punctuation other than
// "-" and "_" dropped, spaces made "-".
func slug(h string) string {
	h = strings.ReplaceAll(h, "`", "")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127 && isLetter(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isLetter(r rune) bool { return strings.ToLower(string(r)) != strings.ToUpper(string(r)) }

// doc is one Markdown file: its anchors and its links (with line numbers).
type doc struct {
	anchors map[string]bool
	links   []docLink
}

type docLink struct {
	line   int
	target string
}

func parse(text string) doc {
	d := doc{anchors: map[string]bool{}}
	seen := map[string]int{}
	inFence := false
	for i, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			s := slug(m[2])
			if n := seen[s]; n > 0 {
				d.anchors[s+"-"+itoa(n)] = true
			} else {
				d.anchors[s] = true
			}
			seen[s]++
		}
		for _, m := range link.FindAllStringSubmatch(inlineCd.ReplaceAllString(line, ""), -1) {
			d.links = append(d.links, docLink{i + 1, m[1]})
		}
	}
	return d
}

func itoa(n int) string {
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

// TestDocLinksResolve checks every relative link in README.md, docs/*.md and
// docs/spec/*.md:
// the file or directory exists, and an anchor (#…) names a heading of the
// file it points into.
func TestDocLinksResolve(t *testing.T) {
	root := repoRoot(t)
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := filepath.Glob(filepath.Join(root, "docs", "spec", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, spec...)
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	parsed := map[string]doc{}
	read := func(path string) (doc, bool) {
		if d, ok := parsed[path]; ok {
			return d, true
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return doc{}, false
		}
		d := parse(string(b))
		parsed[path] = d
		return d, true
	}
	checked := 0
	for _, f := range files {
		d, ok := read(f)
		if !ok {
			t.Fatalf("cannot read %s", f)
		}
		rel, _ := filepath.Rel(root, f)
		for _, l := range d.links {
			target := l.target
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue // not checked: no network in tests
			}
			checked++
			path, anchor, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), filepath.FromSlash(path))
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: link %q: %s does not exist", rel, l.line, target, path)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(dest, ".md") {
				t.Errorf("%s:%d: link %q: an anchor into a file that is not Markdown", rel, l.line, target)
				continue
			}
			dd, ok := read(dest)
			if !ok || !dd.anchors[anchor] {
				t.Errorf("%s:%d: link %q: no heading with anchor #%s", rel, l.line, target, anchor)
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d relative links found; is the parser broken?", checked)
	}
}

func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"Set-up: two commands":                              "set-up-two-commands",
		"Long sessions: compaction, /compact, /new, /reset": "long-sessions-compaction-compact-new-reset",
		"A2A (Agent2Agent)":                                 "a2a-agent2agent",
		"Outbound: `sessions_send` to a peer":               "outbound-sessions_send-to-a-peer",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
}

// A broken link or anchor is found.
func TestParseFindsLinksAndAnchors(t *testing.T) {
	d := parse("# Title\n\n## Part one\n\nSee [x](other.md#part-two) and ![img](img/a.png).\n\n```\n[not](a-link.md)\n## not a heading\n```\n## Part one\n")
	if !d.anchors["title"] || !d.anchors["part-one"] || !d.anchors["part-one-1"] || d.anchors["not-a-heading"] {
		t.Errorf("anchors = %v", d.anchors)
	}
	if len(d.links) != 2 || d.links[0].target != "other.md#part-two" || d.links[1].target != "img/a.png" {
		t.Errorf("links = %+v", d.links)
	}
}
