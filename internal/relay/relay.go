// Package relay carries sessions_send's messages between sessions: it
// queues a sent message as a run on the target's lane, and follows it with
// the agent-to-agent flow of the reference (docs/spec/reference-behaviour.md §6.4) — the reply-back loop
// between requester and target and the announce step whose reply is posted
// to the target's channel.
//
// Flows are durable: each is an outbox item (kind "a2a") written before it
// starts and settled when it ends, run by the outbox dispatcher, which
// retries a failed flow with backoff before it is dead and resumes pending
// flows after a restart. Every step has a run id derived from the primary
// run's, so a resumed or retried flow re-submits nothing that already ran.
//
// The session tools (internal/tools/sessions) reach this package only
// through their Messenger interface; it implements that interface.
package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/outbox"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sanitize"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/telemetry"
	"github.com/switchboardhq/switchboard/internal/tools/sessions"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// Kind is the outbox kind of agent-to-agent flows.
const Kind = "a2a"

// LaneNested is the lane of sessions_send and agent-to-agent runs.
const LaneNested = "nested"

// Defaults of a flow's retries.
const (
	// DefaultMaxAttempts is how many times a failing flow is tried before
	// it is dead.
	DefaultMaxAttempts = 5
	// deliveredRetention is how long settled flow records are kept.
	deliveredRetention = 7 * 24 * time.Hour
)

// Store is what the relay reads and writes.
type Store interface {
	GetSession(ctx context.Context, key string) (*store.Session, error)
	History(ctx context.Context, sessionID string, opts store.HistoryOptions) ([]store.Message, error)
	GetRun(ctx context.Context, runID string) (*store.Run, error)
	PutOutbox(ctx context.Context, item *store.OutboxItem) error
}

// Runner waits for runs and posts messages.
type Runner interface {
	Wait(ctx context.Context, runID string, timeout time.Duration) (*store.Run, bool, error)
	// Subscribe registers fn for every run event (Start: to see runs end).
	Subscribe(fn func(agent.Event)) (unsubscribe func())
	Post(ctx context.Context, p agent.Post) (string, error)
	// EndMessage is the last message of a run that just ended on this
	// node (nil: read the transcript).
	EndMessage(runID string) *transcript.Message
}

// Admitter starts runs: the admission step (*admission.Admitter), which
// applies the target's send policy and queue settings.
type Admitter interface {
	Accept(ctx context.Context, req admission.Request) (admission.Ticket, error)
}

// Kicker wakes the outbox dispatcher that runs the flows, for the items of
// one session.
type Kicker interface{ KickSession(kind, key string) }

// Config configures a Relay. Store, Runner and Admit are required.
type Config struct {
	Store  Store
	Runner Runner
	Admit  Admitter
	// SendRules is session.sendPolicy, resolved; nil allows every send.
	SendRules *policy.SendPolicyConfig
	// MaxAttempts bounds a failing flow's tries (default DefaultMaxAttempts).
	MaxAttempts int
	Logger      *slog.Logger
	Now         func() time.Time
	// Tracer records reply-back and announce step spans; nil is off.
	Tracer *telemetry.Tracer
	// Kicker is the outbox dispatcher that runs Handler, woken when a
	// flow is recorded; nil: flows wait for its next pass.
	Kicker Kicker
}

// Relay implements sessions.Messenger. Create with New, passing the
// outbox dispatcher as Config.Kicker; register Handler with it; Start it
// to hand flows over when their requester's run ends, and Close it.
type Relay struct {
	cfg   Config
	log   *slog.Logger
	start sync.Once

	// mu guards the fields that follow.
	mu sync.Mutex
	// unsub ends Start's subscription; nil before Start and after Close.
	unsub func()
	// afterRun holds the requester sessions whose flows, recorded by one
	// of their runs, the dispatcher is woken for when that session's run
	// ends (see Send).
	afterRun map[string]struct{}
}

var _ sessions.Messenger = (*Relay)(nil)

