package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/switchboardhq/switchboard/internal/store"
)

// Lanes coordinates session lanes between gateway nodes that share one
// store. With it set (Config.Lanes), a session's lane runs on the one node
// that holds it: a node drains a lane only after claiming it, tells the
// coordinator when its queue is empty, and hands input for a lane another
// node holds over to that node through the store. Nil: this runner is the
// only gateway and owns every lane.
type Lanes interface {
	// Claim makes this node the owner of the session's lane, or returns
	// the live node that owns it ("" when this node holds it now).
	Claim(ctx context.Context, sessionKey string) (other string, err error)
	// Release says the lane's local queue is empty. The coordinator may
	// give the lane up, now or later, unless runs are queued for the
	// session in the store; held reports that they are and that the
	// runner must pull and run them now.
	Release(ctx context.Context, sessionKey string) (held bool, err error)
	// Forward tells node owner that the session has new queued runs.
	Forward(ctx context.Context, owner, sessionKey string)
	// AbortRemote asks whichever node runs runID to abort it.
	AbortRemote(ctx context.Context, runID string) error
	// Hold returns the fence of this node's current claim of the
	// session's lane (the store refuses writes carrying it once the claim
	// moved), or an error when this node may not act for the lane.
	Hold(sessionKey string) (store.Fence, error)
	// Check fails when f no longer holds as far as this node knows: its
	// lease is about to end unrenewed, or the lane was claimed anew. It
	// does not wait for the store.
	Check(f store.Fence) error
}

// errFenced is the cancellation cause of runs a node stops because it lost
// its lease: another node may adopt them.
var errFenced = errors.New("node lost its lease")

// IsRemote reports whether another node's runner emitted the event and it
// was relayed to this one (Runner.Relay). Subscribers that act on a run's
// end (deliver a channel reply, count metrics) skip remote events: the node
// that ran the run acts.
func (ev Event) IsRemote() bool { return ev.remote }

// claimLane claims the lane before its first run. When another node holds
// it (or the claim cannot be made), the lane's local queue is dropped, the
// runs stay queued in the store, and the owner is told; it returns false
// and the lane is gone.
func (r *Runner) claimLane(sessionKey string, l *lane) bool {
	other, err := r.cfg.Lanes.Claim(r.ctx, sessionKey)
	if err == nil && other == "" {
		return true
	}
	if err != nil {
		// The runs stay queued; the cluster's sweep claims them when the
		// store answers again.
		r.log.Warn("lane claim failed; its runs stay queued", "sessionKey", sessionKey, "err", err)
	}
	r.mu.Lock()
	for _, id := range l.queue {
		l.forget(id)
	}
	l.queue = nil
	delete(r.lanes, sessionKey)
	r.mu.Unlock()
	if other != "" {
		r.cfg.Lanes.Forward(r.ctx, other, sessionKey)
	}
	return false
}

// releaseLane runs when the lane's local queue is empty: it gives the lane
// up, or pulls the runs other nodes queued for it meanwhile. It reports
// whether the lane goes on draining; when not, the lane is gone.
func (r *Runner) releaseLane(sessionKey string, l *lane) bool {
	held, err := r.cfg.Lanes.Release(r.ctx, sessionKey)
	if err != nil {
		r.log.Warn("lane release failed", "sessionKey", sessionKey, "err", err)
	}
	if held {
		if _, err := r.pull(r.ctx, sessionKey); err != nil {
			r.log.Warn("lane pull failed", "sessionKey", sessionKey, "err", err)
		}
	}
	r.mu.Lock()
	if len(l.queue) > 0 && !r.closing {
		r.mu.Unlock()
		if held {
			return true
		}
		// Input arrived while the lane was being given up: claim it again
		// (or hand the input to the node that took it).
		return r.claimLane(sessionKey, l)
	}
	delete(r.lanes, sessionKey)
	r.mu.Unlock()
	return false
}

// Pull puts the session's queued runs (as the store has them) that its
// lane does not hold yet on it, in submission order: runs another node
// accepted for a lane this node holds, or a lane this node just adopted.
// It returns how many it added.
func (r *Runner) Pull(ctx context.Context, sessionKey string) (int, error) {
	n, err := r.pull(ctx, sessionKey)
	if err != nil {
		return n, fmt.Errorf("agent.Pull: %w", err)
	}
	return n, nil
}

