package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/store"
)

// StopCommand is the stop reason of a run that was a chat command the
// gateway answered itself (/context, /new, /queue …), not a model turn.
const StopCommand = "command"

// EndCommand records runID as a run of sessionKey that ended ok: a chat
// command answered without a model turn acknowledged runID, and agent.wait
// on it reports it final, as the reference's does. Call it once the
// command's reply is in the transcript, so that a waiter that then reads
// the history finds it. A run id already known (a repeated send, or the
// text after /new that runs under the same id) is left as it is.
func (r *Runner) EndCommand(ctx context.Context, runID, sessionKey, agentID string) error {
	if runID == "" {
		return nil
	}
	sessionID := ""
	switch sess, err := r.cfg.Store.GetSession(ctx, sessionKey); {
	case err == nil:
		sessionID, agentID = sess.SessionID, sess.AgentID
	case !errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("agent.EndCommand: %w", err)
	}
	raw, err := json.Marshal(&Input{RunID: runID, SessionKey: sessionKey, AgentID: agentID})
	if err != nil {
		return fmt.Errorf("agent.EndCommand: %w", err)
	}
	now := r.runCreatedAt()
	run := &store.Run{RunID: runID, SessionKey: sessionKey, SessionID: sessionID, AgentID: agentID,
		Status: store.RunOK, StopReason: StopCommand, Input: raw, CreatedAt: now, StartedAt: now, EndedAt: now}
	switch err := r.cfg.Store.CreateRun(ctx, run); {
	case errors.Is(err, store.ErrConflict):
		return nil
	case err != nil:
		return fmt.Errorf("agent.EndCommand: %w", err)
	}
	r.wakeWaiters(runID)
	return nil
}
