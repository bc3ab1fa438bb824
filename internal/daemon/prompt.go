package daemon

import (
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/tools/files"
)

// bootstrapFiles are the workspace files that make up an agent's base system
// prompt, in order (the reference seeds its workspaces with these).
var bootstrapFiles = []string{"AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md"}

// maxBootstrapBytes caps each file's contribution to the prompt.
const maxBootstrapBytes = 64 << 10

// systemPrompt builds a run's base system prompt from the bootstrap files
// in its agent's workspace; missing files, and files the read tool would
// refuse (not regular, or with other hard links), are skipped.
func systemPrompt(cfg *config.Config) func(agent.RunInfo) string {
	return func(info agent.RunInfo) string {
		dir := cfg.AgentWorkspace(info.AgentID)
		if dir == "" {
			return ""
		}
		var parts []string
		for _, name := range bootstrapFiles {
			b, err := readBootstrap(filepath.Join(dir, name))
			if err != nil || len(strings.TrimSpace(string(b))) == 0 {
				continue
			}
			parts = append(parts, "## "+name+"\n\n"+strings.TrimSpace(string(b)))
		}
		return strings.Join(parts, "\n\n")
	}
}

// readBootstrap returns the first maxBootstrapBytes of the bootstrap file
// at path. Like the read tool it refuses a file that is not regular or has
// other hard links: its content reaches the model, and through it whoever
// drives the session.
func readBootstrap(path string) ([]byte, error) {
	if fi, err := os.Stat(path); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, os.ErrInvalid // a FIFO would block the open
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, os.ErrInvalid
	}
	if err := files.RefuseHardLinks("read", filepath.Base(path), fi); err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(f, maxBootstrapBytes))
}
