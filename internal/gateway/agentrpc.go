package gateway

import (
	"context"
	"encoding/json"

	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// defaultWaitTimeout is agent.wait's timeoutMs default.
const defaultWaitTimeout = 30 * time.Second

// Statuses agent.wait reports.
const (
	waitOK      = "ok"
	waitError   = "error"
	waitTimeout = "timeout"
)

// abortedError is agent.wait's error for an aborted run.
const abortedError = "aborted"

func (s *Server) handleAgent(ctx context.Context, cl *call) (any, error) {
	var p wire.AgentParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	images, err := attachmentImages(p.Attachments)
	if err != nil {
		return nil, err
	}
	agentID := s.defaultAgent
	if strings.TrimSpace(p.AgentID) != "" {
		agentID = sessionkey.NormalizeAgentID(p.AgentID)
		if !s.knownAgent(agentID) {
			return nil, unknownAgent(agentID)
		}
	}
	var key string
	switch {
	case strings.TrimSpace(p.SessionKey) != "":
		key = s.canonicalKey(p.SessionKey, agentID)
	case strings.TrimSpace(p.SessionID) != "":
		found, err := s.cfg.Store.SessionsByID(ctx, strings.TrimSpace(p.SessionID))
		if err != nil {
			return nil, err
		}
		if len(found) != 1 {
			return nil, invalid("No session found: " + p.SessionID)
		}
		key = found[0].Key
	default:
		key = s.canonicalKey(sessionkey.DefaultMainKey, agentID)
	}
	if err := s.checkKeyAgent(ctx, key); err != nil {
		return nil, err
	}
	cl.subscribeSender(key)
	in := agent.Input{
		RunID:             p.IdempotencyKey,
		SessionKey:        key,
		AgentID:           agentOfKey(key, agentID),
		Message:           p.Message,
		Images:            images,
		Lane:              p.Lane,
		IdempotencyKey:    p.IdempotencyKey,
		ExtraSystemPrompt: p.ExtraSystemPrompt,
		Model:             modelRef(p.Provider, p.Model),
		Thinking:          p.Thinking,
		Channel:           p.Channel,
		To:                p.To,
		AccountID:         p.AccountID,
		ThreadID:          threadID(p.ThreadID),
		Label:             strings.TrimSpace(p.Label),
	}
	if p.Timeout != nil {
		in.Timeout = time.Duration(*p.Timeout) * time.Second
		if *p.Timeout == 0 {
			in.Timeout = -1 // no timeout
		}
	}
	if strings.TrimSpace(p.SpawnedBy) != "" {
		in.SpawnedBy = s.canonicalKey(p.SpawnedBy, "")
	}
	if pv := p.InputProvenance; pv != nil {
		in.Provenance = &agent.Provenance{Kind: pv.Kind, SourceSessionKey: pv.SourceSessionKey, SourceChannel: pv.SourceChannel, SourceTool: pv.SourceTool}
	}
	req := admission.Request{Origin: admission.OriginOperator, Input: in, Admin: allowed(cl.c.scopes, wire.ScopeAdmin)}
	if in.Provenance != nil {
		req.Origin = admission.OriginAgent // another session's message, not a person's
	}
	t, err := s.acceptHeld(ctx, cl, req)
	if err != nil {
		return nil, err
	}
	if t.Run == nil {
		// A command answered: its reply is the final.
		reply := t.Reply
		cl.followUp = func(context.Context) (any, error) {
			out := &wire.AgentRunOutput{Payloads: []wire.AgentPayload{}}
			if reply != "" {
				out.Payloads = append(out.Payloads, wire.AgentPayload{Text: reply})
			}
			return wire.AgentFinalResult{RunID: t.RunID, Status: waitOK, Summary: "completed", Result: out}, nil
		}
		return wire.AgentResult{RunID: t.RunID, SessionKey: key, AgentID: in.AgentID, Status: "accepted", AcceptedAt: s.now().UnixMilli()}, nil
	}
	run := t.Run
	status := "accepted"
	if !t.Created {
		status = dedupStatus(run)
	}
	runID := run.RunID
	cl.followUp = func(ctx context.Context) (any, error) {
		fin, done, err := s.cfg.Runner.Wait(ctx, runID, -1)
		if err != nil {
			return nil, err
		}
		if !done {
			return nil, ctx.Err()
		}
		return s.agentFinal(ctx, fin)
	}
	return wire.AgentResult{
		RunID: runID, SessionKey: run.SessionKey, AgentID: run.AgentID,
		Status: status, AcceptedAt: ms(run.CreatedAt),
	}, nil
}

// agentOfKey is the agent a canonical key belongs to; reserved keys belong
// to the requested agent.
func agentOfKey(key, fallback string) string {
	if _, ok := sessionkey.Parse(key); ok {
		return sessionkey.AgentID(key)
	}
	return fallback
}

// modelRef joins the agent method's provider and model params.
func modelRef(provider, model string) string {
	provider, model = strings.TrimSpace(provider), strings.TrimSpace(model)
	if provider != "" && model != "" && !strings.Contains(model, "/") {
		return provider + "/" + model
	}
	return model
}

// threadID reads a thread id given as a string or a number.
func threadID(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// agentFinal is the agent method's second response for a finished run.
func (s *Server) agentFinal(ctx context.Context, run *store.Run) (any, error) {
	switch run.Status {
	case store.RunOK, store.RunAborted:
		out := &wire.AgentRunOutput{
			Payloads: []wire.AgentPayload{},
			Meta: wire.AgentRunMeta{
				DurationMs: durationMs(run), StopReason: run.StopReason, Aborted: run.Status == store.RunAborted,
			},
		}
		if text := s.runReply(ctx, run); text != "" {
			out.Payloads = append(out.Payloads, wire.AgentPayload{Text: text})
		}
		return wire.AgentFinalResult{RunID: run.RunID, Status: waitOK, Summary: "completed", Result: out}, nil
	}
	status := waitError
	if run.Status == store.RunTimeout {
		status = waitTimeout
	}
	return nil, &errorWithPayload{
		payload: wire.AgentFinalResult{RunID: run.RunID, Status: status, Summary: run.Error},
		err:     wire.NewError(wire.CodeUnavailable, run.Error),
	}
}

func durationMs(run *store.Run) int64 {
	if run.StartedAt.IsZero() || run.EndedAt.IsZero() {
		return 0
	}
	return run.EndedAt.Sub(run.StartedAt).Milliseconds()
}

// runReply returns the text of the run's last assistant message.
func (s *Server) runReply(ctx context.Context, run *store.Run) string {
	if run.SessionID == "" {
		return ""
	}
	hist, err := s.cfg.Store.History(ctx, run.SessionID, store.HistoryOptions{Limit: 50})
	if err != nil {
		return ""
	}
	for i := len(hist) - 1; i >= 0; i-- {
		m := hist[i]
		if m.RunID == run.RunID && m.Role == transcript.RoleAssistant {
			if text := transcript.AssistantText(m.Entry.Message); text != "" {
				return text
			}
		}
	}
	return ""
}

// handleAgentWait waits server-side for a run to end. The wait works for
// any run, even one not submitted yet, so a client that reconnects can
// wait again.
//
// Status mapping: ok → "ok"; error → "error" with the error; timeout (the
// run hit its time limit) → "timeout" with the error and endedAt; aborted
// → "error" with the abort reason (plain "aborted" for chat.abort). The reference reports runs cut short as
// "timeout" in places (its sub-agent registry treats an aborted lifecycle
// end as a timeout, docs/spec/reference-behaviour.md §10.2); Switchboard keeps explicit
// aborts distinguishable from the wait itself timing out, which is
// "timeout" without endedAt.
func (s *Server) handleAgentWait(ctx context.Context, cl *call) (any, error) {
	var p wire.AgentWaitParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	timeout := defaultWaitTimeout
	if p.TimeoutMs != nil {
		timeout = time.Duration(*p.TimeoutMs) * time.Millisecond
	}
	run, done, err := s.cfg.Runner.Wait(ctx, p.RunID, timeout)
	if err != nil {
		return nil, err
	}
	if !done {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res := wire.AgentWaitResult{RunID: p.RunID, Status: waitTimeout}
		if run != nil {
			res.StartedAt = ms(run.StartedAt)
		}
		return res, nil
	}
	return waitResult(run), nil
}

// waitResult is agent.wait's answer for an ended run.
func waitResult(run *store.Run) wire.AgentWaitResult {
	res := wire.AgentWaitResult{
		RunID: run.RunID, StartedAt: ms(run.StartedAt), EndedAt: ms(run.EndedAt), StopReason: run.StopReason,
	}
	switch run.Status {
	case store.RunOK:
		res.Status = waitOK
	case store.RunTimeout:
		res.Status, res.Error = waitTimeout, run.Error
	case store.RunAborted:
		// The run's own reason: "aborted" for chat.abort, or why the
		// gateway cut it ("gateway shutting down", "run interrupted by
		// gateway restart").
		res.Status, res.Error = waitError, run.Error
		if res.Error == "" {
			res.Error = abortedError
		}
	default:
		res.Status, res.Error = waitError, run.Error
		if res.Error == "" {
			res.Error = "agent error"
		}
	}
	return res
}

func (s *Server) handleAgentsList(ctx context.Context, cl *call) (any, error) {
	if err := cl.decode(nil); err != nil {
		return nil, err
	}
	ids := s.conf.AgentIDs()
	if len(ids) == 0 {
		ids = []string{s.defaultAgent}
	}
	res := wire.AgentsListResult{
		DefaultID: s.defaultAgent, MainKey: s.alias.MainKey, Scope: s.alias.Scope,
		Ownership: "sole", Agents: make([]wire.AgentSummary, 0, len(ids)),
	}
	for _, id := range ids {
		a := wire.AgentSummary{ID: id}
		ag := s.conf.Agent(id)
		a.Name, a.Workspace = ag.Name, ag.Workspace
		// The model the agent runs with: its own, else the default (the
		// offline model when no provider is set up), so a client sees
		// every agent can answer.
		ref := ag.Model
		if ref == "" && s.cfg.DefaultModelRef != nil {
			ref = s.cfg.DefaultModelRef(id)
		}
		if ref != "" {
			a.Model = &wire.ModelRef{Primary: ref}
		}
		res.Agents = append(res.Agents, a)
	}
	for _, p := range s.conf.RemotePeers {
		res.RemotePeers = append(res.RemotePeers, wire.RemotePeer{Name: p, SessionKey: "a2a:" + p, Remote: true})
	}
	return res, nil
}
