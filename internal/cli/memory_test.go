package cli

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMemoryAndSkillsCommands: `memory status`, `memory index` and
// `memory search` against a gateway with no embedding model (keyword
// search, said so), and `skills list` showing a ready skill and one
// missing a binary.
func TestMemoryAndSkillsCommands(t *testing.T) {
	g := startGateway(t, "")
	ws := filepath.Join(g.dir, "workspace")
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(ws, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("MEMORY.md", "# Memory\nThe staging database password rotates every Friday.\n")
	write("memory/2026-11-27.md", "# Notes\nShipped release 4.2 to the canary ring.\n")

	st := g.mustRun("memory", "status")
	for _, want := range []string{"Memory Search (main)\n", "Provider: none (requested: openai)\n", "Indexed: 0/2 files · 0 chunks\n", "Dirty: yes\n",
		"Workspace: " + ws + "\n", "Embeddings: unavailable · keyword search only (no embedding provider: no API key for provider openai"} {
		if !strings.Contains(st, want) {
			t.Errorf("memory status lacks %q:\n%s", want, st)
		}
	}
	if out := g.mustRun("memory", "index"); !strings.Contains(out, "Memory index updated (main): 2 files indexed.\n2 re-indexed, 0 unchanged, 0 removed") {
		t.Errorf("memory index:\n%s", out)
	}
	if st := g.mustRun("memory", "status"); !strings.Contains(st, "Indexed: 2/2 files · 2 chunks") || !strings.Contains(st, "Dirty: no") {
		t.Errorf("memory status after index:\n%s", st)
	}
	out := g.mustRun("memory", "search", "canary", "release")
	if !regexp.MustCompile(`^\d\.\d{3} memory/2026-11-27\.md:1-2\n# Notes\nShipped release 4\.2`).MatchString(out) {
		t.Errorf("memory search:\n%s", out)
	}
	js := decodeJSON(t, g.mustRun("--json", "memory", "search", "Friday password"))
	if js["mode"] != "fts-only" || js["provider"] != "none" {
		t.Errorf("memory search --json: %v", js)
	}
	if r := g.run("memory", "search", "x", "--agent", "ghost"); r.err == nil || !strings.Contains(r.errText(), "ghost") {
		t.Errorf("memory search for an unknown agent: %v %s", r.err, r.errText())
	}
	if out := g.mustRun("memory", "search", "zanzibar"); out != "No matches.\n" {
		t.Errorf("memory search with no match:\n%s", out)
	}

	if out := g.mustRun("skills", "list"); !strings.Contains(out, "No skills for agent main") {
		t.Errorf("skills list without skills:\n%s", out)
	}
	write("skills/release-notes/SKILL.md", "---\nname: release-notes\ndescription: Write release notes\n---\nSteps.\n")
	write("skills/needs-bin/SKILL.md", "---\nname: needs-bin\ndescription: Needs a tool\nmetadata: {\"openclaw\": {\"requires\": {\"bins\": [\"switchboard-no-such-binary\"]}}}\n---\n")
	out = g.mustRun("skills", "list")
	for _, want := range []string{"release-notes", "ready", "needs-bin", "missing bins: switchboard-no-such-binary", "openclaw-workspace"} {
		if !strings.Contains(out, want) {
			t.Errorf("skills list lacks %q:\n%s", want, out)
		}
	}
}

// TestDoctorMemoryStatusKeywordOnly: with the memory index but no
// embedding model, the Control UI's memory view reads a registered search
// runtime, provider "none" and embeddings not checked.
func TestDoctorMemoryStatusKeywordOnly(t *testing.T) {
	g := startGateway(t, "")
	js := decodeJSON(t, g.mustRun("call", "doctor.memory.status"))
	emb, _ := js["embedding"].(map[string]any)
	if js["provider"] != "none" || js["searchRuntimeRegistered"] != true || emb["ok"] != false || emb["checked"] != false {
		t.Errorf("doctor.memory.status = %v", js)
	}
}

// TestMemoryPrinters: memory status, index and search print the
// reference CLI's lines (labels, "N/M files · K chunks", its index
// completion line, "<score> <path>:<start>-<end>" hits, "No matches.").
func TestMemoryPrinters(t *testing.T) {
	for _, tc := range []struct {
		name  string
		print func(io.Writer, json.RawMessage) error
		raw   string
		want  string
	}{
		{"status hybrid", printMemoryStatus,
			`{"agentId":"ops","workspaceDir":"/w","files":3,"eligible":3,"chunks":7,"dirty":false,"mode":"hybrid","model":"openai/text-embedding-3-small","vectors":5,"requestedProvider":"openai"}`,
			"Memory Search (ops)\nProvider: openai (requested: openai)\nModel: text-embedding-3-small\nSources: memory\nIndexed: 3/3 files · 7 chunks\n" +
				"Dirty: no\nWorkspace: /w\nEmbeddings: ready · 5/7 chunks embedded\nFTS: ready\n"},
		{"index one file", printMemoryIndex,
			`{"agentId":"main","workspaceDir":"/w","files":1,"indexed":1,"chunks":2,"mode":"fts-only"}`,
			"Memory index updated (main): 1 file indexed.\n1 re-indexed, 0 unchanged, 0 removed · 2 chunks written\n"},
		{"index nothing", printMemoryIndex,
			`{"agentId":"main","workspaceDir":"/w","files":0,"mode":"fts-only"}`,
			"No memory files found in /w; nothing indexed (main).\n0 re-indexed, 0 unchanged, 0 removed · 0 chunks written\n"},
		{"index hybrid", printMemoryIndex,
			`{"agentId":"main","workspaceDir":"/w","files":2,"unchanged":2,"mode":"hybrid","model":"emb/m1","embedded":4}`,
			"Memory index updated (main): 2 files indexed.\n0 re-indexed, 2 unchanged, 0 removed · 0 chunks written\nEmbeddings: 4 chunks embedded with emb/m1\n"},
		{"search", printMemorySearch,
			`{"results":[{"path":"MEMORY.md","startLine":1,"endLine":2,"score":0.65446,"snippet":"a\nb"},{"path":"memory/x.md","startLine":3,"endLine":3,"score":0.1,"snippet":"c\n"}]}`,
			"0.654 MEMORY.md:1-2\na\nb\n\n0.100 memory/x.md:3-3\nc\n"},
		{"search with a warning", printMemorySearch, `{"results":[],"warnings":["embeddings failed"]}`,
			"warning: embeddings failed\nNo matches.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := tc.print(&b, json.RawMessage(tc.raw)); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got:\n%q\nwant:\n%q", b.String(), tc.want)
			}
		})
	}
}
