package agent

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
)

func ev(run string, seq int64, stream, phase string) Event {
	return Event{RunID: run, Seq: seq, Stream: stream, Phase: phase}
}

// seqs renders events as "seq:stream/phase" for comparison.
func seqs(evs []Event) string {
	var b strings.Builder
	for i, e := range evs {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d:%s", e.Seq, e.Stream)
		if e.Phase != "" {
			fmt.Fprintf(&b, "/%s", e.Phase)
		}
	}
	return b.String()
}

func TestEventLog(t *testing.T) {
	t0 := time.Unix(1000, 0)
	end := ev("r", 0, StreamLifecycle, PhaseEnd)
	recovered := end
	recovered.recovered = true
	cases := []struct {
		name  string
		add   []Event
		added string // which adds were new, as "ynn…"
		after int64
		want  string
		seen  bool
	}{
		{name: "in order", add: []Event{ev("r", 1, StreamLifecycle, PhaseStart), ev("r", 2, StreamAssistant, ""), withSeq(end, 3)},
			added: "yyy", want: "1:lifecycle/start 2:assistant 3:lifecycle/end"},
		{name: "resume after", add: []Event{ev("r", 1, StreamLifecycle, PhaseStart), ev("r", 2, StreamAssistant, ""), withSeq(end, 3)},
			added: "yyy", after: 1, want: "2:assistant 3:lifecycle/end"},
		{name: "duplicates and late events dropped", add: []Event{ev("r", 1, StreamLifecycle, PhaseStart), ev("r", 2, StreamAssistant, ""), ev("r", 2, StreamAssistant, ""), ev("r", 1, StreamLifecycle, PhaseStart)},
			added: "yynn", want: "1:lifecycle/start 2:assistant"},
		{name: "queued notices and posts are not logged", add: []Event{ev("r", 0, StreamLifecycle, PhaseQueued), ev("r", 0, StreamPost, ""), ev("r", 1, StreamLifecycle, PhaseStart)},
			added: "nny", want: "1:lifecycle/start"},
		{name: "a gap stays a gap", add: []Event{ev("r", 1, StreamLifecycle, PhaseStart), ev("r", 5, StreamTool, PhaseStart)},
			added: "yy", want: "1:lifecycle/start 5:tool/start"},
		{name: "an end numbered low (adoption) follows the logged events", add: []Event{ev("r", 1, StreamLifecycle, PhaseStart), ev("r", 2, StreamAssistant, ""), withSeq(end, 1)},
			added: "yyy", want: "1:lifecycle/start 2:assistant 3:lifecycle/end"},
		{name: "one end per run, nothing after it", add: []Event{withSeq(end, 4), withSeq(end, 5), ev("r", 6, StreamAssistant, "")},
			added: "ynn", want: "4:lifecycle/end"},
		{name: "a watcher that saw the end gets nothing", add: []Event{ev("r", 1, StreamLifecycle, PhaseStart), withSeq(end, 2)},
			added: "yy", after: 2, want: "", seen: true},
		{name: "a watcher past the end's number saw it", add: []Event{withSeq(end, 2)},
			added: "y", after: 9, want: "", seen: true},
		{name: "an end from the store reaches a watcher at any number", add: []Event{ev("r", 1, StreamLifecycle, PhaseStart), recovered},
			added: "yy", after: 9, want: "10:lifecycle/end"},
		{name: "an end from the store after the watcher's events", add: []Event{ev("r", 1, StreamLifecycle, PhaseStart), ev("r", 2, StreamTool, PhaseStart), recovered},
			added: "yyy", after: 1, want: "2:tool/start 3:lifecycle/end"},
		{name: "a relayed end after one from the store is dropped", add: []Event{recovered, withSeq(end, 7)},
			added: "yn", want: "1:lifecycle/end"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newEventLog()
			var added strings.Builder
			for _, e := range c.add {
				if l.add(e, t0) {
					added.WriteByte('y')
				} else {
					added.WriteByte('n')
				}
			}
			if added.String() != c.added {
				t.Errorf("added = %s, want %s", added.String(), c.added)
			}
			evs, seen, _ := l.since("r", c.after, t0)
			if got := seqs(evs); got != c.want || seen != c.seen {
				t.Errorf("since(%d) = %q seen %v, want %q seen %v", c.after, got, seen, c.want, c.seen)
			}
		})
	}
}

