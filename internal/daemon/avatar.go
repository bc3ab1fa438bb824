package daemon

import (
	"slices"

	"github.com/switchboardhq/switchboard/internal/avatar"
	"github.com/switchboardhq/switchboard/internal/settings"
)

// agentAvatars is the /avatar route's view of the agents: the default
// agent and the configured ones are known, each with its workspace and
// configured identity.
func agentAvatars(set *settings.Settings) avatar.Resolver {
	def, ids := set.DefaultAgent, set.AgentIDs()
	return func(id string) avatar.Agent {
		if id != def && !slices.Contains(ids, id) {
			return avatar.Agent{}
		}
		a := set.Agent(id)
		return avatar.Agent{Known: true, Workspace: a.Workspace, Avatar: a.Avatar, Emoji: a.Emoji}
	}
}