// New returns a relay.
func New(cfg Config) (*Relay, error) {
	if cfg.Store == nil || cfg.Runner == nil || cfg.Admit == nil {
		return nil, errors.New("relay.New: Store, Runner and Admit are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	return &Relay{cfg: cfg, log: cfg.Logger.With("component", "relay")}, nil
}

// Handler is the outbox handler that runs recorded flows.
func (r *Relay) Handler() outbox.Handler {
	return outbox.Handler{Kind: Kind, Each: r.runItem, MaxAttempts: r.cfg.MaxAttempts, Retention: deliveredRetention}
}

// Send queues m as a run on its target's lane, and records m.Flow, if set:
// in the transaction that stores the run where the store can
// (store.RunOutbox), else on its own once the run is admitted (Follow). A
// flow that cannot be recorded is logged; the message stands.
func (r *Relay) Send(ctx context.Context, m sessions.Message) (*store.Run, error) {
	in := agent.Input{
		RunID:             m.RunID,
		SessionKey:        m.TargetKey,
		AgentID:           sessionkey.AgentID(m.TargetKey),
		Message:           m.Text,
		Lane:              LaneNested,
		Channel:           sessionkey.InternalChannel,
		ExtraSystemPrompt: m.ExtraSystemPrompt,
		Provenance: &agent.Provenance{
			Kind: transcript.ProvenanceInterSession, SourceSessionKey: m.SourceSessionKey,
			SourceChannel: m.SourceChannel, SourceTool: sessions.SendToolName,
		},
	}
	if m.Chain.ID != "" || m.Chain.Untrusted != "" {
		chain := m.Chain
		in.Chain = &chain
	}
	in.IdempotencyKey = in.RunID + ":user"
	// Admission applies the target's send policy (its refusal is the
	// reference's text) and queue: a busy target takes the message as its
	// own messages are queued (steered into the active run by default),
	// never interrupting it.
	var withRun *store.RunOutbox
	if m.Flow != nil {
		f := *m.Flow
		f.WaitRunID = m.RunID
		item, err := r.flowItem(f)
		if err != nil {
			return nil, err
		}
		withRun = &store.RunOutbox{RunID: m.RunID, Item: item}
		ctx = store.WithRunOutbox(ctx, withRun)
	}
	t, err := r.cfg.Admit.Accept(ctx, admission.Request{Origin: admission.OriginAgent, Input: in})
	if err != nil || withRun == nil || t.Run == nil {
		return t.Run, err
	}
	if withRun.Stored() {
		r.kickAfter(m.Flow.RequesterKey, m.Flow.RequesterRunID)
		return t.Run, nil
	}
	f := *m.Flow
	f.WaitRunID = t.Run.RunID
	if err := r.Follow(ctx, f); err != nil {
		r.log.Error("agent-to-agent flow not recorded", "runId", f.WaitRunID, "target", f.TargetKey, "err", err)
	}
	return t.Run, nil
}

// Wait waits up to timeout for a run to end.
func (r *Relay) Wait(ctx context.Context, runID string, timeout time.Duration) (*store.Run, bool, error) {
	return r.cfg.Runner.Wait(ctx, runID, timeout)
}

// Reply returns the reply of a run by the reference's sessions_send "ok"
// rule: the text of the last non-tool message the run wrote.
func (r *Relay) Reply(ctx context.Context, run *store.Run) (string, error) {
	return r.runReply(ctx, run, true)
}

// Follow records f as an outbox item (once: a recorded flow is kept) and
// wakes the dispatcher that runs it.
func (r *Relay) Follow(ctx context.Context, f sessions.Flow) error {
	item, err := r.flowItem(f)
	if err != nil {
		return err
	}
	err = r.cfg.Store.PutOutbox(context.WithoutCancel(ctx), item)
	if err != nil && !errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("relay: record flow: %w", err)
	}
	r.kick(f.RequesterKey)
	return nil
}

// flowItem is f's outbox item.
func (r *Relay) flowItem(f sessions.Flow) (*store.OutboxItem, error) {
	payload, err := json.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("relay: record flow: %w", err)
	}
	return &store.OutboxItem{
		ID: flowID(f.WaitRunID), Kind: Kind, SessionKey: f.RequesterKey, RunID: f.WaitRunID,
		Payload: payload, NextAttemptAt: r.cfg.Now(),
	}, nil
}

// Start subscribes to the runner's run ends, so that a flow a run
// recorded is handed to the dispatcher when that run ends (see kickAfter).
// A relay starts once.
func (r *Relay) Start() {
	r.start.Do(func() {
		unsub := r.cfg.Runner.Subscribe(r.onRunEvent)
		r.mu.Lock()
		r.unsub = unsub
		r.mu.Unlock()
	})
}

// Close ends Start's subscription. The flows still waiting for a run's end
// are the dispatcher's at its next full scan, as after a restart.
func (r *Relay) Close() error {
	r.mu.Lock()
	unsub := r.unsub
	r.unsub, r.afterRun = nil, nil
	r.mu.Unlock()
	if unsub != nil {
		unsub()
	}
	return nil
}

