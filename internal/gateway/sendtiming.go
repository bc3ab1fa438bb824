package gateway

import (
	"encoding/json"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// The reference tells an operator UI (its Control UI, browser copilot or
// TUI) how its chat.send went, phase by phase, with chat.send_timing events
// sent to that connection only: dispatch-started once the send is
// acknowledged, agent-run-started, first-assistant-event and
// dispatch-completed. The UI records them as timing telemetry.

// operatorUIClient reports whether id is one of the reference's client ids
// of operator UIs.
func operatorUIClient(id string) bool {
	switch id {
	case "openclaw-control-ui", "openclaw-browser-copilot", "openclaw-tui":
		return true
	}
	return false
}

// sendTiming is one chat.send followed for chat.send_timing.
type sendTiming struct {
	c                   *conn
	sessionKey, agentID string
	received            time.Time

	// mu guards the fields that follow. Phases the run reaches before the
	// send is acknowledged wait in pending, so the connection gets them
	// after chat.send's answer and dispatch-started, in order.
	mu             sync.Mutex
	acked          time.Time
	pending        []string
	firstAssistant bool
}

// followSendTiming starts following runID for chat.send_timing before the
// send is handed to admission, when the call comes from an operator UI;
// received is when the call arrived. Following starts first because the
// run may start, and even end, before Accept returns: its phases wait in
// pending until ackSendTiming. It returns nil when the client is no
// operator UI or the run is already followed (a repeated send).
func (s *Server) followSendTiming(cl *call, runID, sessionKey, agentID string, received time.Time) *sendTiming {
	cl.c.mu.Lock()
	id := strings.ToLower(strings.TrimSpace(cl.c.client.ID))
	cl.c.mu.Unlock()
	if !operatorUIClient(id) {
		return nil
	}
	t := &sendTiming{c: cl.c, sessionKey: sessionKey, agentID: agentID, received: received}
	if _, loaded := s.timings.LoadOrStore(runID, t); loaded {
		return nil
	}
	return t
}

// ackSendTiming sends t's dispatch-started, and the phases that waited,
// once the call's answer is queued. created says the send started a new
// run; otherwise following it ends here.
func (s *Server) ackSendTiming(cl *call, runID string, t *sendTiming, created bool) {
	if t == nil {
		return
	}
	if !created {
		s.timings.CompareAndDelete(runID, t)
		return
	}
	prev := cl.releaseAfterResponse
	cl.releaseAfterResponse = func() {
		t.mu.Lock()
		t.acked = time.Now()
		s.sendTimingPhase(runID, t, "dispatch-started")
		for _, phase := range t.pending {
			s.sendTimingPhase(runID, t, phase)
		}
		t.pending = nil
		t.mu.Unlock()
		if prev != nil {
			prev()
		}
	}
}

// sendTimingEvent sends the phase a run event marks, if its run is
// followed.
func (s *Server) sendTimingEvent(ev agent.Event) {
	v, ok := s.timings.Load(ev.RunID)
	if !ok {
		return
	}
	t := v.(*sendTiming)
	t.mu.Lock()
	defer t.mu.Unlock()
	phase := ""
	switch {
	case ev.Stream == agent.StreamLifecycle && ev.Phase == agent.PhaseStart:
		phase = "agent-run-started"
	case ev.Stream == agent.StreamAssistant && !t.firstAssistant:
		t.firstAssistant = true
		phase = "first-assistant-event"
	case ev.Stream == agent.StreamLifecycle && ev.Phase == agent.PhaseEnd:
		s.timings.Delete(ev.RunID)
		phase = "dispatch-completed"
	default:
		return
	}
	if t.acked.IsZero() {
		t.pending = append(t.pending, phase)
		return
	}
	s.sendTimingPhase(ev.RunID, t, phase)
}

// sendTimingPhase sends one chat.send_timing event to the sending
// connection. t.mu is held.
func (s *Server) sendTimingPhase(runID string, t *sendTiming, phase string) {
	now := time.Now()
	ms := func(since time.Time) float64 {
		if since.IsZero() {
			return 0
		}
		return math.Max(0, math.Round(float64(now.Sub(since).Microseconds()))/1e3)
	}
	p := map[string]any{
		"phase": phase, "runId": runID, "sessionKey": t.sessionKey,
		"ackToPhaseMs": ms(t.acked), "receivedToPhaseMs": ms(t.received),
	}
	if t.agentID != "" {
		p["agentId"] = t.agentID
	}
	if phase != "dispatch-started" {
		p["dispatchStartedToPhaseMs"] = ms(t.acked)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return
	}
	t.c.sendEvent(wire.EventChatSendTiming, b, true)
}
