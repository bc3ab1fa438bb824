package relay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/sanitize"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/telemetry"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/tools/sessions"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// AnnounceStepMessage is the announce step's input message.
const AnnounceStepMessage = "Agent-to-agent announce step."

// maxStepWait caps how long one reply-back or announce step waits for its
// run to end once it may run (the reference's min(announceTimeout, 60s)).
const maxStepWait = 60 * time.Second

// laneAllowance is added to a step's wait for the time its run may sit
// queued behind a busy session's current run: a reply-back turn is its own
// queued run, never nested in a run in flight, so a busy requester delays
// the loop instead of deadlocking it.
const laneAllowance = 10 * time.Minute

// runFlow is the reply-back loop and announce step (docs/spec/reference-behaviour.md §6.4).
//
// settle is the flow's outbox item, settled with the announce's post where
// the store can (store.PostSettle).
func (r *Relay) runFlow(ctx context.Context, s sessions.Flow, settle *store.PostSettle) error {
	stepWait := min(s.AnnounceTimeout, maxStepWait)
	latest := s.RoundOneReply
	if latest == "" && s.WaitRunID != "" {
		run, done, err := r.cfg.Runner.Wait(ctx, s.WaitRunID, stepWait+laneAllowance)
		if err != nil {
			return err
		}
		if !done {
			return fmt.Errorf("primary run %s still not finished", s.WaitRunID)
		}
		if run.Status != store.RunOK {
			return nil // no reply: no ping-pong, no announce
		}
		if latest, err = r.runReply(ctx, run, false); err != nil {
			return err
		}
	}
	if latest == "" {
		return nil
	}
	roundOne := latest
	targetChannel := r.sessionChannel(ctx, s.TargetKey)
	requesterChannel := s.RequesterChannel

	if s.MaxTurns > 0 && s.RequesterKey != "" && s.RequesterKey != s.TargetKey {
		// The loop's first turn is the requester's: it queues behind the
		// requester's run anyway. Without a loop the announce step does
		// not wait for that run.
		if err := r.afterRequesterRun(ctx, s, stepWait); err != nil {
			return err
		}
		current, next := s.RequesterKey, s.TargetKey
		incoming := latest
		chain := s.Chain
		for turn := 1; turn <= s.MaxTurns; turn++ {
			chain = chain.Next(current)
			currentIsRequester := current == s.RequesterKey
			srcChannel := targetChannel
			if next == s.RequesterKey {
				srcChannel = requesterChannel
			}
			reply, err := r.agentStep(ctx, StepRunID(s.WaitRunID, "turn"+strconv.Itoa(turn)), current, incoming,
				replyContext(turn, s.MaxTurns, currentIsRequester, s, requesterChannel, targetChannel),
				next, srcChannel, stepWait, chain)
			if err != nil {
				return err
			}
			if reply == "" || sanitize.IsSkip(reply, sanitize.ReplySkip) {
				break
			}
			latest, incoming = reply, reply
			current, next = next, current
		}
	}

	announce, err := r.agentStep(ctx, StepRunID(s.WaitRunID, "announce"), s.TargetKey, AnnounceStepMessage,
		announceContext(s, requesterChannel, targetChannel, roundOne, latest),
		s.RequesterKey, requesterChannel, stepWait, s.Chain.Next(s.TargetKey))
	if err != nil {
		return err
	}
	announce = strings.TrimSpace(announce)
	if announce == "" || sanitize.IsSkip(announce, sanitize.AnnounceSkip) {
		return nil
	}
	return r.deliver(ctx, agent.Post{
		SessionKey: s.TargetKey, Text: announce, IdempotencyKey: "a2a-announce:" + s.WaitRunID,
		Provenance: &transcript.Provenance{Kind: transcript.ProvenanceInterSession,
			SourceSessionKey: s.RequesterKey, SourceTool: sessions.SendToolName},
	}, settle)
}

// afterRequesterRun waits (at most wait) for the run that sent the
// message to end. That run goes on with the reply as soon as its wait
// ends; the flow's steps are background work, and started at once they
// would take the store's writer and the CPU from that run's next steps
// (on an instant model, the announce step's start and end commits fell
// between the sender's tool result and its end). Only a flow whose
// reply-back loop runs waits: its first turn, on the requester, queues
// behind that run anyway.
func (r *Relay) afterRequesterRun(ctx context.Context, s sessions.Flow, wait time.Duration) error {
	if s.RequesterRunID == "" || s.RequesterRunID == s.WaitRunID {
		return nil
	}
	switch run, err := r.cfg.Store.GetRun(ctx, s.RequesterRunID); {
	case errors.Is(err, store.ErrNotFound):
		return nil // pruned since (a flow resumed long after): nothing to wait for
	case err != nil:
		return err
	case run.Status.Terminal():
		return nil
	}
	if _, _, err := r.cfg.Runner.Wait(ctx, s.RequesterRunID, wait); err != nil {
		return fmt.Errorf("wait for the requester's run %s: %w", s.RequesterRunID, err)
	}
	return nil
}

