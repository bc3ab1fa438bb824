package sessions

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/tools"
)

func TestAgentsList(t *testing.T) {
	agents := `agents: {list: [
		{id: "main", name: " Main Agent ", subagents: {allowAgents: ["research", "Zeta", " ", "main", "research"]}},
		{id: "research", name: "Researcher"},
		{id: "ops"},
		{id: "any", subagents: {allowAgents: [" * "]}},
		{id: "b-2"}, {id: "b_2"}, {id: "b2"}, {id: "ab"},
	]}`
	type agent = map[string]any
	tests := []struct {
		name   string
		cfg    string
		caller tools.Caller
		want   map[string]any
	}{
		{"no agents configured", "", mainCaller, map[string]any{
			"requester": "main", "allowAny": false,
			"agents": []any{agent{"id": "main", "configured": false}},
		}},
		{"no session", "", noSession, map[string]any{
			"requester": "main", "allowAny": false,
			"agents": []any{agent{"id": "main", "configured": false}},
		}},
		{"allow list", "{" + agents + "}", mainCaller, map[string]any{
			"requester": "main", "allowAny": false,
			"agents": []any{
				agent{"id": "main", "name": "Main Agent", "configured": true},
				agent{"id": "research", "name": "Researcher", "configured": true},
				agent{"id": "zeta", "configured": false},
			},
		}},
		{"empty allow list: only the requester", "{" + agents + "}", tools.Caller{SessionKey: "agent:ops:main"}, map[string]any{
			"requester": "ops", "allowAny": false,
			"agents": []any{agent{"id": "ops", "configured": true}},
		}},
		{"allow any: every configured agent, requester first, then locale order", "{" + agents + "}",
			tools.Caller{SessionKey: "agent:any:main"}, map[string]any{
				"requester": "any", "allowAny": true,
				"agents": []any{
					agent{"id": "any", "configured": true},
					agent{"id": "ab", "configured": true},
					agent{"id": "b_2", "configured": true},
					agent{"id": "b-2", "configured": true},
					agent{"id": "b2", "configured": true},
					agent{"id": "main", "name": "Main Agent", "configured": true},
					agent{"id": "ops", "configured": true},
					agent{"id": "research", "name": "Researcher", "configured": true},
				},
			}},
		{"agent override wins over the key", "{" + agents + "}", tools.Caller{SessionKey: "agent:main:main", AgentID: "Research"}, map[string]any{
			"requester": "research", "allowAny": false,
			"agents": []any{agent{"id": "research", "name": "Researcher", "configured": true}},
		}},
		{"unconfigured requester", "{" + agents + "}", tools.Caller{SessionKey: "agent:ghost:main"}, map[string]any{
			"requester": "ghost", "allowAny": false,
			"agents": []any{agent{"id": "ghost", "configured": false}},
		}},
		{"legacy key belongs to main", "{" + agents + "}", tools.Caller{SessionKey: "discord:group:dev"}, map[string]any{
			"requester": "main", "allowAny": false,
			"agents": []any{
				agent{"id": "main", "name": "Main Agent", "configured": true},
				agent{"id": "research", "name": "Researcher", "configured": true},
				agent{"id": "zeta", "configured": false},
			},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.cfg)
			d := e.mustCall(tt.caller, AgentsListToolName, map[string]any{"ignored": true})
			if diff := cmp.Diff(tt.want, d); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestAgentsListText(t *testing.T) {
	e := newEnv(t, "")
	res, err := e.tool(AgentsListToolName).Call(tools.WithCaller(t.Context(), mainCaller), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "requester": "main",
  "allowAny": false,
  "agents": [
    {
      "id": "main",
      "configured": false
    }
  ]
}`
	if res.Text != want {
		t.Errorf("text:\n%s\nwant:\n%s", res.Text, want)
	}
}
