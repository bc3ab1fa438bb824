package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// Clock is a settable clock for the A2A task suite.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// RunA2ATasks runs the A2A task storage conformance suite against the
// backend open returns (a new, empty store per subtest, whose clock is now).
func RunA2ATasks(t *testing.T, open func(t *testing.T, now func() time.Time) store.A2ATaskStore) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.A2ATaskStore, c *Clock)
	}{
		{"PutGet", testA2APutGet},
		{"Invalid", testA2AInvalid},
		{"PeerIsolation", testA2APeerIsolation},
		{"ListOrderContextLimit", testA2AList},
		{"Open", testA2AOpen},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewClock(time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC))
			tc.fn(t, open(t, c.Now), c)
		})
	}
}

func a2aTask(peer, id, ctxID, state string, final bool) *store.A2ATask {
	return &store.A2ATask{Peer: peer, ID: id, ContextID: ctxID, State: state, Final: final,
		RunID: "run-" + id, Task: []byte(`{"id":"` + id + `","state":"` + state + `"}`)}
}

func putA2A(t *testing.T, s store.A2ATaskStore, task *store.A2ATask) {
	t.Helper()
	if err := s.PutA2ATask(context.Background(), task); err != nil {
		t.Fatalf("PutA2ATask %s/%s: %v", task.Peer, task.ID, err)
	}
}

func testA2APutGet(t *testing.T, s store.A2ATaskStore, c *Clock) {
	ctx := context.Background()
	t0 := c.Now()
	putA2A(t, s, a2aTask("alpha", "t1", "c1", "TASK_STATE_WORKING", false))
	got, err := s.GetA2ATask(ctx, "alpha", "t1")
	if err != nil {
		t.Fatalf("GetA2ATask: %v", err)
	}
	if got.ContextID != "c1" || got.State != "TASK_STATE_WORKING" || got.Final || got.RunID != "run-t1" ||
		string(got.Task) != `{"id":"t1","state":"TASK_STATE_WORKING"}` || !got.CreatedAt.Equal(t0) || !got.UpdatedAt.Equal(t0) {
		t.Fatalf("GetA2ATask = %+v", got)
	}
	c.Advance(time.Second)
	putA2A(t, s, a2aTask("alpha", "t1", "c1", "TASK_STATE_COMPLETED", true))
	got, err = s.GetA2ATask(ctx, "alpha", "t1")
	if err != nil {
		t.Fatalf("GetA2ATask after update: %v", err)
	}
	if got.State != "TASK_STATE_COMPLETED" || !got.Final || !got.CreatedAt.Equal(t0) || !got.UpdatedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("updated task = %+v", got)
	}
	if _, err := s.GetA2ATask(ctx, "alpha", "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetA2ATask unknown: %v, want ErrNotFound", err)
	}
}

func testA2AInvalid(t *testing.T, s store.A2ATaskStore, _ *Clock) {
	ctx := context.Background()
	for _, bad := range []*store.A2ATask{nil, {ID: "x", State: "s"}, {Peer: "p", State: "s"}, {Peer: "p", ID: "x"}} {
		if err := s.PutA2ATask(ctx, bad); err == nil {
			t.Errorf("PutA2ATask(%+v) succeeded", bad)
		}
	}
	for _, n := range []int{0, -1, store.MaxA2ATaskList + 1} {
		if _, err := s.ListA2ATasks(ctx, "p", "", n); err == nil {
			t.Errorf("ListA2ATasks limit %d succeeded", n)
		}
		if _, err := s.OpenA2ATasks(ctx, n); err == nil {
			t.Errorf("OpenA2ATasks limit %d succeeded", n)
		}
	}
	if ts, err := s.ListA2ATasks(ctx, "p", "", 10); err != nil || len(ts) != 0 {
		t.Fatalf("store changed by bad input: %v, %v", ts, err)
	}
}

