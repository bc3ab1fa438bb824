package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// handleToolsInvoke runs one tool outside a run, through the same code path
// agents use: the caller is the given session (the session tools then apply
// its visibility), or nobody when no session is named.
func (s *Server) handleToolsInvoke(ctx context.Context, cl *call) (any, error) {
	var p wire.ToolsInvokeParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	var set *tools.Set
	if s.cfg.Tools != nil {
		set = s.cfg.Tools()
	}
	t, ok := set.Get(p.Tool)
	if !ok {
		return nil, invalid("unknown tool: " + p.Tool)
	}
	caller := tools.Caller{Channel: internalChannel}
	if p.SessionKey != "" {
		caller.SessionKey = s.canonicalKey(p.SessionKey, s.agentID(p.AgentID))
		caller.AgentID = sessionkey.AgentID(caller.SessionKey)
	} else if p.AgentID != "" {
		caller.AgentID = s.agentID(p.AgentID)
	}
	args := p.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	res, err := t.Call(tools.WithCaller(ctx, caller), args)
	if err != nil {
		res = tools.ErrorResult(p.Tool, err)
	}
	details, err := json.Marshal(res.Details)
	if err != nil {
		return nil, fmt.Errorf("tools.invoke: encode details: %w", err)
	}
	return wire.ToolsInvokeResult{
		OK: true, Tool: p.Tool, Details: details, IsError: res.IsError,
		Content: []wire.TextBlock{{Type: transcript.BlockText, Text: res.Text}},
	}, nil
}

// Injection is a message posted into a session without a run.
type Injection struct {
	SessionKey string // canonical key
	Text       string
	Label      string
	// Provenance, when set, records where the message came from.
	Provenance *transcript.Provenance
	// IdempotencyKey, when set, makes a repeated injection return the
	// first one's message id without posting again.
	IdempotencyKey string
}

// ErrNoSession is returned by Inject for a session that does not exist.
var ErrNoSession = errors.New("session not found")

// Inject appends an assistant-role message to a session's transcript and
// emits it as a chat final event to every connected client. It is how
// announces and command replies reach a session's (internal) channel.
func (s *Server) Inject(ctx context.Context, in Injection) (messageID string, err error) {
	sess, err := s.cfg.Store.GetSession(ctx, in.SessionKey)
	if errors.Is(err, store.ErrNotFound) || err == nil && sess.SessionID == "" {
		return "", fmt.Errorf("%w: %s", ErrNoSession, in.SessionKey)
	}
	if err != nil {
		return "", err
	}
	if in.IdempotencyKey != "" {
		recent, err := s.cfg.Store.History(ctx, sess.SessionID, store.HistoryOptions{Limit: 500})
		if err != nil {
			return "", err
		}
		for _, m := range recent {
			if m.Entry.Message != nil && m.Entry.Message.IdempotencyKey == in.IdempotencyKey {
				return m.Entry.ID, nil
			}
		}
	}
	now := s.now()
	msg := transcript.NewAssistantMessage([]transcript.Block{transcript.TextBlock(in.Text)}, now)
	msg.Provider, msg.Model, msg.StopReason = injectProvider, injectModel, "stop"
	msg.IdempotencyKey = in.IdempotencyKey
	msg.Provenance = in.Provenance
	runID := "inject-" + s.newID()
	msg.Meta = &transcript.Meta{RunID: runID}
	if in.Label != "" {
		label, _ := json.Marshal(in.Label)
		msg.Meta.Extra = map[string]json.RawMessage{"label": label}
	}
	stored, err := s.cfg.Store.AppendMessages(ctx, sess.SessionID, []store.Message{{
		SessionID: sess.SessionID, Entry: transcript.MessageEntry(msg, now), Role: msg.Role, RunID: runID,
	}})
	if err != nil {
		return "", err
	}
	if _, err := s.cfg.Store.UpdateSession(ctx, in.SessionKey, false, func(x *store.Session) error {
		x.UpdatedAt = now
		return nil
	}); err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	raw, _ := json.Marshal(msg)
	ev, _ := json.Marshal(wire.ChatEvent{
		RunID: runID, SessionKey: in.SessionKey, AgentID: sess.AgentID, State: wire.ChatStateFinal,
		StopReason: "stop", Message: raw,
	})
	s.broadcast(wire.EventChat, ev, false)
	if len(stored) > 0 {
		return stored[0].Entry.ID, nil
	}
	return "", nil
}
