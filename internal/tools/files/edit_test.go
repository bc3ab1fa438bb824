package files

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestApplyReplacements(t *testing.T) {
	r := func(o, n string) replacement { return replacement{OldText: o, NewText: n} }
	tests := []struct {
		name    string
		content string
		reps    []replacement
		want    string
		wantErr string // prefix
	}{
		{"one", "a\nb\nc\n", []replacement{r("b", "B")}, "a\nB\nc\n", ""},
		{"delete", "a\nb\nc\n", []replacement{r("b\n", "")}, "a\nc\n", ""},
		{"multi disjoint", "one two three", []replacement{r("three", "3"), r("one", "1")}, "1 two 3", ""},
		{"matched against original", "ab", []replacement{r("a", "b"), r("b", "c")}, "bc", ""},
		{"crlf file, lf oldText", "x\r\ny\r\nz\r\n", []replacement{r("x\ny", "X\nY")}, "X\r\nY\r\nz\r\n", ""},
		{"crlf oldText", "x\r\ny\r\n", []replacement{r("x\r\ny", "q")}, "q\r\n", ""},
		{"mixed endings are exact", "x\r\ny\nz", []replacement{r("y\nz", "w")}, "x\r\nw", ""},
		{"bom kept", "\ufeffhello", []replacement{r("hello", "bye")}, "\ufeffbye", ""},
		{"not found", "abc", []replacement{r("zzz", "y")}, "", "Could not find the exact text in f.txt. The old text must match exactly including all whitespace and newlines.\nCurrent file contents:\nabc"},
		{"not found multi", "abc", []replacement{r("a", "A"), r("zzz", "y")}, "", "Could not find edits[1] in f.txt."},
		{"whitespace matters", "a  b", []replacement{r("a b", "x")}, "", "Could not find the exact text in f.txt."},
		{"ambiguous", "x x", []replacement{r("x", "y")}, "", "Found 2 occurrences of the text in f.txt. The text must be unique. Please provide more context to make it unique."},
		{"ambiguous multi", "x x y", []replacement{r("y", "z"), r("x", "y")}, "", "Found 2 occurrences of edits[1] in f.txt. Each oldText must be unique."},
		{"empty oldText", "abc", []replacement{r("", "x")}, "", "oldText must not be empty in f.txt."},
		{"empty oldText multi", "abc", []replacement{r("a", "b"), r("", "x")}, "", "edits[1].oldText must not be empty in f.txt."},
		{"overlap", "abcdef", []replacement{r("abcd", "1"), r("cdef", "2")}, "", "edits[0] and edits[1] overlap in f.txt. Merge them into one edit or target disjoint regions."},
		{"no change", "abc", []replacement{r("b", "b")}, "", "no change"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := applyReplacements(tc.content, tc.reps, "f.txt")
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want prefix %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("= %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	long := strings.Repeat("é", 600)
	_, err := applyReplacements(long, []replacement{r("zz", "y")}, "f")
	if err == nil || !strings.HasSuffix(err.Error(), "\n... (truncated)") || strings.Count(err.Error(), "é") != 400 {
		t.Errorf("long not-found hint: %.100q", err)
	}
}

func TestEdit(t *testing.T) {
	s := newSandbox(t)
	file := filepath.Join(s.ws, "notes.txt")
	if err := os.Chmod(file, 0o640); err != nil {
		t.Fatal(err)
	}
	res, err := call(t, s.ctx(), tool("edit"), map[string]any{"path": "notes.txt", "oldText": "two", "newText": "2"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Successfully replaced 1 block(s) in notes.txt." {
		t.Errorf("text = %q", res.Text)
	}
	if d := res.Details.(*editResult); !d.Changed || d.FirstChangedLine != 2 {
		t.Errorf("details = %+v", d)
	}
	b, _ := os.ReadFile(file)
	if string(b) != "one\n2\nthree\n" {
		t.Errorf("file = %q", b)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v", fi.Mode())
	}

	// Multi-edit form, plus the top-level pair, through a link inside.
	res, err = call(t, s.ctx(), tool("edit"), map[string]any{"path": "link-in",
		"edits": []map[string]string{{"oldText": "one", "newText": "1"}}, "oldText": "three", "newText": "3"})
	if err != nil || res.Text != "Successfully replaced 2 block(s) in link-in." {
		t.Fatalf("multi = %v, %v", res, err)
	}
	// edits sent as a JSON string.
	res, err = call(t, s.ctx(), tool("edit"), map[string]any{"path": "notes.txt", "edits": `[{"oldText":"1","newText":"one"}]`})
	if err != nil || res.Text != "Successfully replaced 1 block(s) in notes.txt." {
		t.Fatalf("string edits = %v, %v", res, err)
	}
	if b, _ := os.ReadFile(file); string(b) != "one\n2\n3\n" {
		t.Errorf("file = %q", b)
	}

	// Identical replacement: reported, nothing written.
	res, err = call(t, s.ctx(), tool("edit"), map[string]any{"path": "notes.txt", "oldText": "2", "newText": "2"})
	if err != nil || res.Text != "No changes made to notes.txt. The replacement text is identical to the original." || res.Details.(*editResult).Changed {
		t.Errorf("no-op = %v, %v", res, err)
	}

	// Failures leave the file as it was.
	before := snapshot(t, s.base)
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"path": "notes.txt", "oldText": "absent", "newText": "x"}, "Could not find the exact text in notes.txt."},
		{map[string]any{"path": "notes.txt", "edits": []map[string]string{{"oldText": "one", "newText": "1"}, {"oldText": "nope", "newText": "x"}}}, "Could not find edits[1] in notes.txt."},
		{map[string]any{"path": "notes.txt", "oldText": "\n", "newText": "x"}, "Found 3 occurrences of the text in notes.txt."},
		{map[string]any{"path": "notes.txt", "oldText": "2", "newText": "2", "edits": []map[string]string{{"oldText": "zz", "newText": "x"}}}, "Could not find edits[0]"},
		{map[string]any{"path": "missing.txt", "oldText": "a", "newText": "b"}, "Could not edit file: missing.txt. Error code: ENOENT."},
		{map[string]any{"path": "sub", "oldText": "a", "newText": "b"}, "is a directory: sub"},
		{map[string]any{"path": "notes.txt"}, "Edit tool input is invalid. edits must contain at least one replacement."},
		{map[string]any{"path": "notes.txt", "edits": "nonsense"}, "Edit tool input is invalid."},
		{map[string]any{"path": "notes.txt", "edits": []any{map[string]any{"oldText": 1}}}, "Edit tool input is invalid. edits[0] needs"},
		{map[string]any{"oldText": "a", "newText": "b"}, "path required"},
		{map[string]any{"path": "link-out-file", "oldText": "TOP", "newText": "x"}, "path escapes the workspace: link-out-file"},
	} {
		_, err := call(t, s.ctx(), tool("edit"), tc.args)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want prefix %q", tc.args, err, tc.want)
		}
	}
	if diff := outsideChanges(before, snapshot(t, s.base)); len(diff) > 0 {
		t.Errorf("changed outside: %v", diff)
	}
	if b, _ := os.ReadFile(file); string(b) != "one\n2\n3\n" {
		t.Errorf("file after failures = %q", b)
	}
}

