package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExecApprovalsSet: exec.approvals.set replaces the approvals
// document under the hash exec.approvals.get returned (required once it
// exists, refused when stale), rejects invalid policy values, and the
// document's policy joins tools.exec's, the stricter winning: defaults
// security "deny" denies a command tools.exec would allowlist.
func TestExecApprovalsSet(t *testing.T) {
	g := startWith(t, "", nil, "", approvalsConfig(""))
	admin := g.dial(t)
	key := "agent:main:main"
	setErr := func(params map[string]any) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return admin.Call(ctx, "exec.approvals.set", params, nil)
	}

	doc := call(t, admin, "exec.approvals.get", map[string]any{})
	h0, _ := doc["hash"].(string)
	if doc["exists"] != false || len(h0) != 64 {
		t.Fatalf("get before any = %v", doc)
	}
	file := map[string]any{"version": 1, "defaults": map[string]any{"security": "deny"},
		"agents": map[string]any{"main": map[string]any{"allowlist": []any{map[string]any{"pattern": "printf"}}}}}
	doc = call(t, admin, "exec.approvals.set", map[string]any{"file": file})
	h1, _ := doc["hash"].(string)
	if doc["exists"] != true || len(h1) != 64 || h1 == h0 {
		t.Fatalf("set = %v", doc)
	}
	if rd, _ := doc["resolvedDefaults"].(map[string]any); rd["security"] != "deny" || rd["ask"] != "on-miss" {
		t.Errorf("resolvedDefaults = %v, want the stricter of tools.exec and the document", rd)
	}
	f, _ := doc["file"].(map[string]any)
	main, _ := f["agents"].(map[string]any)["main"].(map[string]any)
	entries, _ := main["allowlist"].([]any)
	if len(entries) != 1 || entries[0].(map[string]any)["id"] == "" || entries[0].(map[string]any)["pattern"] != "printf" {
		t.Errorf("stored allowlist = %v", main)
	}
	if got := call(t, admin, "exec.approvals.get", map[string]any{}); got["hash"] != h1 {
		t.Errorf("get after set: hash %v, want %s", got["hash"], h1)
	}

	for _, tc := range []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"no base hash", map[string]any{"file": file}, "exec approvals base hash required; re-run exec.approvals.get and retry"},
		{"stale base hash", map[string]any{"file": file, "baseHash": h0}, "exec approvals changed since last load; re-run exec.approvals.get and retry"},
		{"bad security", map[string]any{"file": map[string]any{"version": 1, "defaults": map[string]any{"security": "sometimes"}}, "baseHash": h1}, "defaults.security"},
		{"empty pattern", map[string]any{"file": map[string]any{"version": 1, "agents": map[string]any{"main": map[string]any{"allowlist": []any{map[string]any{"pattern": " "}}}}}, "baseHash": h1}, "pattern is required"},
		{"no file", map[string]any{"baseHash": h1}, "file"},
	} {
		if err := setErr(tc.params); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}

	// The document's deny wins over tools.exec's allowlist: even an
	// allowlisted binary does not run.
	marker := filepath.Join(t.TempDir(), "ran")
	call(t, admin, "chat.send", map[string]any{"sessionKey": key, "message": toolTurn("exec", map[string]any{"command": "printf x > " + marker}), "idempotencyKey": "s1"})
	waitRun(t, admin, "s1")
	if got := lastToolText(t, admin, key, "exec"); !strings.Contains(got, "denied") {
		t.Errorf("exec under a denying document = %q", got)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a command ran under security deny")
	}

	// Dropping the defaults leaves tools.exec's allowlist mode: printf is
	// on the document's allowlist and runs without asking.
	file["defaults"] = nil
	doc = call(t, admin, "exec.approvals.set", map[string]any{"file": file, "baseHash": h1})
	if rd, _ := doc["resolvedDefaults"].(map[string]any); rd["security"] != "allowlist" {
		t.Errorf("resolvedDefaults = %v", rd)
	}
	call(t, admin, "chat.send", map[string]any{"sessionKey": key, "message": toolTurn("exec", map[string]any{"command": "printf allowed"}), "idempotencyKey": "s2"})
	waitRun(t, admin, "s2")
	if got := lastToolText(t, admin, key, "exec"); got != "allowed" {
		t.Errorf("allowlisted exec = %q", got)
	}
}
