package files

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/switchboardhq/switchboard/internal/tools"
)

const secret = "TOP-SECRET-outside-the-workspace"

// sandbox is a temporary directory holding the workspace "ws" and a
// sibling "outside", with links from the workspace to both.
type sandbox struct {
	base, ws, outside string
}

func newSandbox(t testing.TB) *sandbox {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &sandbox{base: base, ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(s.ws, "sub", "deep"), 0o755))
	must(os.MkdirAll(filepath.Join(s.outside, "dir"), 0o755))
	must(os.WriteFile(filepath.Join(s.outside, "secret.txt"), []byte(secret), 0o644))
	must(os.WriteFile(filepath.Join(s.outside, "dir", "secret.txt"), []byte(secret), 0o644))
	must(os.WriteFile(filepath.Join(s.ws, "notes.txt"), []byte("one\ntwo\nthree\n"), 0o644))
	must(os.WriteFile(filepath.Join(s.ws, "sub", "inner.txt"), []byte("inner"), 0o644))
	must(os.WriteFile(filepath.Join(s.ws, "sub", "deep", "x.txt"), []byte("x"), 0o644))
	links := map[string]string{
		"link-out-file":    filepath.Join(s.outside, "secret.txt"),
		"link-out-dir":     "../outside/dir",
		"link-out-abs-dir": s.outside,
		"link-in":          "notes.txt",
		"link-in-abs":      filepath.Join(s.ws, "sub"),
		"dangling-out":     filepath.Join(s.outside, "new.txt"),
		"dangling-out-rel": "../outside/dir/new.txt",
		"dangling-in":      "sub/new.txt",
		"sub/up":           "..",
		"sub/up2":          "../..",
	}
	for name, target := range links {
		must(os.Symlink(target, filepath.Join(s.ws, name)))
	}
	return s
}

func (s *sandbox) ctx() context.Context {
	return tools.WithCaller(context.Background(), tools.Caller{SessionKey: "agent:main:main", Workspace: s.ws})
}

// call runs tool with args as the sandbox's caller.
func call(t testing.TB, ctx context.Context, tool tools.Tool, args any) (*tools.Result, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tool.Call(ctx, raw)
}

func tool(name string) tools.Tool {
	for _, t := range All() {
		if t.Name() == name {
			return t
		}
	}
	panic(name)
}

// snapshot records every path below root (without following links).
func snapshot(t testing.TB, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		v := info.Mode().String()
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			v += " -> " + l
		case info.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			sum := sha256.Sum256(b)
			v += " " + hex.EncodeToString(sum[:])
		}
		m[filepath.ToSlash(rel)] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// outsideChanges returns paths outside ws/ that differ between snapshots.