func (r *Runner) pull(ctx context.Context, sessionKey string) (int, error) {
	queued, err := r.cfg.Store.ListRuns(ctx, store.RunFilter{SessionKey: sessionKey, Statuses: []store.RunStatus{store.RunQueued}})
	if err != nil {
		return 0, err
	}
	r.mu.Lock()
	known := map[string]bool{}
	if l, ok := r.lanes[sessionKey]; ok {
		known[l.active] = true
		for _, id := range l.queue {
			known[id] = true
		}
	}
	r.mu.Unlock()
	added := 0
	for _, run := range queued {
		if known[run.RunID] {
			continue
		}
		var in Input
		_ = json.Unmarshal(run.Input, &in) // a bad input fails when the run starts
		in.RunID = run.RunID
		if _, err := r.enqueue(run.SessionKey, run.RunID, &in, nil); err != nil {
			return added, err
		}
		r.afterEnqueue(ctx, &in)
		added++
	}
	return added, nil
}

// Relay hands this runner an event another node's runner emitted for a run
// it executes: local subscribers get it (marked remote), and a run's end
// wakes this node's waiters.
func (r *Runner) Relay(ev Event) {
	ev.remote = true
	if !r.events.add(ev, r.now()) && (isEnd(ev) || ev.RunID != "" && ev.Seq > 0 && ev.Stream != StreamPost) {
		// Its end was seen already (from the store, or relayed twice), or
		// the event was (a node that starts wanting a run's events is
		// sent them all again).
		return
	}
	r.publishRemote(ev)
	if ev.Stream == StreamLifecycle && ev.Phase == PhaseEnd {
		r.wakeWaiters(ev.RunID)
	}
}

// Ended tells subscribers and waiters that runs ended outside any runner
// (aborted when their node died and was adopted), as the end of a run.
func (r *Runner) Ended(runs []*store.Run) {
	for _, run := range runs {
		st := &runState{run: run}
		if in, err := decodeInput(run.Input); err == nil {
			st.spawnedBy = in.SpawnedBy
		}
		r.emit(st, Event{Stream: StreamLifecycle, Phase: PhaseEnd, Run: run})
		r.wakeWaiters(run.RunID)
	}
}

func decodeInput(raw json.RawMessage) (*Input, error) {
	var in Input
	err := json.Unmarshal(raw, &in)
	return &in, err
}

// WakeAll wakes every waiter, to look at its run in the store again (after
// a missed relay, for example when the connection carrying them dropped).
func (r *Runner) WakeAll() {
	r.mu.Lock()
	ids := make([]string, 0, len(r.waiters))
	for id := range r.waiters {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	for _, id := range ids {
		r.wakeWaiters(id)
	}
}

// AbortLocal aborts runID if it runs on this runner, and reports whether
// it did (another node asked, see Lanes.AbortRemote).
func (r *Runner) AbortLocal(runID string) bool {
	r.mu.Lock()
	cancel, ok := r.active[runID]
	r.mu.Unlock()
	if ok {
		cancel(errAborted)
	}
	return ok
}

// Fence stops everything this node runs because it lost its lease: active
// runs are cancelled (their end is recorded if the store still takes it;
// otherwise the node that adopts them records it), and queued runs are
// dropped from the local lanes; they stay queued in the store for the
// node that holds their lane next.
func (r *Runner) Fence() {
	r.mu.Lock()
	cancels := make([]context.CancelCauseFunc, 0, len(r.active))
	for _, c := range r.active {
		cancels = append(cancels, c)
	}
	for _, l := range r.lanes {
		for _, id := range l.queue {
			l.forget(id)
		}
		l.queue = nil
	}
	r.mu.Unlock()
	for _, c := range cancels {
		c(errFenced)
	}
}

// Load is this runner's share of the work: runs executing, runs queued on
// its lanes, and lanes held.
func (r *Runner) Load() (active, queued, lanes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.lanes {
		queued += len(l.queue)
	}
	return len(r.active), queued, len(r.lanes)
}

// ActiveRuns returns the ids of the runs executing on this runner, sorted.
func (r *Runner) ActiveRuns() []string {
	r.mu.Lock()
	ids := make([]string, 0, len(r.active))
	for id := range r.active {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	slices.Sort(ids)
	return ids
}