// kickAfter wakes the dispatcher for the flows of requester session key:
// when the message came from one of that session's runs (runID, a tool
// call in it) and the relay is started, once that session's run ends;
// otherwise at once. A flow's steps are background work that starts by
// waiting for the message's run, and the requester's run goes on with the
// reply as soon as that run ends: dispatched at once, the flow's start
// took the processor before the message's run did, and its announce step
// ran before the requester's tool call had the reply and again between
// its last commits (bench/peer's sessions_send p50 2.4–3.3 ms on an
// instant model, 1.7–1.9 ms dispatched after the run, with the
// dispatcher's yield; docs/benchmarks.md). The
// dispatcher's full scans (every second) take a flow whose run end went
// unseen.
func (r *Relay) kickAfter(key, runID string) {
	if runID != "" && key != "" {
		r.mu.Lock()
		started := r.unsub != nil
		if started {
			if r.afterRun == nil {
				r.afterRun = make(map[string]struct{})
			}
			r.afterRun[key] = struct{}{}
		}
		r.mu.Unlock()
		if started {
			return
		}
	}
	r.kick(key)
}

// onRunEvent wakes the dispatcher for the flows of a session whose run
// ended, if kickAfter left some to it. It runs on the run's goroutine.
func (r *Relay) onRunEvent(ev agent.Event) {
	if ev.Stream != agent.StreamLifecycle || ev.Phase != agent.PhaseEnd {
		return
	}
	r.mu.Lock()
	_, waiting := r.afterRun[ev.SessionKey]
	if waiting {
		delete(r.afterRun, ev.SessionKey)
	}
	r.mu.Unlock()
	if waiting {
		r.kick(ev.SessionKey)
	}
}

// kick wakes the dispatcher for the flows of requester key (a flow
// item's SessionKey).
func (r *Relay) kick(key string) {
	if r.cfg.Kicker != nil {
		r.cfg.Kicker.KickSession(Kind, key)
	}
}

// flowID is the outbox id of the flow started by the primary run.
func flowID(primaryRunID string) string { return Kind + ":" + primaryRunID }

// StepRunID is the run id of one step of the flow of a primary run.
func StepRunID(primary, step string) string { return Kind + ":" + primary + ":" + step }

// InterruptedError is the error text the runner gives runs cut by a
// restart; a flow whose primary run ended so tells its sender.
const InterruptedError = agent.InterruptedError

// runItem runs one recorded flow: the outbox dispatcher's Each handler.
func (r *Relay) runItem(ctx context.Context, it *store.OutboxItem) error {
	var f sessions.Flow
	if err := json.Unmarshal(it.Payload, &f); err != nil {
		return outbox.Permanent(fmt.Errorf("bad flow record: %w", err))
	}
	// A flow that ends with a post (its announce, or the report of an
	// interrupted run) is settled in the post's transaction where the
	// store can: one commit, not the post's and then the settle's.
	settle := &store.PostSettle{OutboxChange: store.OutboxChange{ID: it.ID, Apply: outbox.Delivered(r.cfg.Now)}}
	var err error
	if f.WaitRunID != "" && f.RoundOneReply == "" {
		run, gerr := r.cfg.Store.GetRun(ctx, f.WaitRunID)
		switch {
		case errors.Is(gerr, store.ErrNotFound):
			return outbox.Permanent(errors.New("primary run missing"))
		case gerr != nil:
			return gerr
		case run.Status == store.RunAborted && run.Error == InterruptedError:
			err = r.reportInterrupted(ctx, f, run, settle)
			return settledBy(settle, err)
		}
	}
	err = r.runFlow(ctx, f, settle)
	return settledBy(settle, err)
}

// settledBy is the outcome of a flow that ended with err: outbox.ErrSettled
// when its item was settled with its last post.
func settledBy(settle *store.PostSettle, err error) error {
	if err == nil && settle.Stored() {
		return outbox.ErrSettled
	}
	return err
}

