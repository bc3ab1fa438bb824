package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

func TestPrintApprovals(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	var b bytes.Buffer
	err := printApprovals(&b, []wire.ExecApproval{{
		ID: "a1", CreatedAtMs: 990_000, ExpiresAtMs: 1_090_000,
		Request: wire.ExecApprovalRequest{Command: "rm -rf\nbuild", SessionKey: "agent:main:main", AllowedDecisions: []string{"allow-once", "allow-always", "deny"}},
	}}, now)
	if err != nil {
		t.Fatal(err)
	}
	want := `ID  SESSION          COMMAND       EXPIRES IN  DECISIONS
a1  agent:main:main  rm -rf build  1m30s       allow-once|allow-always|deny
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	b.Reset()
	printApprovals(&b, nil, now)
	if b.String() != "No pending approvals.\n" {
		t.Errorf("empty = %q", b.String())
	}
}

// TestApprovalsCommands: a command waiting for approval shows in
// "approvals list" and "approvals resolve" lets it run.
func TestApprovalsCommands(t *testing.T) {
	g := startGateway(t, `{tools: {exec: {security: "allowlist", ask: "on-miss"}}}`)
	tok, _, err := config.LoadOrCreateGatewayToken(g.dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	approver, err := client.Dial(ctx, client.Options{URL: g.url, Token: tok, Caps: []string{wire.CapExecApprovals}})
	if err != nil {
		t.Fatal(err)
	}
	defer approver.Close()
	args, _ := json.Marshal(map[string]string{"command": "echo cli-approved"})
	if err := approver.Call(ctx, "chat.send", map[string]any{"sessionKey": "agent:main:main",
		"message": "/tool exec " + string(args) + "\n/then done", "idempotencyKey": "r1"}, nil); err != nil {
		t.Fatal(err)
	}
	var list wire.ExecApprovalListResult
	for deadline := time.Now().Add(10 * time.Second); len(list) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no pending approval")
		}
		if err := json.Unmarshal([]byte(g.mustRun("approvals", "list", "--json")), &list); err != nil {
			t.Fatal(err)
		}
	}
	id := list[0].ID
	if out := g.mustRun("approvals", "list"); !strings.Contains(out, id) || !strings.Contains(out, "echo cli-approved") {
		t.Errorf("approvals list:\n%s", out)
	}
	if r := g.run("approvals", "resolve", id, "maybe"); r.err == nil || !strings.Contains(r.errText(), "INVALID_REQUEST") {
		t.Errorf("bad decision: %v", r.err)
	}
	if out := g.mustRun("approvals", "resolve", id, "allow-once"); out != "Approval "+id+": allow-once.\n" {
		t.Errorf("resolve = %q", out)
	}
	var w map[string]any
	if err := approver.Call(ctx, "agent.wait", map[string]any{"runId": "r1", "timeoutMs": 20000}, &w); err != nil || w["status"] != "ok" {
		t.Fatalf("agent.wait = %v %v", w, err)
	}
	if out := g.mustRun("sessions", "history", "main"); !strings.Contains(out, "cli-approved") {
		t.Errorf("history lacks the command's output:\n%s", out)
	}
	if out := g.mustRun("approvals", "list"); out != "No pending approvals.\n" {
		t.Errorf("after resolve: %q", out)
	}
	if out := g.mustRun("approvals", "allowlist"); !strings.HasPrefix(out, "Policy: security=allowlist ask=on-miss askFallback=deny\n") ||
		!strings.HasSuffix(out, "No allowlist entries.\n") {
		t.Errorf("approvals allowlist:\n%s", out)
	}
}

func TestPrintApprovalEvent(t *testing.T) {
	var b bytes.Buffer
	req := json.RawMessage(`{"approvalKind":"exec","id":"a1","request":{"command":"rm -rf x","sessionKey":"agent:main:main","allowedDecisions":["allow-once","deny"]},"createdAtMs":1,"expiresAtMs":2}`)
	if err := printApprovalEvent(&b, wire.EventExecApprovalRequested, req, false); err != nil {
		t.Fatal(err)
	}
	if err := printApprovalEvent(&b, wire.EventExecApprovalResolved, json.RawMessage(`{"id":"a1","decision":"deny","ts":3,"request":{}}`), false); err != nil {
		t.Fatal(err)
	}
	if err := printApprovalEvent(&b, "tick", json.RawMessage(`{}`), false); err != nil {
		t.Fatal(err)
	}
	want := "requested a1  agent:main:main  rm -rf x  (allow-once|deny)\nresolved  a1  deny\n"
	if b.String() != want {
		t.Errorf("watch output = %q, want %q", b.String(), want)
	}
	b.Reset()
	if err := printApprovalEvent(&b, wire.EventExecApprovalRequested, req, true); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), `{"event":"exec.approval.requested","payload":{"approvalKind":"exec","id":"a1"`) {
		t.Errorf("--json line = %s", b.String())
	}
}

func TestPrintAllowlists(t *testing.T) {
	res := &wire.ExecApprovalsGetResult{Path: "/s/exec-approvals.json",
		ResolvedDefaults: wire.ExecApprovalDefaults{Security: "allowlist", Ask: "on-miss", AskFallback: "deny"},
		File: wire.ExecApprovalsFile{Version: 1, Agents: map[string]wire.ExecApprovalsAgent{
			"ops":  {Allowlist: []wire.ExecAllowEntry{{Pattern: "kubectl", Source: "allow-always", LastUsedCommand: "kubectl get pods"}}},
			"main": {Allowlist: []wire.ExecAllowEntry{{Pattern: "/usr/bin/git"}}},
		}}}
	var b bytes.Buffer
	if err := printAllowlists(&b, res, ""); err != nil {
		t.Fatal(err)
	}
	want := `Policy: security=allowlist ask=on-miss askFallback=deny
File: /s/exec-approvals.json
AGENT  PATTERN       SOURCE        LAST COMMAND
main   /usr/bin/git  -             -
ops    kubectl       allow-always  kubectl get pods
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	b.Reset()
	printAllowlists(&b, res, "nobody")
	if !strings.HasSuffix(b.String(), "No allowlist entries.\n") {
		t.Errorf("filtered: %q", b.String())
	}
}
