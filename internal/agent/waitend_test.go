package agent

import (
	"context"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
)

// getRunSignal tells every GetRun of one run id.
type getRunSignal struct {
	Store
	runID string
	got   chan struct{}
}

func (g getRunSignal) GetRun(ctx context.Context, runID string) (*store.Run, error) {
	if runID == g.runID {
		g.got <- struct{}{}
	}
	return g.Store.GetRun(ctx, runID)
}

// A waiter woken by the end of a run on this runner gets the record the
// end stored: it does not read the run back (sessions_send's wait, an
// agent-to-agent flow's, agent.wait); and a wait for a run this runner
// started and has not ended reads nothing first either.
func TestWaitTakesTheEndedRecord(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	sig := getRunSignal{runID: "r-wait", got: make(chan struct{}, 16)}
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		close(started)
		<-release
		return textReply("done"), nil
	}, func(cfg *Config) {
		sig.Store = cfg.Store
		cfg.Store = sig
	})
	h.submit(Input{RunID: "r-wait", Message: "hi"})
	<-started
	for len(sig.got) > 0 { // Submit's own look
		<-sig.got
	}
	type result struct {
		run  *store.Run
		done bool
		err  error
	}
	res := make(chan result, 1)
	go func() {
		run, done, err := h.runner.Wait(context.Background(), "r-wait", time.Minute)
		res <- result{run, done, err}
	}()
	waitWaiting(t, h.runner, "r-wait") // registered: the run is still in the model
	close(release)
	r := <-res
	if r.err != nil || !r.done {
		t.Fatalf("Wait = done %v, err %v", r.done, r.err)
	}
	if n := len(sig.got); n != 0 {
		t.Errorf("the wait read the run %d times; want 0 (the run is live here: its end hands its record over)", n)
	}
	stored, err := h.store.GetRun(context.Background(), "r-wait")
	if err != nil {
		t.Fatal(err)
	}
	if r.run.Status != store.RunOK || r.run.Status != stored.Status || !r.run.EndedAt.Equal(stored.EndedAt) ||
		r.run.Usage != stored.Usage || r.run.SessionID != stored.SessionID {
		t.Errorf("Wait's record = %+v; the store has %+v", r.run, stored)
	}
}

// waitWaiting waits until run runID has a waiter registered.
func waitWaiting(t *testing.T, r *Runner, runID string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		n := len(r.waiters[runID])
		r.mu.Unlock()
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no waiter for run %s", runID)
		}
		time.Sleep(time.Millisecond)
	}
}

// A wait for a run that ended reads its record (it is not live here).
func TestWaitForAnEndedRunReadsIt(t *testing.T) {
	sig := getRunSignal{runID: "r-done", got: make(chan struct{}, 16)}
	h := newHarness(t, echo, func(cfg *Config) {
		sig.Store = cfg.Store
		cfg.Store = sig
	})
	h.wait(h.submit(Input{RunID: "r-done", Message: "hi"}).RunID)
	for len(sig.got) > 0 {
		<-sig.got
	}
	run, done, err := h.runner.Wait(context.Background(), "r-done", time.Minute)
	if err != nil || !done || run.Status != store.RunOK {
		t.Fatalf("Wait = %+v, done %v, err %v", run, done, err)
	}
	if len(sig.got) != 1 {
		t.Errorf("the wait for an ended run read it %d times, want 1", len(sig.got))
	}
	h.runner.mu.Lock()
	defer h.runner.mu.Unlock()
	if len(h.runner.live) != 0 {
		t.Errorf("runs still live after their end: %v", h.runner.live)
	}
}