func withSeq(e Event, seq int64) Event {
	e.Seq = seq
	return e
}

func TestEventLogWakesAndPrunes(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := newEventLog()
	_, _, wake := l.since("r", 0, t0)
	l.add(ev("r", 1, StreamLifecycle, PhaseStart), t0)
	select {
	case <-wake:
	default:
		t.Fatal("adding an event did not wake the watcher")
	}
	l.add(withSeq(ev("r", 0, StreamLifecycle, PhaseEnd), 2), t0)
	l.add(ev("idle", 1, StreamLifecycle, PhaseStart), t0)
	_, _, wake = l.since("r", 2, t0)
	// An event of another run a retention later prunes the ended run (and
	// wakes its watchers); the idle one stays until logIdle.
	l.add(ev("other", 1, StreamLifecycle, PhaseStart), t0.Add(logRetention))
	select {
	case <-wake:
	default:
		t.Fatal("pruning did not wake the watcher")
	}
	l.mu.Lock()
	_, ended := l.runs["r"]
	_, idle := l.runs["idle"]
	l.mu.Unlock()
	if ended || !idle {
		t.Fatalf("after retention: ended run kept %v, idle run kept %v", ended, idle)
	}
	l.add(ev("other", 2, StreamAssistant, ""), t0.Add(logIdle))
	l.mu.Lock()
	_, idle = l.runs["idle"]
	l.mu.Unlock()
	if idle {
		t.Fatal("a run idle for logIdle was kept")
	}
}

func TestEventLogBoundsARun(t *testing.T) {
	l := newEventLog()
	t0 := time.Unix(1000, 0)
	for i := int64(1); i <= maxLogEvents+1; i++ {
		l.add(ev("r", i, StreamAssistant, ""), t0)
	}
	evs, _, _ := l.since("r", 0, t0)
	if len(evs) != maxLogEvents/2 || evs[len(evs)-1].Seq != maxLogEvents+1 {
		t.Fatalf("kept %d events ending at %d, want the newest %d", len(evs), evs[len(evs)-1].Seq, maxLogEvents/2)
	}
}

// collect reads w until it ends or n events were read (n < 0: all).
func collect(t *testing.T, w func(func(Event, error) bool), n int) []Event {
	t.Helper()
	var out []Event
	for e, err := range w {
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		out = append(out, e)
		if len(out) == n {
			break
		}
	}
	return out
}

// gatedHarness is a harness whose model answers "hello there" once gate
// is closed.
func gatedHarness(t *testing.T) (*harness, chan struct{}) {
	gate := make(chan struct{})
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return textReply("hello there"), nil
	}, nil)
	return h, gate
}

// TestWatchResumes follows a run, leaves after three events, comes back
// with the last sequence number seen, and gets the rest: every event once,
// in order, and the end once; a watcher that saw the end gets nothing.
func TestWatchResumes(t *testing.T) {
	h, gate := gatedHarness(t)
	run := h.submit(Input{Message: "hi"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first := collect(t, h.runner.Watch(ctx, run.RunID, 0), 2) // start, model
	close(gate)
	last := first[len(first)-1].Seq
	rest := collect(t, h.runner.Watch(ctx, run.RunID, last), -1)
	all := append(first, rest...)
	for i, e := range all {
		if e.Seq != int64(i+1) {
			t.Fatalf("events %s: not 1..n without gap or duplicate", seqs(all))
		}
	}
	end := all[len(all)-1]
	if !isEnd(end) || end.Run == nil || end.Run.Status != store.RunOK || end.Message == nil || end.Message.Text() != "hello there" {
		t.Fatalf("last event %+v, want the run's end with its reply", end)
	}
	// The runner's own subscribers saw the same sequence (they get the end
	// on their own goroutine, which may follow the watcher's).
	var sub []Event
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		sub = sub[:0]
		for _, e := range h.eventsFor(run.RunID) {
			if e.Seq > 0 {
				sub = append(sub, e)
			}
		}
		if len(sub) >= len(all) || time.Now().After(deadline) {
			break
		}
	}
	if seqs(sub) != seqs(all) {
		t.Fatalf("watched %s, subscribers saw %s", seqs(all), seqs(sub))
	}
	if again := collect(t, h.runner.Watch(ctx, run.RunID, end.Seq), -1); len(again) != 0 {
		t.Fatalf("a watcher that saw the end got %s", seqs(again))
	}
}

// TestWatchRecoversTheEndFromTheStore: a watcher of a run whose events this
// node no longer holds (pruned, or never relayed) gets the final from the
// store, once.
func TestWatchRecoversTheEndFromTheStore(t *testing.T) {
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		return textReply("stored reply"), nil
	}, nil)
	run := h.submit(Input{Message: "hi"})
	h.wait(run.RunID)
	h.runner.events = newEventLog() // as after a restart, or events never relayed
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := collect(t, h.runner.Watch(ctx, run.RunID, 7), -1)
	if len(got) != 1 || !isEnd(got[0]) || got[0].Seq != 8 || got[0].Run.Status != store.RunOK ||
		got[0].Message == nil || got[0].Message.Text() != "stored reply" || got[0].SessionKey != run.SessionKey {
		t.Fatalf("watch after the log was lost = %s (%+v), want the stored end numbered 8", seqs(got), got)
	}
	var unknown error
	for _, err := range h.runner.Watch(ctx, "no-such-run", 0) {
		unknown = err
	}
	if !errors.Is(unknown, store.ErrNotFound) {
		t.Fatalf("watch of an unknown run: %v, want ErrNotFound", unknown)
	}
}

