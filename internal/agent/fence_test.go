package agent

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// testLanes is a Lanes whose node holds every lane until lost is set:
// then Check fails, as a node's does when its lease is about to end.
type testLanes struct {
	lost   atomic.Bool
	checks atomic.Int64
}

func (l *testLanes) Claim(ctx context.Context, key string) (string, error) { return "", nil }
func (l *testLanes) Release(ctx context.Context, key string) (bool, error) { return false, nil }
func (l *testLanes) Forward(ctx context.Context, owner, key string)        {}
func (l *testLanes) AbortRemote(ctx context.Context, runID string) error   { return nil }
func (l *testLanes) Hold(key string) (store.Fence, error) {
	return store.Fence{Node: "n", SessionKey: key, Epoch: 1}, nil
}
func (l *testLanes) Check(f store.Fence) error {
	l.checks.Add(1)
	if l.lost.Load() || f.Node != "n" || f.Epoch != 1 {
		return errors.New("claim lost")
	}
	return nil
}

// TestClaimCheckedBeforeCallsAndRequests: once the node's claim is lost,
// a run starts no further tool call and sends no further provider
// request; it ends aborted as interrupted.
func TestClaimCheckedBeforeCallsAndRequests(t *testing.T) {
	for _, tt := range []struct {
		name  string
		calls []string // tool calls of the first turn; "lose" loses the claim
		want  []string // tools called
	}{
		{"a tool call after the loss does not start", []string{"lose", "other"}, []string{"lose"}},
		{"no provider request after the loss", []string{"lose"}, []string{"lose"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lanes := &testLanes{}
			var (
				mu     sync.Mutex
				called []string
				turns  atomic.Int64
			)
			tool := func(name string) tools.Tool {
				return funcTool{name: name, fn: func(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
					mu.Lock()
					called = append(called, name)
					mu.Unlock()
					if name == "lose" {
						lanes.lost.Store(true)
					}
					return tools.JSONResult(map[string]any{}), nil
				}}
			}
			h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
				if turns.Add(1) > 1 {
					return textReply("done"), nil
				}
				var calls []provider.ToolCall
				for i, name := range tt.calls {
					calls = append(calls, provider.ToolCall{ID: "c" + string(rune('0'+i)), Name: name, Arguments: json.RawMessage(`{}`)})
				}
				return toolTurn(calls...), nil
			}, func(c *Config) {
				c.Lanes = lanes
				c.Tools = func(context.Context, RunInfo) *tools.Set { return tools.NewSet(tool("lose"), tool("other")) }
			})
			run := h.wait(h.submit(Input{Message: "go"}).RunID)
			if run.Status != store.RunAborted || run.Error != InterruptedError {
				t.Errorf("run = %s %q, want aborted %q", run.Status, run.Error, InterruptedError)
			}
			if n := turns.Load(); n != 1 {
				t.Errorf("provider requests = %d, want 1", n)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(called) != len(tt.want) || called[0] != tt.want[0] {
				t.Errorf("tools called %v, want %v", called, tt.want)
			}
		})
	}
}

// downStore is the runner's store, which stops answering once down is
// set: FinishRun and GetRun fail as a store that does not answer fails,
// until reads have failed reads times.
type downStore struct {
	Store
	down     atomic.Bool
	reads    atomic.Int64
	finishes atomic.Int64
}

func (d *downStore) FinishRun(ctx context.Context, runID string, res store.RunResult) (*store.Run, error) {
	d.finishes.Add(1)
	if d.down.Load() {
		return nil, errors.New("connection refused")
	}
	return d.Store.FinishRun(ctx, runID, res)
}

func (d *downStore) GetRun(ctx context.Context, runID string) (*store.Run, error) {
	if d.down.Load() {
		if d.reads.Add(-1) <= 0 {
			d.down.Store(false) // back after this failure
		}
		return nil, errors.New("connection refused")
	}
	return d.Store.GetRun(ctx, runID)
}

// TestFinishRetriedUntilStoreAnswers: a final write that fails because the
// store does not answer is retried until it lands; the run does not stay
// running, and ends as it would have.
func TestFinishRetriedUntilStoreAnswers(t *testing.T) {
	var ds *downStore
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		ds.reads.Store(3)
		ds.down.Store(true) // the store goes away during the turn
		return textReply("hi"), nil
	}, func(c *Config) {
		ds = &downStore{Store: c.Store}
		c.Store = ds
	})
	run := h.wait(h.submit(Input{Message: "go"}).RunID)
	if run.Status != store.RunOK {
		t.Fatalf("run = %s %q, want ok", run.Status, run.Error)
	}
	if n := ds.finishes.Load(); n < 2 {
		t.Errorf("FinishRun calls = %d, want the failed ones retried", n)
	}
}

