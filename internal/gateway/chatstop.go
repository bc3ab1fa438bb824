package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
)

// stopCommand answers /stop (and a message that is only an abort word):
// the sub-agents the session spawned that still run are killed (with
// their descendants), then its queued runs are dropped and its active run
// aborted. The reply is the reference's, recorded when the session exists
// (/stop starts none).
func (s *Server) stopCommand(ctx context.Context, cmd admission.Command) (string, error) {
	stopped := 0
	if s.cfg.Subagents != nil {
		kids, _, err := s.cfg.Subagents.List(ctx, cmd.SessionKey, true, 0)
		if err != nil {
			return "", fmt.Errorf("gateway: /stop: %w", err)
		}
		for _, k := range kids {
			ids, err := s.cfg.Subagents.Kill(ctx, k.ChildRunID)
			if err != nil {
				return "", fmt.Errorf("gateway: /stop: %w", err)
			}
			if len(ids) > 0 {
				stopped++
			}
		}
	}
	if _, err := s.cfg.Runner.AbortSession(ctx, cmd.SessionKey); err != nil {
		return "", fmt.Errorf("gateway: /stop: %w", err)
	}
	reply := abortReply(stopped)
	if err := s.Reply(ctx, cmd.SessionKey, cmd.RunID, reply); err != nil && !errors.Is(err, agent.ErrNoSession) {
		return "", err
	}
	return reply, nil
}

// abortReply is /stop's answer (the reference's text).
func abortReply(stoppedSubagents int) string {
	switch stoppedSubagents {
	case 0:
		return "⚙️ Agent was aborted."
	case 1:
		return "⚙️ Agent was aborted. Stopped 1 sub-agent."
	}
	return fmt.Sprintf("⚙️ Agent was aborted. Stopped %d sub-agents.", stoppedSubagents)
}
