package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/config"
)

// A bootstrap file hard-linked to a file outside the workspace (the
// config with its tokens) is left out of the system prompt, as the read
// tool refuses it; the other bootstrap files still make the prompt.
func TestSystemPromptSkipsHardLinkedFiles(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(dir, "switchboard.json5")
	if err := os.WriteFile(secretFile, []byte(`{gateway: {auth: {token: "GATEWAY-TOKEN-xyz"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secretFile, filepath.Join(ws, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "SOUL.md"), []byte("be kind"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Parse("t.json5", fmt.Appendf(nil, `{agents: {defaults: {workspace: %q}}}`, ws), config.MapEnv(map[string]string{"HOME": dir}))
	if err != nil {
		t.Fatal(err)
	}
	got := systemPrompt(cfg)(agent.RunInfo{AgentID: "main"})
	if strings.Contains(got, "GATEWAY-TOKEN") || strings.Contains(got, "AGENTS.md") {
		t.Errorf("the hard-linked AGENTS.md reached the prompt: %q", got)
	}
	if got != "## SOUL.md\n\nbe kind" {
		t.Errorf("prompt = %q, want only SOUL.md", got)
	}
}