func testA2APeerIsolation(t *testing.T, s store.A2ATaskStore, _ *Clock) {
	ctx := context.Background()
	putA2A(t, s, a2aTask("alpha", "same", "c", "TASK_STATE_WORKING", false))
	putA2A(t, s, a2aTask("beta", "same", "c", "TASK_STATE_COMPLETED", true))
	a, err := s.GetA2ATask(ctx, "alpha", "same")
	if err != nil || a.State != "TASK_STATE_WORKING" {
		t.Fatalf("alpha's task = %+v, %v", a, err)
	}
	b, err := s.GetA2ATask(ctx, "beta", "same")
	if err != nil || b.State != "TASK_STATE_COMPLETED" {
		t.Fatalf("beta's task = %+v, %v", b, err)
	}
	if _, err := s.GetA2ATask(ctx, "gamma", "same"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("gamma reads another peer's task: %v", err)
	}
	ts, err := s.ListA2ATasks(ctx, "alpha", "", 10)
	if err != nil || len(ts) != 1 || ts[0].Peer != "alpha" {
		t.Fatalf("ListA2ATasks alpha = %+v, %v", ts, err)
	}
}

func testA2AList(t *testing.T, s store.A2ATaskStore, c *Clock) {
	ctx := context.Background()
	for i := range 5 {
		ctxID := "even"
		if i%2 == 1 {
			ctxID = "odd"
		}
		putA2A(t, s, a2aTask("alpha", fmt.Sprintf("t%d", i), ctxID, "TASK_STATE_COMPLETED", true))
		c.Advance(time.Second)
	}
	// Touching t0 makes it the most recently updated.
	putA2A(t, s, a2aTask("alpha", "t0", "even", "TASK_STATE_COMPLETED", true))
	ids := func(ts []*store.A2ATask) string {
		out := ""
		for _, x := range ts {
			out += x.ID + " "
		}
		return out
	}
	all, err := s.ListA2ATasks(ctx, "alpha", "", 10)
	if err != nil || ids(all) != "t0 t4 t3 t2 t1 " {
		t.Fatalf("ListA2ATasks = %q, %v", ids(all), err)
	}
	even, err := s.ListA2ATasks(ctx, "alpha", "even", 10)
	if err != nil || ids(even) != "t0 t4 t2 " {
		t.Fatalf("ListA2ATasks even = %q, %v", ids(even), err)
	}
	two, err := s.ListA2ATasks(ctx, "alpha", "", 2)
	if err != nil || ids(two) != "t0 t4 " {
		t.Fatalf("ListA2ATasks limit 2 = %q, %v", ids(two), err)
	}
	// Ties on UpdatedAt break by id, descending.
	putA2A(t, s, a2aTask("beta", "a", "", "TASK_STATE_COMPLETED", true))
	putA2A(t, s, a2aTask("beta", "b", "", "TASK_STATE_COMPLETED", true))
	tie, err := s.ListA2ATasks(ctx, "beta", "", 10)
	if err != nil || ids(tie) != "b a " {
		t.Fatalf("ListA2ATasks tie = %q, %v", ids(tie), err)
	}
}

func testA2AOpen(t *testing.T, s store.A2ATaskStore, c *Clock) {
	ctx := context.Background()
	putA2A(t, s, a2aTask("alpha", "w1", "c", "TASK_STATE_WORKING", false))
	c.Advance(time.Second)
	putA2A(t, s, a2aTask("beta", "w2", "c", "TASK_STATE_SUBMITTED", false))
	c.Advance(time.Second)
	putA2A(t, s, a2aTask("alpha", "done", "c", "TASK_STATE_COMPLETED", true))
	open, err := s.OpenA2ATasks(ctx, 10)
	if err != nil || len(open) != 2 || open[0].ID != "w1" || open[1].ID != "w2" || open[1].Peer != "beta" {
		t.Fatalf("OpenA2ATasks = %+v, %v", open, err)
	}
	putA2A(t, s, a2aTask("alpha", "w1", "c", "TASK_STATE_FAILED", true))
	open, err = s.OpenA2ATasks(ctx, 1)
	if err != nil || len(open) != 1 || open[0].ID != "w2" {
		t.Fatalf("OpenA2ATasks after finishing w1 = %+v, %v", open, err)
	}
}
