package sessions

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sanitize"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// Skip tokens of the agent-to-agent loop.
const (
	ReplySkip    = "REPLY_SKIP"
	AnnounceSkip = "ANNOUNCE_SKIP"
	// AnnounceStepMessage is the announce step's input message.
	AnnounceStepMessage = "Agent-to-agent announce step."
)

// maxStepWait caps how long one reply-back or announce step waits for its
// run to end once it may run (the reference's min(announceTimeout, 60s)).
const maxStepWait = 60 * time.Second

// laneAllowance is added to a step's wait for the time its run may sit
// queued behind a busy session's current run: a reply-back turn is its own
// queued run, never nested in a run in flight, so a busy requester delays
// the loop instead of deadlocking it.
const laneAllowance = 10 * time.Minute

// flowSpec is everything the agent-to-agent flow of §6.4 needs.
type flowSpec struct {
	TargetKey        string        `json:"targetKey"`
	DisplayKey       string        `json:"displayKey"`
	Message          string        `json:"message"`
	AnnounceTimeout  time.Duration `json:"announceTimeout"`
	MaxTurns         int           `json:"maxTurns"`
	RequesterKey     string        `json:"requesterKey,omitempty"`
	RequesterChannel string        `json:"requesterChannel,omitempty"`
	RoundOneReply    string        `json:"roundOneReply,omitempty"`
	WaitRunID        string        `json:"waitRunId,omitempty"`
}

// flowKind is the outbox kind of agent-to-agent flows.
const flowKind = "a2a"

// flowID is the outbox id of the flow started by the primary run.
func flowID(primaryRunID string) string { return flowKind + ":" + primaryRunID }

// flows runs agent-to-agent flows in the background. Each flow is recorded
// in the store's outbox before it starts and marked delivered when it ends,
// so a flow cut by a crash resumes at the next start (see recover). Its
// steps use run ids derived from the primary run's, so resuming re-submits
// nothing that already ran. Every goroutine is owned here and stopped by
// close.
type flows struct {
	t      *Tools
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex // guards closed
	closed bool
}

func newFlows(t *Tools) *flows {
	f := &flows{t: t}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	return f
}

// record writes spec's outbox item; an existing item is kept (the flow is
// already recorded).
func (f *flows) record(ctx context.Context, spec flowSpec) error {
	payload, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	err = f.t.d.Store.PutOutbox(ctx, &store.OutboxItem{
		ID: flowID(spec.WaitRunID), Kind: flowKind, SessionKey: spec.RequesterKey, RunID: spec.WaitRunID,
		Payload: payload, NextAttemptAt: f.t.d.Now(),
	})
	if errors.Is(err, store.ErrConflict) {
		return nil
	}
	return err
}

// start records spec (when not yet recorded) and runs its flow in the
// background.
func (f *flows) start(ctx context.Context, spec flowSpec) {
	if err := f.record(context.WithoutCancel(ctx), spec); err != nil {
		f.t.log.Warn("agent-to-agent flow not recorded", "runId", spec.WaitRunID, "err", err)
	}
	f.run(spec)
}

// run runs a recorded flow in the background and marks its outbox item
// delivered when it ends. A flow cut by shutdown stays pending.
func (f *flows) run(spec flowSpec) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	f.wg.Go(func() {
		err := f.t.runFlow(f.ctx, spec)
		if f.ctx.Err() != nil {
			return // shutting down: resumed at the next start
		}
		if err != nil {
			f.t.log.Warn("agent-to-agent flow failed", "target", spec.TargetKey, "runId", spec.WaitRunID, "err", err)
		}
		f.finish(flowID(spec.WaitRunID), err)
	})
}

// finish marks a flow's outbox item delivered (or dead with the error).
func (f *flows) finish(id string, flowErr error) {
	_, err := f.t.d.Store.UpdateOutbox(context.Background(), id, func(it *store.OutboxItem) error {
		it.Attempts++
		if flowErr != nil {
			it.Status, it.LastError = store.OutboxDead, flowErr.Error()
			return nil
		}
		it.Status, it.DeliveredAt = store.OutboxDelivered, f.t.d.Now()
		return nil
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		f.t.log.Warn("agent-to-agent flow state not saved", "id", id, "err", err)
	}
}

// recover resumes the flows a crash or shutdown left pending. A flow whose
// primary run was cut by the restart is reported to its sender instead:
// the sent text stays in the target's history, the run's final status is
// aborted, and the sender's session is told it got no reply.
func (f *flows) recover(ctx context.Context) error {
	items, err := f.t.d.Store.ListOutbox(ctx, store.OutboxFilter{Kind: flowKind, Statuses: []store.OutboxStatus{store.OutboxPending}})
	if err != nil {
		return fmt.Errorf("sessions: recover flows: %w", err)
	}
	for _, it := range items {
		var spec flowSpec
		if err := json.Unmarshal(it.Payload, &spec); err != nil {
			f.finish(it.ID, fmt.Errorf("bad flow record: %w", err))
			continue
		}
		run, err := f.t.d.Store.GetRun(ctx, spec.WaitRunID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			f.finish(it.ID, errors.New("primary run missing"))
		case err != nil:
			return fmt.Errorf("sessions: recover flows: %w", err)
		case run.Status == store.RunAborted:
			f.finish(it.ID, f.t.reportInterrupted(ctx, spec, run))
		case run.Status == store.RunError || run.Status == store.RunTimeout:
			f.finish(it.ID, nil) // no reply: nothing to announce
		default:
			f.t.log.Info("resuming agent-to-agent flow", "runId", spec.WaitRunID, "target", spec.TargetKey)
			f.run(spec)
		}
	}
	return nil
}

func (f *flows) close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.cancel()
	f.wg.Wait()
}

