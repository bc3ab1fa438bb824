// Package automation starts the gateway's automated work through the
// admission step — webhook actions (Hooks, for internal/hooks) and cron
// jobs (CronSubmit and CronWait, for internal/cron) — routes their replies
// to a chat when they name one, and reports how their runs ended.
//
// It imports admission, the runner's input type and the hooks and cron
// contracts; the daemon wires it.
package automation

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/cron"
	"github.com/switchboardhq/switchboard/internal/hooks"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// Runner is what automation needs of the agent runner: a run's end.
type Runner interface {
	Wait(ctx context.Context, runID string, timeout time.Duration) (*store.Run, bool, error)
}

// Admitter starts runs: the admission step (*admission.Admitter).
type Admitter interface {
	Accept(ctx context.Context, req admission.Request) (admission.Ticket, error)
}

// Store is what automation reads and writes of sessions.
type Store interface {
	GetSession(ctx context.Context, key string) (*store.Session, error)
	UpdateSession(ctx context.Context, key string, create bool, fn func(*store.Session) error) (*store.Session, error)
	History(ctx context.Context, sessionID string, opts store.HistoryOptions) ([]store.Message, error)
}

// Hooks carries out webhook actions (it implements hooks.Runner):
// admission starts their runs, the runner says how they ended.
type Hooks struct {
	runner  Runner
	adm     Admitter
	st      Store
	agentID string
	mainKey string
}

// NewHooks returns the hook actions of agentID (the default agent) whose
// main session is named mainKey.
func NewHooks(runner Runner, adm Admitter, st Store, agentID, mainKey string) *Hooks {
	return &Hooks{runner: runner, adm: adm, st: st, agentID: agentID, mainKey: mainKey}
}

func (h *Hooks) agentOf(a hooks.Action) string {
	if a.AgentID != "" {
		return a.AgentID
	}
	return h.agentID
}

// Agent implements hooks.Runner. A hook naming a chat (channel and to,
// or "last": the main session's) has its reply delivered there: the
// session's delivery context points at it and the run's input says it
// came in on that channel, which is how the chat channels route replies.
func (h *Hooks) Agent(ctx context.Context, a hooks.Action) (string, error) {
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
func (h *Hooks) destination(ctx context.Context, agentID string, a hooks.Action) (*store.DeliveryContext, error) {
	return deliveryTarget(ctx, h.st, sessionkey.MainKey(agentID, h.mainKey), a.Channel, a.To, a.AccountID)
}

// deliveryTarget resolves a chat destination for an automation's reply:
// channel and to as given, or channel "last": where the main session
// (mainKey) last talked, with to replacing its recipient when given. nil
// when there is none.
func deliveryTarget(ctx context.Context, st Store, mainKey, channel, to, accountID string) (*store.DeliveryContext, error) {
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
func deliverTo(ctx context.Context, st Store, key string, dc *store.DeliveryContext, in *agent.Input) error {
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
func (h *Hooks) Wake(ctx context.Context, a hooks.Action) error {
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
func (h *Hooks) Wait(ctx context.Context, runID string) (hooks.Completion, error) {
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

// CronSubmit starts a cron job's run through admission in the job's
// session (cron:<jobId>, or the agent's main session; alias names the main
// sessions, defaultAgent runs jobs that name none); an isolated job with
// delivery {mode: "announce"} has its reply go to that chat.
func CronSubmit(sessions Store, adm Admitter, alias sessionkey.MainAlias, defaultAgent string) cron.Submit {
	return func(ctx context.Context, j *cron.Job, runID string) error {
		agentID := j.AgentID
		if agentID == "" {
			agentID = defaultAgent
		}
		key := sessionkey.ToStoreKey(agentID, j.SessionKey(), alias.MainKey)
		if j.SessionTarget == "main" {
			key = sessionkey.MainKey(agentID, alias.MainKey)
			if alias.Scope == sessionkey.ScopeGlobal {
				key = sessionkey.GlobalKey
			}
		}
		msg := j.Payload.Message
		if j.Payload.Kind == "systemEvent" {
			msg = j.Payload.Text
		}
		in := agent.Input{
			RunID: runID, SessionKey: key, AgentID: agentID, Message: msg,
			IdempotencyKey: runID + ":user", Channel: "cron",
			Provenance: &agent.Provenance{Kind: "cron"},
		}
		// delivery {mode: "announce", channel, to}: an isolated job's reply
		// goes to that chat ("last": where the main session last talked).
		var d struct{ Mode, Channel, To, AccountID string }
		if len(j.Delivery) > 0 && json.Unmarshal(j.Delivery, &d) == nil && d.Mode == "announce" && j.SessionTarget != "main" {
			dc, err := deliveryTarget(ctx, sessions, sessionkey.MainKey(agentID, alias.MainKey), cmp.Or(d.Channel, "last"), d.To, d.AccountID)
			if err != nil {
				return fmt.Errorf("cron job %s: %w", j.ID, err)
			}
			if dc != nil {
				if err := deliverTo(ctx, sessions, key, dc, &in); err != nil {
					return fmt.Errorf("cron job %s: %w", j.ID, err)
				}
			}
		}
		if _, err := adm.Accept(ctx, admission.Request{Origin: admission.OriginCron, Input: in}); err != nil {
			return fmt.Errorf("cron job %s: %w", j.ID, err)
		}
		return nil
	}
}

// CronWait waits for a cron run's end and says how it ended, for the
// job's run history.
func CronWait(runner Runner) func(ctx context.Context, runID string) (string, string, error) {
	// A run's history row says how it ended, not only that it started.
	return func(ctx context.Context, runID string) (string, string, error) {
		run, done, err := runner.Wait(ctx, runID, -1)
		if err != nil {
			return "", "", err
		}
		if !done {
			return "", "", ctx.Err()
		}
		if run.Status == store.RunOK {
			return "ok", "", nil
		}
		// The reference's run history knows ok, error and skipped: a
		// timeout or an abort is an error, and says which.
		return "error", cmp.Or(run.Error, string(run.Status)), nil
	}
}
