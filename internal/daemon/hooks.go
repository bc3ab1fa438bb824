package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/hooks"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// newHooks builds the webhook ingress over the runner: agent actions
// become runs in their sessions (their replies delivered to a chat when
// the hook names one), wake actions a turn of the main session.
func newHooks(cfg *config.Config, runner *agent.Runner, adm *admission.Admitter, st store.Store) (*hooks.Handler, error) {
	hc := cfg.Hooks
	maps := make([]hooks.Mapping, 0, len(hc.Mappings))
	for i, m := range hc.Mappings {
		hm := hooks.Mapping{
			ID: m.ID, MatchPath: m.Match.Path, MatchSource: m.Match.Source, Action: m.Action, WakeMode: m.WakeMode,
			Name: m.Name, AgentID: m.AgentID, SessionKey: m.SessionKey, SessionMode: m.SessionMode,
			MessageTemplate: m.MessageTemplate, TextTemplate: m.TextTemplate, Deliver: m.Deliver,
			Channel: m.Channel, To: m.To, Model: m.Model, Thinking: m.Thinking,
		}
		if hm.ID == "" {
			hm.ID = fmt.Sprintf("mapping-%d", i)
		}
		if m.TimeoutSeconds != nil {
			hm.TimeoutSeconds = *m.TimeoutSeconds
		}
		maps = append(maps, hm)
	}
	known := map[string]bool{}
	for _, a := range cfg.Agents.List {
		known[sessionkey.NormalizeAgentID(a.ID)] = true
	}
	known[sessionkey.NormalizeAgentID(cfg.DefaultAgentID())] = true
	return hooks.New(hooks.Config{
		Token: hc.Token, Path: hc.Path, MaxBodyBytes: hc.MaxBodyBytes,
		DefaultSessionKey: hc.DefaultSessionKey, AllowRequestSessionKey: hc.AllowRequestSessionKey,
		AllowedSessionKeyPrefixes: hc.AllowedSessionKeyPrefixes, AllowedAgentIDs: hc.AllowedAgentIDs,
		KnownAgent: func(id string) bool { return known[sessionkey.NormalizeAgentID(id)] },
		Mappings:   maps,
		Runner:     &hookRunner{runner: runner, adm: adm, st: st, agentID: cfg.DefaultAgentID(), mainKey: cfg.MainKey()},
		NewID:      uuid.NewString,
	})
}

// hookRunner carries out hook actions: admission starts their runs, the
// runner says how they ended.
type hookRunner struct {
	runner  *agent.Runner
	adm     *admission.Admitter
	st      store.Store
	agentID string
	mainKey string
}

func (h *hookRunner) agentOf(a hooks.Action) string {
	if a.AgentID != "" {
		return a.AgentID
	}
	return h.agentID
}

// Agent implements hooks.Runner. A hook naming a chat (channel and to,
// or "last": the main session's) has its reply delivered there: the
// session's delivery context points at it and the run's input says it
// came in on that channel, which is how the chat channels route replies.
func (h *hookRunner) Agent(ctx context.Context, a hooks.Action) (string, error) {
	agentID := h.agentOf(a)
	key := sessionkey.ToStoreKey(agentID, a.SessionKey, h.mainKey)
	in := agent.Input{
		RunID: uuid.NewString(), SessionKey: key, AgentID: agentID, Message: a.Message,
		Model: a.Model, Thinking: a.Thinking, Timeout: a.Timeout, Label: a.Name,
		Channel: "webhook", Provenance: &agent.Provenance{Kind: "hook"},
	}
	in.IdempotencyKey = in.RunID + ":user"
	if a.Deliver && a.Channel != "" {
		dc, err := h.destination(ctx, agentID, a)
		if err != nil {
			return "", err
		}
		if dc != nil {
			if err := deliverTo(ctx, h.st, key, dc, &in); err != nil {
				return "", fmt.Errorf("hook run: %w", err)
			}
		}
	}
	t, err := h.adm.Accept(ctx, admission.Request{Origin: admission.OriginWebhook, Input: in})
	if err != nil {
		return "", fmt.Errorf("hook run: %w", hookRefusal(err))
	}
	return t.RunID, nil
}

// destination resolves where a delivering hook's reply goes; nil when
// "last" finds no chat.
func (h *hookRunner) destination(ctx context.Context, agentID string, a hooks.Action) (*store.DeliveryContext, error) {
	return deliveryTarget(ctx, h.st, sessionkey.MainKey(agentID, h.mainKey), a.Channel, a.To, a.AccountID)
}

