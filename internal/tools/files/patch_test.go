package files

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func patch(body string) string { return "*** Begin Patch\n" + body + "*** End Patch" }

func TestApplyChunks(t *testing.T) {
	parse := func(t *testing.T, body string) []patchChunk {
		t.Helper()
		ops, err := parsePatch(patch("*** Update File: f\n" + body))
		if err != nil {
			t.Fatal(err)
		}
		return ops[0].chunks
	}
	tests := []struct {
		name, file, body, want, wantErr string
	}{
		{"replace", "a\nb\nc\n", "@@\n a\n-b\n+B\n c\n", "a\nB\nc\n", ""},
		{"no @@ first", "a\nb\n", "-a\n+A\n", "A\nb\n", ""},
		{"context line", "fn x\n  ret 1\nfn y\n  ret 1\n", "@@ fn y\n-  ret 1\n+  ret 2\n", "fn x\n  ret 1\nfn y\n  ret 2\n", ""},
		{"two chunks", "1\n2\n3\n4\n", "@@\n-1\n+one\n@@\n-4\n+four\n", "one\n2\n3\nfour\n", ""},
		{"append at eof", "a\n", "@@\n+b\n*** End of File\n", "a\nb\n", ""},
		{"eof anchored", "x\ny\nx\n", "@@\n-x\n+z\n*** End of File\n", "x\ny\nz\n", ""},
		{"no final newline kept", "a\nb", "@@\n-b\n+c\n", "a\nc", ""},
		{"crlf kept", "a\r\nb\r\n", "@@\n-b\n+c\n", "a\r\nc\r\n", ""},
		{"trailing space tolerated", "a  \nb\n", "@@\n-a\n+A\n", "A\nb\n", ""},
		{"missing", "a\n", "@@\n-zz\n+y\n", "", "Failed to find expected lines in f:\nzz"},
		{"ambiguous", "x\nx\n", "@@\n-x\n+y\n", "", "Found 2 occurrences of these lines in f."},
		{"missing context", "a\n", "@@ nope\n-a\n+b\n", "", "Failed to find context 'nope' in f"},
		{"ambiguous context", "c\nc\na\n", "@@ c\n-a\n+b\n", "", "Found 2 occurrences of context 'c' in f."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := applyChunks(tc.file, parse(t, tc.body), "f")
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("= %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestParsePatchErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"  ", "Invalid patch: input is empty."},
		{"hello", "The first line of the patch must be '*** Begin Patch'"},
		{"*** Begin Patch\n*** Add File: a\n+x", "The last line of the patch must be '*** End Patch'"},
		{patch("*** Frobnicate: a\n"), "Invalid patch hunk at line 2: '*** Frobnicate: a' is not a valid hunk header."},
		{patch("*** Update File: a\n"), "Invalid patch hunk at line 2: Update file hunk for path 'a' is empty"},
		{patch("*** Update File: a\n@@\n"), "Invalid patch hunk at line 4: Update hunk does not contain any lines"},
		{patch("*** Update File: a\n@@\n-x\nbogus\n"), "Invalid patch hunk at line 5: Expected update hunk to start with a @@ context marker, got: 'bogus'"},
		{patch("*** Update File: a\n-x\n+y\nzz\n"), "Invalid patch hunk at line 5: Expected update hunk to start with a @@ context marker, got: 'zz'"},
		{patch("*** Update File: a\n@@\n*** End of File\n"), "Invalid patch hunk at line 4: Update hunk does not contain any lines"},
	}
	for _, tc := range tests {
		_, err := parsePatch(tc.in)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.in, err, tc.want)
		}
	}
	ops, err := parsePatch("<<'EOF'\n*** Begin Patch\n*** Delete File: x\n*** End Patch\nEOF")
	if err != nil || len(ops) != 1 || ops[0].kind != 'D' || ops[0].path != "x" {
		t.Errorf("heredoc = %+v, %v", ops, err)
	}
}

