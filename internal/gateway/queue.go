package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"maps"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/store"
)

// cancelledShown bounds the cancelled inputs chat.history lists.
const cancelledShown = 20

// sessionQueue is a session's stored /queue override, kept in the session
// entry under the reference's SessionEntry names.
type sessionQueue struct {
	QueueMode       string `json:"queueMode,omitempty"`
	QueueDebounceMs *int   `json:"queueDebounceMs,omitempty"`
	QueueCap        *int   `json:"queueCap,omitempty"`
	QueueDrop       string `json:"queueDrop,omitempty"`
}

func queueOverride(sess *store.Session) policy.QueueOverride {
	var q sessionQueue
	if sess == nil || len(sess.Extra) == 0 || json.Unmarshal(sess.Extra, &q) != nil {
		return policy.QueueOverride{}
	}
	o := policy.QueueOverride{DebounceMs: q.QueueDebounceMs, Cap: q.QueueCap}
	o.Mode, _ = policy.NormalizeQueueMode(q.QueueMode)
	o.Drop, _ = policy.NormalizeQueueDrop(q.QueueDrop)
	return o
}

// setQueueOverride writes o into the session entry's extra fields.
func setQueueOverride(sess *store.Session, o policy.QueueOverride) error {
	m := map[string]json.RawMessage{}
	if len(sess.Extra) > 0 {
		if err := json.Unmarshal(sess.Extra, &m); err != nil {
			return err
		}
	}
	for _, k := range []string{"queueMode", "queueDebounceMs", "queueCap", "queueDrop"} {
		delete(m, k)
	}
	b, err := json.Marshal(sessionQueue{QueueMode: string(o.Mode), QueueDebounceMs: o.DebounceMs, QueueCap: o.Cap, QueueDrop: string(o.Drop)})
	if err != nil {
		return err
	}
	var add map[string]json.RawMessage
	if err := json.Unmarshal(b, &add); err != nil {
		return err
	}
	maps.Copy(m, add)
	if len(m) == 0 {
		sess.Extra = nil
		return nil
	}
	sess.Extra, err = json.Marshal(m)
	return err
}

// queueSettings resolves what a message to key does when the session is
// busy: the request's queueMode, the session's /queue override, the
// channel's and the configured messages.queue, the defaults.
func (s *Server) queueSettings(ctx context.Context, key, requestMode, channel string) (policy.QueueSettings, error) {
	sess, err := s.cfg.Store.GetSession(ctx, key)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return policy.QueueSettings{}, err
	}
	return policy.ResolveQueue(policy.QueueInput{
		Request: requestMode, Session: queueOverride(sess), Channel: channel, Config: s.conf.Queue,
	}), nil
}

// applyQueue stores the resolved settings on the input.
func applyQueue(in *agent.Input, q policy.QueueSettings) {
	in.QueueMode, in.QueueCap, in.QueueDrop, in.QueueDebounceMs = string(q.Mode), q.Cap, string(q.Drop), q.DebounceMs
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
			return setQueueOverride(x, cmd.Apply(queueOverride(x)))
		}); err != nil {
			return nil, err
		}
	} else if _, err := s.cfg.Store.GetSession(ctx, key); errors.Is(err, store.ErrNotFound) {
		return wire.ChatSendResult{RunID: runID, Status: "ok"}, nil // nowhere to reply
	}
	if _, err := s.Inject(ctx, Injection{SessionKey: key, Text: cmd.Reply(cur), IdempotencyKey: runID + ":reply", RunID: runID}); err != nil {
		return nil, err
	}
	return wire.ChatSendResult{RunID: runID, Status: "ok"}, nil
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
