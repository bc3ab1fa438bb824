package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestAgentRingStops: three sessions forwarding one message round a ring
// (a → b → c → a → …), in the default queue mode, are stopped by loop
// protection when the chain reaches a session for the third time; the
// refusal is a tool result the model reads. A delegation below the limits
// goes through.
func TestAgentRingStops(t *testing.T) {
	g := startWith(t, "", nil, "", `tools: { sessions: { visibility: "all" }, agentToAgent: { maxChainHops: 8, maxChainVisits: 2 } },
  session: { agentToAgent: { maxPingPongTurns: 0 } },`)
	// The default queue mode (steer): a forward reaching a session during
	// its announce step waits for the next turn instead of joining the
	// step (whose ANNOUNCE_SKIP would swallow it).
	c := g.dial(t)
	// The message a sends carries, nested, every later forward.
	ring := []string{"agent:main:b", "agent:main:c", "agent:main:a", "agent:main:b", "agent:main:c", "agent:main:a", "agent:main:b"}
	msg := "the end of the ring"
	for i := len(ring) - 1; i >= 0; i-- {
		b, _ := json.Marshal(map[string]any{"sessionKey": ring[i], "message": msg, "timeoutSeconds": 0})
		msg = "/tool sessions_send " + string(b)
	}
	call(t, c, "chat.send", map[string]any{"sessionKey": "agent:main:a", "message": msg, "idempotencyKey": "ring"})

	// The sixth forward (c → a, a's third visit) is refused in c.
	deadline := time.Now().Add(30 * time.Second)
	var refused string
	for refused == "" && time.Now().Before(deadline) {
		for _, m := range history(t, c, "agent:main:c") {
			if m["role"] != "toolResult" {
				continue
			}
			if b, _ := json.Marshal(m["content"]); strings.Contains(string(b), "Loop protection") {
				refused = string(b)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(refused, "has already reached agent:main:a 2 times") {
		for _, k := range []string{"agent:main:a", "agent:main:b", "agent:main:c"} {
			for _, m := range history(t, c, k) {
				b, _ := json.Marshal(m)
				t.Logf("%s: %.400s", k, b)
			}
		}
		t.Fatalf("the ring was not stopped at a's third visit; c's tool results: %s", refused)
	}
	if m := scrape(t, g); !strings.Contains(m, `switchboard_guardrail_refusals_total{kind="loop"} 1`) {
		t.Errorf("the loop refusal is not counted on /metrics")
	}
	// a was reached twice by the ring: the first message and one forward;
	// b twice (the announce steps of the flows are other turns).
	time.Sleep(300 * time.Millisecond)
	count := func(key string) int {
		n := 0
		for _, m := range history(t, c, key) {
			if b, _ := json.Marshal(m["content"]); m["role"] == "user" && strings.Contains(string(b), "/tool sessions_send") {
				n++
			}
		}
		return n
	}
	if a, b := count("agent:main:a"), count("agent:main:b"); a != 2 || b != 2 {
		t.Errorf("user turns: a %d, b %d; want 2 and 2", a, b)
	}

	// A chain under the limits: a delegates to d, which delegates to e.
	d := toolResult(t, c, "agent:main:x", "deleg", "sessions_send", map[string]any{"sessionKey": "agent:main:d", "timeoutSeconds": 20,
		"message": `/tool sessions_send {"sessionKey":"agent:main:e","message":"deep work","timeoutSeconds":10}` + "\n/then delegated"})
	if d["status"] != "ok" {
		t.Errorf("delegation under the limit = %v", d)
	}
}
