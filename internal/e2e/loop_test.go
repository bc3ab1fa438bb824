package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/relay"
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

	// Follow the ring run by run: each forward's tool result names the run
	// it started in the next session, until one is refused. The sixth
	// forward (c → a, a's third visit) is refused in c.
	run, key := "ring", "agent:main:a"
	var refused string
	var announces []string
	for hop := 0; refused == ""; hop++ {
		if hop == len(ring) {
			logHistories(t, c, "agent:main:a", "agent:main:b", "agent:main:c")
			t.Fatalf("the ring ran %d forwards without a refusal", hop)
		}
		if w := call(t, c, "agent.wait", map[string]any{"runId": run, "timeoutMs": 60000}); w["status"] != "ok" {
			t.Fatalf("forward %d: run %s in %s = %v", hop, run, key, w)
		}
		res := sendResultOf(t, c, key, run)
		switch res["status"] {
		case "accepted":
			// The flow of an accepted forward ends with an announce step in
			// its target once the target's run answered.
			next, _ := res["runId"].(string)
			announces = append(announces, relay.StepRunID(next, "announce"))
			run, key = next, res["sessionKey"].(string)
		default:
			refused, _ = res["error"].(string)
			if refused == "" {
				refused = fmt.Sprint(res)
			}
		}
	}
	if key != "agent:main:c" || !strings.Contains(refused, "has already reached agent:main:a 2 times") {
		logHistories(t, c, "agent:main:a", "agent:main:b", "agent:main:c")
		t.Fatalf("the ring was not stopped at a's third visit: refused in %s: %s", key, refused)
	}
	if m := scrape(t, g); !strings.Contains(m, `switchboard_guardrail_refusals_total{kind="loop"} 1`) {
		t.Errorf("the loop refusal is not counted on /metrics")
	}
	// Every step of the ring has ended once the flows' announce steps
	// have: a was reached twice by the ring (the first message and one
	// forward), b twice (the announce steps are other turns).
	for _, id := range announces {
		if w := call(t, c, "agent.wait", map[string]any{"runId": id, "timeoutMs": 60000}); w["status"] != "ok" {
			t.Errorf("announce step %s = %v", id, w)
		}
	}
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

// sendResultOf returns the details of the sessions_send result that run
// runID got in session key.
func sendResultOf(t *testing.T, c *client.Client, key, runID string) map[string]any {
	t.Helper()
	for _, m := range history(t, c, key) {
		meta, _ := m["__openclaw"].(map[string]any)
		if m["role"] == "toolResult" && m["toolName"] == "sessions_send" && meta["runId"] == runID {
			d, _ := m["details"].(map[string]any)
			return d
		}
	}
	logHistories(t, c, key)
	t.Fatalf("run %s in %s has no sessions_send result", runID, key)
	return nil
}

// logHistories logs the messages of sessions keys.
func logHistories(t *testing.T, c *client.Client, keys ...string) {
	t.Helper()
	for _, k := range keys {
		for _, m := range history(t, c, k) {
			b, _ := json.Marshal(m)
			t.Logf("%s: %.400s", k, b)
		}
	}
}
