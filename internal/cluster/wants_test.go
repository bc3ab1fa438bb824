package cluster

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/postgres"
	"github.com/switchboardhq/switchboard/internal/store/postgres/pgtest"
)

// joinAnnounced starts two nodes whose consumers want nothing of the
// other's runs but their ends, and waits until each knows the other's
// (empty) set.
func joinAnnounced(t *testing.T, p provider.Provider) (a, b *member) {
	t.Helper()
	dsn := pgtest.DB(t)
	a, b = joinWith(t, dsn, "a", p, 5*time.Second, false), joinWith(t, dsn, "b", p, 5*time.Second, false)
	waitPeers(t, a, b)
	for _, m := range []*member{a, b} {
		waitScope(t, m, "the other's set", func(sc *relayScope) bool { return !sc.all && sc.known == 1 && len(sc.keys) == 0 })
	}
	return a, b
}

// waitScope waits until what m's peers want satisfies ok.
func waitScope(t *testing.T, m *member, what string, ok func(*relayScope) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if sc := m.node.scope.Load(); sc != nil && int(m.node.peers.Load()) <= sc.known && ok(sc) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never learnt %s: %+v", m.id, what, m.node.scope.Load())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// seen waits until m's subscriber got the end of runID, and returns the
// streams of the events it got of that run.
func seen(t *testing.T, m *member, runID string) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs := m.eventsOf(runID)
		if slices.ContainsFunc(evs, func(ev agent.Event) bool { return ev.Stream == agent.StreamLifecycle && ev.Phase == agent.PhaseEnd }) {
			var out []string
			for _, ev := range evs {
				out = append(out, ev.Stream+"/"+ev.Phase)
			}
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the end of %s never arrived", m.id, runID)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func runOn(t *testing.T, m *member, key, runID string) {
	t.Helper()
	submit(t, m, key, runID, key+"|"+runID)
	if run := waitRun(t, m, runID, 10*time.Second); run.Status != store.RunOK {
		t.Fatalf("%s = %s %q", runID, run.Status, run.Error)
	}
}

// TestRunEventsGoOnlyToWantingNodes: a node whose consumers want no
// session gets only the ends of another node's runs; once it wants a
// session it gets that session's run events (and no other's), and none
// again after it stops wanting it.
func TestRunEventsGoOnlyToWantingNodes(t *testing.T) {
	a, b := joinAnnounced(t, newModel(time.Millisecond))
	const solo, watchedKey = "agent:main:solo", "agent:main:watched"
	end := []string{"lifecycle/end"}

	runOn(t, b, solo, "solo-1")
	if got := seen(t, a, "solo-1"); !slices.Equal(got, end) {
		t.Fatalf("a wants nothing, got %v of b's run", got)
	}

	release := a.node.Want(watchedKey)
	waitScope(t, b, "a's want", func(sc *relayScope) bool { return sc.keys[watchedKey] })
	runOn(t, b, watchedKey, "w-1")
	if got := seen(t, a, "w-1"); len(got) < 3 || got[0] != "lifecycle/start" || !slices.Contains(got, "assistant/") {
		t.Fatalf("a wants %s, got %v of b's run there", watchedKey, got)
	}
	runOn(t, b, solo, "solo-2")
	if got := seen(t, a, "solo-2"); !slices.Equal(got, end) {
		t.Fatalf("a wants only %s, got %v of b's run of %s", watchedKey, got, solo)
	}

	release()
	release() // a second call does nothing
	waitScope(t, b, "a's unwant", func(sc *relayScope) bool { return len(sc.keys) == 0 })
	runOn(t, b, watchedKey, "w-2")
	if got := seen(t, a, "w-2"); !slices.Equal(got, end) {
		t.Fatalf("a no longer wants %s, got %v of b's run there", watchedKey, got)
	}
}

// TestPeerThatDoesNotAnnounceGetsEverything: a live peer that never said
// what it wants (a node of a version before) gets every run event, until
// it is no longer live.
func TestPeerThatDoesNotAnnounceGetsEverything(t *testing.T) {
	a, b := joinAnnounced(t, newModel(time.Millisecond))
	ctx := context.Background()
	// An older node joins: it says so, and never announces.
	if err := a.st.Notify(ctx, postgres.ChanNodes, "join old"); err != nil {
		t.Fatal(err)
	}
	waitScope(t, b, "an unknown peer", func(sc *relayScope) bool { return sc.all })
	runOn(t, b, "agent:main:solo", "solo-1")
	if got := seen(t, a, "solo-1"); len(got) < 3 {
		t.Fatalf("with a peer that does not announce, a got %v of b's run", got)
	}
	// It has no row: the peers' sweep forgets it.
	b.node.prunePeers(ctx)
	waitScope(t, b, "the unknown peer gone", func(sc *relayScope) bool { return !sc.all })
}

// gated is a model that streams "one ", waits for its gate, then
// streams "two".
type gated struct{ gate chan struct{} }

func (g gated) Stream(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Event, error] {
	return func(yield func(*provider.Event, error) bool) {
		if !yield(&provider.Event{Type: provider.EventTextDelta, Text: "one "}, nil) {
			return
		}
		select {
		case <-g.gate:
		case <-ctx.Done():
			yield(nil, ctx.Err())
			return
		}
		for _, ev := range []provider.Event{{Type: provider.EventTextDelta, Text: "two"}, {Type: provider.EventDone, StopReason: provider.StopEnd}} {
			if !yield(&ev, nil) {
				return
			}
		}
	}
}

// TestMidRunWantCatchesUp: a watcher starts mid-run on a node that got
// none of the run's events: it gets every event from the first, the rest
// as they come and the end, once each, as on the run's node; the node's
// subscribers get only what came after the node started wanting the run;
// and a watcher there resumes from any sequence number.
func TestMidRunWantCatchesUp(t *testing.T) {
	g := gated{gate: make(chan struct{})}
	x, y := joinAnnounced(t, g)
	const key = "agent:main:mid"
	submit(t, y, key, "mid", key+"|mid")
	// The run executes on b (or on a, when a's sweep claimed its lane
	// first): a is the other.
	b, a := executing(t, "mid", y, x)
	if evs := a.eventsOf("mid"); len(evs) != 0 {
		t.Fatalf("a wants nothing, got %d events of b's run", len(evs))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var mu sync.Mutex
	var onA []string
	first := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for ev, err := range a.runner.Watch(ctx, "mid", 0) {
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			onA = append(onA, fmt.Sprintf("%d:%s/%s:%s", ev.Seq, ev.Stream, ev.Phase, ev.Text))
			if ev.Stream == agent.StreamAssistant && len(onA) > 0 && strings.HasSuffix(onA[len(onA)-1], "one ") {
				select {
				case <-first:
				default:
					close(first)
				}
			}
			mu.Unlock()
		}
	})
	select {
	case <-first:
	case <-ctx.Done():
		t.Fatal("the watcher on a never got the delta streamed before it started")
	}
	close(g.gate)
	wg.Wait()
	if run := waitRun(t, b, "mid", 10*time.Second); run.Status != store.RunOK {
		t.Fatalf("mid = %s %q", run.Status, run.Error)
	}
	onB := watched(t, b, "mid")
	if !slices.Equal(onA, onB) {
		t.Fatalf("watched on a from mid-run:\n%v\nwant as on the run's node:\n%v", onA, onB)
	}
	// a's subscriber: the events after a started wanting the run, once
	// each, the end last; none from before (the start, "one ").
	got := seen(t, a, "mid")
	if got[0] == "lifecycle/start" || got[len(got)-1] != "lifecycle/end" || slices.Index(got, "lifecycle/end") != len(got)-1 {
		t.Errorf("a's subscriber got %v", got)
	}
	var text strings.Builder
	for _, ev := range a.eventsOf("mid") {
		if ev.Stream == agent.StreamAssistant {
			text.WriteString(ev.Delta)
		}
	}
	if text.String() != "two" {
		t.Errorf("a's subscriber got the deltas %q, want %q", text.String(), "two")
	}
	// A watcher on a resumes after any event.
	for i := range onB {
		var seq int64
		fmt.Sscanf(onB[i], "%d:", &seq)
		rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
		var rest []string
		for ev, err := range a.runner.Watch(rctx, "mid", seq) {
			if err != nil {
				t.Fatal(err)
			}
			rest = append(rest, fmt.Sprintf("%d:%s/%s:%s", ev.Seq, ev.Stream, ev.Phase, ev.Text))
		}
		rcancel()
		if i < len(onB)-1 && !slices.Equal(rest, onB[i+1:]) {
			t.Errorf("resumed on a after %d: %v, want %v", seq, rest, onB[i+1:])
		}
	}
}

