package gateway

import (
	"context"
	"errors"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/store"
)

// cancelledShown bounds the cancelled inputs chat.history lists.
const cancelledShown = 20

// queueSettings resolves what a message to key does when the session is
// busy: the request's queueMode, the session's /queue override, the
// channel's and the configured messages.queue, the defaults.
func (s *Server) queueSettings(ctx context.Context, key, requestMode, channel string) (policy.QueueSettings, error) {
	sess, err := s.cfg.Store.GetSession(ctx, key)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return policy.QueueSettings{}, err
	}
	return policy.ResolveQueue(policy.QueueInput{
		Request: requestMode, Session: agent.SessionQueueOverride(sess), Channel: channel, Config: s.conf.Queue,
	}), nil
}

// queueCommand handles a standalone "/queue ..." message: it shows,
// changes or resets the session's queue override and replies in the
// session. No agent run starts.
func (s *Server) queueCommand(ctx context.Context, key, agentID, runID string, cmd policy.QueueCommand) (any, error) {
	cur, err := s.queueSettings(ctx, key, "", internalChannel)
	if err != nil {
		return nil, err
	}
	if !cmd.Show && len(cmd.Errors) == 0 {
		if _, err := s.cfg.Store.UpdateSession(ctx, key, true, func(x *store.Session) error {
			if x.SessionID == "" {
				s.initSession(x, agentOfKey(key, agentID))
			}
			x.UpdatedAt = s.now()
			return agent.SetSessionQueueOverride(x, cmd.Apply(agent.SessionQueueOverride(x)))
		}); err != nil {
			return nil, err
		}
	} else if _, err := s.cfg.Store.GetSession(ctx, key); errors.Is(err, store.ErrNotFound) {
		return s.commandDone(ctx, key, agentID, runID) // nowhere to reply
	}
	if _, err := s.Inject(ctx, Injection{SessionKey: key, Text: cmd.Reply(cur), IdempotencyKey: runID + ":reply", RunID: runID}); err != nil {
		return nil, err
	}
	return s.commandDone(ctx, key, agentID, runID)
}

// pendingInputs is chat.history's pendingInputs for key.
func (s *Server) pendingInputs(ctx context.Context, key string) (*wire.PendingInputs, error) {
	items, err := s.cfg.Runner.PendingInputs(ctx, key, cancelledShown)
	if err != nil {
		return nil, err
	}
	out := &wire.PendingInputs{Items: make([]wire.PendingInput, 0, min(len(items), wire.MaxPendingInputs)), Total: len(items)}
	for _, p := range items[:min(len(items), wire.MaxPendingInputs)] {
		out.Items = append(out.Items, wire.PendingInput{
			ID: p.RunID, AcceptedAt: p.AcceptedAt.UnixMilli(), State: p.State, Message: p.Message, RunID: p.RunID,
		})
	}
	return out, nil
}

func (s *Server) handleSessionsAbort(ctx context.Context, cl *call) (any, error) {
	var p wire.SessionsAbortParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	res := wire.ChatAbortResult{OK: true, RunIDs: []string{}}
	key := ""
	if p.Key != "" {
		key = s.canonicalKey(p.Key, s.agentID(p.AgentID))
	}
	if p.RunID != "" {
		run, err := s.cfg.Store.GetRun(ctx, p.RunID)
		if errors.Is(err, store.ErrNotFound) {
			return res, nil
		}
		if err != nil {
			return nil, err
		}
		if key != "" && run.SessionKey != key {
			return nil, invalid("runId does not belong to key " + key)
		}
		ok, err := s.cfg.Runner.Abort(ctx, p.RunID)
		if err != nil {
			return nil, err
		}
		if ok {
			res.Aborted, res.RunIDs = true, []string{p.RunID}
		}
		return res, nil
	}
	if key == "" {
		return nil, invalid("key or runId required")
	}
	if p.ClearQueued {
		ids, err := s.cfg.Runner.AbortQueued(ctx, key)
		if err != nil {
			return nil, err
		}
		res.RunIDs = append(res.RunIDs, ids...)
	}
	id, err := s.cfg.Runner.AbortActive(ctx, key)
	if err != nil {
		return nil, err
	}
	if id != "" {
		res.RunIDs = append(res.RunIDs, id)
	}
	res.Aborted = len(res.RunIDs) > 0
	return res, nil
}
