package automation

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/hooks"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
)

// NewWebhooks builds the webhook ingress (hooks) over the runner: agent
// actions become runs in their sessions (their replies delivered to a
// chat when the hook names one), wake actions a turn of the main session.
func NewWebhooks(set *settings.Settings, runner Runner, adm Admitter, st store.Store) (*hooks.Handler, error) {
	hc := set.Hooks
	maps := make([]hooks.Mapping, 0, len(hc.Mappings))
	for i, m := range hc.Mappings {
		hm := hooks.Mapping{
			ID: m.ID, MatchPath: m.Match.Path, MatchSource: m.Match.Source, Action: m.Action, WakeMode: m.WakeMode,
			Name: m.Name, AgentID: m.AgentID, SessionKey: m.SessionKey, SessionMode: m.SessionMode,
			MessageTemplate: m.MessageTemplate, TextTemplate: m.TextTemplate, Deliver: m.Deliver,
			Channel: m.Channel, To: m.To, Model: m.Model, Thinking: m.Thinking,
		}
		if hm.ID == "" {
			hm.ID = fmt.Sprintf("mapping-%d", i)
		}
		if m.TimeoutSeconds != nil {
			hm.TimeoutSeconds = *m.TimeoutSeconds
		}
		maps = append(maps, hm)
	}
	known := map[string]bool{}
	for _, a := range set.Entries() {
		known[a.ID] = true
	}
	known[set.DefaultAgent] = true
	return hooks.New(hooks.Config{
		Token: hc.Token, Path: hc.Path, MaxBodyBytes: hc.MaxBodyBytes,
		DefaultSessionKey: hc.DefaultSessionKey, AllowRequestSessionKey: hc.AllowRequestSessionKey,
		AllowedSessionKeyPrefixes: hc.AllowedSessionKeyPrefixes, AllowedAgentIDs: hc.AllowedAgentIDs,
		KnownAgent: func(id string) bool { return known[sessionkey.NormalizeAgentID(id)] },
		Mappings:   maps,
		Runner:     NewHooks(runner, adm, st, set.DefaultAgent, set.MainKey),
		NewID:      uuid.NewString,
	})
}
