package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
)

// CompactInput makes a run a manual compaction of its session (/compact,
// sessions.compact) instead of a model turn. The compaction holds the
// session's lane like a turn: what arrives meanwhile queues behind it and
// runs on the compacted history, and its run id ends like any run's.
type CompactInput struct {
	// Instructions focus the summary.
	Instructions string `json:"instructions,omitempty"`
	// MaxLines, when set, keeps only the last *MaxLines entries, without
	// a summary (sessions.compact with maxLines).
	MaxLines *int `json:"maxLines,omitempty"`
}

// Stop reasons of a compaction run.
const (
	StopCompacted = "compacted"
	StopSkipped   = "skipped"
)

// compactSlot carries a compaction run's result to the caller that asked
// for it.
type compactSlot struct {
	res *CompactResult
	err error
	set bool
}

// Compact compacts the session's history now, as /compact and
// sessions.compact do: older turns become a summary, the recent tail
// stays verbatim. instructions focus the summary.
func (r *Runner) Compact(ctx context.Context, sessionKey, instructions string) (*CompactResult, error) {
	return r.CompactRun(ctx, r.newID(), sessionKey, CompactInput{Instructions: instructions})
}

// Truncate keeps only the last maxLines transcript entries in the model's
// view, without a summary (sessions.compact with maxLines). The stored
// history is not deleted.
func (r *Runner) Truncate(ctx context.Context, sessionKey string, maxLines int) (*CompactResult, error) {
	return r.CompactRun(ctx, r.newID(), sessionKey, CompactInput{MaxLines: &maxLines})
}

// CompactRun runs a manual compaction of the session as run runID on its
// lane, after the runs ahead of it, and returns its result once it ended.
// The run is recorded like any other (agent.wait on runID reports it); a
// runID already known is waited for, not run again. A failed compaction
// ends its run with status error and returns the error.
func (r *Runner) CompactRun(ctx context.Context, runID, sessionKey string, o CompactInput) (*CompactResult, error) {
	sess, err := r.cfg.Store.GetSession(ctx, sessionKey)
	if err == nil && sess.SessionID == "" {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("agent.CompactRun: %w", err)
	}
	in := Input{RunID: runID, SessionKey: sessionKey, AgentID: sess.AgentID, Compact: &o}
	raw, err := json.Marshal(&in)
	if err != nil {
		return nil, fmt.Errorf("agent.CompactRun: %w", err)
	}
	slot := &compactSlot{}
	r.mu.Lock()
	if r.compactSlots == nil {
		r.compactSlots = make(map[string]*compactSlot)
	}
	r.compactSlots[runID] = slot
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.compactSlots, runID)
		r.mu.Unlock()
	}()
	run := &store.Run{RunID: runID, SessionKey: sessionKey, SessionID: sess.SessionID, AgentID: sess.AgentID,
		Status: store.RunQueued, Input: raw, CreatedAt: r.runCreatedAt()}
	switch err := r.cfg.Store.CreateRun(ctx, run); {
	case errors.Is(err, store.ErrConflict):
		// Asked before (a retried request): wait for that run.
	case err != nil:
		return nil, fmt.Errorf("agent.CompactRun: %w", err)
	default:
		if _, err := r.enqueue(sessionKey, runID, &in, nil); err != nil {
			return nil, err
		}
	}
	fin, done, err := r.Wait(ctx, runID, -1)
	if err != nil {
		return nil, fmt.Errorf("agent.CompactRun: %w", err)
	}
	if !done {
		return nil, fmt.Errorf("agent.CompactRun: %w", context.Cause(ctx))
	}
	r.mu.Lock()
	got := *slot
	r.mu.Unlock()
	if got.set {
		return got.res, got.err
	}
	// Run elsewhere (another gateway node, an earlier request): its
	// record says what happened.
	switch {
	case fin.Status != store.RunOK:
		return nil, fmt.Errorf("compaction: %s", fin.Error)
	case fin.StopReason == StopCompacted:
		return &CompactResult{Compacted: true}, nil
	}
	return &CompactResult{Reason: fin.Error}, nil
}

// executeCompact runs the compaction run queued with in: it holds the
// session's lane while the summary is written. It is an internal step:
// no input enters the transcript, steered messages never join it, and it
// emits no lifecycle events (the gateway shows compaction events).
func (r *Runner) executeCompact(ctx context.Context, queued *store.Run, in *Input) {
	bg := r.writes
	res, err := r.compactQueued(ctx, bg, queued, in.Compact)
	if errors.Is(err, store.ErrConflict) {
		return // aborted or started meanwhile
	}
	result := store.RunResult{Status: store.RunOK, StopReason: StopSkipped, EndedAt: r.now()}
	switch {
	case err != nil:
		result.Status, result.Error = classify(ctx, err)
		result.StopReason = provider.StopError
	case res.Compacted:
		result.StopReason = StopCompacted
	default:
		result.Error = res.Reason // why nothing was compacted
	}
	r.mu.Lock()
	if slot, ok := r.compactSlots[queued.RunID]; ok {
		slot.res, slot.err, slot.set = res, err, true
	}
	r.mu.Unlock()
	if _, ferr := r.cfg.Store.FinishRun(bg, queued.RunID, result); ferr != nil {
		r.log.Error("compaction run finish failed", "runId", queued.RunID, "err", ferr)
	}
	r.wakeWaiters(queued.RunID)
}

// compactQueued starts the compaction run and compacts.
func (r *Runner) compactQueued(ctx, bg context.Context, queued *store.Run, o *CompactInput) (*CompactResult, error) {
	sess, model, err := r.sessionModel(bg, queued.SessionKey)
	if err != nil {
		return nil, err
	}
	if _, _, err := r.cfg.Store.StartRun(bg, queued.RunID, r.now(), sess.SessionID, nil); err != nil {
		return nil, err
	}
	if o.MaxLines != nil {
		return r.compact(ctx, sess, model, compactOpts{truncate: true, maxLines: *o.MaxLines})
	}
	return r.compact(ctx, sess, model, compactOpts{instructions: o.Instructions, manual: true})
}
