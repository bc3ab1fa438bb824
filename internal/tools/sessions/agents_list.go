package sessions

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// AgentsListToolName is the wire name of agents_list.
const AgentsListToolName = "agents_list"

var agentsListSchema = json.RawMessage(`{
  "type": "object",
  "properties": {}
}`)

type agentsListTool struct{ t *Tools }

func (agentsListTool) Name() string  { return AgentsListToolName }
func (agentsListTool) Label() string { return "Agents" }
func (agentsListTool) Description() string {
	return "List agent ids you can target with sessions_spawn (based on allowlists)."
}
func (agentsListTool) Schema() json.RawMessage { return agentsListSchema }

func (a agentsListTool) Call(ctx context.Context, _ json.RawMessage) (*tools.Result, error) {
	return tools.JSONResult(a.t.agentsList(tools.CallerFrom(ctx))), nil
}

// agentsListResult is agents_list's payload.
type agentsListResult struct {
	Requester string           `json:"requester"`
	AllowAny  bool             `json:"allowAny"`
	Agents    []agentsListItem `json:"agents"`
}

type agentsListItem struct {
	ID         string `json:"id"`
	Name       string `json:"name,omitempty"`
	Configured bool   `json:"configured"`
	// Remote marks a remote A2A peer: not a sessions_spawn target, but
	// sessions_send reaches it at SessionKey ("a2a:<peer>").
	Remote     bool   `json:"remote,omitempty"`
	SessionKey string `json:"sessionKey,omitempty"`
}

// agentsList implements agents_list (docs/spec/reference-behaviour.md §11): the agent
// ids the caller may pass to sessions_spawn, the requester's own first.
func (t *Tools) agentsList(caller tools.Caller) *agentsListResult {
	// The caller's agent override, else the agent of its internal key
	// ("main" for a key without an agent prefix or no key at all).
	requester := sessionkey.NormalizeAgentID(cmp.Or(strings.TrimSpace(caller.AgentID),
		sessionkey.AgentID(t.alias.RequesterKey(caller.SessionKey))))

	// Configured ids and names, as the reference reads agents.list: ids
	// normalized, a later entry's name winning.
	var configured []string
	names := map[string]string{}
	for _, a := range t.d.Settings.Entries() {
		configured = append(configured, a.ID)
		if a.Name != "" {
			names[a.ID] = a.Name
		}
	}
	allowAny, ids := policy.AllowedSpawnTargets(requester, t.d.Settings.Agent(requester).AllowAgents, configured)
	res := &agentsListResult{Requester: requester, AllowAny: allowAny, Agents: make([]agentsListItem, len(ids))}
	for i, id := range ids {
		res.Agents[i] = agentsListItem{ID: id, Name: names[id], Configured: slices.Contains(configured, id)}
	}
	// The remote peers the caller may send to (the policy's checks of
	// sessions_send to a peer, but visibility: agents_list lists ids).
	if a2a := t.d.Settings.Sessions.A2A; t.d.Remote != nil && a2a.Enabled && a2a.MatchesAllow(requester) {
		for _, p := range t.d.Settings.RemotePeers {
			if t.d.Remote.HasPeer(p) && a2a.MatchesAllow(p) {
				res.Agents = append(res.Agents, agentsListItem{ID: RemotePrefix + p, Name: p, Configured: true, Remote: true, SessionKey: RemotePrefix + p})
			}
		}
	}
	return res
}