func TestEditRefusesHardLinks(t *testing.T) {
	s := newSandbox(t)
	outside := filepath.Join(s.outside, "secret.txt")
	if err := os.Link(outside, filepath.Join(s.ws, "planted.txt")); err != nil {
		t.Skipf("hard links unsupported here: %v", err)
	}
	_, err := call(t, s.ctx(), tool("edit"), map[string]any{"path": "planted.txt", "oldText": "TOP", "newText": "pwned"})
	if err == nil || !strings.Contains(err.Error(), "hard links") {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(outside); string(b) != secret {
		t.Errorf("outside file = %q", b)
	}
}

func FuzzApplyReplacements(f *testing.F) {
	f.Add("a\nb\nc\n", "b", "B", "c", "C")
	f.Add("x\r\ny\r\n", "x\ny", "q", "", "")
	f.Add("\ufeffab", "a", "b", "b", "a")
	f.Fuzz(func(t *testing.T, content, o1, n1, o2, n2 string) {
		reps := []replacement{{o1, n1}}
		if o2 != "" {
			reps = append(reps, replacement{o2, n2})
		}
		got, err := applyReplacements(content, reps, "f")
		if err != nil {
			if errors.Is(err, errNoChange) && len(reps) == 1 && o1 != n1 && !strings.Contains(content, "\r\n") {
				t.Fatalf("no change reported for a real replacement of %q in %q", o1, content)
			}
			return
		}
		if got == content {
			t.Fatalf("success without change")
		}
		if len(reps) == 1 && !strings.Contains(content, "\r") && !strings.Contains(o1, "\r") && !strings.Contains(n1, "\r") {
			if want := strings.Replace(content, o1, n1, 1); got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
		}
	})
}
