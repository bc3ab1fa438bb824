package gateway

import (
	"testing"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// TestSessionsSendAndSteer: sessions.send sends into an existing session
// (refusing a missing one); sessions.steer is chat.send with queueMode
// interrupt, so it aborts the stalled run and answers the new message.
func TestSessionsSendAndSteer(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	if err := c.fail(wire.MethodSessionsSend, map[string]any{"key": "main", "message": "hi"}); err.Message != "No session found: main" {
		t.Fatalf("send to a missing session: %+v", err)
	}
	var ack wire.ChatSendResult
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "/reply partial\n/stall", "idempotencyKey": "stalled"}, &ack)
	var sent wire.ChatSendResult
	c.ok(wire.MethodSessionsSteer, map[string]any{"sessionKey": "main", "message": "change of plan", "idempotencyKey": "steer-1"}, &sent)
	var w map[string]any
	c.ok(wire.MethodAgentWait, map[string]any{"runId": "stalled", "timeoutMs": 10000}, &w)
	if w["status"] != "aborted" && w["status"] != "error" {
		t.Errorf("the interrupted run ended %v", w)
	}
	c.ok(wire.MethodAgentWait, map[string]any{"runId": "steer-1", "timeoutMs": 10000}, &w)
	if w["status"] != "ok" {
		t.Fatalf("steer-1 = %v", w)
	}

	c.ok(wire.MethodSessionsSend, map[string]any{"key": "main", "message": "one more"}, &sent)
	if sent.RunID == "" || sent.Status != "started" {
		t.Fatalf("sessions.send ack = %+v", sent)
	}
	c.ok(wire.MethodAgentWait, map[string]any{"runId": sent.RunID, "timeoutMs": 10000}, &w)
	if w["status"] != "ok" {
		t.Errorf("sessions.send run = %v", w)
	}
	var hist struct {
		Messages []struct {
			Role    string
			Content []struct{ Text string }
		}
	}
	c.ok(wire.MethodChatHistory, map[string]any{"sessionKey": "main"}, &hist)
	last := hist.Messages[len(hist.Messages)-1]
	if last.Role != "assistant" || len(last.Content) == 0 || last.Content[0].Text != "echo: one more" {
		t.Errorf("last message = %+v", last)
	}
}