// runFlow is the reply-back loop and announce step (§6.4).
func (t *Tools) runFlow(ctx context.Context, s flowSpec) error {
	stepWait := min(s.AnnounceTimeout, maxStepWait)
	latest := s.RoundOneReply
	if latest == "" && s.WaitRunID != "" {
		run, done, err := t.d.Runner.Wait(ctx, s.WaitRunID, stepWait+laneAllowance)
		if err != nil {
			return err
		}
		if !done || run.Status != store.RunOK {
			return nil // no reply: no ping-pong, no announce
		}
		if latest, err = t.runReply(ctx, s.TargetKey, s.WaitRunID, false); err != nil {
			return err
		}
	}
	if latest == "" {
		return nil
	}
	roundOne := latest
	targetChannel := t.sessionChannel(ctx, s.TargetKey)
	requesterChannel := s.RequesterChannel

	if s.MaxTurns > 0 && s.RequesterKey != "" && s.RequesterKey != s.TargetKey {
		current, next := s.RequesterKey, s.TargetKey
		incoming := latest
		for turn := 1; turn <= s.MaxTurns; turn++ {
			currentIsRequester := current == s.RequesterKey
			srcChannel := targetChannel
			if next == s.RequesterKey {
				srcChannel = requesterChannel
			}
			reply, err := t.agentStep(ctx, stepRunID(s.WaitRunID, "turn"+strconv.Itoa(turn)), current, incoming,
				replyContext(turn, s.MaxTurns, currentIsRequester, s, requesterChannel, targetChannel),
				next, srcChannel, stepWait)
			if err != nil {
				return err
			}
			if reply == "" || sanitize.IsSkip(reply, ReplySkip) {
				break
			}
			latest, incoming = reply, reply
			current, next = next, current
		}
	}

	announce, err := t.agentStep(ctx, stepRunID(s.WaitRunID, "announce"), s.TargetKey, AnnounceStepMessage,
		announceContext(s, requesterChannel, targetChannel, roundOne, latest),
		s.RequesterKey, requesterChannel, stepWait)
	if err != nil {
		return err
	}
	announce = strings.TrimSpace(announce)
	if announce == "" || sanitize.IsSkip(announce, AnnounceSkip) {
		return nil
	}
	return t.deliver(ctx, Delivery{
		SessionKey: s.TargetKey, Text: announce, SourceSessionKey: s.RequesterKey, SourceTool: SendToolName,
		IdempotencyKey: "a2a-announce:" + s.WaitRunID,
	})
}

// stepRunID is the run id of one step of the flow of a primary run.
func stepRunID(primary, step string) string { return flowKind + ":" + primary + ":" + step }

// agentStep runs one turn on key as its own queued run and returns that
// run's reply ("" when it did not end ok). runID makes the step idempotent:
// a resumed flow gets the existing run back.
func (t *Tools) agentStep(ctx context.Context, runID, key, message, extra, sourceKey, sourceChannel string, wait time.Duration) (string, error) {
	in := agent.Input{
		RunID:             runID,
		SessionKey:        key,
		AgentID:           sessionkey.AgentID(key),
		Message:           message,
		Lane:              LaneNested,
		Channel:           internalChannel,
		ExtraSystemPrompt: extra,
		Provenance: &agent.Provenance{
			Kind: transcript.ProvenanceInterSession, SourceSessionKey: sourceKey,
			SourceChannel: sourceChannel, SourceTool: SendToolName,
		},
	}
	in.IdempotencyKey = in.RunID + ":user"
	run, _, err := t.d.Runner.Submit(ctx, in)
	if err != nil {
		return "", fmt.Errorf("agent step on %s: %w", key, err)
	}
	done, ok, err := t.d.Runner.Wait(ctx, run.RunID, wait+laneAllowance)
	if err != nil || !ok || done.Status != store.RunOK {
		return "", err
	}
	return t.runReply(ctx, key, run.RunID, false)
}

