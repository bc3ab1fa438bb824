package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/client"
)

// approvalsConfig is tools.exec with exec approvals on for allowlist misses.
func approvalsConfig(extra string) string {
	return `tools: { exec: { security: "allowlist", ask: "on-miss", timeoutSeconds: 30, ` + extra + ` } },`
}

// dialApprover connects an operator client that declares the
// exec-approvals capability.
func (g *gateway) dialApprover(t *testing.T) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{URL: g.url, Token: token, ClientID: "test", Mode: "test",
		Scopes: []string{"operator.read", "operator.approvals"}, Caps: []string{"exec-approvals"}})
	if err != nil {
		t.Fatalf("dial approver: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitEvent returns the payload of c's next event named name.
func waitEvent(t *testing.T, c *client.Client, name string) map[string]any {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-c.Events():
			if ev.Event != name {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal(ev.Payload, &m); err != nil {
				t.Fatal(err)
			}
			return m
		case <-deadline:
			t.Fatalf("no %s event", name)
			return nil
		}
	}
}

// lastToolText returns the text of the session's last tool result of tool.
func lastToolText(t *testing.T, c *client.Client, key, tool string) string {
	t.Helper()
	msgs := history(t, c, key)
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m["role"] == "toolResult" && m["toolName"] == tool {
			var blocks []struct{ Text string }
			b, _ := json.Marshal(m["content"])
			_ = json.Unmarshal(b, &blocks)
			var s strings.Builder
			for _, bl := range blocks {
				s.WriteString(bl.Text)
			}
			return s.String()
		}
	}
	t.Fatalf("no %s result in %s", tool, key)
	return ""
}

func waitRun(t *testing.T, c *client.Client, runID string) {
	t.Helper()
	if w := call(t, c, "agent.wait", map[string]any{"runId": runID, "timeoutMs": 30000}); w["status"] != "ok" {
		t.Fatalf("run %s = %v", runID, w)
	}
}

// TestExecApprovalAllowAndDeny: a command off the allowlist waits for an
// operator; the requested event reaches the approval client (not the
// plain one), allow-once runs it, deny does not and the model reads the
// denial, allow-always adds the binary to the allowlist.
func TestExecApprovalAllowAndDeny(t *testing.T) {
	g := startWith(t, "", nil, "", approvalsConfig(""))
	sender := g.dial(t)
	approver := g.dialApprover(t)
	key := "agent:main:main"
	marker := filepath.Join(t.TempDir(), "denied-marker")

	// allow-once
	call(t, sender, "chat.send", map[string]any{"sessionKey": key, "message": toolTurn("exec", map[string]any{"command": "echo approved-ran"}), "idempotencyKey": "a1"})
	req := waitEvent(t, approver, "exec.approval.requested")
	id, _ := req["id"].(string)
	r, _ := req["request"].(map[string]any)
	if id == "" || r["command"] != "echo approved-ran" || r["host"] != "gateway" || r["sessionKey"] != key ||
		req["expiresAtMs"].(float64) <= req["createdAtMs"].(float64) {
		t.Fatalf("requested = %v", req)
	}
	if ds, _ := r["allowedDecisions"].([]any); len(ds) != 3 {
		t.Errorf("allowedDecisions = %v", r["allowedDecisions"])
	}
	var list []map[string]any
	ctxL, cancelL := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelL()
	if err := sender.Call(ctxL, "exec.approval.list", map[string]any{}, &list); err != nil || len(list) != 1 || list[0]["id"] != id || list[0]["approvalKind"] != "exec" {
		t.Errorf("exec.approval.list = %v, %v", list, err)
	}
	var got map[string]any
	if err := sender.Call(ctxL, "exec.approval.get", map[string]any{"id": id}, &got); err != nil || got["commandText"] != "echo approved-ran" {
		t.Errorf("exec.approval.get = %v, %v", got, err)
	}
	waited := make(chan map[string]any, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var out map[string]any
		_ = approver.Call(ctx, "exec.approval.waitDecision", map[string]any{"id": id}, &out)
		waited <- out
	}()
	time.Sleep(100 * time.Millisecond)
	call(t, approver, "exec.approval.resolve", map[string]any{"id": id, "decision": "allow-once"})
	res := waitEvent(t, approver, "exec.approval.resolved")
	if res["id"] != id || res["decision"] != "allow-once" {
		t.Errorf("resolved = %v", res)
	}
	if w := <-waited; w["decision"] != "allow-once" || w["id"] != id {
		t.Errorf("waitDecision = %v", w)
	}
	waitRun(t, sender, "a1")
	if got := lastToolText(t, sender, key, "exec"); !strings.Contains(got, "approved-ran") {
		t.Fatalf("allow-once result = %q", got)
	}
	for {
		select {
		case ev := <-sender.Events():
			if strings.HasPrefix(ev.Event, "exec.approval.") {
				t.Fatalf("a client without the approvals capability got %s", ev.Event)
			}
			continue
		default:
		}
		break
	}

	// deny
	cmd := "touch " + marker
	call(t, sender, "chat.send", map[string]any{"sessionKey": key, "message": toolTurn("exec", map[string]any{"command": cmd}), "idempotencyKey": "a2"})
	id, _ = waitEvent(t, approver, "exec.approval.requested")["id"].(string)
	call(t, approver, "exec.approval.resolve", map[string]any{"id": id, "decision": "deny"})
	waitRun(t, sender, "a2")
	if got, want := lastToolText(t, sender, key, "exec"), "Exec denied (gateway id="+id+", user-denied): "+cmd; got != want {
		t.Fatalf("deny result = %q, want %q", got, want)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a denied command ran")
	}
	// The model was given the denial: its next request carries it.
	if !strings.Contains(lastModelToolText(g), "user-denied") {
		t.Errorf("the model did not see the denial")
	}

	// allow-always: the binary joins the allowlist; the next call runs
	// without asking.
	call(t, sender, "chat.send", map[string]any{"sessionKey": key, "message": toolTurn("exec", map[string]any{"command": "printf always-1"}), "idempotencyKey": "a3"})
	id, _ = waitEvent(t, approver, "exec.approval.requested")["id"].(string)
	call(t, approver, "exec.approval.resolve", map[string]any{"id": id, "decision": "allow-always"})
	waitRun(t, sender, "a3")
	call(t, sender, "chat.send", map[string]any{"sessionKey": key, "message": toolTurn("exec", map[string]any{"command": "printf always-2"}), "idempotencyKey": "a4"})
	waitRun(t, sender, "a4")
	if got := lastToolText(t, sender, key, "exec"); got != "always-2" {
		t.Fatalf("allowlisted result = %q", got)
	}
	b, err := os.ReadFile(filepath.Join(g.dir, "exec-approvals.json"))
	if err != nil || !strings.Contains(string(b), `"pattern": "printf"`) {
		t.Errorf("approvals document = %s, %v", b, err)
	}
	doc := call(t, sender, "exec.approvals.get", map[string]any{})
	if file, _ := doc["file"].(map[string]any); doc["exists"] != true || len(doc["hash"].(string)) != 64 ||
		!strings.Contains(fmt.Sprint(file["agents"]), "pattern:printf") {
		t.Errorf("exec.approvals.get = %v", doc)
	}
	// A resolved id cannot be decided differently.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := approver.Call(ctx, "exec.approval.resolve", map[string]any{"id": id, "decision": "deny"}, nil); err == nil || !strings.Contains(err.Error(), "already resolved") {
		t.Errorf("second decision: %v", err)
	}
}

