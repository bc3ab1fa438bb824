package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// listBudgets returns the sessions_list budget of each row that has one,
// by key.
func listBudgets(rows []any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, r := range rows {
		row, _ := r.(map[string]any)
		if b, ok := row["budget"].(map[string]any); ok {
			out[row["key"].(string)] = b
		}
	}
	return out
}

// TestBudgetEndsRunsOfASpentTree: a session tree's token budget
// (agents.list[].budget) is checked before each model call. The tree's
// own first turn fits; a child spawned with a smaller budget is stopped
// before its second model call and the failure is announced; a second
// child beyond maxConcurrentChildren is refused at spawn; once the tree
// has used its tokens, its next run ends with a budget error, and
// sessions_list shows the budget and why it is spent.
func TestBudgetEndsRunsOfASpentTree(t *testing.T) {
	g := startWith(t, "", nil, `{ id: "main", default: true, budget: { maxTokens: 5000, maxConcurrentChildren: 1 } }`,
		`tools: { sessions: { visibility: "all" } },`)
	c := g.dial(t)
	small, _ := json.Marshal(map[string]any{"task": "/usage 30 20\n/sleep 2s\n/tool agents_list {}\n/then never reached", "budget": map[string]any{"maxTokens": 10}})
	second, _ := json.Marshal(map[string]any{"task": "second child"})
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "idempotencyKey": "boss",
		"message": "/usage 100 50\n/tool sessions_spawn " + string(small) + "\n/tool sessions_spawn " + string(second) + "\n/then spawned"})
	if w := call(t, c, "agent.wait", map[string]any{"runId": "boss", "timeoutMs": 30000}); w["status"] != "ok" {
		t.Fatalf("first turn = %v", w)
	}
	var spawns []map[string]any
	for _, m := range history(t, c, "agent:main:main") {
		if m["role"] == "toolResult" && m["toolName"] == "sessions_spawn" {
			d, _ := m["details"].(map[string]any)
			spawns = append(spawns, d)
		}
	}
	if len(spawns) != 2 || spawns[0]["status"] != "accepted" {
		t.Fatalf("spawns = %v", spawns)
	}
	if e, _ := spawns[1]["error"].(string); spawns[1]["status"] != "error" || !strings.Contains(e, "maxConcurrentChildren 1 reached") {
		t.Errorf("second spawn = %v, want refused by maxConcurrentChildren", spawns[1])
	}
	child := spawns[0]["childSessionKey"].(string)
	w := call(t, c, "agent.wait", map[string]any{"runId": spawns[0]["runId"], "timeoutMs": 30000})
	if e, _ := w["error"].(string); w["status"] != "error" || !strings.HasPrefix(e, "budget exhausted: maxTokens 10 reached (") || !strings.HasSuffix(e, "for the session tree of "+child) {
		t.Fatalf("small child run = %v", w)
	}
	// Its stop is announced to the requester, as stopped by the budget.
	eventually(t, "the child's stop announced", func() bool {
		for _, s := range texts(history(t, c, "agent:main:main")) {
			if strings.Contains(s, "status: stopped by the budget: maxTokens 10 reached (") {
				return true
			}
		}
		return false
	})

	// The tree's own next run finds it spent once a turn uses the rest.
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "/usage 4000 1000\nbig", "idempotencyKey": "big"})
	call(t, c, "agent.wait", map[string]any{"runId": "big", "timeoutMs": 30000})
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "one more", "idempotencyKey": "over"})
	w = call(t, c, "agent.wait", map[string]any{"runId": "over", "timeoutMs": 30000})
	if e, _ := w["error"].(string); w["status"] != "error" || !strings.HasPrefix(e, "budget exhausted: maxTokens 5000 reached") || !strings.HasSuffix(e, "for the session tree of agent:main:main") {
		t.Fatalf("run of the spent tree = %v", w)
	}
	if w["stopReason"] != nil && w["stopReason"] != "budget" {
		t.Errorf("stopReason = %v", w["stopReason"])
	}

	// Two runs ended by the budget, and the refused spawn (counted as the
	// runs' ends are handled, which may follow the wait's answer).
	eventually(t, "three budget refusals counted", func() bool {
		return strings.Contains(scrape(t, g), `switchboard_guardrail_refusals_total{kind="budget"} 3`)
	})
	res := toolResult(t, c, "agent:main:viewer", "list", "sessions_list", map[string]any{})
	rows, _ := res["sessions"].([]any)
	budgets := listBudgets(rows)
	mainB := budgets["main"]
	if mainB == nil {
		mainB = budgets["agent:main:main"]
	}
	if mainB == nil {
		t.Fatalf("no budget on the main row: %v", budgets)
	}
	if ex, _ := mainB["exhausted"].(string); !strings.HasPrefix(ex, "maxTokens 5000 reached") {
		t.Errorf("main budget = %v", mainB)
	}
	if lim, _ := mainB["limits"].(map[string]any); lim["maxTokens"] != 5000.0 || lim["maxConcurrentChildren"] != 1.0 {
		t.Errorf("main limits = %v", mainB["limits"])
	}
	if cb := budgets[child]; cb == nil || cb["limits"].(map[string]any)["maxTokens"] != 10.0 {
		t.Errorf("child budget = %v", cb)
	}
	// The gateway's sessions.list (the web UI's list) shows it too.
	list := call(t, c, "sessions.list", map[string]any{"search": "agent:main:main"})
	found := false
	for _, r := range list["sessions"].([]any) {
		row := r.(map[string]any)
		if row["key"] != "agent:main:main" {
			continue
		}
		found = true
		b, _ := row["budget"].(map[string]any)
		if ex, _ := b["exhausted"].(string); !strings.HasPrefix(ex, "maxTokens 5000 reached") {
			t.Errorf("sessions.list budget of main = %v", row["budget"])
		}
	}
	if !found {
		t.Errorf("sessions.list has no agent:main:main row: %v", list)
	}
}
