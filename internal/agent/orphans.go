package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// OrphanedError is the error of a run the store had running while the node
// that ran it no longer did (its final write was lost): FinishOrphans marks
// such runs aborted with it.
const OrphanedError = "run ended: its node no longer runs it (its final write was lost)"

// orphanSweepEvery is how often a single gateway (Recover) looks for
// orphaned runs.
const orphanSweepEvery = 10 * time.Second

// FinishOrphans finishes, aborted with OrphanedError, the runs among
// running (runs the store has running on this node, listed before the
// call) that this runner does not run: neither active nor on a lane that
// runs something now. Subscribers and waiters see their end. It returns
// the runs it finished; a run that ended meanwhile is left alone.
func (r *Runner) FinishOrphans(ctx context.Context, running []*store.Run) ([]*store.Run, error) {
	// The runner is read after the store was: a run registers as active
	// before it is marked running, and leaves only after its end is
	// recorded, so a run the listing saw running that is not active now
	// has no goroutine that will end it. A run carried by another one is
	// registered after its start; its lane is busy meanwhile. A run
	// queued and started in one transaction (openIdle) is registered, and
	// its lane made busy, before that transaction.
	r.mu.Lock()
	var orphans []*store.Run
	for _, run := range running {
		if run.Status != store.RunRunning {
			continue
		}
		if _, ok := r.active[run.RunID]; ok {
			continue
		}
		if l, ok := r.lanes[run.SessionKey]; ok && l.active != "" {
			continue
		}
		orphans = append(orphans, run)
	}
	r.mu.Unlock()
	var done []*store.Run
	var errs []error
	for _, run := range orphans {
		fin, err := r.cfg.Store.FinishRun(ctx, run.RunID, store.RunResult{
			Status: store.RunAborted, Error: OrphanedError, StopReason: "aborted", EndedAt: r.now()})
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
			continue // ended meanwhile
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r.log.Warn("orphaned run finished", "runId", fin.RunID, "sessionKey", fin.SessionKey)
		done = append(done, fin)
	}
	r.Ended(done)
	if err := errors.Join(errs...); err != nil {
		return done, fmt.Errorf("agent.FinishOrphans: %w", err)
	}
	return done, nil
}

// sweepOrphans finishes a single gateway's orphaned runs every
// orphanSweepEvery until the runner shuts down (started by Recover).
func (r *Runner) sweepOrphans() {
	t := time.NewTicker(orphanSweepEvery)
	defer t.Stop()
	for {
		select {
		case <-r.bgCtx.Done():
			return
		case <-t.C:
		}
		if err := r.SweepOrphans(r.bgCtx); err != nil && r.bgCtx.Err() == nil {
			r.log.Warn("orphaned run sweep failed", "err", err)
		}
	}
}

// SweepOrphans is FinishOrphans of every run the store has running: for
// a runner that is the store's only gateway (no Lanes).
func (r *Runner) SweepOrphans(ctx context.Context) error {
	if r.cfg.Lanes != nil {
		return errors.New("agent.SweepOrphans: with Lanes the cluster sweeps each node's runs")
	}
	running, err := r.cfg.Store.ListRuns(ctx, store.RunFilter{Statuses: []store.RunStatus{store.RunRunning}})
	if err != nil {
		return fmt.Errorf("agent.SweepOrphans: %w", err)
	}
	_, err = r.FinishOrphans(ctx, running)
	return err
}
