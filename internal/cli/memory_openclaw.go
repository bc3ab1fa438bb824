package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchboardhq/switchboard/internal/provider/registry"
	"github.com/switchboardhq/switchboard/internal/settings"
)

// The reference CLI's `memory status|index|search` are not gateway
// clients: they open a memory index of their own, in-process, from the
// config file and state dir their environment names. `memory openclaw-env`
// writes a reference config naming Switchboard's agents, their workspaces
// and memory.search, in a state dir of its own, so those commands index
// and search the same memory files Switchboard's agents write.

// openclawDirName is the reference CLI's state dir inside Switchboard's.
const openclawDirName = "openclaw"

func newMemoryOpenClawEnvCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "openclaw-env",
		Short: "Point the reference CLI's `openclaw memory status|index|search` at these agents' memory files",
		Long: `Writes <state dir>/openclaw/openclaw.json, a config for the reference
(OpenClaw) CLI naming each agent's workspace and memory.search as Switchboard
resolves them, and prints the environment that selects it:

  eval "$(switchboard memory openclaw-env)"
  openclaw memory index && openclaw memory search "release train"

The reference CLI keeps its own index (SQLite) in <state dir>/openclaw, never
in ~/.openclaw; Switchboard's files and store are only read. Run it again
after changing agents or memory.search.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, err := writeOpenClawMemoryEnv(settings.Env(g.env))
			if err != nil {
				return fmt.Errorf("memory openclaw-env: %w", err)
			}
			if g.json {
				return writeJSON(cmd.OutOrStdout(), env)
			}
			return printOpenClawEnv(cmd.OutOrStdout(), env)
		},
	}
}

// openclawEnv is the environment that points the reference CLI at the
// generated config.
type openclawEnv struct {
	StateDir   string `json:"OPENCLAW_STATE_DIR"`
	ConfigPath string `json:"OPENCLAW_CONFIG_PATH"`
}

func printOpenClawEnv(w io.Writer, env openclawEnv) error {
	_, err := fmt.Fprintf(w, "export OPENCLAW_STATE_DIR=%s\nexport OPENCLAW_CONFIG_PATH=%s\n"+
		"# then: openclaw memory status | openclaw memory index | openclaw memory search QUERY\n",
		shellQuote(env.StateDir), shellQuote(env.ConfigPath))
	return err
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeOpenClawMemoryEnv loads the local config and writes the reference
// CLI's config for it into <state dir>/openclaw.
func writeOpenClawMemoryEnv(env settings.Env) (openclawEnv, error) {
	paths, err := settings.ResolvePaths(env)
	if err != nil {
		return openclawEnv{}, err
	}
	set, _, err := settings.Load(paths.ConfigPath, env)
	if err != nil {
		return openclawEnv{}, err
	}
	doc, err := openclawMemoryConfig(set, registry.New(set).EmbedReady())
	if err != nil {
		return openclawEnv{}, err
	}
	stateDir, err := filepath.Abs(filepath.Join(paths.StateDir, openclawDirName))
	if err != nil {
		return openclawEnv{}, err
	}
	out := openclawEnv{StateDir: stateDir, ConfigPath: filepath.Join(stateDir, "openclaw.json")}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return openclawEnv{}, err
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return openclawEnv{}, err
	}
	return out, writeFileAtomic(out.ConfigPath, append(b, '\n'), 0o600)
}

// openclawConfig is the part of the reference's openclaw.json that its
// memory commands read.
type openclawConfig struct {
	Agents openclawAgents `json:"agents"`
	Memory struct {
		Search openclawMemorySearch `json:"search"`
	} `json:"memory"`
	Models *openclawModels `json:"models,omitempty"`
}

// openclawAgents is the reference's keyed agent roster. With more than one
// agent the reference's memory search needs --agent (its own rule for an
// explicit roster); status and index cover every agent.
type openclawAgents struct {
	Ownership string                         `json:"ownership"`
	Defaults  openclawAgentDefaults          `json:"defaults"`
	Entries   map[string]openclawAgentConfig `json:"entries"`
}

type openclawAgentDefaults struct {
	SystemAgent struct {
		AgentID string `json:"agentId"`
	} `json:"systemAgent"`
}

type openclawAgentConfig struct {
	Workspace string `json:"workspace"`
}

// openclawMemorySearch is memory.search. Sources is "memory" alone and
// rememberAcrossConversations off: Switchboard indexes memory files, not
// transcripts, and the reference's transcripts live in its own state dir.
type openclawMemorySearch struct {
	Enabled                     *bool    `json:"enabled,omitempty"`
	Sources                     []string `json:"sources"`
	RememberAcrossConversations bool     `json:"rememberAcrossConversations"`
	Provider                    string   `json:"provider"`
	Model                       string   `json:"model,omitempty"`
}

type openclawModels struct {
	Providers map[string]openclawProvider `json:"providers"`
}

// openclawProvider is a models.providers entry as the reference validates
// it: a custom provider must list its models. APIKey is copied as written
// (a "${ENV}" reference stays one; the reference expands it the same way).
type openclawProvider struct {
	BaseURL string            `json:"baseUrl,omitempty"`
	APIKey  string            `json:"apiKey,omitempty"`
	API     string            `json:"api"`
	Headers map[string]string `json:"headers,omitempty"`
	Models  []openclawModel   `json:"models"`
}

type openclawModel struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// openclawMemoryConfig is the reference config for set: each agent with the
// workspace Switchboard gives it, and memory.search with the embedding
// model Switchboard uses, or provider "none" (keyword search only, as
// Switchboard) when embedErr says it has none.
func openclawMemoryConfig(set *settings.Settings, embedErr error) (openclawConfig, error) {
	var out openclawConfig
	ids := set.AgentIDs()
	if len(ids) == 0 {
		ids = []string{set.DefaultAgent}
	}
	out.Agents.Ownership = "explicit"
	out.Agents.Defaults.SystemAgent.AgentID = set.DefaultAgent
	out.Agents.Entries = make(map[string]openclawAgentConfig, len(ids))
	for _, id := range ids {
		ws, err := filepath.Abs(set.Agent(id).Workspace)
		if err != nil {
			return out, fmt.Errorf("agent %s workspace: %w", id, err)
		}
		out.Agents.Entries[id] = openclawAgentConfig{Workspace: ws}
	}
	ms := &out.Memory.Search
	ms.Sources = []string{"memory"}
	ms.Provider = "none"
	if e := set.MemorySearch.Enabled; e != nil && !*e {
		ms.Enabled = e
		return out, nil
	}
	if embedErr != nil {
		return out, nil
	}
	provID, model := set.EmbeddingRef()
	ms.Provider, ms.Model = provID, model
	if p, ok := set.ProviderAsWritten(provID); ok {
		resolved, _ := set.Provider(provID) // its api, with the default filled in
		out.Models = &openclawModels{Providers: map[string]openclawProvider{provID: {
			BaseURL: p.BaseURL, APIKey: p.APIKey, API: resolved.API, Headers: p.Headers,
			Models: []openclawModel{{ID: model, Name: model}},
		}}}
	}
	return out, nil
}
