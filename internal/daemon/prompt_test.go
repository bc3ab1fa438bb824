package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/store"
)

// TestSystemPromptMemory: MEMORY.md follows the bootstrap files in private
// sessions only; a linked AGENTS.md is still followed, a linked MEMORY.md
// is not.
func TestSystemPromptMemory(t *testing.T) {
	ws := t.TempDir()
	cfg, _, err := config.Parse("t.json5", fmt.Appendf(nil, `{agents: {list: [{id: "main", default: true, workspace: %q}]}}`, ws), config.MapEnv(map[string]string{"HOME": t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	for name, content := range map[string]string{"AGENTS.md": "agent rules", "MEMORY.md": "linked memory"} {
		if err := os.WriteFile(filepath.Join(outside, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "AGENTS.md"), filepath.Join(ws, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "MEMORY.md"), filepath.Join(ws, "MEMORY.md")); err != nil {
		t.Fatal(err)
	}
	prompt := systemPrompt(cfg, nil)
	got := prompt(agent.RunInfo{AgentID: "main", SessionKey: "agent:main:main"})
	if got != "## AGENTS.md\n\nagent rules" {
		t.Fatalf("prompt with a linked MEMORY.md = %q", got)
	}
	if err := os.Remove(filepath.Join(ws, "MEMORY.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "MEMORY.md"), []byte("fact one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		info agent.RunInfo
		want bool
	}{
		{"main", agent.RunInfo{AgentID: "main", SessionKey: "agent:main:main"}, true},
		{"subagent", agent.RunInfo{AgentID: "main", SessionKey: "agent:main:subagent:abc"}, false},
		{"spawned", agent.RunInfo{AgentID: "main", SessionKey: "agent:main:x", Session: &store.Session{SpawnedBy: "agent:main:main"}}, false},
		{"group", agent.RunInfo{AgentID: "main", SessionKey: "agent:main:telegram:group:1"}, false},
		{"cron", agent.RunInfo{AgentID: "main", SessionKey: "agent:main:cron:job1"}, false},
	} {
		got := prompt(tc.info)
		if has := strings.Contains(got, "## MEMORY.md\n\nfact one"); has != tc.want {
			t.Errorf("%s: MEMORY.md in prompt = %v, want %v (%q)", tc.name, has, tc.want, got)
		}
	}
}