// lastModelToolText returns the last tool message the fake model was sent.
func lastModelToolText(g *gateway) string {
	reqs := g.llm.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		var body struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(reqs[i].Body, &body)
		for j := len(body.Messages) - 1; j >= 0; j-- {
			if body.Messages[j].Role == "tool" {
				b, _ := json.Marshal(body.Messages[j].Content)
				return string(b)
			}
		}
	}
	return ""
}

// TestExecApprovalExpiryFallsBack: an approval nobody answers expires and
// askFallback decides: deny refuses with approval-timeout, full runs it.
func TestExecApprovalExpiryFallsBack(t *testing.T) {
	for _, tc := range []struct{ fallback, want string }{
		{"deny", "approval-timeout): echo fell-back"},
		{"full", "fell-back"},
	} {
		t.Run(tc.fallback, func(t *testing.T) {
			g := startWith(t, "", nil, "", approvalsConfig(`approvalTimeoutSeconds: 1, askFallback: "`+tc.fallback+`"`))
			sender := g.dial(t)
			approver := g.dialApprover(t)
			call(t, sender, "chat.send", map[string]any{"sessionKey": "agent:main:main", "message": toolTurn("exec", map[string]any{"command": "echo fell-back"}), "idempotencyKey": "x1"})
			waitEvent(t, approver, "exec.approval.requested")
			waitRun(t, sender, "x1")
			got := lastToolText(t, sender, "agent:main:main", "exec")
			if tc.fallback == "deny" && (!strings.HasPrefix(got, "Exec denied (gateway id=") || !strings.HasSuffix(got, tc.want)) ||
				tc.fallback == "full" && strings.TrimSpace(got) != tc.want {
				t.Fatalf("result = %q, want …%q", got, tc.want)
			}
		})
	}
}