func TestApplyPatch(t *testing.T) {
	s := newSandbox(t)
	in := patch(`*** Add File: new/dir/hello.txt
+hello
+world
*** Update File: notes.txt
@@
 one
-two
+TWO
*** Update File: sub/inner.txt
*** Move to: sub/renamed.txt
@@
-inner
+moved
*** Delete File: sub/deep/x.txt
*** Delete File: link-in
`)
	res, err := call(t, s.ctx(), tool("apply_patch"), map[string]any{"input": in})
	if err != nil {
		t.Fatal(err)
	}
	want := "Success. Updated the following files:\nA new/dir/hello.txt\nM notes.txt\nM sub/renamed.txt\nD sub/deep/x.txt\nD link-in"
	if res.Text != want {
		t.Errorf("text = %q, want %q", res.Text, want)
	}
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(s.ws, p))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	for p, want := range map[string]string{"new/dir/hello.txt": "hello\nworld\n", "notes.txt": "one\nTWO\nthree\n", "sub/renamed.txt": "moved"} {
		if got := read(p); got != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
	for _, p := range []string{"sub/inner.txt", "sub/deep/x.txt", "link-in"} {
		if _, err := os.Lstat(filepath.Join(s.ws, p)); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", p, err)
		}
	}

	// Failures.
	before := snapshot(t, s.base)
	for _, tc := range []struct{ in, want string }{
		{patch("*** Add File: notes.txt\n+x\n"), `Cannot create notes.txt: the file already exists. Use "*** Update File: notes.txt" to change it, or delete it earlier in the same patch.`},
		{patch("*** Update File: missing.txt\n@@\n-a\n+b\n"), "Failed to read file to update missing.txt: not found: missing.txt"},
		{patch("*** Delete File: missing.txt\n"), "not found: missing.txt"},
		{patch("*** Delete File: sub\n"), "is a directory: sub"},
		{patch("*** Add File: ../outside/x.txt\n+x\n"), "path escapes the workspace: ../outside/x.txt"},
		{patch("*** Add File: link-out-dir/x.txt\n+x\n"), "path escapes the workspace: link-out-dir/x.txt"},
		{patch("*** Update File: link-out-file\n@@\n-TOP\n+x\n"), "path escapes the workspace: link-out-file"},
		{patch("*** Delete File: link-out-dir/secret.txt\n"), "path escapes the workspace: link-out-dir/secret.txt"},
		{patch("*** Update File: notes.txt\n*** Move to: ../outside/moved.txt\n@@\n-one\n+1\n"), "path escapes the workspace: ../outside/moved.txt"},
		{patch("*** Update File: notes.txt\n*** Move to: new/dir/hello.txt\n@@\n-one\n+1\n"), "Cannot create new/dir/hello.txt: the file already exists. Delete it earlier in the same patch to replace it."},
		{"", "Provide a patch input."},
		{"*** Begin Patch\n*** End Patch", "No files were modified."},
	} {
		_, err := call(t, s.ctx(), tool("apply_patch"), map[string]any{"input": tc.in})
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: err = %v, want %q", tc.in, err, tc.want)
		}
	}
	if ch := outsideChanges(before, snapshot(t, s.base)); len(ch) > 0 {
		t.Errorf("changed outside: %v", ch)
	}
	if got := read("notes.txt"); got != "one\nTWO\nthree\n" {
		t.Errorf("notes.txt after failures = %q", got)
	}

	// Deleting a link removes the link, not its target.
	if _, err := call(t, s.ctx(), tool("apply_patch"), map[string]any{"input": patch("*** Delete File: link-out-file\n")}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(s.outside, "secret.txt")); string(b) != secret {
		t.Errorf("link target changed: %q", b)
	}
	// An update that changes nothing says so.
	res, err = call(t, s.ctx(), tool("apply_patch"), map[string]any{"input": patch("*** Update File: notes.txt\n@@\n-one\n+one\n")})
	if err != nil || res.Text != "No changes made to notes.txt." {
		t.Errorf("no-op = %v, %v", res, err)
	}
}

func TestApplyPatchRefusesHardLinks(t *testing.T) {
	s := newSandbox(t)
	outside := filepath.Join(s.outside, "secret.txt")
	if err := os.Link(outside, filepath.Join(s.ws, "planted.txt")); err != nil {
		t.Skipf("hard links unsupported here: %v", err)
	}
	_, err := call(t, s.ctx(), tool("apply_patch"), map[string]any{"input": patch("*** Update File: planted.txt\n@@\n-" + secret + "\n+pwned\n")})
	if err == nil || !strings.Contains(err.Error(), "hard links") {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(outside); string(b) != secret {
		t.Errorf("outside file = %q", b)
	}
}

func FuzzParsePatch(f *testing.F) {
	f.Add(patch("*** Add File: a\n+x\n"))
	f.Add(patch("*** Update File: a\n*** Move to: b\n@@ ctx\n a\n-b\n+c\n*** End of File\n*** Delete File: c\n"))
	f.Add("<<EOF\n" + patch("*** Delete File: x\n") + "\nEOF")
	f.Fuzz(func(t *testing.T, in string) {
		ops, err := parsePatch(in)
		if err != nil {
			return
		}
		for _, op := range ops {
			if op.kind == 'U' {
				if len(op.chunks) == 0 {
					t.Fatal("update without chunks")
				}
				for _, c := range op.chunks {
					// Applying to any text must not panic.
					_, _ = applyChunks(strings.Join(c.oldLines, "\n"), op.chunks, "f")
					_, _ = applyChunks("", op.chunks, "f")
				}
			}
		}
	})
}
