package subagent

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/switchboardhq/switchboard/internal/store"
)

// stallingStore stalls the stall-th UpdateOutbox call (1-based) until
// release is closed, after closing stalled.
type stallingStore struct {
	Store
	stall            int32
	n                atomic.Int32
	stalled, release chan struct{}
}

func (s *stallingStore) UpdateOutbox(ctx context.Context, id string, fn func(*store.OutboxItem) error) (*store.OutboxItem, error) {
	if s.n.Add(1) == s.stall {
		close(s.stalled)
		<-s.release
	}
	return s.Store.UpdateOutbox(ctx, id, fn)
}

// newStalledEnv is node n1 on a shared store (held back from delivering
// until *act is set) with two finished children whose announces are due
// for agent:main:main, and a second node n2 (its manager, stalled where
// stall says) whose lease ends when *alive is cleared.
func newStalledEnv(t *testing.T) (e *env, act, alive *atomic.Bool) {
	t.Helper()
	act, alive = new(atomic.Bool), new(atomic.Bool)
	alive.Store(true)
	e = newEnvWith(t, `{}`, func(c *Config) {
		c.Shared, c.NodeID, c.NodeValid = true, "n1", act.Load
		c.NodeAlive = func(_ context.Context, id string) (bool, error) {
			if id != "n2" {
				return false, fmt.Errorf("liveness of unknown node %q asked", id)
			}
			return alive.Load(), nil
		}
	})
	e.mustSpawn("agent:main:main", map[string]any{"task": "x\n/reply result one"})
	e.mustSpawn("agent:main:main", map[string]any{"task": "y\n/reply result two"})
	e.eventually("both announce items", func() bool { return len(e.pendingAnnounces()) == 2 })
	return e, act, alive
}

// pendingAnnounces lists the env's pending announce items.
func (e *env) pendingAnnounces() []*store.OutboxItem {
	e.t.Helper()
	items, err := e.store.ListOutbox(context.Background(), store.OutboxFilter{Kind: KindAnnounce, Statuses: []store.OutboxStatus{store.OutboxPending}})
	if err != nil {
		e.t.Fatal(err)
	}
	return items
}

// otherNode is a manager of node n2 on e's store and runner, with its own
// store and lease check.
func (e *env) otherNode(st Store, valid func() bool) *Manager {
	cfg := e.m.cfg
	cfg.NodeID, cfg.Store, cfg.NodeValid = "n2", st, valid
	return &Manager{cfg: cfg, log: e.m.log, claimer: "n2/p0", claiming: map[string]bool{}, active: map[string]map[string]string{}}
}

// deliver has m deliver items as the outbox dispatcher would: the items
// it settles are written as delivered.
func (e *env) deliver(m *Manager, items []*store.OutboxItem) {
	e.t.Helper()
	for id, err := range m.deliverAnnounces(context.Background(), items) {
		if err != nil {
			continue
		}
		if _, err := e.store.UpdateOutbox(context.Background(), id, func(x *store.OutboxItem) error {
			x.Status = store.OutboxDelivered
			return nil
		}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// settledOnce waits until the env's node delivered every announce, and
// the stalled node's delivery returned, then checks that each child's
// result reached the requester exactly once.
func (e *env) settledOnce(done <-chan struct{}) {
	e.t.Helper()
	<-done
	e.eventually("every announce delivered", func() bool {
		e.passLater()
		return len(e.pendingAnnounces()) == 0 && !e.runner.Busy("agent:main:main")
	})
	got := map[string]int{}
	for _, a := range e.announces("agent:main:main") {
		switch {
		case strings.Contains(a, "result one"):
			got["one"]++
		case strings.Contains(a, "result two"):
			got["two"]++
		default:
			got[a]++
		}
	}
	if len(got) != 2 || got["one"] != 1 || got["two"] != 1 {
		e.t.Errorf("announces delivered %v, want each child's once", got)
	}
}

// TestStalledNodeAnnouncesOnce: a node stalled (SIGSTOP) between a
// batch's claims and its run, whose claims another node took over once
// its lease ended, does not post the batch a second time when it resumes.
func TestStalledNodeAnnouncesOnce(t *testing.T) {
	e, act, alive := newStalledEnv(t)
	var calls atomic.Int32
	stalled, release := make(chan struct{}), make(chan struct{})
	n2 := e.otherNode(e.m.cfg.Store, func() bool {
		if calls.Add(1) == 2 { // after the claims, before the run
			close(stalled)
			<-release
		}
		return true
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.deliver(n2, e.pendingAnnounces())
	}()
	<-stalled
	alive.Store(false) // n2's lease ended: n1 takes its claims over
	act.Store(true)
	e.eventually("n1 delivered the claimed batch", func() bool {
		e.passLater()
		return len(e.pendingAnnounces()) == 0
	})
	close(release)
	e.settledOnce(done)
}

// TestStalledClaimerLosesNothing: a node stalled between two claims of
// one batch, whose first claim another node took over and delivered,
// neither posts that announce again nor settles the second one, which its
// own run (the other node's, by then) does not carry.
func TestStalledClaimerLosesNothing(t *testing.T) {
	e, act, alive := newStalledEnv(t)
	st := &stallingStore{Store: e.m.cfg.Store, stall: 2, stalled: make(chan struct{}), release: make(chan struct{})}
	n2 := e.otherNode(st, func() bool { return true })
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.deliver(n2, e.pendingAnnounces())
	}()
	<-st.stalled
	alive.Store(false)
	act.Store(true)
	e.eventually("n1 delivered the first claim", func() bool {
		e.passLater()
		return len(e.pendingAnnounces()) < 2
	})
	close(st.release)
	e.settledOnce(done)
}
