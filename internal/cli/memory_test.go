package cli

import (
	"os"
	"path/filepath"
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
	for _, want := range []string{"Agent:", "main", "Indexed:", "0 files", "files changed since the last index", "keywords only"} {
		if !strings.Contains(st, want) {
			t.Errorf("memory status lacks %q:\n%s", want, st)
		}
	}
	if out := g.mustRun("memory", "index"); !strings.Contains(out, "2 files (2 re-indexed, 0 unchanged, 0 removed)") {
		t.Errorf("memory index:\n%s", out)
	}
	if st := g.mustRun("memory", "status"); !strings.Contains(st, "2 files") || !strings.Contains(st, "up to date") {
		t.Errorf("memory status after index:\n%s", st)
	}
	out := g.mustRun("memory", "search", "canary", "release")
	if !strings.Contains(out, "memory/2026-11-27.md#L1-L2") || !strings.Contains(out, "Shipped release 4.2") {
		t.Errorf("memory search:\n%s", out)
	}
	js := decodeJSON(t, g.mustRun("--json", "memory", "search", "Friday password"))
	if js["mode"] != "fts-only" || js["provider"] != "none" {
		t.Errorf("memory search --json: %v", js)
	}
	if r := g.run("memory", "search", "x", "--agent", "ghost"); r.err == nil || !strings.Contains(r.errText(), "ghost") {
		t.Errorf("memory search for an unknown agent: %v %s", r.err, r.errText())
	}
	if out := g.mustRun("memory", "search", "zanzibar"); !strings.Contains(out, "No matches (fts-only search).") {
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
