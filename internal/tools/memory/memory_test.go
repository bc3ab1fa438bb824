package memory

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/memory"
	"github.com/switchboardhq/switchboard/internal/store/sqlite"
	"github.com/switchboardhq/switchboard/internal/tools"
)

func setup(t *testing.T) (search, get tools.Tool, ws string) {
	t.Helper()
	search, get, ws, _ = setupStore(t)
	return search, get, ws
}

func setupStore(t *testing.T) (search, get tools.Tool, ws string, st *sqlite.Store) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "db.sqlite"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ws = t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "memory"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "memory", "a.md"), []byte("alpha line\nbeta line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := All(memory.NewIndex(st))
	return ts[0], ts[1], ws, st
}

func run(t *testing.T, tool tools.Tool, key, ws string, args any) (map[string]any, error) {
	t.Helper()
	b, _ := json.Marshal(args)
	ctx := tools.WithCaller(context.Background(), tools.Caller{SessionKey: key, AgentID: "main", Workspace: ws})
	res, err := tool.Call(ctx, b)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(res.Text), &out); err != nil {
		t.Fatalf("result text %q: %v", res.Text, err)
	}
	return out, nil
}

func TestSearchTool(t *testing.T) {
	search, _, ws := setup(t)
	for _, tc := range []struct {
		name, key string
		args      map[string]any
		check     func(t *testing.T, out map[string]any, err error)
	}{
		{"direct chat cites", "agent:main:main", map[string]any{"query": "beta"}, func(t *testing.T, out map[string]any, err error) {
			hits, _ := out["results"].([]any)
			if err != nil || len(hits) != 1 {
				t.Fatalf("%v %v", out, err)
			}
			h := hits[0].(map[string]any)
			if h["citation"] != "memory/a.md#L1-L2" || !strings.HasSuffix(h["snippet"].(string), "\n\nSource: memory/a.md#L1-L2") {
				t.Errorf("hit %v", h)
			}
		}},
		{"group chat does not cite", "agent:main:telegram:group:42", map[string]any{"query": "beta"}, func(t *testing.T, out map[string]any, err error) {
			h := out["results"].([]any)[0].(map[string]any)
			if _, ok := h["citation"]; ok || strings.Contains(h["snippet"].(string), "Source:") {
				t.Errorf("hit %v", h)
			}
		}},
		{"missing query", "", map[string]any{}, func(t *testing.T, out map[string]any, err error) {
			if err == nil || err.Error() != "query required" || !tools.IsInputError(err) {
				t.Errorf("err = %v", err)
			}
		}},
		{"bad corpus", "", map[string]any{"query": "x", "corpus": "web"}, func(t *testing.T, out map[string]any, err error) {
			if !tools.IsInputError(err) {
				t.Errorf("err = %v", err)
			}
		}},
		{"sessions corpus unavailable", "", map[string]any{"query": "x", "corpus": "sessions"}, func(t *testing.T, out map[string]any, err error) {
			if err != nil || out["disabled"] != true || out["unavailable"] != true || out["warning"] == "" {
				t.Errorf("%v %v", out, err)
			}
		}},
		{"wiki corpus warns", "", map[string]any{"query": "beta", "corpus": "wiki"}, func(t *testing.T, out map[string]any, err error) {
			if hits, _ := out["results"].([]any); err != nil || len(hits) != 0 || out["warnings"] == nil {
				t.Errorf("%v %v", out, err)
			}
		}},
		{"all corpus searches memory and warns", "", map[string]any{"query": "beta", "corpus": "all"}, func(t *testing.T, out map[string]any, err error) {
			if hits, _ := out["results"].([]any); err != nil || len(hits) != 1 || out["warnings"] == nil {
				t.Errorf("%v %v", out, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, search, tc.key, ws, tc.args)
			tc.check(t, out, err)
		})
	}
	if _, err := run(t, search, "", "", map[string]any{"query": "x"}); err == nil || !strings.Contains(err.Error(), "no workspace") {
		t.Errorf("no workspace: %v", err)
	}
}

func TestGetTool(t *testing.T) {
	_, get, ws := setup(t)
	out, err := run(t, get, "", ws, map[string]any{"path": "memory/a.md", "from": 2})
	if err != nil || out["status"] != "ok" || out["text"] != "beta line" || out["from"] != 2.0 || out["lines"] != 1.0 {
		t.Fatalf("get = %v %v", out, err)
	}
	if _, err := run(t, get, "", ws, map[string]any{}); err == nil || err.Error() != "path required" {
		t.Fatalf("missing path: %v", err)
	}
	out, _ = run(t, get, "", ws, map[string]any{"path": "../etc/passwd"})
	if out["status"] != "error" || out["code"] != "MEMORY_PATH_NOT_ALLOWED" {
		t.Fatalf("outside path: %v", out)
	}
	out, _ = run(t, get, "", ws, map[string]any{"path": "memory/a.md", "corpus": "wiki"})
	if out["status"] != "not_found" {
		t.Fatalf("wiki corpus: %v", out)
	}
}

// TestSearchScopesByWorkspace: one agent's two workspaces (its own and a
// sandbox's) are indexed apart.
func TestSearchScopesByWorkspace(t *testing.T) {
	search, _, ws, st := setupStore(t)
	other := t.TempDir()
	if out, err := run(t, search, "", ws, map[string]any{"query": "alpha"}); err != nil || len(out["results"].([]any)) != 1 {
		t.Fatalf("own workspace: %v %v", out, err)
	}
	if out, err := run(t, search, "", other, map[string]any{"query": "alpha"}); err != nil || len(out["results"].([]any)) != 0 {
		t.Fatalf("other workspace sees the first one's notes: %v %v", out, err)
	}
	// The other workspace's sync left the first one's index alone.
	files, err := st.MemoryFiles(context.Background(), indexScope("main", ws))
	if err != nil || len(files) != 1 || files[0].Path != "memory/a.md" {
		t.Fatalf("first workspace's index after the other's sync: %+v %v", files, err)
	}
}