// TestExecApprovalHeadlessAndUnbindable: with no approval client
// connected the command is refused at once with the reference's text; a
// command an approval cannot bind is refused even with one.
func TestExecApprovalHeadlessAndUnbindable(t *testing.T) {
	g := startWith(t, "", nil, "", approvalsConfig(""))
	c := g.dial(t) // an admin client, but without the approvals capability
	start := time.Now()
	call(t, c, "chat.send", map[string]any{"sessionKey": "agent:main:main", "message": toolTurn("exec", map[string]any{"command": "echo hi"}), "idempotencyKey": "h1"})
	waitRun(t, c, "h1")
	if got := lastToolText(t, c, "agent:main:main", "exec"); !strings.HasPrefix(got, "exec denied: Headless runs cannot wait for interactive exec approval.") {
		t.Fatalf("headless result = %q", got)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("headless refusal took %v", d)
	}
	g.dialApprover(t)
	cmd := "echo $(id)"
	call(t, c, "chat.send", map[string]any{"sessionKey": "agent:main:main", "message": toolTurn("exec", map[string]any{"command": cmd}), "idempotencyKey": "h2"})
	waitRun(t, c, "h2")
	if got, want := lastToolText(t, c, "agent:main:main", "exec"), "Exec denied (SYSTEM_RUN_DENIED: approval cannot safely bind this command): "+cmd; got != want {
		t.Fatalf("unbindable result = %q", got)
	}
	if m := scrape(t, g); !strings.Contains(m, `switchboard_guardrail_refusals_total{kind="exec-approval"} 2`) {
		t.Errorf("/metrics does not count the two refusals")
	}
}

// TestExecApprovalSurvivesKill: a gateway killed with SIGKILL while an
// approval is pending reports it expired to the model after the restart;
// it is never silently lost.
func TestExecApprovalSurvivesKill(t *testing.T) {
	dir := t.TempDir()
	g := startWith(t, dir, nil, "", approvalsConfig(""))
	sender := g.dial(t)
	approver := g.dialApprover(t)
	cmd := "echo after-crash"
	call(t, sender, "chat.send", map[string]any{"sessionKey": "agent:main:main", "message": toolTurn("exec", map[string]any{"command": cmd}), "idempotencyKey": "k1"})
	id, _ := waitEvent(t, approver, "exec.approval.requested")["id"].(string)
	b, err := os.ReadFile(filepath.Join(dir, "exec-approvals-pending.json"))
	if err != nil || !strings.Contains(string(b), id) {
		t.Fatalf("pending journal = %s, %v", b, err)
	}
	g.kill()

	g2 := startWith(t, dir, g.llm, "", approvalsConfig(""))
	c := g2.dial(t)
	want := "Exec denied (gateway id=" + id + ", approval-expired: gateway restarted): " + cmd
	if got := lastToolText(t, c, "agent:main:main", "exec"); got != want {
		t.Fatalf("after restart: %q, want %q", got, want)
	}
	var l []any
	ctxL, cancelL := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelL()
	if err := c.Call(ctxL, "exec.approval.list", map[string]any{}, &l); err != nil || len(l) != 0 {
		t.Errorf("still pending after restart: %v %v", l, err)
	}
	// The next turn hands the model the expired result.
	call(t, c, "chat.send", map[string]any{"sessionKey": "agent:main:main", "message": "what happened?", "idempotencyKey": "k2"})
	waitRun(t, c, "k2")
	if !strings.Contains(lastModelToolText(g2), "approval-expired") {
		t.Errorf("the model was not told the approval expired")
	}
}

// TestExecApprovalAbortWhileWaiting: aborting a run that waits for an
// approval ends the wait; the approval is gone and the command never runs.
func TestExecApprovalAbortWhileWaiting(t *testing.T) {
	g := startWith(t, "", nil, "", approvalsConfig(""))
	sender := g.dial(t)
	approver := g.dialApprover(t)
	marker := filepath.Join(t.TempDir(), "aborted-marker")
	call(t, sender, "chat.send", map[string]any{"sessionKey": "agent:main:main", "message": toolTurn("exec", map[string]any{"command": "touch " + marker}), "idempotencyKey": "ab1"})
	id, _ := waitEvent(t, approver, "exec.approval.requested")["id"].(string)
	call(t, sender, "chat.abort", map[string]any{"sessionKey": "agent:main:main", "runId": "ab1"})
	if w := call(t, sender, "agent.wait", map[string]any{"runId": "ab1", "timeoutMs": 20000}); w["status"] == "ok" || w["status"] == "timeout" {
		t.Fatalf("aborted run = %v", w)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := approver.Call(ctx, "exec.approval.resolve", map[string]any{"id": id, "decision": "allow-once"}, nil); err == nil || !strings.Contains(err.Error(), "unknown or expired approval id") {
		t.Errorf("resolving an abandoned approval: %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command of an aborted run ran")
	}
}
