package files

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzPath runs write, read and list with an arbitrary path in a sandbox
// whose workspace holds links to the outside, and checks that nothing
// outside the workspace is ever written, read or listed. "$WS", "$OUT"
// and "$BASE" in the input stand for the sandbox's absolute paths.
func FuzzPath(f *testing.F) {
	for _, p := range []string{
		"notes.txt", "a/b/c.txt", ".", "..", "../outside/secret.txt", "$OUT/secret.txt", "$WS/notes.txt",
		"$WS/../outside/secret.txt", "$BASE", "/", "link-out-file", "link-out-dir/secret.txt", "link-out-dir/n/m",
		"link-out-abs-dir", "dangling-out", "dangling-out-rel", "dangling-in", "link-in", "link-in-abs/inner.txt",
		"sub/up/link-out-file", "sub/up2/outside/secret.txt", "sub/up/../../outside", "sub/../../ws/notes.txt",
		"./sub//deep/../x", "sub/up/sub/up/link-out-dir", "notes.txt/x", "a\x00b", "~", "$WS", "$WS/", "\\..\\outside",
		".switchboard/attachments/x/y",
	} {
		f.Add(p, false)
		f.Add(p, true)
	}
	f.Fuzz(func(t *testing.T, p string, appendMode bool) {
		s := newSandbox(t)
		p = strings.NewReplacer("$WS", s.ws, "$OUT", s.outside, "$BASE", s.base).Replace(p)
		before := snapshot(t, s.base)
		ctx := s.ctx()

		// write: only ever changes the workspace, and what it reports
		// written is really there.
		const content = "fuzz-written"
		res, err := call(t, ctx, tool("write"), map[string]any{"path": p, "content": content, "append": appendMode})
		after := snapshot(t, s.base)
		if ch := outsideChanges(before, after); len(ch) > 0 {
			t.Fatalf("write %q changed %v outside the workspace (err %v)", p, ch, err)
		}
		if err == nil {
			got := res.Details.(*writeResult)
			b, rerr := os.ReadFile(filepath.Join(s.ws, filepath.FromSlash(got.Path)))
			if rerr != nil || !strings.HasSuffix(string(b), content) || inLink(t, s.ws, got.Path) {
				t.Errorf("write %q reported %+v; file: %q, %v", p, got, b, rerr)
			}
		} else {
			for q, v := range after {
				if before[q] != v {
					t.Errorf("failed write %q changed %s", p, q)
				}
			}
		}

		// read: never returns outside content; returns the file it names.
		res, err = call(t, ctx, tool("read"), map[string]any{"path": p})
		if err == nil {
			got := res.Details.(*readResult)
			if strings.Contains(got.Content, secret) || strings.Contains(res.Text, secret) {
				t.Fatalf("read %q returned outside content", p)
			}
			b, rerr := os.ReadFile(filepath.Join(s.ws, filepath.FromSlash(got.Path)))
			if rerr != nil || !strings.HasPrefix(string(b), got.Content) || inLink(t, s.ws, got.Path) {
				t.Errorf("read %q reported %q, file %v", p, got.Path, rerr)
			}
		} else if strings.Contains(err.Error(), secret) {
			t.Fatalf("read %q leaked in its error", p)
		}

		// list: every entry exists in the workspace directory it reports.
		res, err = call(t, ctx, tool("list"), map[string]any{"path": p, "recursive": true})
		if err == nil {
			got := res.Details.(*listResult)
			if inLink(t, s.ws, got.Path) {
				t.Errorf("list %q reported %q", p, got.Path)
			}
			for _, e := range got.Entries {
				if _, lerr := os.Lstat(filepath.Join(s.ws, filepath.FromSlash(got.Path), filepath.FromSlash(e.Name))); lerr != nil {
					t.Errorf("list %q: entry %q is not in the workspace", p, e.Name)
				}
			}
			raw, _ := json.Marshal(got)
			if strings.Contains(string(raw), "secret.txt") {
				t.Errorf("list %q shows an outside file: %s", p, raw)
			}
		}
		if ch := outsideChanges(before, snapshot(t, s.base)); len(ch) > 0 {
			t.Fatalf("read/list %q changed %v", p, ch)
		}
	})
}

// inLink reports whether the reported workspace path rel goes through a
// symbolic link or out of the workspace (a resolved path never does).
func inLink(t *testing.T, ws, rel string) bool {
	t.Helper()
	if rel == "." {
		return false
	}
	if filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
		return true
	}
	cur := ws
	for _, part := range strings.Split(rel, "/") {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			return true
		}
	}
	return false
}