func outsideChanges(before, after map[string]string) []string {
	var out []string
	for p, v := range after {
		if before[p] != v && !strings.HasPrefix(p, "ws/") {
			out = append(out, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok && !strings.HasPrefix(p, "ws/") {
			out = append(out, p)
		}
	}
	return out
}

func TestSchemas(t *testing.T) {
	want := map[string]map[string]string{
		"read":        {"path": "string", "offset": "number", "limit": "number"},
		"write":       {"path": "string", "content": "string", "append": "boolean"},
		"ls":          {"path": "string", "limit": "number", "after": "string"},
		"edit":        {"path": "string", "oldText": "string", "newText": "string", "edits": "array"},
		"apply_patch": {"input": "string"},
	}
	var names []string
	for _, tl := range All() {
		names = append(names, tl.Name())
		if tl.Description() == "" {
			t.Errorf("%s: no description", tl.Name())
		}
		var s struct {
			Type       string `json:"type"`
			Properties map[string]struct {
				Type string `json:"type"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(tl.Schema(), &s); err != nil || s.Type != "object" {
			t.Fatalf("%s: schema %v %q", tl.Name(), err, s.Type)
		}
		got := map[string]string{}
		for k, v := range s.Properties {
			got[k] = v.Type
		}
		if diff := cmp.Diff(want[tl.Name()], got); diff != "" {
			t.Errorf("%s properties (-want +got):\n%s", tl.Name(), diff)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(tl.Schema()))
		if err != nil {
			t.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("s.json", doc); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Compile("s.json"); err != nil {
			t.Errorf("%s: %v", tl.Name(), err)
		}
	}
	if diff := cmp.Diff([]string{"read", "write", "edit", "apply_patch", "ls"}, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
}

func TestNoWorkspace(t *testing.T) {
	for _, tl := range All() {
		_, err := call(t, context.Background(), tl, map[string]any{"path": "a", "content": "x", "oldText": "a", "newText": "b", "input": "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch"})
		if err == nil || !strings.Contains(err.Error(), "no workspace") {
			t.Errorf("%s without a caller: %v", tl.Name(), err)
		}
		ctx := tools.WithCaller(context.Background(), tools.Caller{Workspace: "  "})
		if _, err := call(t, ctx, tl, map[string]any{"path": "a", "content": "x", "oldText": "a", "newText": "b", "input": "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch"}); err == nil {
			t.Errorf("%s with a blank workspace: no error", tl.Name())
		}
	}
	// read and ls need an existing workspace; write creates it.
	ws := filepath.Join(t.TempDir(), "new", "ws")
	ctx := tools.WithCaller(context.Background(), tools.Caller{Workspace: ws})
	if _, err := call(t, ctx, tool("ls"), map[string]any{}); err == nil {
		t.Error("ls of a missing workspace: no error")
	}
	if _, err := call(t, ctx, tool("write"), map[string]any{"path": "a.txt", "content": "x"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(ws); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("workspace: %v %v", fi, err)
	}
}

// Everything that leads out of the workspace is refused, by read, write
// and ls alike, and changes nothing outside.
func TestEscapes(t *testing.T) {
	s := newSandbox(t)
	paths := []string{
		"..",
		"../outside/secret.txt",
		"sub/../../outside/secret.txt",
		"./../outside",
		"/",
		"/etc/passwd",
		"OUT/secret.txt",
		"OUT",
		"BASE",
		"link-out-file",
		"link-out-dir",
		"link-out-dir/secret.txt",
		"link-out-dir/new/file.txt",
		"link-out-abs-dir/secret.txt",
		"link-out-abs-dir/dir",
		"dangling-out",
		"dangling-out-rel",
		"sub/up2",
		"sub/up2/outside/secret.txt",
		"sub/up/link-out-dir/x",
		"WS/../outside/secret.txt",
	}
	for _, p := range paths {
		p = strings.NewReplacer("OUT", s.outside, "BASE", s.base, "WS", s.ws).Replace(p)
		for _, name := range []string{"read", "write", "edit", "ls"} {
			before := snapshot(t, s.base)
			res, err := call(t, s.ctx(), tool(name), map[string]any{"path": p, "content": "pwned", "append": true, "oldText": "TOP", "newText": "pwned"})
			want := "path escapes the workspace: " + p
			if err == nil || err.Error() != want {
				t.Errorf("%s %q = %v, %v; want error %q", name, p, res, err, want)
			}
			if ch := outsideChanges(before, snapshot(t, s.base)); len(ch) > 0 {
				t.Errorf("%s %q changed %v", name, p, ch)
			}
		}
	}
}

func TestInsidePaths(t *testing.T) {
	s := newSandbox(t)
	tests := []struct {
		path, want string // want: reported path
	}{
		{"notes.txt", "notes.txt"},
		{"./notes.txt", "notes.txt"},
		{"sub/../notes.txt", "notes.txt"},
		{filepath.Join(s.ws, "notes.txt"), "notes.txt"},
		{"link-in", "notes.txt"},
		{"link-in-abs/inner.txt", "sub/inner.txt"},
		{"sub/up/notes.txt", "notes.txt"},
		{"sub/up/sub/up/sub/inner.txt", "sub/inner.txt"},
		{"  notes.txt  ", "notes.txt"},
		{"sub/up/./link-in", "notes.txt"},
	}
	for _, tt := range tests {
		res, err := call(t, s.ctx(), tool("read"), map[string]any{"path": tt.path})
		if err != nil {
			t.Errorf("read %q: %v", tt.path, err)
			continue
		}
		if got := res.Details.(*readResult).Path; got != tt.want {
			t.Errorf("read %q: path %q, want %q", tt.path, got, tt.want)
		}
	}
	// ".." is applied before links are resolved: sub/up/.. is sub.
	if _, err := call(t, s.ctx(), tool("read"), map[string]any{"path": "sub/up/../link-in"}); err == nil || err.Error() != "not found: sub/up/../link-in" {
		t.Errorf("read sub/up/../link-in: %v", err)
	}
	// The workspace reached through a link to it works the same.
	link := filepath.Join(s.base, "ws-link")
	if err := os.Symlink(s.ws, link); err != nil {
		t.Fatal(err)
	}
	ctx := tools.WithCaller(context.Background(), tools.Caller{Workspace: link})
	for _, p := range []string{"notes.txt", filepath.Join(link, "notes.txt"), filepath.Join(s.ws, "notes.txt")} {
		if _, err := call(t, ctx, tool("read"), map[string]any{"path": p}); err != nil {
			t.Errorf("read %q via a linked workspace: %v", p, err)
		}
	}
	if _, err := call(t, ctx, tool("read"), map[string]any{"path": filepath.Join(link, "..", "outside", "secret.txt")}); err == nil {
		t.Error("escape via a linked workspace: no error")
	}
}

func TestRead(t *testing.T) {
	s := newSandbox(t)
	lines := func(n int) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "line %d\n", i)
		}
		return b.String()
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(s.ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ten.txt", lines(10))
	write("nonl.txt", "a\nb")
	write("empty.txt", "")
	big := strings.Repeat(strings.Repeat("x", 1023)+"\n", 300) // 300 KiB
	write("big.txt", big)
	long := strings.Repeat("é", MaxReadBytes) + "\nnext\n" // one 512 KiB line
	write("long.txt", long)

	tests := []struct {
		name string
		args map[string]any
		want readResult
	}{
		{"whole file", map[string]any{"path": "ten.txt"},
			readResult{Path: "ten.txt", Bytes: int64(len(lines(10))), Offset: 1, Lines: 10, Content: lines(10)}},
		{"offset", map[string]any{"path": "ten.txt", "offset": 9},
			readResult{Path: "ten.txt", Bytes: int64(len(lines(10))), Offset: 9, Lines: 2, Content: "line 9\nline 10\n"}},
		{"offset and limit", map[string]any{"path": "ten.txt", "offset": 3, "limit": 2},
			readResult{Path: "ten.txt", Bytes: int64(len(lines(10))), Offset: 3, Lines: 2, Content: "line 3\nline 4\n",
				NextOffset: 5, Note: "more lines follow; continue with offset=5"}},
		{"limit reaching the end", map[string]any{"path": "ten.txt", "offset": 9, "limit": 2},
			readResult{Path: "ten.txt", Bytes: int64(len(lines(10))), Offset: 9, Lines: 2, Content: "line 9\nline 10\n"}},
		{"offset below 1", map[string]any{"path": "ten.txt", "offset": -4, "limit": 0.5},
			readResult{Path: "ten.txt", Bytes: int64(len(lines(10))), Offset: 1, Lines: 1, Content: "line 1\n",
				NextOffset: 2, Note: "more lines follow; continue with offset=2"}},
		{"offset past the end", map[string]any{"path": "ten.txt", "offset": 50},
			readResult{Path: "ten.txt", Bytes: int64(len(lines(10))), Offset: 50}},
		{"last line without newline", map[string]any{"path": "nonl.txt", "offset": 2},
			readResult{Path: "nonl.txt", Bytes: 3, Offset: 2, Lines: 1, Content: "b"}},
		{"empty", map[string]any{"path": "empty.txt"},
			readResult{Path: "empty.txt", Offset: 1}},
		{"cap at a line boundary", map[string]any{"path": "big.txt"},
			readResult{Path: "big.txt", Bytes: int64(len(big)), Offset: 1, Lines: 256, Content: big[:MaxReadBytes], Truncated: true,
				NextOffset: 257, Note: "output truncated at 262144 bytes; continue with offset=257"}},
		{"continue after the cap", map[string]any{"path": "big.txt", "offset": 257},
			readResult{Path: "big.txt", Bytes: int64(len(big)), Offset: 257, Lines: 44, Content: big[MaxReadBytes:]}},
		{"a line longer than the cap is cut on a rune boundary", map[string]any{"path": "long.txt"},
			readResult{Path: "long.txt", Bytes: int64(len(long)), Offset: 1, Lines: 1, Content: strings.Repeat("é", MaxReadBytes/2), Truncated: true,
				NextOffset: 2, Note: "line 1 is longer than 262144 bytes and was cut; continue with offset=2"}},
		{"after the long line", map[string]any{"path": "long.txt", "offset": 2},
			readResult{Path: "long.txt", Bytes: int64(len(long)), Offset: 2, Lines: 1, Content: "next\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := call(t, s.ctx(), tool("read"), tt.args)
			if err != nil {
				t.Fatal(err)
			}
			got := res.Details.(*readResult)
			if diff := cmp.Diff(&tt.want, got); diff != "" {
				if len(diff) > 2000 {
					diff = diff[:2000]
				}
				t.Errorf("(-want +got):\n%s", diff)
			}
			var text readResult
			if err := json.Unmarshal([]byte(res.Text), &text); err != nil || text.Content != got.Content {
				t.Errorf("text does not carry the details: %v", err)
			}
		})
	}

	for _, tt := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, "path required"},
		{map[string]any{"path": "   "}, "path required"},
		{map[string]any{"path": 5}, "path required"},
		{map[string]any{"path": "missing.txt"}, "not found: missing.txt"},
		{map[string]any{"path": "sub"}, "is a directory: sub (use ls)"},
		{map[string]any{"path": "."}, "is a directory: . (use ls)"},
		{map[string]any{"path": "dangling-in"}, "not found: dangling-in"},
		{map[string]any{"path": "notes.txt/x"}, "notes.txt/x: not a directory"},
		{map[string]any{"path": "a\x00b"}, `invalid path: "a\x00b"`},
	} {
		_, err := call(t, s.ctx(), tool("read"), tt.args)
		if err == nil || err.Error() != tt.want {
			t.Errorf("read %v: %v, want %q", tt.args, err, tt.want)
		}
	}
}

func TestWrite(t *testing.T) {
	s := newSandbox(t)
	ctx := s.ctx()
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(s.ws, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	check := func(args map[string]any, want writeResult) {
		t.Helper()
		res, err := call(t, ctx, tool("write"), args)
		if err != nil {
			t.Fatalf("write %v: %v", args, err)
		}
		if diff := cmp.Diff(&want, res.Details.(*writeResult)); diff != "" {
			t.Errorf("write %v (-want +got):\n%s", args, diff)
		}
	}
	check(map[string]any{"path": "new.txt", "content": "  hello \n"}, writeResult{Path: "new.txt", Bytes: 9})
	if got := read("new.txt"); got != "  hello \n" {
		t.Errorf("content %q", got)
	}
	check(map[string]any{"path": "new.txt", "content": "more", "append": true}, writeResult{Path: "new.txt", Bytes: 4})
	check(map[string]any{"path": "new.txt", "content": "!", "append": true}, writeResult{Path: "new.txt", Bytes: 1})
	if got := read("new.txt"); got != "  hello \nmore!" {
		t.Errorf("content %q", got)
	}
	check(map[string]any{"path": "new.txt", "content": "", "append": false}, writeResult{Path: "new.txt"})
	if got := read("new.txt"); got != "" {
		t.Errorf("content %q", got)
	}
	check(map[string]any{"path": "a/b/c/d.txt", "content": "deep"}, writeResult{Path: "a/b/c/d.txt", Bytes: 4})
	for p, mode := range map[string]fs.FileMode{"a": fs.ModeDir | 0o700, "a/b/c": fs.ModeDir | 0o700, "a/b/c/d.txt": 0o600, "new.txt": 0o600, "notes.txt": 0o644} {
		if fi, err := os.Lstat(filepath.Join(s.ws, p)); err != nil || fi.Mode() != mode {
			t.Errorf("%s: mode %v, %v; want %v", p, fi.Mode(), err, mode)
		}
	}
	// Through links that stay inside, and to attachment folders.
	check(map[string]any{"path": "link-in", "content": "via link"}, writeResult{Path: "notes.txt", Bytes: 8})
	check(map[string]any{"path": "dangling-in", "content": "created"}, writeResult{Path: "sub/new.txt", Bytes: 7})
	check(map[string]any{"path": "link-in-abs/deep/y.txt", "content": "y"}, writeResult{Path: "sub/deep/y.txt", Bytes: 1})
	check(map[string]any{"path": filepath.Join(s.ws, "abs.txt"), "content": "abs"}, writeResult{Path: "abs.txt", Bytes: 3})
	check(map[string]any{"path": ".switchboard/attachments/other/x.txt", "content": "x"}, writeResult{Path: ".switchboard/attachments/other/x.txt", Bytes: 1})
	if got := read("notes.txt"); got != "via link" {
		t.Errorf("notes.txt = %q", got)
	}
	if got := read("sub/new.txt"); got != "created" {
		t.Errorf("sub/new.txt = %q", got)
	}

	for _, tt := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"content": "x"}, "path required"},
		{map[string]any{"path": "x.txt"}, "content required"},
		{map[string]any{"path": "x.txt", "content": 5}, "content required"},
		{map[string]any{"path": "x.txt", "content": strings.Repeat("x", MaxWriteBytes+1)}, "content too large: 5242881 bytes (max 5242880 per write)"},
		{map[string]any{"path": "sub", "content": "x"}, "is a directory: sub"},
		{map[string]any{"path": ".", "content": "x"}, "is a directory: ."},
		{map[string]any{"path": "notes.txt/x", "content": "x"}, "notes.txt/x: not a directory"},
	} {
		before := snapshot(t, s.base)
		_, err := call(t, ctx, tool("write"), tt.args)
		if err == nil || err.Error() != tt.want {
			t.Errorf("write %.80v: %v, want %q", tt.args, err, tt.want)
		}
		if after := snapshot(t, s.base); !cmp.Equal(before, after) {
			t.Errorf("write %.80v changed the sandbox", tt.args)
		}
	}
	if _, err := call(t, ctx, tool("write"), map[string]any{"path": "max.txt", "content": strings.Repeat("x", MaxWriteBytes)}); err != nil {
		t.Errorf("write of exactly the maximum: %v", err)
	}
}

// A hard link planted in the workspace to a file outside it must not let
// write change that file (it once did).
func TestWriteRefusesHardLinks(t *testing.T) {
	s := newSandbox(t)
	ctx := s.ctx()
	outside := filepath.Join(filepath.Dir(s.ws), "outside-secret.txt") // same file system
	if strings.HasPrefix(outside, s.ws+string(filepath.Separator)) {
		t.Fatal("the outside file is inside the workspace")
	}
	if err := os.WriteFile(outside, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(s.ws, "planted.txt")); err != nil {
		t.Fatalf("cannot make a hard link: %v", err)
	}
	for _, appendMode := range []bool{false, true} {
		_, err := call(t, ctx, tool("write"), map[string]any{"path": "planted.txt", "content": "overwritten", "append": appendMode})
		if err == nil || !strings.Contains(err.Error(), "hard links") {
			t.Errorf("write (append %v) through a hard link: %v", appendMode, err)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep me" {
		t.Errorf("the outside file changed: %q", b)
	}
}

// A hard link planted in the workspace to a file outside it (the gateway's
// config, say) must not let read return that file's content: the A2A
// reproduction of issue 30 read the config and the gateway token this way.
// Every range of the file is refused, and the content appears nowhere in
// the error.
func TestReadRefusesHardLinks(t *testing.T) {
	s := newSandbox(t)
	outside := filepath.Join(s.outside, "secret.txt")
	if err := os.Link(outside, filepath.Join(s.ws, "linked.txt")); err != nil {
		t.Fatalf("cannot make a hard link: %v", err)
	}
	for _, args := range []map[string]any{
		{"path": "linked.txt"},
		{"path": filepath.Join(s.ws, "linked.txt")},
		{"path": "linked.txt", "offset": 1, "limit": 1},
		{"path": "./sub/../linked.txt"},
	} {
		res, err := call(t, s.ctx(), tool("read"), args)
		want := "refusing to read " + args["path"].(string) + ": it has 2 hard links, and another one may be outside the workspace"
		if err == nil || err.Error() != want {
			t.Errorf("read %v = %v, %v; want error %q", args, res, err, want)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("read %v: the error shows the file: %v", args, err)
		}
	}
	// Once the outside link is gone the file is the workspace's own.
	if err := os.Remove(outside); err != nil {
		t.Fatal(err)
	}
	if res, err := call(t, s.ctx(), tool("read"), map[string]any{"path": "linked.txt"}); err != nil || !strings.Contains(res.Text, secret) {
		t.Errorf("read of the single-link file = %v, %v", res, err)
	}
}
