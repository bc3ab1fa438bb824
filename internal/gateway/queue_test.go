package gateway

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// waitStreaming waits until runID's model is streaming.
func (c *client) waitStreaming(t *testing.T, runID string) {
	t.Helper()
	for {
		f := c.expectEvent(wire.EventAgent)
		if a := decodeAs[agentEv](t, f); a.RunID == runID && a.Stream == "assistant" {
			return
		}
	}
}

func pendingStates(p *wire.PendingInputs) []string {
	var out []string
	if p == nil {
		return nil
	}
	for _, it := range p.Items {
		out = append(out, it.RunID+":"+it.State+":"+it.Message)
	}
	return out
}

func TestPendingInputsAndSessionsAbortClearQueued(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	watcher := e.operator()
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "/reply partial\n/stall", "idempotencyKey": "stall-1"}, nil)
	c.waitStreaming(t, "stall-1")
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "first", "idempotencyKey": "q1", "queueMode": "followup"}, nil)
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "second", "idempotencyKey": "q2", "queueMode": "collect"}, nil)

	// A client watching the session sees each input as it is accepted:
	// a lifecycle "queued" event (seq 0) with its place and mode.
	var queued []string
	for len(queued) < 2 {
		a := decodeAs[agentEv](t, watcher.expectEvent(wire.EventAgent))
		if a.Stream == "lifecycle" && a.Data["phase"] == "queued" {
			if a.Seq != 0 || a.SessionKey != "agent:main:main" {
				t.Errorf("queued event = %+v", a)
			}
			queued = append(queued, fmt.Sprintf("%s:%v:%v:%v", a.RunID, a.Data["position"], a.Data["queueMode"], a.Data["message"]))
		}
	}
	// Two runs' events are not ordered with each other (each run's stream
	// is held until its chat.send answer is written): compare as a set.
	slices.Sort(queued)
	if diff := cmp.Diff([]string{"q1:1:followup:first", "q2:2:collect:second"}, queued); diff != "" {
		t.Errorf("queued events (-want +got):\n%s", diff)
	}

	// A second client sees the accepted input while it waits.
	other := e.operator()
	var hist wire.ChatHistoryResult
	other.ok(wire.MethodChatHistory, map[string]any{"sessionKey": "main"}, &hist)
	if diff := cmp.Diff([]string{"q1:queued:first", "q2:queued:second"}, pendingStates(hist.PendingInputs)); diff != "" {
		t.Errorf("pendingInputs (-want +got):\n%s", diff)
	}
	if hist.PendingInputs.Total != 2 || hist.PendingInputs.Items[0].AcceptedAt == 0 {
		t.Errorf("pendingInputs = %+v", hist.PendingInputs)
	}
	if len(hist.Messages) != 1 {
		t.Errorf("messages = %d, want only the running turn's input", len(hist.Messages))
	}

	var res wire.ChatAbortResult
	c.ok(wire.MethodSessionsAbort, map[string]any{"key": "main", "clearQueued": true}, &res)
	if diff := cmp.Diff(wire.ChatAbortResult{OK: true, Aborted: true, RunIDs: []string{"q1", "q2", "stall-1"}}, res); diff != "" {
		t.Errorf("sessions.abort (-want +got):\n%s", diff)
	}
	c.runEvents("stall-1")
	other.ok(wire.MethodChatHistory, map[string]any{"sessionKey": "main"}, &hist)
	if diff := cmp.Diff([]string{"q1:cancelled:first", "q2:cancelled:second"}, pendingStates(hist.PendingInputs)); diff != "" {
		t.Errorf("pendingInputs after abort (-want +got):\n%s", diff)
	}
	if err := c.fail(wire.MethodSessionsAbort, map[string]any{}); err.Code != "INVALID_REQUEST" {
		t.Errorf("sessions.abort without key: %+v", err)
	}
}

func TestInterruptThroughChatSend(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "/reply partial\n/stall", "idempotencyKey": "stall-1"}, nil)
	c.waitStreaming(t, "stall-1")
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "newest", "idempotencyKey": "i1", "queueMode": "interrupt"}, nil)
	var wait wire.AgentWaitResult
	c.ok(wire.MethodAgentWait, map[string]any{"runId": "stall-1"}, &wait)
	if wait.Status != "error" || wait.Error != "aborted" {
		t.Errorf("interrupted run: %+v", wait)
	}
	c.ok(wire.MethodAgentWait, map[string]any{"runId": "i1"}, &wait)
	if wait.Status != "ok" {
		t.Errorf("interrupting run: %+v", wait)
	}
}

func TestQueueCommandSetsSessionMode(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "hi", "idempotencyKey": "h1"}, nil)
	c.runEvents("h1")
	var sent wire.ChatSendResult
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "/queue coalesce cap:3", "idempotencyKey": "cmd1"}, &sent)
	if sent.Status != "ok" {
		t.Errorf("/queue ack = %+v", sent)
	}
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "/queue sideways", "idempotencyKey": "cmd2"}, nil)
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "/reply partial\n/stall", "idempotencyKey": "stall-1"}, nil)
	c.waitStreaming(t, "stall-1")
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "later", "idempotencyKey": "q1"}, nil)
	var hist wire.ChatHistoryResult
	c.ok(wire.MethodChatHistory, map[string]any{"sessionKey": "main"}, &hist)
	if diff := cmp.Diff([]string{"q1:queued:later"}, pendingStates(hist.PendingInputs)); diff != "" {
		t.Errorf("pendingInputs (-want +got):\n%s", diff)
	}
	var texts []string
	for _, m := range hist.Messages {
		texts = append(texts, messageText(t, m))
	}
	for _, want := range []string{"Queue mode set to collect.", `Unrecognized queue mode "sideways". Valid modes: steer, followup, collect, interrupt.`} {
		if !slices.Contains(texts, want) {
			t.Errorf("history lacks reply %q: %q", want, texts)
		}
	}
	c.ok(wire.MethodChatAbort, map[string]any{"sessionKey": "main"}, nil)
	c.runEvents("stall-1")
}
