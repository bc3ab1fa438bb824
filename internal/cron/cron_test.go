package cron

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/cronsched"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlite"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type recorder struct {
	mu   sync.Mutex
	runs []string // session keys
	fail error
}

func (r *recorder) submit(_ context.Context, j *Job, runID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	r.runs = append(r.runs, j.SessionKey())
	return nil
}

func (r *recorder) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.runs) }

func openStore(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var ids atomic.Int64

func newSched(t testing.TB, st Store, c *clock, rec *recorder) *Scheduler {
	t.Helper()
	s, err := New(Config{Store: st, Submit: rec.submit, Now: c.Now, NewID: func() string { return fmt.Sprint("id", ids.Add(1)) }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var hourly = Job{Name: "hourly", Enabled: true, Schedule: cronsched.Schedule{Kind: "cron", Expr: "0 * * * *"},
	Payload: Payload{Kind: "agentTurn", Message: "report"}}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(j *Job)
		err  string
	}{
		{"ok", func(j *Job) {}, ""},
		{"no name", func(j *Job) { j.Name = " " }, "name is required"},
		{"bad schedule", func(j *Job) { j.Schedule.Expr = "x" }, "schedule.expr"},
		{"bad target", func(j *Job) { j.SessionTarget = "elsewhere" }, "sessionTarget"},
		{"bad payload", func(j *Job) { j.Payload.Kind = "email" }, "payload.kind"},
		{"empty message", func(j *Job) { j.Payload.Message = "" }, "payload.message"},
		{"empty event", func(j *Job) { j.Payload = Payload{Kind: "systemEvent"} }, "payload.text"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := hourly
			tc.edit(&j)
			err := j.Validate()
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("Validate = %v, want %q", err, tc.err)
			}
		})
	}
}

func TestAddRejectsBadJobAndStoresNothing(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "s.db"))
	s := newSched(t, st, &clock{t: time.Now()}, &recorder{})
	bad := hourly
	bad.Schedule.Tz = "Nowhere/City"
	if _, err := s.Add(context.Background(), bad); err == nil {
		t.Fatal("Add accepted a bad tz")
	}
	if l, _ := s.List(context.Background()); len(l) != 0 {
		t.Fatalf("%d jobs stored", len(l))
	}
}

func TestMissedTicksRunOnceAndNeverTwiceAcrossRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	c := &clock{t: time.Date(2026, 6, 1, 9, 30, 0, 0, time.UTC)}
	rec := &recorder{}
	st := openStore(t, path)
	s := newSched(t, st, c, rec)
	j, err := s.Add(ctx, hourly)
	if err != nil {
		t.Fatal(err)
	}
	if j.State.NextRunAtMs != time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC).UnixMilli() {
		t.Fatalf("next = %v", time.UnixMilli(j.State.NextRunAtMs).UTC())
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// Down for five hours: five ticks passed.
	c.Add(5 * time.Hour)
	st = openStore(t, path)
	s = newSched(t, st, c, rec)
	if n, err := s.Tick(ctx); err != nil || n != 1 {
		t.Fatalf("Tick after downtime = %d, %v; want 1 run", n, err)
	}
	// A restart right after: the tick is claimed, nothing runs again.
	st.Close()
	st = openStore(t, path)
	s = newSched(t, st, c, rec)
	if n, err := s.Tick(ctx); err != nil || n != 0 {
		t.Fatalf("Tick after restart = %d, %v; want 0", n, err)
	}
	got, _ := s.Get(ctx, j.ID)
	if want := time.Date(2026, 6, 1, 15, 0, 0, 0, time.UTC).UnixMilli(); got.State.NextRunAtMs != want {
		t.Fatalf("next after run = %v", time.UnixMilli(got.State.NextRunAtMs).UTC())
	}
	if rec.count() != 1 || rec.runs[0] != "cron:"+j.ID {
		t.Fatalf("runs = %v", rec.runs)
	}
	runs, err := s.Runs(ctx, j.ID, 10)
	if err != nil || len(runs) != 1 || runs[0].Status != "ok" {
		t.Fatalf("history = %v, %v", runs, err)
	}
}

