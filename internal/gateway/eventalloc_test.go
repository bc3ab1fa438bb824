package gateway

import (
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
		}
		st.mu.Unlock()
		s.dropStream("run-1", st)
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 9 {
		t.Errorf("a warm turn's events on a new stream: %v allocations, want 9 (the stream, its buffer, 7 frames)", n)
	}
}