// runReply returns the reply of one ended run: the messages that run wrote
// to its session's transcript, scanned as the reference scans a session —
// newest assistant text or, with lastOnly, the text of the last non-tool
// message only. Reading only the run's own messages means an empty reply
// is never mistaken for an older one.
func (r *Relay) runReply(ctx context.Context, run *store.Run, lastOnly bool) (string, error) {
	runID, sessionID := run.RunID, run.SessionID
	// A run that ended ok here wrote its last message with its end, and
	// its end event carries it: the newest message, read from memory.
	// Its text, or with lastOnly no text, is the reply; otherwise older
	// messages are scanned in the transcript.
	if m := r.cfg.Runner.EndMessage(runID); m != nil && run.Status == store.RunOK && ownMessage(m, runID) {
		reply, err := messageReply(m, runID, lastOnly)
		if err != nil || reply != "" || lastOnly {
			return reply, err
		}
	}
	if sessionID == "" { // a run that never started wrote nothing; one from an older store may lack it
		sess, err := r.cfg.Store.GetSession(ctx, run.SessionKey)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return "", nil
			}
			return "", err
		}
		sessionID = sess.SessionID
	}
	hist, err := r.cfg.Store.History(ctx, sessionID, store.HistoryOptions{RunID: runID, Limit: 200})
	if err != nil {
		return "", err
	}
	own := hist[:0:0]
	answered := false
	for _, m := range hist {
		if m.RunID == runID && m.Entry.Message != nil {
			own = append(own, m)
			answered = answered || m.Role != transcript.RoleUser
		}
	}
	if !answered {
		// A message steered into another run, or collected into one turn,
		// is answered by that run: its reply is what the carrier wrote
		// after the message.
		carried, err := r.carrierMessages(ctx, sessionID, runID)
		if err != nil {
			return "", err
		}
		if carried != nil {
			own = carried
		}
	}
	// The reply is one message's text, scanned from the newest: only the
	// messages looked at are converted to the reference's shape.
	for i := len(own) - 1; i >= 0; i-- {
		if role := own[i].Entry.Message.Role; role == transcript.RoleToolResult || role == transcript.RoleTool {
			continue
		}
		reply, err := messageReply(own[i].Entry.Message, runID, lastOnly)
		if err != nil || reply != "" || lastOnly {
			return reply, err
		}
	}
	return "", nil
}

// ownMessage reports whether m is an assistant message run runID wrote.
func ownMessage(m *transcript.Message, runID string) bool {
	return m.Role == transcript.RoleAssistant && m.Meta != nil && m.Meta.RunID == runID
}

// messageReply is the reply text of one non-tool message of run runID,
// converted to the reference's shape: with lastOnly its text (the
// reference's last-message rule), else its newest assistant text.
func messageReply(m *transcript.Message, runID string, lastOnly bool) (string, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("relay: encode message of run %s: %w", runID, err)
	}
	var mm map[string]any
	if err := json.Unmarshal(raw, &mm); err != nil {
		return "", fmt.Errorf("relay: decode message of run %s: %w", runID, err)
	}
	msg := []map[string]any{mm}
	if lastOnly {
		return sanitize.LastMessageReply(msg), nil
	}
	return sanitize.LatestReply(msg), nil
}

// carrierScan bounds how far back carrierMessages looks for a carried
// message: a carried run has just ended when its reply is read.
const carrierScan = 400

// carrierMessages returns the messages that answered runID when another
// run carried it: after runID's own input message (steered), or after the
// collected turn's message that names runID, the messages of the run that
// wrote them. nil when runID was not carried.
func (r *Relay) carrierMessages(ctx context.Context, sessionID, runID string) ([]store.Message, error) {
	hist, err := r.cfg.Store.History(ctx, sessionID, store.HistoryOptions{Limit: carrierScan})
	if err != nil {
		return nil, err
	}
	start, carrier := -1, ""
	for i, m := range hist {
		if m.Entry.Message == nil || m.Role != transcript.RoleUser {
			continue
		}
		if m.RunID == runID {
			start = i // steered: the carrier is whoever writes next
			break
		}
		if carries(m.Entry.Message, runID) {
			start, carrier = i, m.RunID
			break
		}
	}
	if start < 0 {
		return nil, nil
	}
	steered := carrier == ""
	var out []store.Message
	for _, m := range hist[start+1:] {
		if m.Entry.Message == nil || m.RunID == "" || m.RunID == runID {
			continue
		}
		if carrier == "" {
			carrier = m.RunID
		}
		if m.RunID == carrier {
			out = append(out, m)
		}
	}
	// A steered message joined a run already under way: one that wrote
	// before it too. Anything else is a later run, not its carrier.
	if steered && !slices.ContainsFunc(hist[:start], func(m store.Message) bool { return m.RunID == carrier }) {
		return nil, nil
	}
	return out, nil
}

// carries reports whether msg is a collected turn's input that carries
// runID.
func carries(msg *transcript.Message, runID string) bool {
	if msg.Meta == nil {
		return false
	}
	raw, ok := msg.Meta.Extra[transcript.MetaCarries]
	if !ok {
		return false
	}
	var ids []string
	if json.Unmarshal(raw, &ids) != nil {
		return false
	}
	return slices.Contains(ids, runID)
}
