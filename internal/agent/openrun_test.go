package agent

import (
	"context"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// sweepingStore runs the orphan sweep right after a run is stored opened
// (queued and started in one transaction), before the runner hears back.
type sweepingStore struct {
	Store
	sweep func()
}

func (s *sweepingStore) OpenRun(ctx context.Context, run *store.Run, msgs []store.Message) (*store.Run, []store.Message, error) {
	opened, stored, err := store.OpenRun(ctx, s.Store, run, msgs)
	if err == nil && s.sweep != nil {
		s.sweep()
	}
	return opened, stored, err
}

// TestOpenedRunIsNoOrphan: a run on an idle lane is queued and started in
// one transaction, and the orphan sweep that lists it running the moment
// it is committed leaves it alone (the runner registered it as its lane's
// active run before storing it), so it ends with its reply.
func TestOpenedRunIsNoOrphan(t *testing.T) {
	var ss *sweepingStore
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		return textReply("still mine"), nil
	}, func(cfg *Config) {
		ss = &sweepingStore{Store: cfg.Store}
		cfg.Store = ss
	})
	swept := 0
	ss.sweep = func() {
		swept++
		if err := h.runner.SweepOrphans(context.Background()); err != nil {
			t.Error(err)
		}
	}
	run := h.submit(Input{Message: "go"})
	if run.Status != store.RunRunning {
		t.Fatalf("Submit on an idle lane = %s, want running (opened)", run.Status)
	}
	got := h.wait(run.RunID)
	if swept != 1 || got.Status != store.RunOK || got.Error != "" {
		t.Fatalf("after %d sweeps the run ended %s %q, want ok", swept, got.Status, got.Error)
	}
	msgs := h.transcript("agent:main:main")
	if len(msgs) != 2 || msgs[0].Entry.Message.Content.Text() != "go" || msgs[1].Entry.Message.Content.Text() != "still mine" {
		t.Fatalf("transcript = %+v", msgs)
	}
}

// TestRepeatedRunIDChangesNothing: an input repeated with its run id (a
// client's retry) is answered with the existing run, although Enqueue no
// longer reads the id before the run's insert: a repeat that would reset
// a stale session resets nothing, a repeat on an idle lane is found by
// the insert, and the input is in the transcript once.
func TestRepeatedRunIDChangesNothing(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 5, 0, 0, 0, time.UTC)}
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		return textReply("ok"), nil
	}, func(c *Config) {
		c.Now = clock.now
		c.ResetRule = func(*store.Session) compaction.ResetRule {
			return compaction.ResetRule{Mode: compaction.ResetIdle, IdleMinutes: 60}
		}
	})
	ctx := context.Background()
	h.submit(Input{RunID: "r1", Message: "once"})
	h.wait("r1")
	h.idle()
	before, err := h.store.GetSession(ctx, "agent:main:main")
	if err != nil {
		t.Fatal(err)
	}
	for _, gap := range []time.Duration{time.Minute, 2 * time.Hour} { // fresh, then stale
		clock.add(gap)
		run, created, err := h.runner.Submit(ctx, Input{RunID: "r1", SessionKey: "agent:main:main", AgentID: "main", Message: "once"})
		if err != nil || created || run == nil || run.RunID != "r1" || run.Status != store.RunOK {
			t.Fatalf("repeat after %v = %+v, created %v, %v; want the ended run", gap, run, created, err)
		}
		h.idle()
	}
	after, err := h.store.GetSession(ctx, "agent:main:main")
	if err != nil || after.SessionID != before.SessionID {
		t.Fatalf("session %s → %s (%v): a repeat reset it", before.SessionID, after.SessionID, err)
	}
	users := 0
	for _, m := range h.transcript("agent:main:main") {
		if m.Role == transcript.RoleUser {
			users++
		}
	}
	if users != 1 {
		t.Fatalf("%d user messages, want the input once", users)
	}
}

// TestRepeatOfALiveRunIDFromAnotherSession: a run id repeated on another,
// idle session while its run is live is answered with that run, and the
// run stays abortable (the repeat took nothing of its registration).
func TestRepeatOfALiveRunIDFromAnotherSession(t *testing.T) {
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		if lastUser(req) == "hold" {
			<-ctx.Done() // runs until aborted
			return nil, ctx.Err()
		}
		return textReply("ok"), nil
	}, nil)
	started := make(chan struct{}, 1)
	h.runner.Subscribe(func(ev Event) {
		if ev.RunID == "x" && ev.Stream == StreamLifecycle && ev.Phase == PhaseStart {
			started <- struct{}{}
		}
	})
	ctx := context.Background()
	h.submit(Input{RunID: "b1", Message: "first", SessionKey: "agent:main:b"}) // b exists, warm and idle
	h.wait("b1")
	h.idle()
	h.submit(Input{RunID: "x", Message: "hold", SessionKey: "agent:main:a"})
	<-started
	run, created, err := h.runner.Submit(ctx, Input{RunID: "x", SessionKey: "agent:main:b", AgentID: "main", Message: "again"})
	if err != nil || created || run.SessionKey != "agent:main:a" {
		t.Fatalf("repeat = %+v, created %v, %v; want the live run", run, created, err)
	}
	if live, err := h.runner.Abort(ctx, "x"); err != nil || !live {
		t.Fatalf("Abort = %v, %v; want the live run cancelled", live, err)
	}
	if got := h.wait("x"); got.Status != store.RunAborted {
		t.Fatalf("run ended %s %q, want aborted", got.Status, got.Error)
	}
}

// TestOpenedRunStartsBeforeSubmitReturns: a run opened on an idle lane has
// emitted its lifecycle start (its first event) by the time Submit
// returns, on the caller's goroutine: the gateway, which holds a run's
// events until its chat.send answer is queued, then sends the answer and
// the start in one socket write instead of two.
func TestOpenedRunStartsBeforeSubmitReturns(t *testing.T) {
	release := make(chan struct{})
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		<-release
		return textReply("ok"), nil
	}, nil)
	run := h.submit(Input{Message: "go"})
	evs := h.eventsFor(run.RunID)
	close(release)
	if len(evs) == 0 || evs[0].Stream != StreamLifecycle || evs[0].Phase != PhaseStart || evs[0].Seq != 1 {
		t.Fatalf("events when Submit returned = %+v, want the lifecycle start first", evs)
	}
	if got := h.wait(run.RunID); got.Status != store.RunOK {
		t.Fatalf("run ended %s %q", got.Status, got.Error)
	}
}
