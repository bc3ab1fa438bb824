package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/compaction"
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

// checkSendPolicy returns the policy error when the session may not be sent
// to.
func (s *Server) checkSendPolicy(ctx context.Context, key, channel string) error {
	entry, err := s.cfg.Store.GetSession(ctx, key)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	in := policy.SendInput{Config: s.conf.SendRules, SessionKey: key, Channel: channel}
	if entry != nil {
		in.EntryOverride, in.EntryChannel, in.EntryLastChannel, in.EntryChatType = entry.SendPolicy, entry.Channel, entry.LastChannel, entry.ChatType
	}
	if policy.ResolveSend(in) == policy.DecisionDeny {
		return invalid(policy.SendBlockedMessage)
	}
	return nil
}

// sendCommand handles the owner-only standalone "/send on|off|inherit"
// message (docs/spec/reference-behaviour.md §8): an operator with the admin scope (the only scope
// that may change sendPolicy) sets or clears the session's override and gets
// the reference's reply in the session; anyone else's command is consumed
// silently. No agent run starts.
func (s *Server) sendCommand(ctx context.Context, cl *call, key, agentID, runID string, cmd policy.SendCommand) (any, error) {
	if !allowed(cl.c.scopes, wire.ScopeAdmin) {
		return s.commandDone(ctx, key, agentID, runID)
	}
	if !cmd.Usage {
		if _, err := s.cfg.Store.UpdateSession(ctx, key, true, func(x *store.Session) error {
			if x.SessionID == "" {
				s.initSession(x, agentOfKey(key, agentID))
			}
			x.SendPolicy = string(cmd.Override)
			x.UpdatedAt = s.now()
			return nil
		}); err != nil {
			return nil, err
		}
	} else if _, err := s.cfg.Store.GetSession(ctx, key); errors.Is(err, store.ErrNotFound) {
		return s.commandDone(ctx, key, agentID, runID) // nowhere to reply
	}
	if _, err := s.Inject(ctx, Injection{SessionKey: key, Text: cmd.Reply(), IdempotencyKey: runID + ":reply", RunID: runID}); err != nil {
		return nil, err
	}
	return s.commandDone(ctx, key, agentID, runID)
}

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

// chatSend accepts one message for a session: gateway commands, the send
// policy, the queue mode, then the run.
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
	if cmd, ok := policy.ParseSendCommand(strings.TrimSpace(p.Message)); ok {
		return s.sendCommand(ctx, cl, key, agentID, p.IdempotencyKey, cmd)
	}
	if cmd, ok := policy.ParseQueueCommand(p.Message); ok {
		return s.queueCommand(ctx, key, agentID, p.IdempotencyKey, cmd)
	}
	if cmd, ok := policy.ParseElevatedCommand(p.Message); ok {
		return s.elevatedCommand(ctx, key, agentID, p.IdempotencyKey, cmd)
	}
	if err := s.checkKeyAgent(ctx, key); err != nil {
		return nil, err
	}
	if cmd, ok := compaction.ParseCommand(p.Message); ok {
		cl.subscribeSender(key)
		res, next, err := s.sessionCommand(ctx, key, agentID, p.IdempotencyKey, cmd)
		if next == "" || err != nil {
			return res, err
		}
		p.Message = next // the text after /new or /reset is the first turn
	}
	if err := s.checkSendPolicy(ctx, key, ""); err != nil {
		return nil, err
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
	q, err := s.queueSettings(ctx, key, p.QueueMode, internalChannel)
	if err != nil {
		return nil, err
	}
	in.ApplyQueue(q)
	run, err := s.submitHeld(ctx, cl, in)
	if errors.Is(err, agent.ErrQueueFull) {
		return nil, invalid(policy.QueueFullError(q.Cap))
	}
	if err != nil {
		return nil, err
	}
	if run.created {
		s.trackSendTiming(cl, run.RunID, key, in.AgentID, cl.received)
		return wire.ChatSendResult{RunID: run.RunID, Status: "started"}, nil
	}
	return wire.ChatSendResult{RunID: run.RunID, Status: dedupStatus(run.Run)}, nil
}

// submitted is a Submit result.
type submitted struct {
	*store.Run
	created bool
}

// submitHeld submits in with the run's events held back until the call's
// first response is queued, so the client learns the runId first.
func (s *Server) submitHeld(ctx context.Context, cl *call, in agent.Input) (submitted, error) {
	s.holdRun(in.RunID)
	run, created, err := s.cfg.Runner.Submit(ctx, in)
	if err != nil {
		s.releaseRun(in.RunID, true)
		if errors.Is(err, agent.ErrClosed) {
			return submitted{}, wire.NewError(wire.CodeUnavailable, "gateway shutting down").WithRetry(1000)
		}
		return submitted{}, err
	}
	terminal := !created && run.Status.Terminal()
	cl.releaseAfterResponse = func() { s.releaseRun(in.RunID, terminal) }
	return submitted{run, created}, nil
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
	if errors.Is(err, ErrNoSession) {
		return nil, invalid("session not found: " + key)
	}
	if err != nil {
		return nil, err
	}
	return wire.ChatInjectResult{OK: true, MessageID: id}, nil
}
