package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// openIdle queues and starts a run in one store transaction when its
// session's lane is idle (store.RunOpener): a warm turn's start is then
// the commit that makes its chat.send durable, not a second one. It
// reports done false when it did nothing and the run is to be queued as
// usual: for a compaction or a collect-mode input (they read the run back,
// or wait for company, before starting), on a busy lane, for the id of a
// run this runner runs, when the store is no RunOpener, and with Lanes
// unless this node holds the lane's claim already (heldLanes), or when
// the store refuses the open as fenced (the claim moved meanwhile).
//
// The open lingers (Config.OpenLinger, store.Linger) unless the session
// was spawned: the run starts while its open's transaction is still
// uncommitted, and the run's end, when it comes within the linger, shares
// that commit. openIdle returns only once the open is committed, so its
// caller, and the client it answers, learn of the run only then; the
// run's own reads commit it first (store.WithPending), to see it.
//
// With Lanes, a run of a lane this node holds opens under the claim's
// fence, as a queued run starts under it: the store checks the fence in
// the open's transaction and writes nothing when it no longer holds; the
// run is then queued, for the lane's holder.
//
// The run is registered as its lane's active run, and in r.active, before
// it is stored running, and leaves both after its end is stored, as
// drain's runs do: FinishOrphans never takes it for an orphan. Its input
// is in the transcript from the commit on, as StartRun's is. A run with
// the input's RunID found by the insert is returned as Enqueue's duplicate.
func (r *Runner) openIdle(ctx context.Context, queued *store.Run, in *Input, sess *store.Session) (Enqueued, bool, error) {
	held, isHeld := r.cfg.Lanes.(heldLanes)
	if (r.cfg.Lanes != nil && !isHeld) || in.Compact != nil || in.QueueMode == ModeCollect || r.noOpen.Load() {
		return Enqueued{}, false, nil
	}
	// The run executes the input as stored, like a queued run that drain
	// reads back.
	run, err := storedInput(in, queued.Input)
	if err != nil {
		return Enqueued{}, false, nil // the queued path records the error on the run
	}
	key, id := queued.SessionKey, queued.RunID
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		return Enqueued{}, true, ErrClosed
	}
	_, busy := r.lanes[key]
	_, live := r.active[id] // a repeat of a live run's id, from another session: r.active[id] is that run's
	if busy || live {
		r.mu.Unlock()
		return Enqueued{}, false, nil
	}
	l := newLane()
	l.active, l.activeUntrusted = id, in.Untrusted() != ""
	l.lastArrival = time.Now()
	r.lanes[key] = l
	runCtx, cancel := context.WithCancelCause(r.ctx)
	r.active[id] = cancel
	r.wg.Add(1) // under r.mu, before Shutdown can wait: Done by the lane's goroutine
	r.mu.Unlock()

	// With Lanes the lane is this node's, kept from an earlier turn, or
	// the run is queued; claimed, the drain below gives it up again.
	claimed := false
	if isHeld {
		f, ok := held.ClaimHeld(key)
		if ok {
			claimed = true
			r.shareFence(id, f)
			ctx = store.WithFence(ctx, f)
		} else {
			r.unopen(key, id, l, cancel, false)
			return Enqueued{}, false, nil
		}
	}
	started := *queued // a copy that shares Input: nothing writes to it
	started.Status, started.StartedAt = store.RunRunning, r.now()
	msg := r.inputMessage(&run, id)
	// A spawned session's run does not linger: its end reads its
	// registry record (the sub-agent's OnFinish) with no run context.
	var linger *store.Linger
	octx := ctx
	if r.cfg.OpenLinger > 0 && sess.SpawnedBy == "" {
		linger = &store.Linger{For: r.cfg.OpenLinger}
		octx = store.WithLinger(ctx, linger)
	}
	opened, stored, err := r.openRun(octx, &started, []store.Message{msg})
	if err != nil {
		r.dropFence(id)
		r.unopen(key, id, l, cancel, claimed)
		switch {
		case errors.Is(err, errors.ErrUnsupported):
			r.noOpen.Store(true)
			return Enqueued{}, false, nil
		case errors.Is(err, store.ErrFenced):
			return Enqueued{}, false, nil // queued, for the lane's holder
		case errors.Is(err, store.ErrConflict) && opened != nil:
			return Enqueued{Run: opened}, true, nil
		}
		return Enqueued{}, true, fmt.Errorf("agent.Submit: %w", err)
	}
	// The start event goes out from here, before Enqueue returns: a
	// gateway holding the run's events until its answer is queued sends
	// both in one write. The run's state holds the stored record in
	// started, which the store did not keep (the caller gets opened):
	// the two share Input, which nothing writes.
	started = *opened
	st := r.started(cancel, &started, stored, &run, sess, nil)
	if linger != nil && linger.Pending != nil {
		// The run's reads commit the open first, to see it.
		st.open = linger.Pending
		runCtx = store.WithPending(runCtx, st.open)
	}
	r.workers.Go(func() {
		defer r.wg.Done()
		r.executeOpened(runCtx, cancel, st, &run, sess)
		r.mu.Lock()
		l.active, l.activeUntrusted = "", false
		r.mu.Unlock()
		r.drain(key, l) // what queued behind it, then the lane ends
	})
	if st.open != nil {
		// Nobody learns of the run before its open is committed.
		if err := st.open.Wait(); err != nil {
			cancel(errOpenLost)
			return Enqueued{}, true, fmt.Errorf("agent.Submit: %w", err)
		}
	}
	return Enqueued{Run: opened, Created: true}, true, nil
}