// TestWatchRelayedRun: events relayed from another node reach a watcher
// here, and the adoption's end of the same run is not a second end.
func TestWatchRelayedRun(t *testing.T) {
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		return textReply("x"), nil
	}, nil)
	// A run executing elsewhere: queued in the shared store, never here.
	if err := h.store.CreateRun(context.Background(), &store.Run{RunID: "remote-1", SessionKey: "agent:main:other", AgentID: "main", Status: store.RunQueued, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	next, stop := iter.Pull2(h.runner.Watch(ctx, "remote-1", 0))
	defer stop()
	h.runner.Relay(Event{RunID: "remote-1", Seq: 1, Stream: StreamLifecycle, Phase: PhaseStart})
	if e, err, ok := next(); !ok || err != nil || e.Seq != 1 {
		t.Fatalf("first relayed event: %+v %v %v", e, err, ok)
	}
	h.runner.Relay(Event{RunID: "remote-1", Seq: 2, Stream: StreamAssistant, Text: "x"})
	h.runner.Relay(Event{RunID: "remote-1", Seq: 2, Stream: StreamAssistant, Text: "x"}) // relayed twice
	aborted := &store.Run{RunID: "remote-1", SessionKey: "agent:main:other", Status: store.RunAborted}
	h.runner.Ended([]*store.Run{aborted}) // the adoption: numbered 1 by its fresh state
	h.runner.Relay(Event{RunID: "remote-1", Seq: 3, Stream: StreamLifecycle, Phase: PhaseEnd, Run: aborted})
	var got []Event
	for {
		e, err, ok := next()
		if !ok {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
	}
	if seqs(got) != "2:assistant 3:lifecycle/end" {
		t.Fatalf("watched %s, want 2:assistant 3:lifecycle/end", seqs(got))
	}
	// Subscribers got one end too: the relayed one after the adoption's
	// was dropped.
	if n := countEnds(h.eventsFor("remote-1")); n != 1 {
		t.Fatalf("subscribers got %d ends of the relayed run, want 1", n)
	}
}

func countEnds(evs []Event) int {
	n := 0
	for _, e := range evs {
		if isEnd(e) {
			n++
		}
	}
	return n
}

// TestRecoverEnds: a run executing on another node whose end was never
// relayed here ends for this node's subscribers and watchers from the
// store, once; the relayed end arriving late is not a second end.
func TestRecoverEnds(t *testing.T) {
	// The clock stands still: a run is never quiet for endCheckEvery.
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		return textReply("x"), nil
	}, func(c *Config) { c.Now = func() time.Time { return time.Unix(1000, 0) } })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.store.CreateRun(ctx, &store.Run{RunID: "remote-2", SessionKey: "agent:main:other", AgentID: "main", Status: store.RunQueued, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	h.runner.Relay(Event{RunID: "remote-2", SessionKey: "agent:main:other", Seq: 1, Stream: StreamLifecycle, Phase: PhaseStart})
	h.runner.RecoverEnds(ctx, true) // still queued: nothing
	if n := countEnds(h.eventsFor("remote-2")); n != 0 {
		t.Fatalf("%d ends before the run ended", n)
	}
	// The other node finished it, and its end's relay was lost.
	if _, err := h.store.FinishRun(ctx, "remote-2", store.RunResult{Status: store.RunOK, StopReason: "stop", EndedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	h.runner.RecoverEnds(ctx, false) // quiet for less than endCheckEvery: not looked at yet
	if n := countEnds(h.eventsFor("remote-2")); n != 0 {
		t.Fatalf("%d ends from a sweep that should not look yet", n)
	}
	h.runner.RecoverEnds(ctx, true)
	h.runner.RecoverEnds(ctx, true)
	h.runner.Relay(Event{RunID: "remote-2", Seq: 4, Stream: StreamLifecycle, Phase: PhaseEnd, Run: &store.Run{RunID: "remote-2", Status: store.RunOK}})
	evs := h.eventsFor("remote-2")
	if n := countEnds(evs); n != 1 || !evs[len(evs)-1].IsRemote() || evs[len(evs)-1].Run.Status != store.RunOK {
		t.Fatalf("subscribers got %s, want one end, marked remote (not relayed on)", seqs(evs))
	}
	got := collect(t, h.runner.Watch(ctx, "remote-2", 1), -1)
	if seqs(got) != "2:lifecycle/end" {
		t.Fatalf("watch after the recovered end = %s", seqs(got))
	}
}

// TestWatchSessionResumes follows every run of a session: a watcher leaves
// during the first run, comes back with the last SessionSeq it saw, and
// gets the rest of that run, the queued second run and a post (relayed
// twice), each event once, in order, and nothing of another session.
func TestWatchSessionResumes(t *testing.T) {
	h, gate := gatedHarness(t)
	const key = "agent:main:main"
	first := h.submit(Input{Message: "one"})
	second := h.submit(Input{Message: "two"})
	other := h.submit(Input{Message: "elsewhere", SessionKey: "agent:main:other"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before := collect(t, h.runner.WatchSession(ctx, key, 0), 2) // first's start and model turn
	close(gate)
	h.wait(first.RunID)
	h.wait(second.RunID)
	h.wait(other.RunID)
	if _, err := h.runner.Post(ctx, Post{SessionKey: key, Text: "a note", RunID: "post-1"}); err != nil {
		t.Fatal(err)
	}
	h.runner.Relay(Event{RunID: "post-1", SessionKey: key, Stream: StreamPost}) // the same post again
	var after []Event
	for e, err := range h.runner.WatchSession(ctx, key, before[len(before)-1].SessionSeq) {
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		if after = append(after, e); e.Stream == StreamPost {
			break
		}
	}
	all := append(before, after...)
	var want []Event
	h.mu.Lock()
	for _, e := range h.events {
		if e.SessionKey == key && (e.Seq > 0 || e.Stream == StreamPost) && !e.IsRemote() { // the bus passes the relayed post on again
			want = append(want, e)
		}
	}
	h.mu.Unlock()
	render := func(evs []Event) string {
		var b strings.Builder
		for _, e := range evs {
			fmt.Fprintf(&b, "%s:%d:%s/%s ", e.RunID, e.Seq, e.Stream, e.Phase)
		}
		return b.String()
	}
	if render(all) != render(want) {
		t.Fatalf("watched\n%s\nsubscribers saw\n%s", render(all), render(want))
	}
	for i := 1; i < len(all); i++ {
		if all[i].SessionSeq <= all[i-1].SessionSeq {
			t.Fatalf("session sequence numbers not rising: %d then %d", all[i-1].SessionSeq, all[i].SessionSeq)
		}
	}
	if countEnds(all) != 2 || !isEnd(after[len(after)-2]) || after[len(after)-2].RunID != second.RunID {
		t.Fatalf("watched %s, want both runs' ends, the second's before the post", render(all))
	}
	// A watcher that saw everything waits for what comes next.
	short, stop := context.WithCancel(ctx)
	stop()
	for e, err := range h.runner.WatchSession(short, key, all[len(all)-1].SessionSeq) {
		if err == nil {
			t.Fatalf("a watcher that saw everything got %+v", e)
		}
	}
}

// TestSubscribeLocal: a local subscriber (metrics, the cluster relay) gets
// the events of the runs executing here, not the events relayed from
// other nodes nor ends recovered from the store, which Subscribe's get.
func TestSubscribeLocal(t *testing.T) {
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		return textReply("here"), nil
	}, nil)
	var mu sync.Mutex
	var local []Event
	stop := h.runner.SubscribeLocal(func(ev Event) {
		mu.Lock()
		local = append(local, ev)
		mu.Unlock()
	})
	defer stop()
	run := h.submit(Input{Message: "hi"})
	h.wait(run.RunID)
	if err := h.store.CreateRun(context.Background(), &store.Run{RunID: "remote-1", SessionKey: "agent:main:other", AgentID: "main", Status: store.RunQueued, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	h.runner.Relay(Event{RunID: "remote-1", Seq: 1, Stream: StreamLifecycle, Phase: PhaseStart})
	if _, err := h.store.FinishRun(context.Background(), "remote-1", store.RunResult{Status: store.RunAborted, EndedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if got := collect(t, h.runner.Watch(ctx, "remote-1", 1), -1); countEnds(got) != 1 {
		t.Fatalf("watch of the relayed run: %s, want its end from the store", seqs(got))
	}
	if n := len(h.eventsFor("remote-1")); n != 2 {
		t.Fatalf("subscribers of every event got %d events of the relayed run, want its start and recovered end", n)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, ev := range local {
		if ev.RunID != run.RunID {
			t.Fatalf("a local subscriber got %+v of a run executing elsewhere", ev)
		}
	}
	if countEnds(local) != 1 {
		t.Fatalf("a local subscriber got %s, want the local run's events and its end", seqs(local))
	}
}

// TestWatchSessionFromPosition: a watch from SessionPosition, taken
// before a run, gets that run's events even when its iteration starts
// only after the run ended (the MCP server takes the position while it
// answers a subscribe and follows on a goroutine of its own); a watch
// from -1 started then gets none of them.
func TestWatchSessionFromPosition(t *testing.T) {
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		return textReply("here"), nil
	}, nil)
	const key = "agent:main:main"
	h.wait(h.submit(Input{Message: "before"}).RunID)
	from := h.runner.SessionPosition()
	run := h.submit(Input{Message: "between"})
	h.wait(run.RunID)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []Event
	for e, err := range h.runner.WatchSession(ctx, key, from) {
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		if e.RunID != run.RunID {
			t.Fatalf("watch from the position got %s's event, want only %s's", e.RunID, run.RunID)
		}
		if got = append(got, e); isEnd(e) {
			break
		}
	}
	if len(got) < 2 {
		t.Fatalf("watched %d events of the run, want its start to its end", len(got))
	}
	short, stop := context.WithCancel(ctx)
	stop()
	for e, err := range h.runner.WatchSession(short, key, -1) {
		if err == nil {
			t.Fatalf("a watch from -1 started after the run got %+v", e)
		}
	}
}

// TestEventLogBoundsEndedRuns: however fast runs end, the log keeps the
// last maxEndedRuns of them (a busy gateway's heap grew by every run of
// the last minute), dropping the one that ended first and waking its
// watchers; runs still going are never dropped for it, and an entry
// outlives neither the time-based pruning of its run nor a run made
// again under the same id.
func TestEventLogBoundsEndedRuns(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := newEventLog()
	l.add(ev("running", 1, StreamLifecycle, PhaseStart), t0)
	_, _, wake := l.since("r-0", 0, t0) // a watcher of the first run
	run := func(id string, at time.Time) {
		l.add(ev(id, 1, StreamLifecycle, PhaseStart), at)
		l.add(withSeq(ev(id, 0, StreamLifecycle, PhaseEnd), 2), at)
	}
	for i := range maxEndedRuns + 10 {
		run(fmt.Sprint("r-", i), t0)
	}
	l.mu.Lock()
	n := len(l.runs)
	_, first := l.runs["r-0"]
	_, tenth := l.runs["r-9"]
	_, kept := l.runs["r-10"]
	_, running := l.runs["running"]
	ends := len(l.ends) - l.endsHead
	l.mu.Unlock()
	if n != maxEndedRuns+1 || first || tenth || !kept || !running || ends != maxEndedRuns {
		t.Fatalf("log holds %d runs (want %d), r-0 %v, r-9 %v, r-10 %v, running %v, %d ends listed (want %d)",
			n, maxEndedRuns+1, first, tenth, kept, running, ends, maxEndedRuns)
	}
	select {
	case <-wake:
	default:
		t.Fatal("dropping r-0 did not wake its watcher")
	}
	// The ended runs pruned by time leave the list too.
	run("late", t0.Add(logRetention))
	l.mu.Lock()
	n, ends = len(l.runs), len(l.ends)-l.endsHead
	l.mu.Unlock()
	if n != 2 || ends != 1 {
		t.Fatalf("after the retention: %d runs, %d ends listed; want 2 (running, late) and 1", n, ends)
	}
	// A run pruned and made again under the same id (a watcher's since
	// makes its log) is not dropped for the end of the first.
	run("dup", t0.Add(logRetention))
	l.mu.Lock()
	delete(l.runs, "dup") // as pruning does, its entry still listed
	l.mu.Unlock()
	l.since("dup", 0, t0.Add(logRetention))
	for i := range maxEndedRuns {
		run(fmt.Sprint("s-", i), t0.Add(logRetention))
	}
	l.mu.Lock()
	_, again := l.runs["dup"]
	l.mu.Unlock()
	if !again {
		t.Fatal("the log made again for dup was dropped for the first dup's end")
	}
}

// TestEventLogBoundsSessionEvents: the session logs together keep the
// last maxSessionEvents events logged, each log losing its oldest first,
// so a resuming session watcher sees what is left, in order, without
// duplicates; a session log pruned for idleness leaves the count too.
func TestEventLogBoundsSessionEvents(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := newEventLog()
	// Eight sessions, so that none reaches its own bound (maxLogEvents).
	var keys []string
	for i := range 8 {
		keys = append(keys, fmt.Sprint("agent:main:s", i))
	}
	const over = 600
	for i := range maxSessionEvents/2 + over/2 {
		id := fmt.Sprint("r-", i)
		start, end := ev(id, 1, StreamLifecycle, PhaseStart), withSeq(ev(id, 0, StreamLifecycle, PhaseEnd), 2)
		start.SessionKey, end.SessionKey = keys[i%len(keys)], keys[i%len(keys)]
		l.add(start, t0)
		l.add(end, t0)
	}
	total := 0
	for _, key := range keys {
		evs, _ := l.sessionSince(key, 0, t0)
		total += len(evs)
		for i := 1; i < len(evs); i++ {
			if evs[i].SessionSeq <= evs[i-1].SessionSeq {
				t.Fatalf("%s: events out of order at %d", key, i)
			}
		}
		if len(evs) == 0 || evs[0].SessionSeq <= over {
			t.Errorf("%s: first event kept has SessionSeq %d; want the first %d dropped", key, evs[0].SessionSeq, over)
		}
		if last := evs[len(evs)-1].SessionSeq; last < l.sessionPosition()-int64(2*len(keys)) {
			t.Errorf("%s: last event %d, log at %d; the newest must stay", key, last, l.sessionPosition())
		}
	}
	if total != maxSessionEvents {
		t.Fatalf("session logs hold %d events; want %d", total, maxSessionEvents)
	}
	// Idle session logs are pruned, and their events leave the count.
	e := ev("late", 1, StreamLifecycle, PhaseStart)
	e.SessionKey = "agent:main:d"
	l.add(e, t0.Add(logIdle+pruneEvery))
	l.mu.Lock()
	n := len(l.sessEvs) - l.sessHead
	l.mu.Unlock()
	if n != 1 {
		t.Fatalf("after pruning the idle logs %d session events are counted; want 1", n)
	}
}

// TestAppendBoundedCopiesOncePerDrop: a log that dropped its oldest half
// takes the appends until its next drop without growing: one allocation
// from one drop to the next (the drop's copy), where the copy of its
// length was grown three times before the next drop (4).
func TestAppendBoundedCopiesOncePerDrop(t *testing.T) {
	ev := &logEvent{}
	evs := make([]*logEvent, 0, 8)
	for prev := 0; len(evs) >= prev; { // up to the first drop
		prev = len(evs)
		evs = appendBounded(evs, ev)
	}
	// From one drop to the next: maxLogEvents/2 events kept, and as many
	// and one more appended.
	n := testing.AllocsPerRun(3, func() {
		for range maxLogEvents/2 + 1 {
			evs = appendBounded(evs, ev)
		}
		if len(evs) != maxLogEvents/2 {
			t.Fatalf("%d events after a drop, want %d", len(evs), maxLogEvents/2)
		}
	})
	if n != 1 {
		t.Errorf("%v allocations from one drop to the next, want 1", n)
	}
	if len(evs) > maxLogEvents {
		t.Errorf("%d events kept, want at most %d", len(evs), maxLogEvents)
	}
}
