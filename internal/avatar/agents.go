package avatar

import (
	"slices"

	"github.com/switchboardhq/switchboard/internal/settings"
)

// FromSettings is the /avatar route's view of the agents: the default
// agent and the configured ones are known, each with its workspace and
// configured identity.
func FromSettings(set *settings.Settings) Resolver {
	def, ids := set.DefaultAgent, set.AgentIDs()
	return func(id string) Agent {
		if id != def && !slices.Contains(ids, id) {
			return Agent{}
		}
		a := set.Agent(id)
		return Agent{Known: true, Workspace: a.Workspace, Avatar: a.Avatar, Emoji: a.Emoji}
	}
}
