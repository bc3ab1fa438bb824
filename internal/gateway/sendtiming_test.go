package gateway

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// TestChatSendTiming: an operator UI's chat.send is followed by
// chat.send_timing events to that connection, after the send's answer and
// in the reference's phase order; a CLI's is not.
func TestChatSendTiming(t *testing.T) {
	e := newEnv(t, envOptions{})
	ui := e.dial()
	ui.expectEvent(wire.EventConnectChallenge)
	params := connectParams(testToken, wire.ScopeRead, wire.ScopeWrite)
	params["client"] = map[string]any{"id": "openclaw-control-ui", "version": "test", "platform": "linux", "mode": "webchat"}
	if res := ui.call(wire.MethodConnect, params); !res.OK {
		t.Fatalf("connect: %+v", res.Error)
	}
	cli := e.operator()

	ui.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "hi", "idempotencyKey": "st-1"}, nil)
	var phases []string
	for len(phases) < 4 {
		f := ui.nextEvent(10 * time.Second)
		if f.Event != wire.EventChatSendTiming {
			continue
		}
		var p struct {
			Phase, RunID, SessionKey string
			ReceivedToPhaseMs        *float64
			AckToPhaseMs             *float64
		}
		if err := json.Unmarshal(f.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if p.RunID != "st-1" || p.SessionKey != "agent:main:main" || p.ReceivedToPhaseMs == nil || p.AckToPhaseMs == nil || *p.ReceivedToPhaseMs < 0 {
			t.Errorf("chat.send_timing = %s", f.Payload)
		}
		phases = append(phases, p.Phase)
	}
	want := []string{"dispatch-started", "agent-run-started", "first-assistant-event", "dispatch-completed"}
	if !slices.Equal(phases, want) {
		t.Errorf("phases = %q, want %q", phases, want)
	}

	cli.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "again", "idempotencyKey": "st-2"}, nil)
	for {
		f := cli.nextEvent(10 * time.Second)
		if f.Event == wire.EventChatSendTiming {
			t.Fatalf("a CLI connection got chat.send_timing %s", f.Payload)
		}
		var p struct{ RunID, State string }
		json.Unmarshal(f.Payload, &p)
		if f.Event == wire.EventChat && p.RunID == "st-2" && p.State == "final" {
			break
		}
	}
}