// TestAnnouncementsFit: a large set is cut into notifications that fit,
// the first one replacing the set, and they add up to it.
func TestAnnouncementsFit(t *testing.T) {
	var keys []string
	for i := range 2000 {
		keys = append(keys, fmt.Sprintf("agent:main:session-%d", i))
	}
	keys = append(keys, strings.Repeat("x", 9000))
	out := announcements(wantsOp, "node-1", keys)
	if len(out) < 2 {
		t.Fatalf("%d notifications", len(out))
	}
	got := map[string]bool{}
	for i, p := range out {
		if len(p) > maxAnnouncement {
			t.Errorf("notification %d: %d bytes", i, len(p))
		}
		op, rest, _ := strings.Cut(p, " ")
		if want := map[bool]string{true: wantsOp, false: wantOp}[i == 0]; op != want {
			t.Errorf("notification %d: op %q, want %q", i, op, want)
		}
		id, list, _ := strings.Cut(rest, "\n")
		if id != "node-1" {
			t.Errorf("notification %d: id %q", i, id)
		}
		for _, k := range strings.Split(list, "\n") {
			got[k] = true
		}
	}
	if len(got) != 2001 || !got[agent.WantAll] || !got["agent:main:session-1999"] {
		t.Errorf("announced %d keys (all: %v)", len(got), got[agent.WantAll])
	}
	if out := announcements(wantsOp, "n", nil); !slices.Equal(out, []string{"wants n"}) {
		t.Errorf("empty set = %q", out)
	}
	if out := announcements(unwantOp, "n", nil); len(out) != 0 {
		t.Errorf("no keys to unwant = %q", out)
	}
}

