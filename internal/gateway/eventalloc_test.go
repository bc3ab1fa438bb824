package gateway

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// warmTurnEvents are the runner events of a warm turn with one model step:
// start, model, the reply's text, usage and the end.
func warmTurnEvents() []agent.Event {
	now := time.UnixMilli(1_764_000_000_123)
	// Ids as the gateway makes them.
	const runID, sessionID = "0b7c1e4a-5d2f-4c3b-9a8e-1f2d3c4b5a69", "7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2910"
	base := agent.Event{RunID: runID, SessionKey: "agent:main:load-0", AgentID: "main", SessionID: sessionID, Lane: "agent:main:load-0", Time: now}
	at := func(seq int64, e agent.Event) agent.Event {
		e.RunID, e.SessionKey, e.AgentID, e.SessionID, e.Lane, e.Time = base.RunID, base.SessionKey, base.AgentID, base.SessionID, base.Lane, base.Time
		e.Seq = seq
		return e
	}
	u := transcript.Usage{Input: 10, Output: 2, TotalTokens: 12}
	msg := transcript.NewAssistantMessage([]transcript.Block{transcript.TextBlock("echo: warm turn")}, now)
	msg.Usage, msg.StopReason = &u, "stop"
	run := &store.Run{RunID: runID, Status: store.RunOK, StopReason: "stop", StartedAt: now, EndedAt: now, Usage: u}
	return []agent.Event{
		at(1, agent.Event{Stream: agent.StreamLifecycle, Phase: agent.PhaseStart}),
		at(2, agent.Event{Stream: agent.StreamLifecycle, Phase: agent.PhaseModel, ProviderID: "offline", ModelID: "echo"}),
		at(3, agent.Event{Stream: agent.StreamAssistant, Text: "echo: warm turn"}),
		at(4, agent.Event{Stream: agent.StreamUsage, Usage: &u}),
		at(5, agent.Event{Stream: agent.StreamLifecycle, Phase: agent.PhaseEnd, Run: run, Message: msg}),
	}
}

// TestRunEventsAllocateOnlyTheirFrames: translating a warm turn's events
// allocates the seven frames it sends (the agent events start, model,
// assistant, usage and end; the chat delta and final) and nothing else:
// their data and messages are encoded into the run's reused buffer, and
// the held assistant event is kept by value.
func TestRunEventsAllocateOnlyTheirFrames(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.gw
	evs := warmTurnEvents()
	st := &runStream{key: "agent:main:load-0", holds: 1, held: make([]heldEvent, 0, 16)}
	translate := func() {
		*st = runStream{key: st.key, holds: 1, held: st.held[:0], data: st.data}
		for _, ev := range evs {
			s.translateLocked(st, ev)
		}
	}
	translate()
	var names []string
	for _, h := range st.held {
		names = append(names, h.name)
	}
	if got := strings.Join(names, " "); got != "agent agent agent chat agent agent chat" {
		t.Fatalf("frames %s, want agent agent agent chat agent agent chat", got)
	}
	if n := testing.AllocsPerRun(100, translate); n != 7 {
		t.Errorf("a warm turn's events: %v allocations, want 7 (one per frame)", n)
	}
}

// TestRunStreamMadeOnce: a warm turn's events on a new stream allocate
// the stream, its one buffer for the events' data and messages (with room
// for a short turn's), and the frames.
func TestRunStreamMadeOnce(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.gw
	evs := warmTurnEvents()
	run := func() {
		st := s.stream("run-1")
		st.mu.Lock()
		st.key = "agent:main:load-0"
		for _, ev := range evs {
			s.translateLocked(st, ev)
			s.flushHeldLocked(st) // as onRunEvent does
		}
		st.mu.Unlock()
		s.dropStream("run-1", st)
	}
	run()
	if n := s.liveRuns.Load(); n != 0 {
		t.Fatalf("%d live runs counted after the run's stream was dropped", n)
	}
	s.stream("run-2")
	if n := s.liveRuns.Load(); n != 1 {
		t.Fatalf("%d live runs counted with one stream", n)
	}
	s.dropStream("run-2", s.stream("run-2"))
	if n := testing.AllocsPerRun(100, run); n != 9 {
		t.Errorf("a warm turn's events on a new stream: %v allocations, want 9 (the stream, its buffer, 7 frames)", n)
	}
}

