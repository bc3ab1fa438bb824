package daemon

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/config"
)

// bootstrapFiles are the workspace files that make up an agent's base system
// prompt, in order (the reference seeds its workspaces with these).
var bootstrapFiles = []string{"AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md"}

// maxBootstrapBytes caps each file's contribution to the prompt.
const maxBootstrapBytes = 64 << 10

// systemPrompt builds a run's base system prompt from the bootstrap files
// in its agent's workspace; missing files are skipped.
func systemPrompt(cfg *config.Config) func(agent.RunInfo) string {
	return func(info agent.RunInfo) string {
		dir := cfg.AgentWorkspace(info.AgentID)
		if dir == "" {
			return ""
		}
		var parts []string
		for _, name := range bootstrapFiles {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || len(strings.TrimSpace(string(b))) == 0 {
				continue
			}
			if len(b) > maxBootstrapBytes {
				b = b[:maxBootstrapBytes]
			}
			parts = append(parts, "## "+name+"\n\n"+strings.TrimSpace(string(b)))
		}
		return strings.Join(parts, "\n\n")
	}
}
