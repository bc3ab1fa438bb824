package avatar

import (
	"slices"

	"github.com/switchboardhq/switchboard/internal/config"
)

// FromConfig is the /avatar route's view of the agents: the default
// agent and the configured ones are known, each with its workspace and
// configured identity.
func FromConfig(cfg *config.Config) Resolver {
	def, ids := cfg.DefaultAgentID(), cfg.AgentIDs()
	return func(id string) Agent {
		if id != def && !slices.Contains(ids, id) {
			return Agent{}
		}
		e, _ := cfg.Agent(id)
		return Agent{Known: true, Workspace: cfg.AgentWorkspace(id), Avatar: e.Identity.Avatar, Emoji: e.Identity.Emoji}
	}
}