// TestSweepOrphans: a run the store has running that no runner goroutine
// runs (its final write was lost) is finished aborted by the sweep, and
// its waiter wakes; a run that is executing is left alone.
func TestSweepOrphans(t *testing.T) {
	release := make(chan struct{})
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		if lastUser(req) == "hold" {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return textReply("ok"), nil
	}, nil)
	ctx := context.Background()
	// The orphan: started in the store, as a run whose end was lost.
	if err := h.store.CreateRun(ctx, &store.Run{RunID: "orphan", SessionKey: "agent:main:o", AgentID: "main"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.store.StartRun(ctx, "orphan", time.Now(), "sid-o", nil); err != nil {
		t.Fatal(err)
	}
	held := h.submit(Input{Message: "hold", SessionKey: "agent:main:h"})
	for {
		r, err := h.store.GetRun(ctx, held.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == store.RunRunning {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	woke := make(chan *store.Run, 1)
	go func() {
		run, _, _ := h.runner.Wait(ctx, "orphan", 10*time.Second)
		woke <- run
	}()
	if err := h.runner.SweepOrphans(ctx); err != nil {
		t.Fatal(err)
	}
	if run := <-woke; run == nil || run.Status != store.RunAborted || run.Error != OrphanedError {
		t.Fatalf("orphan after the sweep = %+v", run)
	}
	if r, _ := h.store.GetRun(ctx, held.RunID); r.Status != store.RunRunning {
		t.Fatalf("the executing run = %s, want running", r.Status)
	}
	close(release)
	if run := h.wait(held.RunID); run.Status != store.RunOK {
		t.Fatalf("the executing run ended %s %q", run.Status, run.Error)
	}
}

// TestStartWaitsForStore: a run whose start finds the store not answering
// is not failed (no client is told it ended): it starts once the store
// answers, and ends once.
func TestStartWaitsForStore(t *testing.T) {
	var ds *downStore
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		return textReply("hi"), nil
	}, func(c *Config) {
		ds = &downStore{Store: c.Store}
		c.Store = ds
	})
	ds.reads.Store(3)
	ds.down.Store(true)
	// Wait may read the ended run from the store before the end event
	// goes out (the commit comes first): the check below waits for it.
	// Subscribers are called in the order they subscribed, so the
	// harness has recorded the event when this one sees it.
	ended := make(chan struct{})
	var once sync.Once
	defer h.runner.Subscribe(func(ev Event) {
		if ev.Stream == StreamLifecycle && ev.Phase == PhaseEnd {
			once.Do(func() { close(ended) })
		}
	})()
	id := h.submit(Input{Message: "go"}).RunID
	var run *store.Run
	for {
		// A wait's own reads fail while the store is down (and count
		// towards its coming back).
		r, done, err := h.runner.Wait(context.Background(), id, 10*time.Second)
		if err == nil && !done {
			t.Fatal("run did not end")
		}
		if err == nil {
			run = r
			break
		}
	}
	if run.Status != store.RunOK {
		t.Fatalf("run = %s %q, want ok", run.Status, run.Error)
	}
	<-ended
	ends := 0
	for _, ev := range h.eventsFor(run.RunID) {
		if ev.Stream == StreamLifecycle && ev.Phase == PhaseEnd {
			ends++
		}
	}
	if ends != 1 {
		t.Errorf("lifecycle ends = %d, want 1", ends)
	}
}

// startingStore fails the first StartRun as PostgreSQL fails while it
// starts up (the connection the call took was refused), while reads of the
// run succeed.
type startingStore struct {
	Store
	starts atomic.Int64
}

func (s *startingStore) StartRun(ctx context.Context, runID string, at time.Time, sessionID string, msgs []store.Message) (*store.Run, []store.Message, error) {
	if s.starts.Add(1) == 1 {
		return nil, nil, errors.New("postgres.StartRun: failed to connect to `user=postgres`: server error: FATAL: the database system is starting up (SQLSTATE 57P03)")
	}
	return s.Store.StartRun(ctx, runID, at, sessionID, msgs)
}

// TestStartRetriedWhenTheDatabaseWasUnreachable: a start that did not
// reach the database is tried again even though a read of the run works a
// moment later: the run is not failed, and its accepted message is in the
// transcript once.
func TestStartRetriedWhenTheDatabaseWasUnreachable(t *testing.T) {
	var ss *startingStore
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		return textReply("hi"), nil
	}, func(c *Config) {
		ss = &startingStore{Store: c.Store}
		c.Store = ss
	})
	run := h.wait(h.submit(Input{Message: "keep me"}).RunID)
	if run.Status != store.RunOK || ss.starts.Load() != 2 {
		t.Fatalf("run = %s %q after %d starts, want ok after 2", run.Status, run.Error, ss.starts.Load())
	}
	n := 0
	for _, m := range h.transcript("agent:main:main") {
		if m.Role == "user" && m.Entry.Message != nil && m.Entry.Message.Text() == "keep me" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("accepted message stored %d times, want 1", n)
	}
}