// errOpenLost is the cancellation cause of a run whose open's commit
// failed: nothing of it is stored, and its caller got the error.
var errOpenLost = errors.New("run's start not stored")

// openLost reports whether st's open lingered and its commit failed. It
// waits for the commit's outcome, so it is asked after a write of the run
// (which commits the open first).
func openLost(st *runState) bool {
	return st.open != nil && st.open.Wait() != nil
}

// heldLanes is Lanes that can claim a lane this node holds already with
// no round trip (cluster.Node.ClaimHeld): ok false when it does not.
type heldLanes interface {
	ClaimHeld(sessionKey string) (f store.Fence, ok bool)
}

// unopen undoes openIdle's registration of run id as its lane's active
// run when the run was not opened. The lane ends, unless runs queued
// behind it meanwhile, or claimed (the lane's claim was taken for the
// run): then it drains, which gives the claim up when its queue is empty.
func (r *Runner) unopen(key, id string, l *lane, cancel context.CancelCauseFunc, claimed bool) {
	cancel(nil)
	r.mu.Lock()
	delete(r.active, id)
	l.active, l.activeUntrusted = "", false
	next := len(l.queue) > 0 || claimed
	if !next {
		delete(r.lanes, key)
	}
	r.mu.Unlock()
	if next {
		r.workers.Go(func() {
			defer r.wg.Done()
			r.drain(key, l)
		})
	} else {
		r.wg.Done()
	}
}

// executeOpened runs a run openIdle stored started to its end (execute
// from the start on).
func (r *Runner) executeOpened(runCtx context.Context, cancel context.CancelCauseFunc, st *runState, in *Input, sess *store.Session) {
	id := st.run.RunID
	defer cancel(nil)
	defer r.dropFence(id)
	defer func() {
		r.mu.Lock()
		delete(r.active, id)
		r.mu.Unlock()
	}()
	r.runStarted(runCtx, st, in, sess)
}

// errDuplicate stops an Enqueue whose run id exists: the input is a
// repeat, answered with the existing run.
var errDuplicate = errors.New("run id exists")

// dupCheck reads, once, whether the run id an input came with exists.
// Enqueue does not read it first: the run's insert finds an existing id
// itself (CreateRun, OpenRun). It asks only before a write a repeated
// input must not cause (an automatic reset, a session's creation, a drop
// at the queue cap).
type dupCheck struct {
	st    Store
	runID string // "" when Enqueue makes the id: no run has it
	done  bool
	found *store.Run
	err   error
}

// checked reports whether the read was made (or needs none).
func (d *dupCheck) checked() bool { return d.runID == "" || d.done }

// check returns errDuplicate when the run exists, the read's error when
// it failed, else nil.
func (d *dupCheck) check(ctx context.Context) error {
	if !d.checked() {
		d.done = true
		d.found, d.err = d.st.GetRun(ctx, d.runID)
		if errors.Is(d.err, store.ErrNotFound) {
			d.err = nil
		}
	}
	switch {
	case d.err != nil:
		return d.err
	case d.found != nil:
		return errDuplicate
	}
	return nil
}

// enqueued is Enqueue's answer to err: the existing run for
// errDuplicate, else the error.
func (d *dupCheck) enqueued(err error) (Enqueued, error) {
	if errors.Is(err, errDuplicate) {
		return Enqueued{Run: d.found}, nil
	}
	return Enqueued{}, fmt.Errorf("agent.Submit: %w", err)
}

// openRun stores run started and its messages (store.OpenRun); a spawned
// child's rows the context carries (store.ChildOpen) are stored in the
// same transaction where the store can, and else on their own first.
func (r *Runner) openRun(ctx context.Context, started *store.Run, msgs []store.Message) (*store.Run, []store.Message, error) {
	if c := store.ChildOpenOf(ctx, started.SessionKey); c != nil && !c.Stored() {
		opened, stored, err := store.OpenChildRun(ctx, r.cfg.Store, c, started, msgs)
		if !errors.Is(err, errors.ErrUnsupported) {
			if err == nil {
				c.MarkStored()
			}
			return opened, stored, err
		}
		if err := storeChild(ctx, started.SessionKey); err != nil {
			return nil, nil, err
		}
	}
	return store.OpenRun(ctx, r.cfg.Store, started, msgs)
}

// storeChild stores the spawned child's rows ctx carries for session key
// (store.ChildOpen) on their own, unless they are stored already: before
// its run is stored by other means than openRun.
func storeChild(ctx context.Context, key string) error {
	c := store.ChildOpenOf(ctx, key)
	if c == nil || c.Stored() {
		return nil
	}
	if err := c.Create(ctx); err != nil {
		return err
	}
	c.MarkStored()
	return nil
}
