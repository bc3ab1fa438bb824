package e2e

import (
	"testing"
	"time"
)

// TestSendToBusyTargetReportsQueue: sessions_send to a session whose lane
// is busy says the message is queued and where it waits; once the busy
// run ends, the message runs and the sender's flow completes.
func TestSendToBusyTargetReportsQueue(t *testing.T) {
	g := startWith(t, "", nil, "", `tools: { sessions: { visibility: "all" } },`)
	c := g.dial(t)
	// followup: the default steer would fold the message into the
	// running turn instead of queueing it.
	call(t, c, "chat.send", map[string]any{"sessionKey": "agent:main:busy", "message": "/queue followup", "idempotencyKey": "q"})
	// A first run shows how long the session's runs take.
	call(t, c, "chat.send", map[string]any{"sessionKey": "agent:main:busy", "message": "/sleep 300ms\nwarm up", "idempotencyKey": "warm"})
	call(t, c, "agent.wait", map[string]any{"runId": "warm", "timeoutMs": 20000})
	call(t, c, "chat.send", map[string]any{"sessionKey": "agent:main:busy", "message": "/sleep 3s\nslow", "idempotencyKey": "slow"})
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := call(t, c, "agent.wait", map[string]any{"runId": "slow", "timeoutMs": 1})
		if r["startedAt"] != nil && r["startedAt"] != 0.0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	d := toolResult(t, c, "agent:main:main", "send-busy", "sessions_send",
		map[string]any{"sessionKey": "agent:main:busy", "message": "are you there?", "timeoutSeconds": 0})
	delivery, _ := d["delivery"].(map[string]any)
	if d["status"] != "accepted" || delivery["status"] != "queued" || delivery["position"] != 1.0 {
		t.Fatalf("sessions_send to a busy target = %v", d)
	}
	// Expected wait: one run ahead, and this session's runs take ~300 ms.
	if ms, _ := delivery["expectedWaitMs"].(float64); ms < 250 || ms > 5000 {
		t.Errorf("expectedWaitMs = %v, want about 300", delivery["expectedWaitMs"])
	}
	runID, _ := d["runId"].(string)
	if w := call(t, c, "agent.wait", map[string]any{"runId": runID, "timeoutMs": 30000}); w["status"] != "ok" {
		t.Errorf("the queued message's run = %v", w)
	}
}
