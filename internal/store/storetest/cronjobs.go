package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// RunCron runs the cron job storage conformance suite against the backend
// open returns (a new, empty store per subtest).
func RunCron(t *testing.T, open func(t *testing.T) store.CronStore) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.CronStore)
	}{
		{"PutGetList", testCronPutGetList},
		{"Delete", testCronDelete},
		{"Due", testCronDue},
		{"ClaimOnce", testCronClaimOnce},
		{"ClaimConcurrent", testCronClaimConcurrent},
		{"History", testCronHistory},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

var cronT0 = time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)

func putJob(t *testing.T, s store.CronStore, id string, enabled bool, next time.Time) {
	t.Helper()
	j := &store.CronJob{ID: id, Enabled: enabled, NextRunAt: next, Spec: []byte(`{"name":"` + id + `"}`)}
	if err := s.PutCronJob(context.Background(), j); err != nil {
		t.Fatalf("PutCronJob %s: %v", id, err)
	}
}

func testCronPutGetList(t *testing.T, s store.CronStore) {
	ctx := context.Background()
	if err := s.PutCronJob(ctx, &store.CronJob{}); err == nil {
		t.Fatal("PutCronJob without id succeeded")
	}
	putJob(t, s, "a", true, cronT0)
	putJob(t, s, "b", false, time.Time{})
	j, err := s.GetCronJob(ctx, "a")
	if err != nil {
		t.Fatalf("GetCronJob: %v", err)
	}
	if !j.Enabled || !j.NextRunAt.Equal(cronT0) || string(j.Spec) != `{"name":"a"}` || j.CreatedAt.IsZero() {
		t.Fatalf("GetCronJob = %+v", j)
	}
	created := j.CreatedAt
	j.Enabled, j.Spec = false, []byte(`{"name":"a2"}`)
	if err := s.PutCronJob(ctx, j); err != nil {
		t.Fatalf("PutCronJob replace: %v", err)
	}
	j2, err := s.GetCronJob(ctx, "a")
	if err != nil || j2.Enabled || string(j2.Spec) != `{"name":"a2"}` || !j2.CreatedAt.Equal(created) {
		t.Fatalf("after replace: %+v, %v", j2, err)
	}
	if _, err := s.GetCronJob(ctx, "zz"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetCronJob missing = %v, want ErrNotFound", err)
	}
	list, err := s.ListCronJobs(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("ListCronJobs = %d rows, %v", len(list), err)
	}
}

func testCronDelete(t *testing.T, s store.CronStore) {
	ctx := context.Background()
	putJob(t, s, "a", true, cronT0)
	if _, err := s.ClaimCronTick(ctx, "a", cronT0, cronT0.Add(time.Hour), "r1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteCronJob(ctx, "a"); err != nil {
		t.Fatalf("DeleteCronJob: %v", err)
	}
	if err := s.DeleteCronJob(ctx, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second DeleteCronJob = %v, want ErrNotFound", err)
	}
	if runs, err := s.CronRuns(ctx, "a", 10); err != nil || len(runs) != 0 {
		t.Fatalf("history after delete: %d rows, %v", len(runs), err)
	}
}

func testCronDue(t *testing.T, s store.CronStore) {
	ctx := context.Background()
	putJob(t, s, "late", true, cronT0.Add(2*time.Minute))
	putJob(t, s, "early", true, cronT0)
	putJob(t, s, "off", false, cronT0)
	putJob(t, s, "none", true, time.Time{})
	putJob(t, s, "future", true, cronT0.Add(time.Hour))
	due, err := s.DueCronJobs(ctx, cronT0.Add(5*time.Minute), 10)
	if err != nil {
		t.Fatalf("DueCronJobs: %v", err)
	}
	var ids []string
	for _, j := range due {
		ids = append(ids, j.ID)
	}
	if fmt.Sprint(ids) != "[early late]" {
		t.Fatalf("due = %v, want [early late]", ids)
	}
	if due, err := s.DueCronJobs(ctx, cronT0.Add(5*time.Minute), 1); err != nil || len(due) != 1 {
		t.Fatalf("limit 1: %d, %v", len(due), err)
	}
	if _, err := s.DueCronJobs(ctx, cronT0, 0); err == nil {
		t.Fatal("DueCronJobs limit 0 succeeded")
	}
}

