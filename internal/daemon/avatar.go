package daemon

import (
	"slices"

	"github.com/switchboardhq/switchboard/internal/avatar"
	"github.com/switchboardhq/switchboard/internal/config"
)

// agentAvatars is the /avatar route's view of the agents: the default
// agent and the configured ones are known, each with its workspace and
// configured identity.
func agentAvatars(cfg *config.Config) avatar.Resolver {
	def, ids := cfg.DefaultAgentID(), cfg.AgentIDs()
	return func(id string) avatar.Agent {
		if id != def && !slices.Contains(ids, id) {
			return avatar.Agent{}
		}
		e, _ := cfg.Agent(id)
		return avatar.Agent{Known: true, Workspace: cfg.AgentWorkspace(id), Avatar: e.Identity.Avatar, Emoji: e.Identity.Emoji}
	}
}
