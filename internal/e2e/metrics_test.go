package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestMetrics: /metrics serves the Prometheus text format behind the
// gateway token, with the runs, tokens, cost and tool calls of real turns.
func TestMetrics(t *testing.T) {
	g := startModel(t, "", nil, `{ id: "fake-1", cost: { input: 3, output: 15 } }`, "", "")
	c := g.dial(t)
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "/usage 1000 2000\npriced", "idempotencyKey": "m1"})
	toolResult(t, c, "agent:main:other", "m2", "agents_list", map[string]any{})
	if w := call(t, c, "agent.wait", map[string]any{"runId": "m1", "timeoutMs": 20000}); w["status"] != "ok" {
		t.Fatalf("run = %v", w)
	}
	url := "http" + strings.TrimPrefix(g.url, "ws") + "/metrics"
	get := func(auth string) (int, string) {
		req, _ := http.NewRequest("GET", url, nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, _ := get(""); status != http.StatusUnauthorized {
		t.Errorf("without the token: %d", status)
	}
	if status, _ := get("wrong"); status != http.StatusUnauthorized {
		t.Errorf("with a wrong token: %d", status)
	}
	status, body := get(token)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	for _, want := range []string{
		`switchboard_runs_total{status="ok"} 2`,
		// m1 reported 1000 + 2000 tokens ($0.033); the tool turn a few more.
		`switchboard_tokens_total{agent="main",kind="input",model="fake/fake-1"} 10`,
		`switchboard_tokens_total{agent="main",kind="output",model="fake/fake-1"} 20`,
		`switchboard_cost_total{agent="main",model="fake/fake-1"} 0.033`,
		`switchboard_tool_calls_total{outcome="ok",tool="agents_list"} 1`,
		`switchboard_run_duration_seconds_count{status="ok"} 2`,
		`switchboard_model_call_duration_seconds_count{model="fake/fake-1"}`,
		"switchboard_connections 1",
		`switchboard_outbox_items{status="pending"} 0`,
		"switchboard_lanes_busy 0",
		`switchboard_store_operation_seconds_count{op="open_run"} 2`, // queued and started in one transaction (idle lanes)
		`switchboard_store_operation_seconds_count{op="finish_run"} 2`,
		`switchboard_guardrail_refusals_total{kind="deadlock"} 0`,
		"go_goroutines ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}
