package files

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// lsFixture makes the directory "mixed" in the sandbox's workspace: names
// that need JSON escaping, dotfiles, directories and links.
func lsFixture(t *testing.T, s *sandbox) string {
	t.Helper()
	dir := filepath.Join(s.ws, "mixed")
	for _, d := range []string{"dir", "sub"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := []string{"dir-x", ".hidden", "B", "a", "\x01c", `back\slash`, `quo"te`, "new\nline", "<&>", "é",
		"x\u2028y\u2029", "tab\t", "\x7f", "\U0001F600"}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{"ld": "dir", "dangling": "nowhere", "out": s.outside} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// lsCall runs ls with args and returns its details, failing on an error.
func lsCall(t *testing.T, ctx context.Context, args map[string]any) *lsResult {
	t.Helper()
	res, err := call(t, ctx, tool("ls"), args)
	if err != nil {
		t.Fatalf("ls %v: %v", args, err)
	}
	got := res.Details.(*lsResult)
	if res.Text != got.Content {
		t.Errorf("ls %v: text %q, details %q", args, res.Text, got.Content)
	}
	return got
}

// The reference's format: byte order of the names (a directory sorts by
// its name, not by name+"/"), JSON.stringify quoting, "/" only for real
// directories. The expected lines are what the reference printed for the
// same directory.
func TestLsFormat(t *testing.T) {
	s := newSandbox(t)
	lsFixture(t, s)
	want := strings.Join([]string{
		`"\u0001c"`,
		`".hidden"`,
		`"<&>"`,
		`"B"`,
		`"a"`,
		`"back\\slash"`,
		`"dangling"`,
		`"dir/"`,
		`"dir-x"`,
		`"ld"`,
		`"new\nline"`,
		`"out"`,
		`"quo\"te"`,
		`"sub/"`,
		`"tab\t"`,
		"\"x\u2028y\u2029\"",
		"\"\x7f\"",
		`"é"`,
		"\"\U0001F600\"",
	}, "\n")
	for _, args := range []map[string]any{
		{"path": "mixed"},
		{"path": "mixed/"},
		{"path": "./sub/../mixed"},
		{"path": filepath.Join(s.ws, "mixed")},
		{"path": "mixed", "limit": 19},
		{"path": "mixed", "limit": "3"},    // not a number: the default
		{"path": "mixed", "limit": nil},    // likewise
		{"path": "mixed", "after": 7},      // not a string: no cursor
		{"path": "mixed", "after": ""},     // every name is after ""
		{"path": "mixed", "after": "\x01"}, // before the first name
	} {
		got := lsCall(t, s.ctx(), args)
		if diff := cmp.Diff(&lsResult{Content: want}, got); diff != "" {
			t.Errorf("ls %v (-want +got):\n%s", args, diff)
		}
	}
	got := lsCall(t, s.ctx(), map[string]any{"path": "sub"})
	if want := "\"deep/\"\n\"inner.txt\"\n\"up\"\n\"up2\""; got.Content != want {
		t.Errorf("ls sub: %q, want %q", got.Content, want)
	}
	// The workspace by default; a link to a directory inside it is listed
	// as the directory.
	for _, args := range []map[string]any{{}, {"path": "."}, {"path": "  "}, {"path": s.ws}} {
		got := lsCall(t, s.ctx(), args)
		if !strings.HasPrefix(got.Content, "\"dangling-in\"\n") || !strings.HasSuffix(got.Content, "\n\"notes.txt\"\n\"sub/\"") {
			t.Errorf("ls %v: %q", args, got.Content)
		}
	}
	if got := lsCall(t, s.ctx(), map[string]any{"path": "link-in-abs"}); !strings.HasPrefix(got.Content, "\"deep/\"\n") {
		t.Errorf("ls link-in-abs: %q", got.Content)
	}
}

func TestJSQuote(t *testing.T) {
	tests := map[string]string{
		"":                 `""`,
		"plain.txt":        `"plain.txt"`,
		`a"b\c`:            `"a\"b\\c"`,
		"\b\f\n\r\t":       `"\b\f\n\r\t"`,
		"\x00\x1f\x0b":     `"\u0000\u001f\u000b"`,
		"<script>&amp;":    `"<script>&amp;"`,
		"\u2028\u2029":     "\"\u2028\u2029\"",
		"\x7f\u0080\u00a0": "\"\x7f\u0080\u00a0\"",
		"日本語 ü":            `"日本語 ü"`,
		"\xff\xfeok":       "\"\uFFFD\uFFFDok\"",
		"/":                `"/"`,
	}
	for in, want := range tests {
		if got := jsQuote(in); got != want {
			t.Errorf("jsQuote(%q) = %q, want %q", in, got, want)
		}
	}
}

// Paging: limit lines at a time, the continuation line naming the last
// listed entry (without the "/"), and after continuing from it.
func TestLsPaging(t *testing.T) {
	s := newSandbox(t)
	lsFixture(t, s)
	tests := []struct {
		args map[string]any
		want lsResult
	}{
		{map[string]any{"path": "mixed", "limit": 3}, lsResult{
			Content:   "\"\\u0001c\"\n\".hidden\"\n\"<&>\"\n\n[More entries. Continue with the same path and after=\"<&>\".]",
			NextAfter: "<&>"}},
		{map[string]any{"path": "mixed", "limit": 3, "after": "<&>"}, lsResult{
			Content:   "\"B\"\n\"a\"\n\"back\\\\slash\"\n\n[More entries. Continue with the same path and after=\"back\\\\slash\".]",
			NextAfter: `back\slash`}},
		{map[string]any{"path": "mixed", "limit": 2, "after": "dangling"}, lsResult{
			Content:   "\"dir/\"\n\"dir-x\"\n\n[More entries. Continue with the same path and after=\"dir-x\".]",
			NextAfter: "dir-x"}},
		{map[string]any{"path": "mixed", "limit": 1, "after": "c"}, lsResult{
			Content:   "\"dangling\"\n\n[More entries. Continue with the same path and after=\"dangling\".]",
			NextAfter: "dangling"}},
		{map[string]any{"path": "mixed", "limit": 1, "after": "new\nline"}, lsResult{
			Content:   "\"out\"\n\n[More entries. Continue with the same path and after=\"out\".]",
			NextAfter: "out"}},
		{map[string]any{"path": "mixed", "limit": 2.9, "after": "sub"}, lsResult{
			Content:   "\"tab\\t\"\n\"x\u2028y\u2029\"\n\n[More entries. Continue with the same path and after=\"x\u2028y\u2029\".]",
			NextAfter: "x\u2028y\u2029"}},
		// A cursor that is no entry's name: the names after it.
		{map[string]any{"path": "mixed", "after": "x"}, lsResult{Content: "\"x\u2028y\u2029\"\n\"\x7f\"\n\"é\"\n\"\U0001F600\""}},
		// The last page has no continuation.
		{map[string]any{"path": "mixed", "limit": 2, "after": "\x7f"}, lsResult{Content: "\"é\"\n\"\U0001F600\""}},
		// A limit below 1 lists one entry; a huge one everything.
		{map[string]any{"path": "mixed", "limit": 0, "after": "é"}, lsResult{Content: "\"\U0001F600\""}},
		{map[string]any{"path": "mixed", "limit": -5, "after": "\x7f"}, lsResult{
			Content: "\"é\"\n\n[More entries. Continue with the same path and after=\"é\".]", NextAfter: "é"}},
		{map[string]any{"path": "mixed", "limit": 0.5, "after": "\x7f"}, lsResult{
			Content: "\"é\"\n\n[More entries. Continue with the same path and after=\"é\".]", NextAfter: "é"}},
		{map[string]any{"path": "mixed", "limit": 1e300, "after": "\x7f"}, lsResult{Content: "\"é\"\n\"\U0001F600\""}},
		// Nothing after the cursor.
		{map[string]any{"path": "mixed", "after": "\U0001F600"}, lsResult{Content: "(empty directory)"}},
		{map[string]any{"path": "mixed", "after": "\U0010FFFF"}, lsResult{Content: "(empty directory)"}},
	}
	for _, tt := range tests {
		got := lsCall(t, s.ctx(), tt.args)
		if diff := cmp.Diff(&tt.want, got); diff != "" {
			t.Errorf("ls %q (-want +got):\n%s", tt.args, diff)
		}
	}

	// Following the cursors one entry at a time visits every entry once.
	all := strings.Split(lsCall(t, s.ctx(), map[string]any{"path": "mixed"}).Content, "\n")
	var pages []string
	args := map[string]any{"path": "mixed", "limit": 1}
	for range len(all) + 1 {
		got := lsCall(t, s.ctx(), args)
		pages = append(pages, strings.SplitN(got.Content, "\n", 2)[0])
		if got.NextAfter == "" {
			break
		}
		args["after"] = got.NextAfter
	}
	if diff := cmp.Diff(all, pages); diff != "" {
		t.Errorf("paging one at a time (-whole +pages):\n%s", diff)
	}
}

// Long names: a page holds at most MaxLsBytes, continuation included, and
// the pages together hold every name once, in order.
func TestLsByteBudget(t *testing.T) {
	s := newSandbox(t)
	dir := filepath.Join(s.ws, "long")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := range 600 {
		// 250 bytes each; quotes and newline give 253 a line.
		name := fmt.Sprintf("%04d-%s", i, strings.Repeat("n", 245))
		if i%7 == 0 {
			name = fmt.Sprintf("%04d-%s", i, strings.Repeat("é", 122)) + "e" // 250 bytes, 2-byte runes
		}
		names = append(names, name)
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var listed []string
	args := map[string]any{"path": "long", "limit": 1000}
	for page := 0; ; page++ {
		if page > 10 {
			t.Fatal("paging does not end")
		}
		got := lsCall(t, s.ctx(), args)
		if len(got.Content) > MaxLsBytes {
			t.Errorf("page %d: %d bytes", page, len(got.Content))
		}
		body, cont, more := strings.Cut(got.Content, "\n\n")
		var lines []string
		for _, l := range strings.Split(body, "\n") {
			lines = append(lines, strings.Trim(l, `"`))
		}
		listed = append(listed, lines...)
		if !more {
			if got.NextAfter != "" {
				t.Errorf("page %d: nextAfter %q without a continuation", page, got.NextAfter)
			}
			break
		}
		if want := "[More entries. Continue with the same path and after=" + jsQuote(got.NextAfter) + ".]"; cont != want {
			t.Errorf("page %d: continuation %q, want %q", page, cont, want)
		}
		if got.NextAfter != lines[len(lines)-1] {
			t.Errorf("page %d: nextAfter %q, last line %q", page, got.NextAfter, lines[len(lines)-1])
		}
		// The page is full: one more line would not have fitted.
		if next := len(got.Content) + 1 + 252; next <= MaxLsBytes {
			t.Errorf("page %d: %d bytes leave room for another entry", page, len(got.Content))
		}
		args["after"] = got.NextAfter
	}
	if diff := cmp.Diff(names, listed); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
}

// lsPage drops lines until the continuation fits too, and fails when not
// even one entry fits.
func TestLsPageBudget(t *testing.T) {
	line := strings.Repeat("x", 1000) // 1002 bytes quoted
	var entries []lsEntry
	for i := range 60 {
		entries = append(entries, lsEntry{name: fmt.Sprintf("%02d%s", i, line)})
	}
	got, err := lsPage(entries, 500)
	if err != nil {
		t.Fatal(err)
	}
	// 51 lines take 51*1004-1 = 51203 > 51200 bytes, so 50 lines fit
	// (50203 bytes) and with the continuation (≈1.06 KB) they do not.
	lines := strings.Count(strings.SplitN(got.Content, "\n\n", 2)[0], "\n") + 1
	if lines != 49 || len(got.Content) > MaxLsBytes || got.NextAfter != entries[48].name {
		t.Errorf("%d lines, %d bytes, nextAfter %.10q", lines, len(got.Content), got.NextAfter)
	}
	huge := []lsEntry{{name: strings.Repeat("\x01", MaxLsBytes/6+1)}}
	if _, err := lsPage(huge, 500); err == nil || !strings.Contains(err.Error(), "cannot fit") {
		t.Errorf("an entry over the budget: %v", err)
	}
	exact := []lsEntry{{name: strings.Repeat("y", MaxLsBytes-2)}}
	if got, err := lsPage(exact, 500); err != nil || len(got.Content) != MaxLsBytes {
		t.Errorf("an entry of exactly the budget: %v", err)
	}
}

func TestLsEmptyAndErrors(t *testing.T) {
	s := newSandbox(t)
	if err := os.Mkdir(filepath.Join(s.ws, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"empty", "empty/", "sub/up/empty"} {
		if got := lsCall(t, s.ctx(), map[string]any{"path": p}); got.Content != "(empty directory)" || got.NextAfter != "" {
			t.Errorf("ls %s: %+v", p, got)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(s.ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ path, want string }{
		{"missing", "ENOENT: no such file or directory, scandir 'missing'"},
		{"sub/missing/deeper", "ENOENT: no such file or directory, scandir 'sub/missing/deeper'"},
		{"dangling-in", "ENOENT: no such file or directory, scandir 'dangling-in'"},
		{"notes.txt", "ENOTDIR: not a directory, scandir 'notes.txt'"},
		{"notes.txt/", "ENOTDIR: not a directory, scandir 'notes.txt/'"},
		{"link-in", "ENOTDIR: not a directory, scandir 'link-in'"},
		{"fifo", "ENOTDIR: not a directory, scandir 'fifo'"},
		{"notes.txt/x", "ENOTDIR: not a directory, scandir 'notes.txt/x'"},
	} {
		_, err := call(t, s.ctx(), tool("ls"), map[string]any{"path": tt.path})
		if err == nil || err.Error() != tt.want {
			t.Errorf("ls %q: %v, want %q", tt.path, err, tt.want)
		}
	}
	if os.Getuid() != 0 {
		locked := filepath.Join(s.ws, "locked")
		if err := os.Mkdir(locked, 0o000); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(locked, 0o755) })
		_, err := call(t, s.ctx(), tool("ls"), map[string]any{"path": "locked"})
		if want := "EACCES: permission denied, scandir 'locked'"; err == nil || err.Error() != want {
			t.Errorf("ls locked: %v, want %q", err, want)
		}
	}
	ctx, cancel := context.WithCancel(s.ctx())
	cancel()
	if _, err := call(t, ctx, tool("ls"), map[string]any{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ls: %v", err)
	}
}

// ls refuses every path that leads out of the workspace, and lists the
// links inside a directory without following them.
func TestLsEscapes(t *testing.T) {
	s := newSandbox(t)
	lsFixture(t, s)
	for _, p := range []string{"..", "../outside", "/", s.outside, s.base, "link-out-dir", "link-out-abs-dir",
		"sub/up2", "mixed/out", "mixed/../../outside/dir", filepath.Join(s.ws, "..", "outside"), "sub/up/link-out-dir"} {
		_, err := call(t, s.ctx(), tool("ls"), map[string]any{"path": p})
		if want := "path escapes the workspace: " + p; err == nil || err.Error() != want {
			t.Errorf("ls %q: %v, want %q", p, err, want)
		}
	}
	if _, err := call(t, s.ctx(), tool("ls"), map[string]any{"path": "a\x00b"}); err == nil || !strings.Contains(err.Error(), "invalid path") {
		t.Errorf("ls with a NUL: %v", err)
	}
	got := lsCall(t, s.ctx(), map[string]any{"path": "mixed", "after": "o", "limit": 1})
	if got.Content != "\"out\"\n\n[More entries. Continue with the same path and after=\"out\".]" {
		t.Errorf("a link out is listed as a name: %q", got.Content)
	}
	for _, args := range []map[string]any{{}, {"path": "sub"}, {"path": "mixed"}} {
		if got := lsCall(t, s.ctx(), args); strings.Contains(got.Content, "secret") {
			t.Errorf("ls %v shows the outside: %q", args, got.Content)
		}
	}
}
