package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/tools/files"
)

// lsOutcome is one ls call's result as both implementations are compared:
// the text, the details, or the error.
type lsOutcome struct {
	Text    string         `json:"text,omitempty"`
	Details map[string]any `json:"details,omitempty"`
	Error   string         `json:"error,omitempty"`
}

// TestLsMatchesReference runs the reference's own ls tool (from npm
// openclaw's built code, under node 24) and Switchboard's ls on the same
// directory with the same arguments, and wants the same text and details:
// quoting, order, "/" for directories only, links, paging, the
// continuation line, the byte budget, limits the reference normalizes, and
// its readdir errors (whose absolute path Switchboard gives as the caller
// wrote it).
func TestLsMatchesReference(t *testing.T) {
	node, mjs, err := locateOpenClaw()
	if errors.Is(err, errNoCache) {
		skipOrFatal(t, err)
	} else if err != nil {
		t.Fatal(err)
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := lsReferenceFixture(t)
	calls := []map[string]any{
		{}, {"path": "."}, {"path": "sub"}, {"path": "empty"}, {"path": "long"},
		{"limit": 3}, {"limit": 3, "after": "<&>"}, {"limit": 2, "after": "dangling"}, {"after": "x"},
		{"limit": 0}, {"limit": -2, "after": "tab\t"}, {"limit": 2.9, "after": "sub"}, {"limit": "3"},
		{"limit": 1e300}, {"after": "\U0010FFFF"}, {"after": ""}, {"after": "new\nline"},
		{"path": "long", "limit": 1000}, {"path": "long", "after": "0150"},
		{"path": "missing"}, {"path": "notes.txt"}, {"path": "notes.txt/x"}, {"path": "ld"}, {"path": "dangling"},
	}
	raw, err := json.Marshal(calls)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(root, "internal", "interop", "testdata", "openclaw_ls.mjs"),
		"--dist", filepath.Join(filepath.Dir(mjs), "dist"), "--cwd", dir, string(raw))
	cmd.Dir = dir
	cmd.Env = openclawEnv(os.Environ())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("reference ls: %v\n%s", err, stderr.String())
	}
	var want []lsOutcome
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var o lsOutcome
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			t.Fatalf("reference ls line %q: %v", sc.Text(), err)
		}
		want = append(want, o)
	}
	if len(want) != len(calls) {
		t.Fatalf("reference ls: %d results for %d calls\n%s", len(want), len(calls), stderr.String())
	}
	ls := lsTool(t)
	sbCtx := tools.WithCaller(t.Context(), tools.Caller{Workspace: dir})
	for i, args := range calls {
		got := switchboardLs(t, sbCtx, ls, args)
		w := want[i]
		if p, _ := args["path"].(string); w.Error != "" {
			w.Error = strings.ReplaceAll(w.Error, "'"+filepath.Join(dir, p)+"'", "'"+p+"'")
		}
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("ls %q (-reference +switchboard):\n%s", args, diff)
		}
	}
}

// lsTool is Switchboard's ls.
func lsTool(t *testing.T) tools.Tool {
	t.Helper()
	for _, tl := range files.All() {
		if tl.Name() == files.LsToolName {
			return tl
		}
	}
	t.Fatal("files.All has no ls")
	return nil
}

// switchboardLs calls Switchboard's ls with args, its details as JSON
// gives them.
func switchboardLs(t *testing.T, ctx context.Context, ls tools.Tool, args map[string]any) lsOutcome {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ls.Call(ctx, raw)
	if err != nil {
		return lsOutcome{Error: err.Error()}
	}
	b, err := json.Marshal(res.Details)
	if err != nil {
		t.Fatal(err)
	}
	o := lsOutcome{Text: res.Text}
	if err := json.Unmarshal(b, &o.Details); err != nil {
		t.Fatal(err)
	}
	return o
}

// lsReferenceFixture is a directory whose names need JSON escaping, with
// dotfiles, directories, links and a directory of long names that takes
// several pages.
func lsReferenceFixture(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"dir", "sub/deep", "empty", "long"} {
		must(os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	for _, f := range []string{"dir-x", ".hidden", "B", "a", "\x01c", `back\slash`, `quo"te`, "new\nline", "<&>",
		"é", "x\u2028y\u2029", "tab\t", "\x7f", "ctl\b\f\r\x1f", "\U0001F600", "notes.txt", "sub/inner.txt"} {
		must(os.WriteFile(filepath.Join(dir, f), nil, 0o644))
	}
	must(os.Symlink("dir", filepath.Join(dir, "ld")))
	must(os.Symlink("nowhere", filepath.Join(dir, "dangling")))
	for i := range 400 {
		must(os.WriteFile(filepath.Join(dir, "long", fmt.Sprintf("%04d-%s", i, strings.Repeat("é", 120))), nil, 0o644))
	}
	return dir
}
