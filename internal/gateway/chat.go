package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sanitize"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// Chat history limits.
const (
	defaultHistoryLimit = 200
	// silentReply is the assistant reply the reference treats as "say
	// nothing"; chat.history drops such rows.
	silentReply = sanitize.NoReply
)

// internalChannel is the origin channel of operator input (the reference's
// INTERNAL_MESSAGE_CHANNEL).
const internalChannel = sessionkey.InternalChannel

// dedupStatus is what a repeated idempotency key answers: "in_flight"
// while the run is live, else its terminal status.
func dedupStatus(run *store.Run) string {
	if !run.Status.Terminal() {
		return "in_flight"
	}
	return string(run.Status)
}

func (s *Server) handleChatSend(ctx context.Context, cl *call) (any, error) {
	var p wire.ChatSendParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	return s.chatSend(ctx, cl, p)
}

// handleSessionsSteer is sessions.steer, the reference's deprecated alias
// of chat.send with queueMode "interrupt".
func (s *Server) handleSessionsSteer(ctx context.Context, cl *call) (any, error) {
	var p wire.ChatSendParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	p.QueueMode = string(policy.QueueInterrupt)
	return s.chatSend(ctx, cl, p)
}

// handleSessionsSend is sessions.send: chat.send into a session that
// exists (an operator's "send into this session"), the idempotency key
// optional.
func (s *Server) handleSessionsSend(ctx context.Context, cl *call) (any, error) {
	var p wire.SessionsSendParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	key := s.canonicalKey(p.Key, s.agentID(p.AgentID))
	if err := s.requireSession(ctx, key, p.Key); err != nil {
		return nil, err
	}
	idem := p.IdempotencyKey
	if idem == "" {
		idem = s.newID()
	}
	return s.chatSend(ctx, cl, wire.ChatSendParams{SessionKey: key, Message: p.Message, IdempotencyKey: idem,
		AgentID: p.AgentID, Thinking: p.Thinking, Attachments: p.Attachments, TimeoutMs: p.TimeoutMs})
}

// chatSend accepts one message for a session through admission (which
// decides commands, the send policy and the queue) and starts its run.
func (s *Server) chatSend(ctx context.Context, cl *call, p wire.ChatSendParams) (any, error) {
	images, err := attachmentImages(p.Attachments)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.Message) == "" && len(images) == 0 {
		return nil, invalid("message required")
	}
	agentID := s.agentID(p.AgentID)
	key := s.canonicalKey(p.SessionKey, agentID)
	if !isStandaloneSetting(p.Message) {
		if err := s.checkKeyAgent(ctx, key); err != nil {
			return nil, err
		}
	}
	cl.subscribeSender(key)
	in := agent.Input{
		RunID:          p.IdempotencyKey,
		SessionKey:     key,
		AgentID:        agentOfKey(key, agentID),
		Message:        p.Message,
		IdempotencyKey: p.IdempotencyKey + ":user",
		Thinking:       p.Thinking,
		Channel:        internalChannel,
		Images:         images,
	}
	if p.TimeoutMs != nil && *p.TimeoutMs > 0 {
		in.Timeout = time.Duration(*p.TimeoutMs) * time.Millisecond
	}
	timing := s.followSendTiming(cl, in.RunID, key, in.AgentID, cl.received)
	t, err := s.acceptHeld(ctx, cl, admission.Request{
		Origin: admission.OriginOperator, Input: in, QueueMode: p.QueueMode, Admin: allowed(cl.c.scopes, wire.ScopeAdmin),
	})
	s.ackSendTiming(cl, in.RunID, timing, err == nil && t.Run != nil && t.Created && t.RunID == in.RunID)
	if err != nil {
		return nil, err
	}
	switch {
	case t.Run == nil:
		return wire.ChatSendResult{RunID: t.RunID, Status: "ok"}, nil
	case t.Created:
		return wire.ChatSendResult{RunID: t.RunID, Status: "started"}, nil
	}
	return wire.ChatSendResult{RunID: t.RunID, Status: dedupStatus(t.Run)}, nil
}

// isStandaloneSetting reports whether msg is a /send, /queue or /elevated
// command, which change a session's settings whatever its agent (the
// session commands and messages need a known agent).
func isStandaloneSetting(msg string) bool {
	_, send := policy.ParseSendCommand(strings.TrimSpace(msg))
	_, queue := policy.ParseQueueCommand(msg)
	_, elevated := policy.ParseElevatedCommand(msg)
	_, think := policy.ParseThinkCommand(msg)
	return send || queue || elevated || think
}