func testCronClaimOnce(t *testing.T, s store.CronStore) {
	ctx := context.Background()
	putJob(t, s, "a", true, cronT0)
	next := cronT0.Add(time.Hour)
	won, err := s.ClaimCronTick(ctx, "a", cronT0, next, "r1")
	if err != nil || !won {
		t.Fatalf("first claim = %v, %v", won, err)
	}
	// The same tick again (a restart that read the job before the claim).
	if won, err := s.ClaimCronTick(ctx, "a", cronT0, next, "r2"); err != nil || won {
		t.Fatalf("second claim = %v, %v; want lost", won, err)
	}
	j, err := s.GetCronJob(ctx, "a")
	if err != nil || !j.NextRunAt.Equal(next) || !j.LastTick.Equal(cronT0) {
		t.Fatalf("after claim: %+v, %v", j, err)
	}
	// A disabled job is never claimed.
	putJob(t, s, "off", false, cronT0)
	if won, err := s.ClaimCronTick(ctx, "off", cronT0, next, "r3"); err != nil || won {
		t.Fatalf("claim disabled = %v, %v", won, err)
	}
	// One-shot: no next run.
	putJob(t, s, "once", true, cronT0)
	if won, err := s.ClaimCronTick(ctx, "once", cronT0, time.Time{}, "r4"); err != nil || !won {
		t.Fatalf("claim once = %v, %v", won, err)
	}
	if due, _ := s.DueCronJobs(ctx, cronT0.Add(24*time.Hour), 10); len(due) != 1 || due[0].ID != "a" {
		t.Fatalf("due after claims = %v", due)
	}
}

func testCronClaimConcurrent(t *testing.T, s store.CronStore) {
	ctx := context.Background()
	putJob(t, s, "a", true, cronT0)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			won, err := s.ClaimCronTick(ctx, "a", cronT0, cronT0.Add(time.Minute), fmt.Sprint("r", i))
			if err != nil {
				t.Errorf("claim: %v", err)
			}
			if won {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := wins.Load(); n != 1 {
		t.Fatalf("%d claims won one tick, want 1", n)
	}
}

func testCronHistory(t *testing.T, s store.CronStore) {
	ctx := context.Background()
	putJob(t, s, "a", true, cronT0)
	t1 := cronT0.Add(time.Minute)
	if won, err := s.ClaimCronTick(ctx, "a", cronT0, t1, "r1"); !won || err != nil {
		t.Fatalf("claim 1: %v %v", won, err)
	}
	if err := s.FinishCronRun(ctx, "a", cronT0, "ok", ""); err != nil {
		t.Fatalf("FinishCronRun: %v", err)
	}
	if won, err := s.ClaimCronTick(ctx, "a", t1, t1.Add(time.Minute), "r2"); !won || err != nil {
		t.Fatalf("claim 2: %v %v", won, err)
	}
	if err := s.FinishCronRun(ctx, "a", t1, "error", "model down"); err != nil {
		t.Fatalf("FinishCronRun: %v", err)
	}
	if err := s.FinishCronRun(ctx, "a", t1.Add(time.Hour), "ok", ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("FinishCronRun unknown tick = %v, want ErrNotFound", err)
	}
	runs, err := s.CronRuns(ctx, "a", 10)
	if err != nil || len(runs) != 2 {
		t.Fatalf("CronRuns = %d, %v", len(runs), err)
	}
	r := runs[0]
	if !r.Tick.Equal(t1) || r.RunID != "r2" || r.Status != "error" || r.Error != "model down" || r.EndedAt.IsZero() {
		t.Fatalf("newest run = %+v", r)
	}
	if runs[1].Status != "ok" || runs[1].RunID != "r1" {
		t.Fatalf("older run = %+v", runs[1])
	}
	if runs, err := s.CronRuns(ctx, "a", 1); err != nil || len(runs) != 1 {
		t.Fatalf("CronRuns limit 1 = %d, %v", len(runs), err)
	}
	// A forced run outside the schedule gets its own history row.
	forced := t1.Add(30 * time.Second)
	if err := s.StartCronRun(ctx, "a", forced, "r3"); err != nil {
		t.Fatalf("StartCronRun: %v", err)
	}
	if err := s.StartCronRun(ctx, "a", forced, "r3"); err != nil {
		t.Fatalf("StartCronRun again: %v", err)
	}
	if err := s.StartCronRun(ctx, "nope", forced, "r4"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("StartCronRun of an unknown job = %v, want ErrNotFound", err)
	}
	runs, err = s.CronRuns(ctx, "a", 10)
	if err != nil || len(runs) != 3 || runs[0].RunID != "r3" || runs[0].Status != "running" || !runs[0].EndedAt.IsZero() {
		t.Fatalf("after a forced run: %+v, %v", runs, err)
	}
	if err := s.FinishCronRun(ctx, "a", forced, "ok", ""); err != nil {
		t.Fatalf("FinishCronRun of the forced run: %v", err)
	}
}
