package subagent

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/spend"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlite"
)

// hiccupStore is the real store whose sub-agent registry reads fail while
// their counters are above zero: a database that does not answer for a
// moment.
type hiccupStore struct {
	*sqlite.Store
	failList atomic.Int32 // ListSubagents
	failGet  atomic.Int32 // GetSubagent
}

var errHiccup = errors.New("database unreachable")

func (s *hiccupStore) ListSubagents(ctx context.Context, f store.SubagentFilter) ([]*store.SubagentRun, error) {
	if s.failList.Add(-1) >= 0 {
		return nil, errHiccup
	}
	return s.Store.ListSubagents(ctx, f)
}

func (s *hiccupStore) GetSubagent(ctx context.Context, childRunID string) (*store.SubagentRun, error) {
	if s.failGet.Add(-1) >= 0 {
		return nil, errHiccup
	}
	return s.Store.GetSubagent(ctx, childRunID)
}

// TestReconcileIsRetriedUntilItSucceeds: a child whose announce was not
// written when it ended (its record was unreadable then) is announced by a
// reconcile request even when the registry reads of the next passes fail:
// the request is retried until one pass succeeds.
func TestReconcileIsRetriedUntilItSucceeds(t *testing.T) {
	var hs *hiccupStore
	e := newEnvWith(t, `{}`, func(c *Config) {
		hs = &hiccupStore{Store: c.Store.(*sqlite.Store)}
		c.Store = hs
	})
	hs.failGet.Store(1) // the finish hook's read of the record
	out := e.mustSpawn("agent:main:main", map[string]any{"task": "x\n/reply the answer is 42"})
	e.waitRun(out["runId"].(string))
	if _, _, ok := e.announceItem(); ok {
		t.Fatal("an announce was written although the record was unreadable")
	}
	hs.failList.Store(3)
	e.m.ReconcileSoon()
	e.m.ReconcileSoon() // coalesced with the first
	e.eventually("the announce", func() bool { return len(e.announces("agent:main:main")) == 1 })
	if msg := e.announces("agent:main:main")[0]; !strings.Contains(msg, "the answer is 42") {
		t.Errorf("announce = %q", msg)
	}
	if n := hs.failList.Load(); n >= 0 {
		t.Errorf("failing reads left %d: the pass that succeeded was not a retry", n+1)
	}
}

// TestChildEndedElsewhereFreesItsSlot: a node that rebuilt its index of
// live children (an adoption's reconcile) counts a child that then ends on
// another node; the requester must not be refused spawns forever because
// this node never saw that child end.
func TestChildEndedElsewhereFreesItsSlot(t *testing.T) {
	t.Run("maxChildrenPerAgent", func(t *testing.T) {
		testChildEndedElsewhere(t, newEnv(t, `{ agents: { defaults: { subagents: { maxChildrenPerAgent: 1 } } } }`))
	})
	t.Run("maxConcurrentChildren", func(t *testing.T) {
		e := newEnv(t, `{}`)
		if _, err := e.store.UpdateSession(context.Background(), "agent:main:main", true, func(s *store.Session) error {
			s.SessionID, s.AgentID = "sid-main", "main"
			return setBudget(s, spend.Limits{ConcurrentChildren: 1})
		}); err != nil {
			t.Fatal(err)
		}
		testChildEndedElsewhere(t, e)
	})
}

func testChildEndedElsewhere(t *testing.T, e *env) {
	out := e.mustSpawn("agent:main:main", map[string]any{"task": "[gate]\n/reply done"})
	// The adopting node: another manager on the same store.
	other, err := New(e.m.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := other.ActiveChildren("agent:main:main"); n != 1 {
		t.Fatalf("adopting node counts %d live children, want 1", n)
	}
	close(e.gate) // the child ends on the first node
	e.waitRun(out["runId"].(string))
	res, err := (&env{t: t, m: other}).spawn("agent:main:main", map[string]any{"task": "y\n/reply done"})
	if err != nil {
		t.Fatal(err)
	}
	if res["status"] != "accepted" {
		t.Errorf("spawn on the adopting node after the child ended = %v", res)
	}
}

// TestSweepWritesAMissedAnnounce: with no reconcile asked for, the
// periodic sweep writes the announce a failed write left out.
func TestSweepWritesAMissedAnnounce(t *testing.T) {
	var hs *hiccupStore
	e := newEnvWith(t, `{}`, func(c *Config) {
		hs = &hiccupStore{Store: c.Store.(*sqlite.Store)}
		c.Store, c.SweepInterval = hs, 10*time.Millisecond
	})
	hs.failGet.Store(1)
	e.mustSpawn("agent:main:main", map[string]any{"task": "x\n/reply swept"})
	e.eventually("the announce", func() bool { return len(e.announces("agent:main:main")) == 1 })
}

// TestCloseStopsReconcileRetries: Close ends a pass that is being retried
// against a store that never answers.
func TestCloseStopsReconcileRetries(t *testing.T) {
	var hs *hiccupStore
	e := newEnvWith(t, `{}`, func(c *Config) {
		hs = &hiccupStore{Store: c.Store.(*sqlite.Store)}
		c.Store = hs
	})
	hs.failList.Store(1 << 30)
	e.m.ReconcileSoon()
	e.eventually("a retry", func() bool { return hs.failList.Load() <= 1<<30-2 })
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
}

// heldRunStore holds the first read of run hold (once armed) after it
// read the run, until release is closed: a reconcile pass that found the
// run live and has not counted it yet.
type heldRunStore struct {
	*sqlite.Store
	hold          atomic.Pointer[string]
	read, release chan struct{}
}

func (s *heldRunStore) GetRun(ctx context.Context, runID string) (*store.Run, error) {
	run, err := s.Store.GetRun(ctx, runID)
	if p := s.hold.Load(); p != nil && *p == runID && s.hold.CompareAndSwap(p, nil) {
		close(s.read)
		<-s.release
	}
	return run, err
}

// TestChildEndingDuringAReconcileIsNotCounted: a child that ends on this
// node while a reconcile pass is between reading its run (live) and
// counting it is not counted live after the pass.
func TestChildEndingDuringAReconcileIsNotCounted(t *testing.T) {
	var hs *heldRunStore
	e := newEnvWith(t, `{}`, func(c *Config) {
		hs = &heldRunStore{Store: c.Store.(*sqlite.Store), read: make(chan struct{}), release: make(chan struct{})}
		c.Store = hs
	})
	out := e.mustSpawn("agent:main:main", map[string]any{"task": "[gate] x\n/reply done"})
	runID := out["runId"].(string)
	hs.hold.Store(&runID)
	done := make(chan error, 1)
	go func() { done <- e.m.Reconcile(context.Background()) }()
	<-hs.read
	close(e.gate)
	e.waitRun(runID)
	close(hs.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := e.m.ActiveChildren("agent:main:main"); n != 0 {
		t.Errorf("active children after the child ended = %d, want 0", n)
	}
}
