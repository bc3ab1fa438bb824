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
	return store.WithFence(context.WithoutCancel(r.ctx), r.fenceOf(runID))
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

// finishRetryMax bounds the wait between attempts of a final write.
const finishRetryMax = 2 * time.Second

// finishRun records a run's end. A write that fails because the store does
// not answer is retried, with backoff, until it lands, the run's claim
// moved (ErrFenced: the node that took the lane records the end), or the
// runner shuts down, or this node loses the lane's claim (ErrFenced from
// the store, or Lanes.Check here: the node that adopts the lane records the
// end): a run never stays running while its node is alive and the store
// answers. A fenced write is dropped, never applied late.
func (r *Runner) finishRun(runID string, res store.RunResult) (*store.Run, error) {
	wait := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		fin, err := r.cfg.Store.FinishRun(r.writeCtx(runID), runID, res)
		switch {
		case err == nil:
			if attempt > 1 {
				r.log.Info("run finish recorded after retries", "runId", runID, "attempts", attempt)
			}
			return fin, nil
		case errors.Is(err, store.ErrFenced):
			r.log.Warn("fenced write dropped: run end not recorded by this node", "runId", runID, "err", err)
			return nil, err
		case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound):
			return nil, err
		}
		if cerr := r.checkClaim(runID); cerr != nil {
			// The lease is ending unrenewed: the node that adopts the
			// lane records the end.
			r.log.Warn("run end not recorded: this node lost its lane's claim", "runId", runID, "err", err, "claim", cerr)
			return nil, err
		}
		if attempt == 1 {
			r.log.Warn("run finish failed; retrying until the store answers", "runId", runID, "err", err)
		}
		select {
		case <-r.ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		wait = min(2*wait, finishRetryMax)
	}
}