// TestCatchUpFrames: events sent again for a peer go as kindCatchUp,
// except ends and posts, and read back whole.
func TestCatchUpFrames(t *testing.T) {
	evs := []agent.Event{
		{RunID: "r1", SessionKey: "agent:main:x", Seq: 1, Stream: agent.StreamLifecycle, Phase: agent.PhaseStart},
		{RunID: "r1", SessionKey: "agent:main:x", Seq: 2, Stream: agent.StreamAssistant, Text: "hi", Delta: "hi"},
		{RunID: "r1", SessionKey: "agent:main:x", Seq: 3, Stream: agent.StreamLifecycle, Phase: agent.PhaseEnd, Run: &store.Run{RunID: "r1", Status: store.RunOK}},
	}
	frames, err := encodeFramesAs(evs, maxInlineBatch, true)
	if err != nil || len(frames) != 1 {
		t.Fatalf("encode = %d frames, %v", len(frames), err)
	}
	got, err := decodeFrame(frames[0])
	if err != nil {
		t.Fatal(err)
	}
	kinds := ""
	for _, e := range got {
		kinds += string(e.kind)
	}
	if kinds != "cce" {
		t.Fatalf("kinds %q, want %q", kinds, "cce")
	}
	if ev, err := got[1].decode(); err != nil || ev.Delta != "hi" || ev.Seq != 2 || ev.RunID != "r1" {
		t.Fatalf("decoded %+v, %v", ev, err)
	}
}

// TestRelayedTwiceReachesSubscribersOnce: a run event relayed again (a
// catch-up of one the node had) reaches subscribers once.
func TestRelayedTwiceReachesSubscribersOnce(t *testing.T) {
	a, _ := joinAnnounced(t, newModel(time.Millisecond))
	ev := agent.Event{RunID: "elsewhere", SessionKey: "agent:main:x", Seq: 1, Stream: agent.StreamAssistant, Text: "hi", Delta: "hi"}
	a.runner.Relay(ev)
	a.runner.Relay(ev)
	if n := len(a.eventsOf("elsewhere")); n != 1 {
		t.Fatalf("a's subscriber got the event %d times", n)
	}
}
