package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// waitCronRuns polls cron.runs until job id has n finished entries.
func waitCronRuns(t *testing.T, c interface {
	Call(ctx context.Context, method string, params, out any) error
}, id string, n int) []any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var out map[string]any
		err := c.Call(ctx, "cron.runs", map[string]any{"id": id}, &out)
		cancel()
		if err != nil {
			t.Fatalf("cron.runs: %v", err)
		}
		entries, _ := out["entries"].([]any)
		if len(entries) >= n {
			return entries
		}
		if time.Now().After(deadline) {
			t.Fatalf("cron.runs = %v, want %d entries", out, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestCronJobRunsInItsSessionOnceAcrossRestart(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	dir := t.TempDir()
	g := start(t, dir, llm)
	c := g.dial(t)

	// Bad input is refused and stores nothing.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := c.Call(ctx, "cron.add", map[string]any{"name": "x", "schedule": map[string]any{"kind": "cron", "expr": "99 * * * *"},
		"payload": map[string]any{"kind": "agentTurn", "message": "hi"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "schedule.expr") {
		t.Fatalf("cron.add bad expr = %v", err)
	}
	if l := call(t, c, "cron.list", map[string]any{}); l["total"].(float64) != 0 {
		t.Fatalf("cron.list after bad add = %v", l)
	}

	job := call(t, c, "cron.add", map[string]any{
		"name":     "report",
		"schedule": map[string]any{"kind": "at", "at": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)},
		"payload":  map[string]any{"kind": "agentTurn", "message": "cron says hello"},
	})
	id, _ := job["id"].(string)
	if id == "" || job["enabled"] != true {
		t.Fatalf("cron.add = %v", job)
	}
	entries := waitCronRuns(t, c, id, 1)
	runID := entries[0].(map[string]any)["runId"].(string)
	call(t, c, "agent.wait", map[string]any{"runId": runID, "timeoutMs": 15000})
	hist := call(t, c, "chat.history", map[string]any{"sessionKey": "cron:" + id})
	msgs, _ := hist["messages"].([]any)
	if len(msgs) < 2 || !strings.Contains(toJSON(t, msgs), "cron says hello") {
		t.Fatalf("cron session history = %v", hist)
	}

	// A forced run adds a run; the job's one-shot tick never runs again,
	// also not after a restart.
	run := call(t, c, "cron.run", map[string]any{"id": id, "mode": "force"})
	if run["ran"] != true {
		t.Fatalf("cron.run = %v", run)
	}
	// The forced run has its own history row, finished when it ends.
	call(t, c, "agent.wait", map[string]any{"runId": run["runId"], "timeoutMs": 15000})
	g.kill()
	g = start(t, dir, llm)
	c = g.dial(t)
	time.Sleep(1500 * time.Millisecond) // one scheduler poll after start
	entries = waitCronRuns(t, c, id, 2)
	if len(entries) != 2 {
		t.Fatalf("%d runs after restart, want the scheduled one and the forced one", len(entries))
	}
	forced, _ := entries[0].(map[string]any)
	if forced["runId"] != run["runId"] || forced["status"] != "ok" {
		t.Fatalf("newest history row = %v, want the forced run, ok", forced)
	}
	if st := call(t, c, "cron.status", map[string]any{}); st["jobs"].(float64) != 1 {
		t.Fatalf("cron.status = %v", st)
	}
	dis := call(t, c, "cron.disable", map[string]any{"id": id})
	if dis["enabled"] != false {
		t.Fatalf("cron.disable = %v", dis)
	}
	call(t, c, "cron.remove", map[string]any{"id": id})
	if err := c.Call(ctx, "cron.get", map[string]any{"id": id}, nil); err == nil || !strings.Contains(err.Error(), "cron job not found: "+id) {
		t.Fatalf("cron.get removed = %v", err)
	}
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
