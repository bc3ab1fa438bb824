package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
)

// TestWantsRelayedAsksInterests: a run of another node is wanted while a
// registered Interest names it, and no longer once it is removed.
func TestWantsRelayedAsksInterests(t *testing.T) {
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		return textReply("x"), nil
	}, nil)
	r := h.runner
	if r.WantsRelayed("agent:main:a", "r1") {
		t.Fatal("wanted with no interest registered")
	}
	removeA := r.AddInterest(func(key, runID string) bool { return key == "agent:main:a" })
	removeR := r.AddInterest(func(key, runID string) bool { return runID == "r2" })
	for _, c := range []struct {
		key, run string
		want     bool
	}{
		{"agent:main:a", "r1", true},
		{"agent:main:b", "r2", true},
		{"agent:main:b", "r1", false},
	} {
		if got := r.WantsRelayed(c.key, c.run); got != c.want {
			t.Errorf("WantsRelayed(%s, %s) = %v, want %v", c.key, c.run, got, c.want)
		}
	}
	removeA()
	if r.WantsRelayed("agent:main:a", "r1") || !r.WantsRelayed("agent:main:b", "r2") {
		t.Error("a removed interest still counts, or the other was removed with it")
	}
	removeR()
	if r.WantsRelayed("agent:main:b", "r2") {
		t.Error("wanted after every interest was removed")
	}
}

// TestRelayLoggedReachesWatchersOnly: events of another node's run that no
// subscriber wants are logged undecoded: subscribers get only the run's
// end, while a watcher of the run and one of its session get every event,
// decoded when read, in order (one that does not decode is a gap).
func TestRelayLoggedReachesWatchersOnly(t *testing.T) {
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		return textReply("x"), nil
	}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const key = "agent:main:other"
	if err := h.store.CreateRun(ctx, &store.Run{RunID: "remote-3", SessionKey: key, AgentID: "main", Status: store.RunQueued, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	decodes := 0
	lazy := func(ev Event, err error) func() (Event, error) {
		return func() (Event, error) {
			decodes++
			return ev, err
		}
	}
	r := h.runner
	r.RelayLogged("remote-3", key, 1, lazy(Event{RunID: "remote-3", SessionKey: key, Seq: 1, Stream: StreamLifecycle, Phase: PhaseStart}, nil))
	r.RelayLogged("remote-3", key, 2, lazy(Event{RunID: "remote-3", SessionKey: key, Seq: 2, Stream: StreamAssistant, Text: "he", Delta: "he"}, nil))
	r.RelayLogged("remote-3", key, 3, lazy(Event{}, errors.New("garbled")))
	r.RelayLogged("remote-3", key, 4, lazy(Event{RunID: "remote-3", SessionKey: key, Seq: 4, Stream: StreamAssistant, Text: "hello", Delta: "llo"}, nil))
	r.RelayLogged("remote-3", key, 0, lazy(Event{RunID: "remote-3", SessionKey: key, Stream: StreamLifecycle, Phase: PhaseQueued}, nil))
	if decodes != 0 {
		t.Fatalf("%d events decoded before anyone read them", decodes)
	}
	ok := &store.Run{RunID: "remote-3", SessionKey: key, Status: store.RunOK}
	r.Relay(Event{RunID: "remote-3", SessionKey: key, Seq: 5, Stream: StreamLifecycle, Phase: PhaseEnd, Run: ok})
	if got := seqs(h.eventsFor("remote-3")); got != "5:lifecycle/end" {
		t.Fatalf("subscribers got %s, want only the end", got)
	}
	got := collect(t, r.Watch(ctx, "remote-3", 0), -1)
	if seqs(got) != "1:lifecycle/start 2:assistant 4:assistant 5:lifecycle/end" {
		t.Fatalf("watched %s, want every event but the undecodable one", seqs(got))
	}
	for _, e := range got {
		if !e.IsRemote() || e.RunID != "remote-3" || e.SessionKey != key {
			t.Errorf("watched event %d: remote %v, run %q, key %q", e.Seq, e.IsRemote(), e.RunID, e.SessionKey)
		}
	}
	if got[2].Text != "hello" || got[2].Delta != "llo" {
		t.Errorf("decoded event = %+v", got[2])
	}
	// From the middle, as a watcher resuming.
	if got := collect(t, r.Watch(ctx, "remote-3", 2), -1); seqs(got) != "4:assistant 5:lifecycle/end" {
		t.Fatalf("resumed after 2: %s", seqs(got))
	}
	sess := collect(t, r.WatchSession(ctx, key, 0), 4)
	if seqs(sess) != "1:lifecycle/start 2:assistant 4:assistant 5:lifecycle/end" {
		t.Fatalf("session watch = %s", seqs(sess))
	}
	for i := 1; i < len(sess); i++ {
		if sess[i].SessionSeq <= sess[i-1].SessionSeq {
			t.Fatalf("session watch numbers %d then %d", sess[i-1].SessionSeq, sess[i].SessionSeq)
		}
	}
}
