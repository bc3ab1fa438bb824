package toolbox

import (
	"context"
	"log/slog"
	"slices"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/toolinvoke"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// NewInvoker returns the direct tool invoker: the tools a run of the
// target session would get (the agents' policy chain), plus, for the HTTP
// surface, the default HTTP deny list adjusted by gateway.tools.
func NewInvoker(set *settings.Settings, st store.Store, box *Box, ws *Workspaces, log *slog.Logger, overHTTP bool) (*toolinvoke.Invoker, error) {
	return toolinvoke.New(toolinvoke.Config{
		Tools: func(ctx context.Context, agentID, key string) *tools.Set {
			sess, err := st.GetSession(ctx, key)
			if err != nil {
				sess = nil // a new session: the policy of its key alone
			}
			return box.ForRun(ctx, agent.RunInfo{AgentID: agentID, SessionKey: key, Session: sess})
		},
		Workspace: func(ctx context.Context, agentID string) string {
			return ws.ForRun(ctx, agent.RunInfo{AgentID: agentID})
		},
		DefaultAgent: set.DefaultAgent,
		KnownAgent:   func(id string) bool { return slices.Contains(set.AgentIDs(), id) },
		GlobalScope:  set.Scope == sessionkey.ScopeGlobal,
		HTTP:         overHTTP,
		Allow:        set.GatewayToolsAllow,
		Deny:         set.GatewayToolsDeny,
		Logger:       log,
	})
}