// BenchmarkFanOutWarmTurn: a warm turn's events translated and queued on
// 100 plain connections (every session's events: through the feed), or
// on one (its own queue), what they hold taken between turns as a writer
// would. Issue 37 measures the gateway's CPU
// per turn with 100 such clients against one.
func BenchmarkFanOutWarmTurn(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			e := newEnv(b, envOptions{})
			s := e.gw
			conns := make([]*conn, n)
			for i := range conns {
				c := &conn{s: s, ctx: b.Context(), wake: make(chan struct{}, 1), ready: true}
				c.mu.Lock()
				s.addPlain(c)
				c.mu.Unlock()
				conns[i] = c
			}
			evs := warmTurnEvents()
			b.ReportAllocs()
			for b.Loop() {
				st := s.stream("run-1")
				st.mu.Lock()
				st.key = "agent:main:load-0"
				for _, ev := range evs {
					s.translateLocked(st, ev)
					s.flushHeldLocked(st)
				}
				st.mu.Unlock()
				s.dropStream("run-1", st)
				for _, c := range conns {
					// As its writer would: take what the feed holds for
					// it, and publish its position when written.
					fed, _ := s.feed.take(c, s.feed.head.Load(), c.taken[:0], true)
					clear(fed)
					c.taken = fed[:0]
					c.fpos.Store(c.fnext)
					c.fdone.Store(c.fnextTotal)
					c.mu.Lock()
					for _, f := range c.queue {
						f.release()
					}
					clear(c.queue)
					c.queue, c.queued, c.ownQueued = c.queue[:0], 0, 0
					c.mu.Unlock()
					select {
					case <-c.wake:
					default:
					}
					c.idle = true // the writer took the queue and waits
				}
				s.feed.trim()
				s.queuedTotal.Store(0)
			}
		})
	}
}

// TestRunEventFramesQueuedTogether: the frames one runner event makes
// (the end's lifecycle end and chat final; a text event's assistant event
// and chat delta) are queued on a connection together, in order, with
// consecutive seqs, and wake its writer once: with 100 plain clients the
// per-connection locking and waking of every frame was a tenth of the
// gateway's CPU (issue 37). A connection that does not receive the
// session's events gets none of them.
func TestRunEventFramesQueuedTogether(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.gw
	newConn := func(scoped bool) *conn {
		// Room for a token per signal: len(wake) counts the wake-ups.
		// idle: its writer waits for a wake-up.
		c := &conn{s: s, ctx: t.Context(), wake: make(chan struct{}, 16), ready: true, scoped: scoped, idle: true}
		if !s.addConn(c) {
			t.Fatal("the gateway is closing")
		}
		t.Cleanup(func() { s.removeConn(c) })
		if !scoped {
			c.mu.Lock()
			s.addPlain(c) // alone, it is queued on, not fed
			c.mu.Unlock()
		}
		return c
	}
	plain := newConn(false)
	other := newConn(true) // session-scoped, subscribed to nothing
	var got []string
	for i, ev := range warmTurnEvents() {
		before, frames := len(plain.wake), len(plain.queue)
		plain.idle = true // as the writer that took the queue would be
		s.onRunEvent(ev)
		if n := len(plain.wake) - before; n != 1 {
			t.Errorf("runner event %d (%s %s): %d wake-ups, want 1", i, ev.Stream, ev.Phase, n)
		}
		var names []string
		for _, f := range plain.queue[frames:] {
			name := strings.TrimPrefix(string(f.raw), `{"type":"event","event":"`)
			names = append(names, name[:strings.IndexByte(name, '"')])
		}
		got = append(got, strings.Join(names, "+"))
	}
	if want := "agent agent agent+chat agent agent+chat"; strings.Join(got, " ") != want {
		t.Errorf("frames by runner event: %s, want %s", strings.Join(got, " "), want)
	}
	for i, f := range plain.merge(slices.Clone(plain.queue), nil) { // numbered as the writer does
		if !f.event || f.seq != int64(i+1) {
			t.Errorf("frame %d: event %v, seq %d, want seq %d", i, f.event, f.seq, i+1)
		}
	}
	if len(other.queue) != 0 || len(other.wake) != 0 {
		t.Errorf("a scoped connection that did not subscribe got %d frames, %d wake-ups", len(other.queue), len(other.wake))
	}
	// A run of no session: its events go to every connection.
	s.onRunEvent(agent.Event{RunID: "run-nokey", Seq: 1, Stream: agent.StreamLifecycle, Phase: agent.PhaseStart, Time: time.Now()})
	if len(other.queue) != 1 || len(plain.queue) != 8 {
		t.Errorf("a run of no session's start: %d frames on the scoped connection, %d on the plain one, want 1 and 8", len(other.queue), len(plain.queue))
	}
}