// refusal is admission's refusal wrapped in err (the send policy's, the
// queue cap's) as the protocol's error with the reference's text; nil for
// any other err.
func refusal(err error) error {
	var full *admission.QueueFullError
	switch {
	case errors.As(err, &full):
		return invalid(full.Error())
	case errors.Is(err, admission.ErrSendDenied):
		return invalid(admission.ErrSendDenied.Error())
	}
	return nil
}

// acceptHeld hands req to admission with the run's events held back until
// the call's first response is queued, so the client learns the runId
// first. Admission's refusals become the protocol's errors.
func (s *Server) acceptHeld(ctx context.Context, cl *call, req admission.Request) (admission.Ticket, error) {
	runID := req.Input.RunID
	s.holdRun(runID)
	t, err := s.cfg.Admit.Accept(ctx, req)
	switch refused := refusal(err); {
	case err == nil:
	case refused != nil:
		err = refused
	case errors.Is(err, agent.ErrClosed):
		err = wire.NewError(wire.CodeUnavailable, "gateway shutting down").WithRetry(1000)
	}
	if err != nil || t.Run == nil {
		s.releaseRun(runID, true)
		return t, err
	}
	terminal := !t.Created && t.Run.Status.Terminal()
	cl.releaseAfterResponse = func() { s.releaseRun(runID, terminal) }
	return t, nil
}

func (s *Server) handleChatHistory(ctx context.Context, cl *call) (any, error) {
	var p wire.ChatHistoryParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	key := s.canonicalKey(p.SessionKey, s.agentID(p.AgentID))
	res := wire.ChatHistoryResult{SessionKey: key, Messages: []json.RawMessage{}}
	sess, err := s.cfg.Store.GetSession(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	res.SessionID, res.ThinkingLevel, res.VerboseLevel = sess.SessionID, sess.ThinkingLevel, sess.VerboseLevel
	limit := defaultHistoryLimit
	if p.Limit != nil {
		limit = *p.Limit
	}
	hist, err := s.historyPage(ctx, sess, &p, limit, &res)
	if err != nil {
		return nil, err
	}
	if res.PendingInputs, err = s.pendingInputs(ctx, key); err != nil {
		return nil, err
	}
	for _, m := range hist {
		if b, ok := boundaryRow(m); ok {
			res.Messages = append(res.Messages, b)
			continue
		}
		msg := m.Entry.Message
		if m.Entry.Type != transcript.TypeMessage || msg == nil {
			continue
		}
		if msg.Role == transcript.RoleAssistant && strings.TrimSpace(msg.Content.Text()) == silentReply {
			continue
		}
		b, err := historyMessage(m)
		if err != nil {
			return nil, err
		}
		res.Messages = append(res.Messages, b)
	}
	return res, nil
}

// historyMessage returns the message of a stored entry with its
// "__openclaw" block extended by the entry id and seq.
func historyMessage(m store.Message) (json.RawMessage, error) {
	msg := *m.Entry.Message
	meta := transcript.Meta{}
	if msg.Meta != nil {
		meta = *msg.Meta
	}
	extra := make(map[string]json.RawMessage, len(meta.Extra)+2)
	for k, v := range meta.Extra {
		extra[k] = v
	}
	id, _ := json.Marshal(m.Entry.ID)
	extra["id"] = id
	seq, _ := json.Marshal(m.Seq)
	extra["seq"] = seq
	meta.Extra = extra
	msg.Meta = &meta
	return json.Marshal(msg)
}

func (s *Server) handleChatAbort(ctx context.Context, cl *call) (any, error) {
	var p wire.ChatAbortParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	key := s.canonicalKey(p.SessionKey, s.agentID(p.AgentID))
	res := wire.ChatAbortResult{OK: true, RunIDs: []string{}}
	if p.RunID != "" {
		run, err := s.cfg.Store.GetRun(ctx, p.RunID)
		if errors.Is(err, store.ErrNotFound) {
			return res, nil
		}
		if err != nil {
			return nil, err
		}
		if run.SessionKey != key {
			return nil, invalid("runId does not belong to sessionKey " + key)
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
	ids, err := s.cfg.Runner.AbortSession(ctx, key)
	if err != nil {
		return nil, err
	}
	if len(ids) > 0 {
		res.Aborted, res.RunIDs = true, ids
	}
	return res, nil
}

func (s *Server) handleChatInject(ctx context.Context, cl *call) (any, error) {
	var p wire.ChatInjectParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	key := s.canonicalKey(p.SessionKey, "")
	id, err := s.Inject(ctx, Injection{SessionKey: key, Text: p.Message, Label: p.Label})
	if errors.Is(err, agent.ErrNoSession) {
		return nil, invalid("session not found: " + key)
	}
	if err != nil {
		return nil, err
	}
	return wire.ChatInjectResult{OK: true, MessageID: id}, nil
}
