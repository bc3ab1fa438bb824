package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// waitingSend is a message that makes the model sessions_send inner to
// target and wait up to 20 s for the reply, then answer "done".
func waitingSend(target, inner string) string {
	args, _ := json.Marshal(map[string]any{"sessionKey": target, "message": inner, "timeoutSeconds": 20})
	return "/tool sessions_send " + string(args) + "\n/then done"
}

// scrape returns the gateway's /metrics text.
func scrape(t *testing.T, g *gateway) string {
	t.Helper()
	req, _ := http.NewRequest("GET", "http"+strings.TrimPrefix(g.url, "ws")+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// lastToolResult returns the details of the last result of tool in msgs.
func lastToolResult(msgs []map[string]any, tool string) map[string]any {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i]["role"] == "toolResult" && msgs[i]["toolName"] == tool {
			d, _ := msgs[i]["details"].(map[string]any)
			return d
		}
	}
	return nil
}

// TestWaitCycleFailsFast: a sessions_send that waits on a session already
// waiting (directly, or through a third) on the sender fails at once with
// a deadlock error the model can read, instead of both waits timing out;
// the first wait then gets its reply, and the refusal is counted.
func TestWaitCycleFailsFast(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cycle []string // cycle[0] starts; the last one's wait closes the cycle
	}{
		{"two sessions", []string{"agent:main:a", "agent:main:b"}},
		{"three sessions", []string{"agent:main:a", "agent:main:b", "agent:main:c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startWith(t, "", nil, "", `tools: { sessions: { visibility: "all" } }, session: { agentToAgent: { maxPingPongTurns: 0 } },`)
			c := g.dial(t)
			// Innermost first: the last session sends back to the first.
			msg := waitingSend(tc.cycle[0], "are we stuck?")
			for i := len(tc.cycle) - 1; i >= 1; i-- {
				msg = waitingSend(tc.cycle[i], msg)
			}
			t0 := time.Now()
			call(t, c, "chat.send", map[string]any{"sessionKey": tc.cycle[0], "message": msg, "idempotencyKey": "start"})
			if w := call(t, c, "agent.wait", map[string]any{"runId": "start", "timeoutMs": 30000}); w["status"] != "ok" {
				t.Fatalf("first run = %v", w)
			}
			if d := time.Since(t0); d > 10*time.Second {
				t.Errorf("the cycle took %v: it waited for a timeout instead of failing fast", d)
			}
			last := tc.cycle[len(tc.cycle)-1]
			refused := lastToolResult(history(t, c, last), "sessions_send")
			if refused["status"] != "error" || !strings.HasPrefix(refused["error"].(string), "Deadlock: "+tc.cycle[0]+" is already waiting for this session") {
				t.Fatalf("%s's wait = %v", last, refused)
			}
			if first := lastToolResult(history(t, c, tc.cycle[0]), "sessions_send"); first["status"] != "ok" || first["reply"] != "done" {
				t.Errorf("%s's wait = %v", tc.cycle[0], first)
			}
			if m := scrape(t, g); !strings.Contains(m, `switchboard_guardrail_refusals_total{kind="deadlock"} 1`) {
				t.Errorf("deadlock refusal not counted:\n%s", m)
			}
		})
	}
}

// TestChainInProvenance: a message another session sent carries its chain
// of causes in its provenance: the chain is named after the run that
// started it, and each hop counts.
func TestChainInProvenance(t *testing.T) {
	g := startWith(t, "", nil, "", `tools: { sessions: { visibility: "all" } }, session: { agentToAgent: { maxPingPongTurns: 0 } },`)
	c := g.dial(t)
	call(t, c, "chat.send", map[string]any{"sessionKey": "agent:main:a", "idempotencyKey": "root-run",
		"message": waitingSend("agent:main:b", waitingSend("agent:main:c", "deep"))})
	if w := call(t, c, "agent.wait", map[string]any{"runId": "root-run", "timeoutMs": 30000}); w["status"] != "ok" {
		t.Fatalf("root run = %v", w)
	}
	for key, hops := range map[string]float64{"agent:main:b": 1, "agent:main:c": 2} {
		var prov map[string]any
		for _, m := range history(t, c, key) {
			if p, ok := m["provenance"].(map[string]any); ok && m["role"] == "user" && p["sourceTool"] == "sessions_send" {
				prov = p
				break
			}
		}
		if prov == nil || prov["chainId"] != "root-run" || prov["chainHops"] != hops {
			t.Errorf("%s's message provenance = %v, want chain root-run hop %v", key, prov, hops)
		}
	}
}