// deliveryTarget resolves a chat destination for an automation's reply:
// channel and to as given, or channel "last": where the main session
// (mainKey) last talked, with to replacing its recipient when given. nil
// when there is none.
func deliveryTarget(ctx context.Context, st store.Store, mainKey, channel, to, accountID string) (*store.DeliveryContext, error) {
	channel = strings.TrimSpace(channel)
	if channel == "" {
		return nil, nil
	}
	if !strings.EqualFold(channel, "last") {
		if strings.TrimSpace(to) == "" {
			return nil, nil
		}
		return &store.DeliveryContext{Channel: strings.ToLower(channel), To: strings.TrimSpace(to), AccountID: accountID}, nil
	}
	main, err := st.GetSession(ctx, mainKey)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("delivery target: %w", err)
	}
	dc := main.DeliveryContext
	if dc == nil || dc.Channel == "" || dc.To == "" {
		if main.LastChannel == "" || main.LastTo == "" {
			return nil, nil
		}
		dc = &store.DeliveryContext{Channel: main.LastChannel, To: main.LastTo, AccountID: main.LastAccountID}
	}
	c := *dc
	if strings.TrimSpace(to) != "" {
		c.To = strings.TrimSpace(to)
	}
	return &c, nil
}

// deliverTo points a session's replies at dc and marks in as coming from
// that chat, which is how the chat channels route a run's reply.
func deliverTo(ctx context.Context, st store.Store, key string, dc *store.DeliveryContext, in *agent.Input) error {
	if _, err := st.UpdateSession(ctx, key, true, func(s *store.Session) error {
		s.DeliveryContext = dc
		return nil
	}); err != nil {
		return fmt.Errorf("delivery target: %w", err)
	}
	in.Channel, in.To, in.AccountID = dc.Channel, dc.To, dc.AccountID
	return nil
}

// Wake implements hooks.Runner: the notification is a turn of the main
// session (or the session the request named).
func (h *hookRunner) Wake(ctx context.Context, a hooks.Action) error {
	agentID := h.agentOf(a)
	key := sessionkey.MainKey(agentID, h.mainKey)
	if a.SessionKey != "" {
		key = sessionkey.ToStoreKey(agentID, a.SessionKey, h.mainKey)
	}
	runID := uuid.NewString()
	_, err := h.adm.Accept(ctx, admission.Request{Origin: admission.OriginWebhook, Input: agent.Input{
		RunID: runID, SessionKey: key, AgentID: agentID, Message: a.Text,
		IdempotencyKey: runID + ":user", Channel: "webhook",
		Provenance: &agent.Provenance{Kind: "hook"},
	}})
	if err != nil {
		return fmt.Errorf("hook wake: %w", hookRefusal(err))
	}
	return nil
}

// hookRefusal marks admission's refusals for the hooks handler, which
// answers them with their own status and text.
func hookRefusal(err error) error {
	switch full := (*admission.QueueFullError)(nil); {
	case errors.Is(err, admission.ErrSendDenied):
		return &hooks.Refused{Code: http.StatusForbidden, Err: err}
	case errors.As(err, &full):
		return &hooks.Refused{Code: http.StatusTooManyRequests, Err: err}
	}
	return err
}

// Wait implements hooks.Runner: how the run ended, and whether its reply
// was visible, silent (NO_REPLY) or empty, never the text itself.
func (h *hookRunner) Wait(ctx context.Context, runID string) (hooks.Completion, error) {
	run, done, err := h.runner.Wait(ctx, runID, -1)
	if err != nil {
		return hooks.Completion{}, err
	}
	if !done {
		return hooks.Completion{}, ctx.Err()
	}
	c := hooks.Completion{Status: "ok", ReplyDisposition: "empty"}
	if run.Status != store.RunOK {
		c.Status = "error"
	}
	if run.SessionID != "" {
		msgs, err := h.st.History(ctx, run.SessionID, store.HistoryOptions{RunID: runID, Limit: 50})
		if err == nil {
			for i := len(msgs) - 1; i >= 0; i-- {
				m := msgs[i].Entry.Message
				if m == nil || m.Role != transcript.RoleAssistant {
					continue
				}
				if t := strings.TrimSpace(m.Text()); t == "NO_REPLY" {
					c.ReplyDisposition = "silent"
				} else if t != "" {
					c.ReplyDisposition = "visible"
				}
				break // the last assistant message is the reply
			}
		}
	}
	return c, nil
}
