package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/postgres"
	"github.com/switchboardhq/switchboard/internal/store/postgres/pgtest"
)

// heldAnnouncer is a Store whose announcements of wanted keys (ChanNodes
// notifications starting with prefix) wait, once armed, until the test
// lets them go: the other nodes hear of a want as late as the test says.
type heldAnnouncer struct {
	*postgres.Store
	prefix  string
	mu      sync.Mutex
	armed   bool
	blocked chan struct{} // closed when an announcement waits
	release chan struct{}
}

func (h *heldAnnouncer) arm() {
	h.mu.Lock()
	h.armed, h.blocked, h.release = true, make(chan struct{}), make(chan struct{})
	h.mu.Unlock()
}

func (h *heldAnnouncer) NotifyAll(ctx context.Context, channel string, payloads []string) error {
	h.mu.Lock()
	wait := h.armed && channel == postgres.ChanNodes && slices.ContainsFunc(payloads, func(p string) bool { return strings.HasPrefix(p, h.prefix) })
	if wait {
		h.armed = false
		close(h.blocked)
	}
	release := h.release
	h.mu.Unlock()
	if wait {
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return h.Store.NotifyAll(ctx, channel, payloads)
}

// TestWantHeardAfterTheRunEnded: a node starts wanting a session while a
// run of it executes on the other node, which hears of the want only
// after the run ended: the wanting node's subscriber still gets the
// run's events emitted after it started wanting (the second delta) before
// the run's end, and none from before; a watcher there gets every event.
func TestWantHeardAfterTheRunEnded(t *testing.T) {
	g := gated{gate: make(chan struct{})}
	dsn := pgtest.DB(t)
	stores := map[string]*heldAnnouncer{}
	join := func(id string) *member {
		return joinWrapped(t, dsn, id, g, 5*time.Second, false, func(st *postgres.Store) Store {
			stores[id] = &heldAnnouncer{Store: st, prefix: wantOp + " " + id}
			return stores[id]
		})
	}
	x, y := join("a"), join("b")
	waitPeers(t, x, y)
	for _, m := range []*member{x, y} {
		waitScope(t, m, "the other's set", func(sc *relayScope) bool { return !sc.all && sc.known == 1 && len(sc.keys) == 0 })
	}
	const key = "agent:main:late"
	submit(t, x, key, "late", key+"|late")
	// The run executes on b (or on a, when a's sweep claimed its lane
	// first): a is the other.
	b, a := executing(t, "late", x, y)
	held := stores[a.id]

	held.arm()
	release := a.node.Want(key)
	defer release()
	<-held.blocked // b has not heard of the want
	close(g.gate)
	if run := waitRun(t, b, "late", 10*time.Second); run.Status != store.RunOK {
		t.Fatalf("late = %s %q", run.Status, run.Error)
	}
	close(held.release)

	got := seen(t, a, "late")
	if got[0] == "lifecycle/start" || slices.Index(got, "lifecycle/end") != len(got)-1 {
		t.Errorf("a's subscriber got %v", got)
	}
	var text strings.Builder
	for _, ev := range a.eventsOf("late") {
		if ev.Stream == agent.StreamAssistant {
			text.WriteString(ev.Delta)
		}
	}
	if text.String() != "two" {
		t.Errorf("a's subscriber got the deltas %q, want %q (those after it started wanting the run)", text.String(), "two")
	}
	if onA, onB := watched(t, a, "late"), watched(t, b, "late"); !slices.Equal(onA, onB) {
		t.Errorf("watched on a:\n%v\nwant as on the run's node:\n%v", onA, onB)
	}
}

// executing waits until runID streamed its first delta on one of two
// nodes that want none of each other's runs' events (only the node that
// executes it sees them), and returns that node, then the other.
func executing(t *testing.T, runID string, x, y *member) (on, other *member) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	streamed := func(m *member) bool {
		return slices.ContainsFunc(m.eventsOf(runID), func(ev agent.Event) bool { return ev.Stream == agent.StreamAssistant })
	}
	for {
		switch {
		case streamed(x):
			return x, y
		case streamed(y):
			return y, x
		case time.Now().After(deadline):
			t.Fatalf("%s never streamed its first delta", runID)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestWatchReplaysARunThatEndedElsewhere: a node that wanted none of a
// session's events got only the end of the other node's run; a watcher
// there, from the start or from any sequence number, still gets every
// event after it (the run's node sends them again), while the node's
// subscribers got the end only.
func TestWatchReplaysARunThatEndedElsewhere(t *testing.T) {
	a, b := joinAnnounced(t, newModel(time.Millisecond))
	const key = "agent:main:ended"
	runOn(t, b, key, "ended-1")
	end := []string{"lifecycle/end"}
	if got := seen(t, a, "ended-1"); len(got) > 1 {
		a, b = b, a // a's sweep claimed the run's lane first: it ran on a
	}
	if got := seen(t, a, "ended-1"); !slices.Equal(got, end) {
		t.Fatalf("a wants nothing, got %v of b's run", got)
	}
	onB := watched(t, b, "ended-1")
	if len(onB) < 3 {
		t.Fatalf("watched on b: %v", onB)
	}
	for i := range onB {
		var seq int64
		fmt.Sscanf(onB[i], "%d:", &seq)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var rest []string
		for ev, err := range a.runner.Watch(ctx, "ended-1", seq) {
			if err != nil {
				t.Fatal(err)
			}
			rest = append(rest, fmt.Sprintf("%d:%s/%s:%s", ev.Seq, ev.Stream, ev.Phase, ev.Text))
		}
		cancel()
		if i < len(onB)-1 && !slices.Equal(rest, onB[i+1:]) {
			t.Errorf("watched on a after %d: %v, want %v", seq, rest, onB[i+1:])
		}
	}
	if onA := watched(t, a, "ended-1"); !slices.Equal(onA, onB) {
		t.Errorf("watched on a from the start:\n%v\nwant as on the run's node:\n%v", onA, onB)
	}
	if got := a.eventsOf("ended-1"); len(got) != 1 {
		t.Errorf("a's subscriber got %d events of the run, want its end only", len(got))
	}
}

// TestAnnouncementMeta: an announcement's number and since go after the
// node id of its first line and read back; what is not there reads as
// zero.
func TestAnnouncementMeta(t *testing.T) {
	since := time.Unix(0, 1_795_856_132_165_123_456)
	for _, c := range []struct {
		payload string
		no      int64
		since   time.Time
		want    string
	}{
		{"want n1\nk1\nk2", 7, since, "want n1\t7 1795856132165123456\nk1\nk2"},
		{"wants n1", 1, time.Time{}, "wants n1\t1 0"},
	} {
		var ns int64
		if !c.since.IsZero() {
			ns = c.since.UnixNano()
		}
		got := withMeta(c.payload, c.no, ns)
		if got != c.want {
			t.Errorf("withMeta(%q) = %q, want %q", c.payload, got, c.want)
		}
		op, rest, _ := strings.Cut(got, " ")
		line, _, _ := strings.Cut(rest, "\n")
		id, meta, _ := strings.Cut(line, "\t")
		no, s := parseMeta(meta)
		if id != "n1" || op == "" || no != c.no || !s.Equal(c.since) {
			t.Errorf("%q read back as %q %q %d %v", got, op, id, no, s)
		}
	}
	for _, meta := range []string{"", "x y", "5", "-1 -1"} {
		if no, s := parseMeta(meta); no > 0 && meta != "5" || !s.IsZero() {
			t.Errorf("parseMeta(%q) = %d %v", meta, no, s)
		}
	}
}

// TestAckPayload: acknowledgements are one notification after the
// origin, read back by the peer they name only.
func TestAckPayload(t *testing.T) {
	if p := ackPayload("a ", nil); p != "" {
		t.Errorf("no acks = %q", p)
	}
	p := ackPayload("a ", map[string]int64{"b": 4})
	if p != "a ack\nb\t4" {
		t.Fatalf("payload %q", p)
	}
	n := &Node{cfg: Config{ID: "b"}, acked: newAckState(), held: map[string]*heldEvents{}}
	n.acked.added = 4
	n.acked.known("a")
	if !n.acked.pending("a") {
		t.Fatal("a want not acknowledged is not pending")
	}
	_, acks, _ := strings.Cut(p, "\n")
	n.ackedBy("a", "c\t9\n"+acks)
	if n.acked.pending("a") || n.acked.from["a"] != 4 {
		t.Errorf("after the ack: pending %v, from %v", n.acked.pending("a"), n.acked.from)
	}
}

// TestHeldUntilAcknowledged: while a peer has not acknowledged a want,
// its relayed events are held back, in order, and handed over on its
// acknowledgement; another peer's are not; a peer that does not
// acknowledge within a lease is no longer waited for.
func TestHeldUntilAcknowledged(t *testing.T) {
	body, err := encodeFrame([]agent.Event{
		{RunID: "r", SessionKey: "k", Seq: 1, Stream: agent.StreamLifecycle, Phase: agent.PhaseStart},
		{RunID: "r", SessionKey: "k", Seq: 2, Stream: agent.StreamLifecycle, Phase: agent.PhaseEnd, Run: &store.Run{RunID: "r"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &relayRunner{wants: map[string]bool{"r": true}, asked: map[string]int{}}
	n := &Node{cfg: Config{ID: "b"}, runner: r, lease: time.Hour, log: slog.New(slog.DiscardHandler), acked: newAckState(), held: map[string]*heldEvents{}}
	n.acked.known("a")
	n.acked.known("c")
	n.acked.no, n.acked.added = 3, 3
	n.acked.ack("c", 3)
	if err := n.relayBatch("a", body); err != nil || len(r.got) != 0 {
		t.Fatalf("before a's acknowledgement: %v, runner got %v", err, r.got)
	}
	if err := n.relayBatch("c", body); err != nil || len(r.got) != 2 {
		t.Fatalf("c acknowledged: %v, runner got %v", err, r.got)
	}
	r.got = nil
	n.ackedBy("a", "b\t2")
	if len(r.got) != 0 {
		t.Fatalf("an acknowledgement of an earlier announcement released %v", r.got)
	}
	n.ackedBy("a", "b\t3")
	if want := []string{"relay r 1 lifecycle/start", "relay r 2 lifecycle/end"}; !slices.Equal(r.got, want) {
		t.Fatalf("after a's acknowledgement the runner got %v, want %v", r.got, want)
	}

	// A peer that never acknowledges: held for a lease, then not again.
	r.got = nil
	n.acked.known("old")
	n.lease = 0
	if err := n.relayBatch("old", body); err != nil {
		t.Fatal(err)
	}
	n.releaseHeld()
	if len(r.got) != 2 || n.acked.pending("old") {
		t.Fatalf("after a lease: runner got %v, pending %v", r.got, n.acked.pending("old"))
	}
	n.acked.known("old")
	if n.acked.pending("old") {
		t.Fatal("a silent peer is waited for again on its next announcement")
	}
}

// TestRejoinedNodeAcknowledgesAgain: a node that joins again after its
// lease was lost (rejoin) is new to its peers, which forget what it
// acknowledged; it says hello, so that they send their sets again and it
// acknowledges them: its relayed events are not held back once it
// announces, and it is not taken for a node that never acknowledges.
func TestRejoinedNodeAcknowledgesAgain(t *testing.T) {
	dsn := pgtest.DB(t)
	a, b := joinWith(t, dsn, "a", newModel(time.Millisecond), 5*time.Second, false), joinWith(t, dsn, "b", newModel(time.Millisecond), 5*time.Second, false)
	waitPeers(t, a, b)
	defer a.node.Want("agent:main:x")()
	waitAcked := func(what string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for a.node.acked.pending("b") {
			if time.Now().After(deadline) {
				a.node.acked.mu.Lock()
				t.Fatalf("%s: b never acknowledged a's want: from %v, added %d", what, a.node.acked.from, a.node.acked.added)
			}
			time.Sleep(2 * time.Millisecond)
		}
		a.node.acked.mu.Lock()
		defer a.node.acked.mu.Unlock()
		if a.node.acked.silent["b"] {
			t.Fatalf("%s: b was taken for a node that does not acknowledge", what)
		}
	}
	waitAcked("at the start")
	b.node.rejoin()
	// b's next announcement makes a wait for b's acknowledgements again
	// (a forgot them when b joined).
	defer b.node.Want("agent:main:y")()
	waitScope(t, a, "b's want", func(sc *relayScope) bool { return sc.keys["agent:main:y"] })
	waitAcked("after b joined again")
}

// TestHeldUntilTheirWantIsAcknowledged: a peer's relayed events are held
// until it acknowledged the wants made before they came, not the wants
// made since: while wants keep coming faster than the peer acknowledges
// them (each a round trip), its events are still handed over a round
// trip after they came, in order, not after a lease.
func TestHeldUntilTheirWantIsAcknowledged(t *testing.T) {
	frame := func(runID string) []byte {
		body, err := encodeFrame([]agent.Event{
			{RunID: runID, SessionKey: "k", Seq: 1, Stream: agent.StreamLifecycle, Phase: agent.PhaseStart},
			{RunID: runID, SessionKey: "k", Seq: 2, Stream: agent.StreamLifecycle, Phase: agent.PhaseEnd, Run: &store.Run{RunID: runID}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return body
	}
	r := &relayRunner{wants: map[string]bool{"r1": true, "r2": true, "r3": true}, asked: map[string]int{}}
	n := &Node{cfg: Config{ID: "b"}, runner: r, lease: time.Hour, log: slog.New(slog.DiscardHandler), acked: newAckState(), held: map[string]*heldEvents{}}
	n.acked.known("a")
	// A want announced as 1; a's events come before a acknowledged it.
	n.acked.no, n.acked.added = 1, 1
	if err := n.relayBatch("a", frame("r1")); err != nil || len(r.got) != 0 {
		t.Fatalf("before a's acknowledgement: %v, runner got %v", err, r.got)
	}
	// Another want, announced as 2, and more of a's events.
	n.acked.no, n.acked.added = 2, 2
	if err := n.relayBatch("a", frame("r2")); err != nil {
		t.Fatal(err)
	}
	// A third want, not announced yet, and more of a's events.
	n.acked.wantGen.Add(1)
	if err := n.relayBatch("a", frame("r3")); err != nil {
		t.Fatal(err)
	}
	n.ackedBy("a", "b\t1")
	if want := []string{"relay r1 1 lifecycle/start", "relay r1 2 lifecycle/end"}; !slices.Equal(r.got, want) {
		t.Fatalf("a acknowledged 1: the runner got %v, want %v (what came before want 2)", r.got, want)
	}
	r.got = nil
	// The third want is announced as 3 (and a fourth is made) before a
	// acknowledged 2.
	n.acked.no, n.acked.added = 3, 3
	n.acked.sentGen.Store(n.acked.wantGen.Load())
	n.releaseHeld()
	n.acked.wantGen.Add(1)
	n.ackedBy("a", "b\t2")
	if want := []string{"relay r2 1 lifecycle/start", "relay r2 2 lifecycle/end"}; !slices.Equal(r.got, want) {
		t.Fatalf("a acknowledged 2: the runner got %v, want %v", r.got, want)
	}
	r.got = nil
	n.ackedBy("a", "b\t3")
	if want := []string{"relay r3 1 lifecycle/start", "relay r3 2 lifecycle/end"}; !slices.Equal(r.got, want) {
		t.Fatalf("a acknowledged 3: the runner got %v, want %v", r.got, want)
	}
	if n.held["a"] != nil {
		t.Errorf("still held: %+v", n.held["a"])
	}
}

// TestHeldBounded: a peer that relays maxHeld events without
// acknowledging this node's want is no longer waited for, as after a
// lease: its events are handed over, in order, and not held again.
func TestHeldBounded(t *testing.T) {
	var evs []agent.Event
	for i := range 64 {
		evs = append(evs, agent.Event{RunID: "r", SessionKey: "k", Seq: int64(i + 1), Stream: agent.StreamAssistant, Text: "x"})
	}
	body, err := encodeFrame(evs)
	if err != nil {
		t.Fatal(err)
	}
	r := &relayRunner{wants: map[string]bool{"r": true}, asked: map[string]int{}}
	n := &Node{cfg: Config{ID: "b"}, runner: r, lease: time.Hour, log: slog.New(slog.DiscardHandler), acked: newAckState(), held: map[string]*heldEvents{}}
	n.acked.known("busy")
	n.acked.no, n.acked.added = 1, 1
	for range maxHeld/len(evs) - 1 {
		if err := n.relayBatch("busy", body); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.got) != 0 || len(n.held["busy"].evs) != maxHeld-len(evs) {
		t.Fatalf("below the bound: runner got %d events, %d held", len(r.got), len(n.held["busy"].evs))
	}
	if err := n.relayBatch("busy", body); err != nil {
		t.Fatal(err)
	}
	if len(r.got) != maxHeld || n.held["busy"] != nil || n.acked.pending("busy") {
		t.Fatalf("at the bound: runner got %d events, held %v, pending %v", len(r.got), n.held["busy"] != nil, n.acked.pending("busy"))
	}
	if want := "relay r 1 assistant/"; r.got[0] != want || r.got[len(evs)] != want {
		t.Errorf("handed over out of order: %q, %q", r.got[0], r.got[len(evs)])
	}
	if err := n.relayBatch("busy", body); err != nil || len(r.got) != maxHeld+len(evs) {
		t.Fatalf("after the bound: %v, runner got %d events, want %d", err, len(r.got), maxHeld+len(evs))
	}
}
