package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
)

// elevatedCommand handles a standalone "/elevated [level]" message from
// an operator client: it shows or sets the session's elevated level (the
// default of exec's elevated escape) and replies in the session with the
// reference's texts. When the elevated gates refuse the operator
// (tools.elevated.allowFrom.webchat …) nothing changes and the reply says
// which gate and where to look. No agent run starts.
func (s *Server) elevatedCommand(ctx context.Context, key, agentID, runID, channel string, cmd policy.ElevatedCommand) (string, error) {
	ag := s.conf.Agent(agentOfKey(key, agentID))
	sandboxed := policy.ChildSandboxed(ag.SandboxMode, key, sessionkey.MainKey(ag.ID, s.conf.MainKey))
	sess, err := s.cfg.Store.GetSession(ctx, key)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	exists := sess != nil
	var reply string
	switch gate := ag.ElevatedGate(channel, ""); {
	case cmd.Raw != "":
		reply = cmd.Reply("")
	case gate != "":
		runtime := "direct"
		if sandboxed {
			runtime = "sandboxed"
		}
		reply = fmt.Sprintf("elevated is not available right now (runtime=%s).\nFailing gates: %s\nSee: switchboard sandbox explain --session %s", runtime, gate, key)
	case cmd.Show:
		cur := agent.SessionElevatedLevel(sess)
		if cur == "" {
			cur = policy.ElevatedOff
		}
		reply = cmd.Reply(cur)
		if !sandboxed {
			reply += "\n⚙️ Runtime is direct; sandboxing does not apply."
		}
	default:
		if _, err := s.cfg.Store.UpdateSession(ctx, key, true, func(x *store.Session) error {
			if x.SessionID == "" {
				s.initSession(x, agentOfKey(key, agentID))
			}
			x.UpdatedAt = s.now()
			return agent.SetSessionElevatedLevel(x, cmd.Level)
		}); err != nil {
			return "", err
		}
		reply = cmd.Reply(cmd.Level)
		exists = true
	}
	if !exists {
		return reply, nil // nowhere to record it
	}
	return reply, s.Reply(ctx, key, runID, reply)
}
