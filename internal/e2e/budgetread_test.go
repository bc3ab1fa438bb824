package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// requestsContaining counts the model requests (of any session) whose
// messages contain s.
func requestsContaining(llm *fakellm.Server, s string) int {
	n := 0
	for _, r := range llm.Requests() {
		if r.Request != nil && strings.Contains(requestText(r.Request), s) {
			n++
		}
	}
	return n
}

// TestBudgetTextReachesTheModel: the model reads why a budget stops its
// work. A burst of 20 spawns in a tree limited to 5 runs is refused at
// spawn beyond what the tree can still run (sub-agents accepted but not
// started count), so the spawning turn is not stopped and the model gets
// the budget text as the tool results of the refused calls; and a child stopped by its own budget is announced to its
// requester as stopped by the budget, with the figures.
func TestBudgetTextReachesTheModel(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := startWith(t, "", llm, `{ id: "main", default: true, budget: { maxRuns: 5 } }`, "")
	c := g.dial(t)
	var msg strings.Builder
	for i := range 20 {
		b, _ := json.Marshal(map[string]any{"task": fmt.Sprintf("child %d\n/reply result %d", i, i)})
		fmt.Fprintf(&msg, "/tool sessions_spawn %s\n", b)
	}
	msg.WriteString("/then spawned\n")
	w := runTurn(t, c, "agent:main:tree", "tree-1", msg.String())
	accepted, refused := 0, 0
	for _, m := range history(t, c, "agent:main:tree") {
		if m["role"] != "toolResult" || m["toolName"] != "sessions_spawn" {
			continue
		}
		d, _ := m["details"].(map[string]any)
		e, _ := d["error"].(string)
		switch {
		case d["status"] == "accepted":
			accepted++
		case strings.Contains(e, "maxRuns 5 reached"):
			refused++
		}
	}
	if w["status"] != "ok" {
		t.Errorf("the spawning turn = %v (%d accepted, %d refused)", w, accepted, refused)
		for _, s := range texts(history(t, c, "agent:main:tree")) {
			t.Logf("%.200s", s)
		}
	}
	// The spawning run is one of the five; announce runs queued for it
	// may take more of them.
	if accepted < 1 || accepted > 4 || accepted+refused != 20 {
		t.Errorf("spawns: %d accepted, %d refused by maxRuns; want 1-4 accepted, the rest refused", accepted, refused)
	}
	if requestsContaining(llm, "maxRuns 5 reached") == 0 {
		t.Error("no model request carried the budget refusal")
	}

	// A child whose own budget stops it before its second model call.
	small, _ := json.Marshal(map[string]any{"task": "/usage 30 20\n/tool agents_list {}\n/then never reached", "budget": map[string]any{"maxTokens": 10}})
	d := toolResult(t, c, "agent:main:req", "req-1", "sessions_spawn", json.RawMessage(small))
	if d["status"] != "accepted" {
		t.Fatalf("spawn = %v", d)
	}
	child := d["childSessionKey"].(string)
	want := regexp.MustCompile(`status: stopped by the budget: maxTokens 10 reached \(\d+ tokens used\) for the session tree of ` + regexp.QuoteMeta(child))
	defer func() {
		if t.Failed() {
			for _, s := range texts(history(t, c, "agent:main:req")) {
				t.Logf("%.600s", s)
			}
		}
	}()
	eventually(t, "the budget stop announced to the requester's model", func() bool {
		for _, r := range llm.Requests() {
			if r.Request != nil && want.MatchString(requestText(r.Request)) {
				return true
			}
		}
		return false
	})
}

// TestSendBudgetRefusalReachesTheModel: a sessions_send to a session tree
// that has no run left is refused as the tool result the model reads,
// with the figures, instead of queueing a run the budget would stop.
func TestSendBudgetRefusalReachesTheModel(t *testing.T) {
	g := startWith(t, "", nil, `{ id: "main", default: true, budget: { maxRuns: 1 } }`,
		`tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true } },`)
	c := g.dial(t)
	// The target's tree spends its one run.
	if w := runTurn(t, c, "agent:main:other", "other-1", "hello"); w["status"] != "ok" {
		t.Fatalf("the target's own turn = %v", w)
	}
	d := toolResult(t, c, "agent:main:main", "send-1", "sessions_send",
		map[string]any{"sessionKey": "agent:main:other", "message": "one more", "timeoutSeconds": 0})
	e, _ := d["error"].(string)
	if d["status"] != "error" || !strings.Contains(e, "maxRuns 1 reached") || !strings.Contains(e, "agent:main:other") {
		t.Fatalf("sessions_send = %v", d)
	}
	if n := len(history(t, c, "agent:main:other")); n != 2 {
		t.Fatalf("the target got the message anyway: %d messages", n)
	}
}
