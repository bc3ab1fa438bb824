package gateway

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/switchboardhq/switchboard/internal/cron"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// TestCronMethods drives the cron.* methods over a real scheduler and
// store: each method's params are checked at the door with the
// reference's wording, and a missing job is "cron job not found".
func TestCronMethods(t *testing.T) {
	var submitted atomic.Int32
	e := newEnv(t, envOptions{gateway: func(c *Config) {
		ids := 0
		sched, err := cron.New(cron.Config{
			Store: c.Store.(cron.Store),
			Submit: func(context.Context, *cron.Job, string) error {
				submitted.Add(1)
				return nil
			},
			NewID: func() string { ids++; return fmt.Sprint("id", ids) },
		})
		if err != nil {
			t.Fatal(err)
		}
		c.Cron = sched
	}})
	c := e.operator()

	var job cron.Job
	c.ok("cron.add", map[string]any{"name": "hourly", "schedule": map[string]any{"kind": "cron", "expr": "0 * * * *"},
		"payload": map[string]any{"kind": "agentTurn", "message": "hi"}}, &job)
	if job.ID != "id1" || !job.Enabled {
		t.Fatalf("cron.add = %+v, want id1 enabled", job)
	}
	var run map[string]any
	c.ok("cron.run", map[string]any{"jobId": job.ID}, &run)
	if run["ran"] != true || submitted.Load() != 1 {
		t.Fatalf("cron.run = %v, %d submitted", run, submitted.Load())
	}
	c.ok("cron.run", map[string]any{"id": job.ID, "mode": "due"}, &run)
	if run["ran"] != false || run["reason"] != "not-due" {
		t.Fatalf("cron.run due = %v", run)
	}
	var upd cron.Job
	c.ok("cron.update", map[string]any{"id": job.ID, "patch": map[string]any{"name": "renamed"}}, &upd)
	if upd.Name != "renamed" || upd.Schedule.Expr != "0 * * * *" {
		t.Fatalf("cron.update = %+v", upd)
	}

	for _, tt := range []struct {
		method  string
		params  any
		wantErr string
	}{
		{"cron.get", map[string]any{"id": "nope"}, "cron job not found: nope"},
		{"cron.update", map[string]any{"id": "nope", "patch": map[string]any{}}, "cron job not found: nope"},
		{"cron.get", map[string]any{}, "id required"},
		{"cron.update", map[string]any{"id": job.ID}, "patch required"},
		{"cron.update", map[string]any{"id": job.ID, "patch": map[string]any{"schedule": map[string]any{"kind": "cron", "expr": "99 * * * *"}}}, ""},
		{"cron.add", map[string]any{"name": "x"}, ""},
		{"cron.run", map[string]any{"id": job.ID, "mode": "later"}, `mode "later" is not one of due, force`},
		{"cron.runs", map[string]any{"scope": "job"}, "id required"},
		{"cron.runs", map[string]any{"scope": "some"}, `scope "some" is not one of job, all`},
		{"cron.runs", map[string]any{"scope": "all", "limit": -1}, "limit and offset must not be negative"},
		{"cron.list", map[string]any{"offset": -1}, "limit and offset must not be negative"},
		{"cron.list", []int{1}, ""},
	} {
		got := c.fail(tt.method, tt.params)
		if got.Code != wire.CodeInvalidRequest || (tt.wantErr != "" && got.Message != tt.wantErr) {
			t.Errorf("%s %v = %s %q, want INVALID_REQUEST %q", tt.method, tt.params, got.Code, got.Message, tt.wantErr)
		}
	}

	var runs map[string]any
	c.ok("cron.runs", map[string]any{"id": job.ID}, &runs)
	if entries, _ := runs["entries"].([]any); len(entries) != 1 {
		t.Fatalf("cron.runs = %v, want the forced run", runs)
	}
	c.ok("cron.remove", map[string]any{"id": job.ID}, nil)
	var list map[string]any
	c.ok("cron.list", nil, &list)
	if list["total"] != float64(0) {
		t.Fatalf("cron.list after remove = %v", list)
	}

	off := newEnv(t, envOptions{}).operator()
	if got := off.fail("cron.status", nil); got.Code != wire.CodeUnavailable || got.Message != "cron is not enabled" {
		t.Errorf("cron.status with cron off = %s %q", got.Code, got.Message)
	}
}
