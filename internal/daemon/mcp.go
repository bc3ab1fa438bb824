package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/gateway"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/mcp"
	"github.com/switchboardhq/switchboard/internal/mcpclient"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/toolbox"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// newMCPServer builds the MCP server of the gateway port's /mcp: the
// session tools as agents get them, run as the session the client chose
// (default: the default agent's main session), with the operator's reach
// when operator is set (mcp.serve.reach).
func newMCPServer(gw *gateway.Server, runner *agent.Runner, box *toolbox.Box, version string, operator bool, d *Daemon) (*mcp.Server, error) {
	srv, err := mcp.New(mcp.Config{
		Tools: box.All,
		Caller: func(key string) (tools.Caller, error) {
			k := gw.CanonicalKey(cmp.Or(key, sessionkey.DefaultMainKey))
			if k == "" {
				return tools.Caller{}, fmt.Errorf("invalid session key %q", key)
			}
			return tools.Caller{SessionKey: k, AgentID: sessionkey.AgentID(k), Channel: sessionkey.InternalChannel, Operator: operator}, nil
		},
		WatchSession: func(key string) func(context.Context, func()) {
			k := gw.CanonicalKey(key)
			if k == "" {
				return nil
			}
			// The position is taken now, while the subscribe is answered,
			// not when the loop's goroutine first runs: a run that ends in
			// between is a change too.
			from := runner.SessionPosition()
			return func(ctx context.Context, changed func()) {
				for ev, err := range runner.WatchSession(ctx, k, from) {
					if err != nil {
						return // ctx ended: the last subscriber left
					}
					if transcriptGrew(ev) {
						changed()
					}
				}
			}
		},
		Exists: func(ctx context.Context, key string) (bool, error) {
			k := gw.CanonicalKey(key)
			if k == "" {
				return false, nil
			}
			_, err := d.Store.GetSession(ctx, k)
			if errors.Is(err, store.ErrNotFound) {
				return false, nil
			}
			return err == nil, err
		},
		Version: version,
		Logger:  d.log,
	})
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	return srv, nil
}

// transcriptGrew reports whether a run event means the session's
// transcript has new messages: a turn's input at its start, tool results,
// the run's end, and posts.
func transcriptGrew(ev agent.Event) bool {
	switch ev.Stream {
	case agent.StreamPost:
		return true
	case agent.StreamLifecycle:
		return ev.Phase == agent.PhaseStart || ev.Phase == agent.PhaseEnd
	case agent.StreamTool:
		return ev.Phase == agent.PhaseResult
	}
	return false
}

// mcpStatus converts the MCP client's server states for mcp.list.
func mcpStatus(m *mcpclient.Manager) []wire.MCPServer {
	var out []wire.MCPServer
	for _, s := range m.Status() {
		if s.Tools == nil {
			s.Tools = []string{}
		}
		out = append(out, wire.MCPServer{
			Name: s.Name, Transport: s.Transport, Target: s.Target, State: s.State,
			Tools: s.Tools, PID: s.PID, Restarts: s.Restarts, LastError: s.LastError,
		})
	}
	return out
}
