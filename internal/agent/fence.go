package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// This file holds how a run on one node of several stays fenced: it takes
// the fence of its lane's claim before it starts (Lanes.Hold), every store
// write it makes carries that fence (the store refuses it once the claim
// moved), and it checks the claim before each provider request and each
// tool call (Lanes.Check), so a node cut off from the database, or paused,
// stops acting for a lane before another node adopts it. Without Lanes
// (one gateway) no fence is taken and every check passes.

// holdFence takes the fence of the session's lane for runID (and the runs
// it carries). It fails when this node no longer holds the lane's claim:
// the run must not start here.
func (r *Runner) holdFence(runID, sessionKey string) error {
	if r.cfg.Lanes == nil {
		return nil
	}
	f, err := r.cfg.Lanes.Hold(sessionKey)
	if err != nil {
		return err
	}
	r.shareFence(runID, f)
	return nil
}

// shareFence records f as runID's fence.
func (r *Runner) shareFence(runID string, f store.Fence) {
	if f.IsZero() {
		return
	}
	r.mu.Lock()
	if r.fences == nil {
		r.fences = make(map[string]store.Fence)
	}
	r.fences[runID] = f
	r.mu.Unlock()
}

// fenceOf returns runID's fence (zero when it has none).
func (r *Runner) fenceOf(runID string) store.Fence {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fences[runID]
}

// dropFence forgets runID's fence once the run ended.
func (r *Runner) dropFence(runID string) {
	r.mu.Lock()
	delete(r.fences, runID)
	r.mu.Unlock()
}

// writeCtx is the context of runID's store writes: it survives the run's
// cancellation (an aborted run still records what it produced) and
// carries the run's fence.
func (r *Runner) writeCtx(runID string) context.Context {
	return store.WithFence(r.writes, r.fenceOf(runID))
}

// checkClaim fails with errFenced when runID's node no longer holds the
// claim its fence names; a run checks before each provider request and
// each tool call.
func (r *Runner) checkClaim(runID string) error {
	if r.cfg.Lanes == nil {
		return nil
	}
	f := r.fenceOf(runID)
	if f.IsZero() {
		return nil
	}
	if err := r.cfg.Lanes.Check(f); err != nil {
		return fmt.Errorf("%w: %w", errFenced, err)
	}
	return nil
}

// storeRetryMax bounds the wait between attempts of a write retried
// while the store does not answer.
const storeRetryMax = 2 * time.Second

// maxUnreachableTries bounds the tries of a store call that fails as
// unreachable while reads of the run succeed (about half a minute).
const maxUnreachableTries = 20

// untilStoreAnswers calls fn (a store call for runID) until it succeeds,
// or fails while the store answers (a read of the run succeeds: the
// failure is the call's own), or fails with ErrConflict, ErrNotFound or
// ErrFenced, or the run's claim is lost (the node that adopts the lane
// takes over), or the runner shuts down. It returns fn's last error. So a
// database restart or a full disk delays a run's start and end instead of
// failing the run or leaving it running.
func (r *Runner) untilStoreAnswers(runID, what string, fn func(ctx context.Context) error) error {
	wait := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := fn(r.writeCtx(runID))
		switch {
		case err == nil:
			if attempt > 1 {
				r.log.Info("store answered again", "runId", runID, "op", what, "attempts", attempt)
			}
			return nil
		case errors.Is(err, store.ErrFenced):
			r.log.Warn("fenced write dropped", "runId", runID, "op", what, "err", err)
			return err
		case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound):
			return err
		}
		// A call that did not reach the database (a pooled connection the
		// restart cut, a server still starting) is tried again even when a
		// read of the run succeeds meanwhile, a bounded number of times:
		// failing the run would lose an accepted message.
		if !r.storeDown(runID) && (!store.Unreachable(err) || attempt >= maxUnreachableTries) {
			return err
		}
		if cerr := r.checkClaim(runID); cerr != nil {
			r.log.Warn("store unreachable and this node lost the lane's claim: giving the run up", "runId", runID, "op", what, "err", err)
			return err
		}
		if attempt == 1 {
			r.log.Warn("store unreachable; retrying until it answers", "runId", runID, "op", what, "err", err)
		}
		select {
		case <-r.ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, storeRetryMax)
	}
}

// storeDown reports whether the store does not answer a read of runID.
func (r *Runner) storeDown(runID string) bool {
	_, err := r.cfg.Store.GetRun(r.writes, runID)
	return err != nil && !errors.Is(err, store.ErrNotFound)
}

// finishRun records a run's end, retried while the store does not answer
// (untilStoreAnswers): a run never stays running while its node is alive
// and the store answers. A fenced write is dropped, never applied late;
// the node that took the lane records the end.
func (r *Runner) finishRun(runID string, res store.RunResult) (*store.Run, error) {
	return r.endRun(runID, res, nil)
}

// endRun is finishRun storing final (the run's last assistant message,
// when not nil) with the run's end: in the same transaction when the store
// can (store.EndRun).
func (r *Runner) endRun(runID string, res store.RunResult, final *store.Message) (*store.Run, error) {
	var fin *store.Run
	err := r.untilStoreAnswers(runID, "finish", func(ctx context.Context) error {
		if final == nil {
			var err error
			fin, err = r.cfg.Store.FinishRun(ctx, runID, res)
			return err
		}
		run, stored, err := store.EndRun(ctx, r.cfg.Store, runID, res, final.SessionID, []store.Message{*final})
		if len(stored) > 0 {
			final = nil // stored: a retry only finishes
			for _, m := range stored {
				r.windows.appended(m)
			}
		}
		fin = run
		return err
	})
	return fin, err
}