// runReply returns the reply of one run: the messages that run wrote to the
// session, scanned as the reference scans a session — newest assistant text
// (latest) or, with lastOnly, the text of the last non-tool message only
// (the reference's sessions_send "ok" rule). Reading only the run's own
// messages means an empty reply is never mistaken for an older one.
func (t *Tools) runReply(ctx context.Context, key, runID string, lastOnly bool) (string, error) {
	sess, err := t.d.Store.GetSession(ctx, key)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return "", nil
		}
		return "", err
	}
	hist, err := t.d.Store.History(ctx, sess.SessionID, store.HistoryOptions{RunID: runID, Limit: 200})
	if err != nil {
		return "", err
	}
	var msgs []map[string]any
	for _, m := range hist {
		if m.RunID != runID || m.Entry.Message == nil {
			continue
		}
		raw, err := json.Marshal(m.Entry.Message)
		if err != nil {
			continue
		}
		var mm map[string]any
		if json.Unmarshal(raw, &mm) == nil {
			msgs = append(msgs, mm)
		}
	}
	if lastOnly {
		return sanitize.LastMessageReply(msgs), nil
	}
	return sanitize.LatestReply(msgs), nil
}

// reportInterrupted tells the sender that the target's run was cut by a
// gateway restart before it replied.
func (t *Tools) reportInterrupted(ctx context.Context, s flowSpec, run *store.Run) error {
	if s.RequesterKey == "" {
		return nil // sent from outside a session: agent.wait reports it
	}
	text := fmt.Sprintf("sessions_send to %s (runId %s) was interrupted: %s. The message is in that session's history but it did not reply; send it again if you still need an answer.",
		s.DisplayKey, run.RunID, cmp.Or(run.Error, "aborted"))
	return t.deliver(ctx, Delivery{
		SessionKey: s.RequesterKey, Text: text, SourceSessionKey: s.TargetKey, SourceTool: SendToolName,
		IdempotencyKey: "a2a-interrupted:" + run.RunID,
	})
}

// sessionChannel is a session's delivery channel, or "unknown".
func (t *Tools) sessionChannel(ctx context.Context, key string) string {
	s, err := t.d.Store.GetSession(ctx, key)
	if err != nil {
		return "unknown"
	}
	if s.DeliveryContext != nil && s.DeliveryContext.Channel != "" {
		return s.DeliveryContext.Channel
	}
	return cmp.Or(s.LastChannel, s.Channel, "unknown")
}

// deliver posts an announce to a session's channel, unless its send policy
// denies delivery.
func (t *Tools) deliver(ctx context.Context, d Delivery) error {
	s, err := t.d.Store.GetSession(ctx, d.SessionKey)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if t.sendPolicy(s, d.SessionKey, "") == policy.DecisionDeny {
		t.log.Info("announce suppressed by send policy", "session", d.SessionKey)
		return nil
	}
	if t.d.Deliverer == nil {
		return errors.New("no deliverer configured")
	}
	return t.d.Deliverer.Deliver(ctx, d)
}

// replyContext is the extra system prompt of a reply-back turn (§6.4).
func replyContext(turn, maxTurns int, currentIsRequester bool, s flowSpec, requesterChannel, targetChannel string) string {
	who := "Agent 2 (target)."
	if currentIsRequester {
		who = "Agent 1 (requester)."
	}
	lines := []string{
		"Agent-to-agent reply step:",
		"Current agent: " + who,
		"Turn " + strconv.Itoa(turn) + " of " + strconv.Itoa(maxTurns) + ".",
	}
	lines = append(lines, participants(s, requesterChannel, targetChannel)...)
	lines = append(lines, `If you want to stop the ping-pong, reply exactly "REPLY_SKIP".`)
	return strings.Join(lines, "\n")
}

// announceContext is the extra system prompt of the announce step (§6.4).
func announceContext(s flowSpec, requesterChannel, targetChannel, roundOne, latest string) string {
	lines := []string{"Agent-to-agent announce step:"}
	lines = append(lines, participants(s, requesterChannel, targetChannel)...)
	lines = append(lines, "Original request: "+s.Message)
	if roundOne != "" {
		lines = append(lines, "Round 1 reply: "+roundOne)
	} else {
		lines = append(lines, "Round 1 reply: (not available).")
	}
	if latest != "" {
		lines = append(lines, "Latest reply: "+latest)
	} else {
		lines = append(lines, "Latest reply: (not available).")
	}
	lines = append(lines,
		`If you want to remain silent, reply exactly "ANNOUNCE_SKIP".`,
		"Any other reply will be posted to the target channel.",
		"After this reply, the agent-to-agent conversation is over.")
	return strings.Join(lines, "\n")
}

func participants(s flowSpec, requesterChannel, targetChannel string) []string {
	var lines []string
	if s.RequesterKey != "" {
		lines = append(lines, "Agent 1 (requester) session: "+s.RequesterKey+".")
	}
	if requesterChannel != "" {
		lines = append(lines, "Agent 1 (requester) channel: "+requesterChannel+".")
	}
	lines = append(lines, "Agent 2 (target) session: "+s.DisplayKey+".")
	if targetChannel != "" {
		lines = append(lines, "Agent 2 (target) channel: "+targetChannel+".")
	}
	return lines
}