// agentStep runs one turn on key as its own queued run and returns that
// run's reply ("" when it did not end ok). runID makes the step idempotent:
// a resumed flow gets the existing run back.
//
// chain is the step's place in the chain of causes (a flow recorded before
// chains existed has none, and its steps start new ones).
func (r *Relay) agentStep(ctx context.Context, runID, key, message, extra, sourceKey, sourceChannel string, wait time.Duration, chain tools.Chain) (string, error) {
	in := agent.Input{
		RunID:             runID,
		SessionKey:        key,
		AgentID:           sessionkey.AgentID(key),
		Message:           message,
		Lane:              LaneNested,
		Channel:           sessionkey.InternalChannel,
		ExtraSystemPrompt: extra,
		Step:              true, // never a turn a steered message may join
		Provenance: &agent.Provenance{
			Kind: transcript.ProvenanceInterSession, SourceSessionKey: sourceKey,
			SourceChannel: sourceChannel, SourceTool: sessions.SendToolName,
		},
	}
	name := "sessions_send.step"
	if strings.HasSuffix(runID, ":announce") {
		name = "sessions_send.announce"
	}
	ctx, span := r.cfg.Tracer.StartStep(ctx, telemetry.Step{Name: name, From: sourceKey, To: key, RunID: runID,
		Link: telemetry.Link{ChainID: chain.ID, Parent: chain.Span, Hops: chain.Hops}})
	defer span.End(nil)
	if id := span.ID(); id != "" {
		chain.Span = id
	}
	if chain.ID != "" || chain.Untrusted != "" {
		in.Chain = &chain
	}
	in.IdempotencyKey = in.RunID + ":user"
	t, err := r.cfg.Admit.Accept(ctx, admission.Request{Origin: admission.OriginStep, Input: in})
	if err != nil {
		return "", fmt.Errorf("agent step on %s: %w", key, err)
	}
	run := t.Run
	done, ok, err := r.cfg.Runner.Wait(ctx, run.RunID, wait+laneAllowance)
	if err != nil {
		return "", fmt.Errorf("agent step on %s: %w", key, err)
	}
	if !ok || done.Status != store.RunOK {
		return "", nil
	}
	return r.runReply(ctx, done, false)
}

// reportInterrupted tells the sender that the target's run was cut by a
// gateway restart before it replied.
func (r *Relay) reportInterrupted(ctx context.Context, s sessions.Flow, run *store.Run, settle *store.PostSettle) error {
	if s.RequesterKey == "" {
		return nil // sent from outside a session: agent.wait reports it
	}
	text := fmt.Sprintf("sessions_send to %s (runId %s) was interrupted: %s. The message is in that session's history but it did not reply; send it again if you still need an answer.",
		s.DisplayKey, run.RunID, cmp.Or(run.Error, "aborted"))
	return r.deliver(ctx, agent.Post{
		SessionKey: s.RequesterKey, Text: text, IdempotencyKey: "a2a-interrupted:" + run.RunID,
		Provenance: &transcript.Provenance{Kind: transcript.ProvenanceInterSession,
			SourceSessionKey: s.TargetKey, SourceTool: sessions.SendToolName},
	}, settle)
}

// sessionChannel is a session's delivery channel, or "unknown".
func (r *Relay) sessionChannel(ctx context.Context, key string) string {
	s, err := r.cfg.Store.GetSession(ctx, key)
	if err != nil {
		return "unknown"
	}
	if s.DeliveryContext != nil && s.DeliveryContext.Channel != "" {
		return s.DeliveryContext.Channel
	}
	return cmp.Or(s.LastChannel, s.Channel, "unknown")
}

// deliver posts p to its session's channel, unless the session's send
// policy denies delivery; settle (nil: none) is settled with the post
// where the store can.
func (r *Relay) deliver(ctx context.Context, p agent.Post, settle *store.PostSettle) error {
	s, err := r.cfg.Store.GetSession(ctx, p.SessionKey)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if sessions.SendPolicyOf(r.cfg.SendRules, s, p.SessionKey, "") == policy.DecisionDeny {
		r.log.Info("announce suppressed by send policy", "session", p.SessionKey)
		return nil
	}
	p.AfterRun = true // never inside a turn the target is answering
	if settle != nil {
		ctx = store.WithPostSettle(ctx, settle)
	}
	_, err = r.cfg.Runner.Post(ctx, p)
	return err
}

// replyContext is the extra system prompt of a reply-back turn (docs/spec/reference-behaviour.md §6.4).
func replyContext(turn, maxTurns int, currentIsRequester bool, s sessions.Flow, requesterChannel, targetChannel string) string {
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
	lines = append(lines, `If you want to stop the ping-pong, reply exactly "`+sanitize.ReplySkip+`".`)
	return strings.Join(lines, "\n")
}

// announceContext is the extra system prompt of the announce step (docs/spec/reference-behaviour.md §6.4).
func announceContext(s sessions.Flow, requesterChannel, targetChannel, roundOne, latest string) string {
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
		`If you want to remain silent, reply exactly "`+sanitize.AnnounceSkip+`".`,
		"Any other reply will be posted to the target channel.",
		"After this reply, the agent-to-agent conversation is over.")
	return strings.Join(lines, "\n")
}

func participants(s sessions.Flow, requesterChannel, targetChannel string) []string {
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
