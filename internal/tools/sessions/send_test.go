package sessions

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// orderMessenger records the order of its calls; its runs end ok at once,
// with sessionID as the transcript they wrote to.
type orderMessenger struct {
	mu        sync.Mutex
	calls     []string
	flows     []Flow
	replyRuns []*store.Run
}

func (m *orderMessenger) note(call string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, call)
}

func (m *orderMessenger) Send(_ context.Context, msg Message) (*store.Run, error) {
	m.note("send")
	if msg.Flow != nil {
		m.mu.Lock()
		m.flows = append(m.flows, *msg.Flow)
		m.mu.Unlock()
	}
	return &store.Run{RunID: msg.RunID, SessionKey: msg.TargetKey, Status: store.RunQueued}, nil
}

func (m *orderMessenger) Wait(_ context.Context, runID string, _ time.Duration) (*store.Run, bool, error) {
	m.note("wait")
	return &store.Run{RunID: runID, SessionKey: "agent:main:target", SessionID: "sid-target", Status: store.RunOK}, true, nil
}

func (m *orderMessenger) Reply(_ context.Context, run *store.Run) (string, error) {
	m.note("reply")
	m.mu.Lock()
	m.replyRuns = append(m.replyRuns, run)
	m.mu.Unlock()
	return "pong", nil
}

// TestWaitedSendRecordsItsFlowFirst: a sessions_send that waits hands
// its agent-to-agent flow to the messenger with the message (recorded with
// the message's run, in its commit where the store can), so that no write
// sits between the target's reply and the tool's result nor beside the
// target's run, and reads the reply of the run its wait returned (whose
// transcript it names), not the session's. The flow, recorded before the
// reply is known, takes its round one itself, as a fire-and-forget
// message's flow does.
func TestWaitedSendRecordsItsFlowFirst(t *testing.T) {
	m := &orderMessenger{}
	e := newEnv(t, `{tools: {sessions: {visibility: "all"}}}`, func(d *Deps) { d.Messenger = m })
	e.keys("agent:main:target", "agent:main:main")
	caller := tools.Caller{SessionKey: "agent:main:main", AgentID: "main"}
	d := e.mustCall(caller, SendToolName, map[string]any{"sessionKey": "agent:main:target", "message": "ping", "timeoutSeconds": 5})
	if d["status"] != "ok" || d["reply"] != "pong" {
		t.Fatalf("sessions_send = %v", d)
	}
	if want := []string{"send", "wait", "reply"}; !slices.Equal(m.calls, want) {
		t.Errorf("calls %v, want %v", m.calls, want)
	}
	if len(m.flows) != 1 || m.flows[0].WaitRunID != d["runId"] || m.flows[0].RoundOneReply != "" || m.flows[0].TargetKey != "agent:main:target" {
		t.Errorf("flow %+v", m.flows)
	}
	if len(m.replyRuns) != 1 || m.replyRuns[0].SessionID != "sid-target" || m.replyRuns[0].RunID != d["runId"] {
		t.Errorf("reply read from %+v, want the waited run", m.replyRuns)
	}

	// Fire-and-forget: recorded, never waited for.
	m.calls, m.flows = nil, nil
	d = e.mustCall(caller, SendToolName, map[string]any{"sessionKey": "agent:main:target", "message": "ping", "timeoutSeconds": 0})
	if d["status"] != "accepted" || !slices.Equal(m.calls, []string{"send"}) || len(m.flows) != 1 || m.flows[0].WaitRunID != d["runId"] {
		t.Errorf("fire-and-forget = %v, calls %v, flows %+v", d, m.calls, m.flows)
	}
}