func TestTwoSchedulersOneTick(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	c := &clock{t: time.Date(2026, 6, 1, 9, 30, 0, 0, time.UTC)}
	rec := &recorder{}
	a := newSched(t, openStore(t, path), c, rec)
	b := newSched(t, openStore(t, path), c, rec)
	for range 20 {
		if _, err := a.Add(ctx, hourly); err != nil {
			t.Fatal(err)
		}
	}
	c.Add(time.Hour)
	var wg sync.WaitGroup
	for _, s := range []*Scheduler{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Tick(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if rec.count() != 20 {
		t.Fatalf("%d runs for 20 jobs", rec.count())
	}
}

func TestOneShotMainDisabledAndFailure(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)}
	rec := &recorder{}
	s := newSched(t, openStore(t, filepath.Join(t.TempDir(), "s.db")), c, rec)
	once := Job{Name: "once", Enabled: true, SessionTarget: "main", DeleteAfterRun: true,
		Schedule: cronsched.Schedule{Kind: "at", At: "2026-06-01T09:10:00Z"},
		Payload:  Payload{Kind: "systemEvent", Text: "stand-up"}}
	o, err := s.Add(ctx, once)
	if err != nil {
		t.Fatal(err)
	}
	off := hourly
	off.Enabled = false
	d, err := s.Add(ctx, off)
	if err != nil {
		t.Fatal(err)
	}
	c.Add(2 * time.Hour)
	if n, err := s.Tick(ctx); err != nil || n != 1 {
		t.Fatalf("Tick = %d, %v", n, err)
	}
	if rec.runs[0] != "main" {
		t.Fatalf("one-shot ran in %q", rec.runs[0])
	}
	if _, err := s.Get(ctx, o.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleteAfterRun job still there: %v", err)
	}
	// Enabling recomputes from now; a failed submit is recorded.
	if _, err := s.SetEnabled(ctx, d.ID, true); err != nil {
		t.Fatal(err)
	}
	rec.fail = errors.New("queue full")
	c.Add(time.Hour)
	if _, err := s.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	runs, _ := s.Runs(ctx, d.ID, 5)
	if len(runs) != 1 || runs[0].Status != "error" || runs[0].Error != "queue full" {
		t.Fatalf("history = %+v", runs)
	}
}

func TestRunLoopStops(t *testing.T) {
	c := &clock{t: time.Now()}
	s := newSched(t, openStore(t, filepath.Join(t.TempDir(), "s.db")), c, &recorder{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop")
	}
}

// BenchmarkThousandDue measures claiming and starting 1000 jobs due in the
// same minute (the bound: all start within 2 s).
func BenchmarkThousandDue(b *testing.B) {
	ctx := context.Background()
	for range b.N {
		b.StopTimer()
		c := &clock{t: time.Date(2026, 6, 1, 9, 30, 0, 0, time.UTC)}
		rec := &recorder{}
		s := newSched(b, openStore(b, filepath.Join(b.TempDir(), "s.db")), c, rec)
		for range 1000 {
			if _, err := s.Add(ctx, hourly); err != nil {
				b.Fatal(err)
			}
		}
		c.Add(31 * time.Minute)
		b.StartTimer()
		n, err := s.Tick(ctx)
		if err != nil || n != 1000 {
			b.Fatalf("Tick = %d, %v", n, err)
		}
	}
}

// TestRunsAllScope is cron.runs without a job id (the Control UI's
// Automations view): every job's runs, newest first, paged, with the job
// names; agentId keeps one agent's jobs.
func TestRunsAllScope(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)}
	st := openStore(t, filepath.Join(t.TempDir(), "s.db"))
	s := newSched(t, st, c, &recorder{})
	a, err := s.Add(ctx, hourly)
	if err != nil {
		t.Fatal(err)
	}
	ops := hourly
	ops.Name, ops.AgentID = "ops report", "ops"
	b, err := s.Add(ctx, ops)
	if err != nil {
		t.Fatal(err)
	}
	// Runs alternate between the jobs, a minute apart: b's is newest.
	for i, id := range []string{a.ID, b.ID, a.ID, b.ID} {
		tick := c.Now().Add(time.Duration(i) * time.Minute)
		if err := st.StartCronRun(ctx, id, tick, fmt.Sprint("run", i)); err != nil {
			t.Fatal(err)
		}
	}
	all := func(agentID string, limit, offset int) map[string]any {
		t.Helper()
		res, err := s.AllRuns(ctx, agentID, limit, offset)
		if err != nil {
			t.Fatalf("AllRuns(%q, %d, %d): %v", agentID, limit, offset, err)
		}
		return res
	}
	runIDs := func(res map[string]any) []string {
		var out []string
		for _, e := range res["entries"].([]map[string]any) {
			out = append(out, e["runId"].(string)+"/"+fmt.Sprint(e["jobName"]))
		}
		return out
	}
	first := all("", 3, 0)
	if got := runIDs(first); !slices.Equal(got, []string{"run3/ops report", "run2/hourly", "run1/ops report"}) {
		t.Errorf("scope all: %q", got)
	}
	if first["total"] != 4 || first["hasMore"] != true || first["nextOffset"] != 3 {
		t.Errorf("scope all paging: %v", first)
	}
	rest := all("", 3, 3)
	if got := runIDs(rest); !slices.Equal(got, []string{"run0/hourly"}) || rest["hasMore"] != false || rest["nextOffset"] != nil {
		t.Errorf("second page: %q %v", got, rest)
	}
	if got := runIDs(all("ops", 0, 0)); !slices.Equal(got, []string{"run3/ops report", "run1/ops report"}) {
		t.Errorf("agentId ops: %q", got)
	}
	one, err := s.RunHistory(ctx, a.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := one["entries"].([]map[string]any); len(got) != 2 {
		t.Errorf("one job: %v", got)
	}
}
