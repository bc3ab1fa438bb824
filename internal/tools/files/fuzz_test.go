package files

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzPath runs write, read and ls with an arbitrary path in a sandbox
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

		// ls: every entry it shows is in the workspace directory the
		// path resolves to.
		res, err = call(t, ctx, tool("ls"), map[string]any{"path": p})
		if err == nil {
			checkLsPage(t, s, p, res.Details.(*lsResult), 1<<30, nil)
		} else if strings.Contains(err.Error(), secret) {
			t.Fatalf("ls %q leaked in its error", p)
		}
		if ch := outsideChanges(before, snapshot(t, s.base)); len(ch) > 0 {
			t.Fatalf("read/ls %q changed %v", p, ch)
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

// FuzzLs runs ls with arbitrary path, limit and after arguments and checks
// the page against the directory: only names after the cursor, in byte
// order, at most limit of them and MaxLsBytes of text, each really in the
// workspace directory the path names, and a continuation exactly when
// entries remain.
func FuzzLs(f *testing.F) {
	for _, c := range []struct {
		path  string
		limit float64
		after string
	}{
		{".", 500, ""}, {"sub", 1, "deep"}, {"", 0, "link"}, {"..", 3, ""}, {"link-out-dir", 2, ""},
		{"sub/up", -1, "n"}, {"link-in-abs", 2.5, "\xff"}, {"notes.txt", 1, ""}, {"$WS", 1e300, "\u2028"},
		{"$OUT", 1, ""}, {"sub/up2", 1, ""}, {"names", 3, "b"}, {"names", 1, "<&>"},
	} {
		f.Add(c.path, c.limit, c.after, true)
		f.Add(c.path, c.limit, c.after, false)
	}
	f.Fuzz(func(t *testing.T, p string, limit float64, after string, withArgs bool) {
		s := newSandbox(t)
		names := filepath.Join(s.ws, "names")
		if err := os.Mkdir(names, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"a", "b\n", "<&>", "q\"x", "\u2028", "é", "\x01", ".dot"} {
			if err := os.WriteFile(filepath.Join(names, n), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		p = strings.NewReplacer("$WS", s.ws, "$OUT", s.outside, "$BASE", s.base).Replace(p)
		args := map[string]any{"path": p}
		wantLimit := DefaultLsLimit
		var cursor *string
		if withArgs {
			if !math.IsNaN(limit) && !math.IsInf(limit, 0) {
				args["limit"] = limit
				wantLimit = int(max(1, min(math.Floor(limit), math.MaxInt32)))
			}
			// The arguments travel as JSON, which has no invalid UTF-8.
			b, _ := json.Marshal(after)
			if err := json.Unmarshal(b, &after); err != nil {
				t.Fatal(err)
			}
			args["after"] = after
			cursor = &after
		}
		before := snapshot(t, s.base)
		res, err := call(t, s.ctx(), tool("ls"), args)
		if ch := outsideChanges(before, snapshot(t, s.base)); len(ch) > 0 {
			t.Fatalf("ls %q changed %v", p, ch)
		}
		if err != nil {
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("ls %q leaked in its error", p)
			}
			return
		}
		checkLsPage(t, s, p, res.Details.(*lsResult), wantLimit, cursor)
	})
}

// checkLsPage checks one ls page of path p: see FuzzLs.
func checkLsPage(t *testing.T, s *sandbox, p string, got *lsResult, limit int, after *string) {
	t.Helper()
	if len(got.Content) > MaxLsBytes {
		t.Errorf("ls %q: %d bytes", p, len(got.Content))
	}
	dirPath := strings.TrimSpace(p) // as pathParam reads it
	if dirPath == "" {
		dirPath = "."
	}
	rel, err := (&workspace{real: s.ws}).resolve(dirPath)
	if err != nil || inLink(t, s.ws, filepath.ToSlash(rel)) {
		t.Fatalf("ls %q listed %q (%v), which is not a workspace directory", p, rel, err)
	}
	dir := filepath.Join(s.ws, rel)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("ls %q listed %s: %v", p, dir, err)
	}
	var want []string // the names after the cursor, in byte order
	for _, e := range ents {
		if after == nil || e.Name() > *after {
			want = append(want, e.Name())
		}
	}
	if got.Content == "(empty directory)" {
		if len(want) != 0 || got.NextAfter != "" {
			t.Errorf("ls %q: empty, but %q remain", p, want)
		}
		return
	}
	body, _, more := strings.Cut(got.Content, "\n\n")
	lines := strings.Split(body, "\n")
	if len(lines) > limit || len(lines) > len(want) || more != (len(lines) < len(want)) {
		t.Fatalf("ls %q: %d lines of %d entries, limit %d, continuation %v", p, len(lines), len(want), limit, more)
	}
	for i, l := range lines {
		var name string
		if err := json.Unmarshal([]byte(l), &name); err != nil {
			t.Fatalf("ls %q: line %q: %v", p, l, err)
		}
		fi, err := os.Lstat(filepath.Join(dir, want[i]))
		if err != nil {
			t.Fatal(err)
		}
		if fi.IsDir() {
			name = strings.TrimSuffix(name, "/")
		}
		if name != want[i] || strings.Contains(name, "secret") {
			t.Errorf("ls %q: line %d is %q, want %q", p, i, name, want[i])
		}
	}
	if more && got.NextAfter != want[len(lines)-1] {
		t.Errorf("ls %q: nextAfter %q, want %q", p, got.NextAfter, want[len(lines)-1])
	}
}
