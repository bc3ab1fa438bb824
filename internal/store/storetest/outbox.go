package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// fullOutbox returns an outbox item with every field set (DeliveredAt only
// when status is delivered).
func fullOutbox(id, kind, sessionKey, runID string, status store.OutboxStatus, next, created time.Time) *store.OutboxItem {
	it := &store.OutboxItem{
		ID:            id,
		Kind:          kind,
		SessionKey:    sessionKey,
		RunID:         runID,
		Payload:       json.RawMessage(`{"text":"done","from":"` + id + `"}`),
		Status:        status,
		Attempts:      2,
		NextAttemptAt: next,
		LastError:     "target busy",
		CreatedAt:     created,
		UpdatedAt:     created.Add(time.Second),
	}
	if status == store.OutboxDelivered {
		it.DeliveredAt = created.Add(2 * time.Second)
	}
	return it
}

func mustPutOutbox(t *testing.T, s store.Store, it *store.OutboxItem) {
	t.Helper()
	if err := s.PutOutbox(context.Background(), it); err != nil {
		t.Fatalf("PutOutbox(%q): %v", it.ID, err)
	}
}

func mustGetOutbox(t *testing.T, s store.Store, id string) *store.OutboxItem {
	t.Helper()
	it, err := s.GetOutbox(context.Background(), id)
	if err != nil {
		t.Fatalf("GetOutbox(%q): %v", id, err)
	}
	return it
}

// clock brackets a store call: the store's "now" must fall in
// [before, after], with before truncated to the stored resolution.
type clock struct{ before, after time.Time }

func startClock() *clock { return &clock{before: time.Now().Truncate(time.Millisecond)} }

func (c *clock) stop() { c.after = time.Now() }

// check fails unless got is a "now" taken during the bracketed call.
func (c *clock) check(t *testing.T, what string, got time.Time) {
	t.Helper()
	if got.Before(c.before) || got.After(c.after) {
		t.Errorf("%s = %v, want now (between %v and %v)", what, got, c.before, c.after)
	}
}

// ignoreUpdatedAt leaves UpdatedAt out of an OutboxItem comparison.
var ignoreUpdatedAt = cmpopts.IgnoreFields(store.OutboxItem{}, "UpdatedAt")

func testPutOutbox(t *testing.T, s store.Store) {
	ctx := context.Background()
	const id = "announce:run-1:agent:main:main"
	want := fullOutbox(id, "announce", "agent:main:main", "run-1", store.OutboxPending, at(5), at(1))
	in := want.Clone()
	mustPutOutbox(t, s, in)
	if diff := cmp.Diff(want, in); diff != "" {
		t.Errorf("PutOutbox modified its input (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, mustGetOutbox(t, s, id), cmpOpts); diff != "" {
		t.Errorf("GetOutbox after PutOutbox (-want +got):\n%s", diff)
	}

	// The same ID again is a conflict and changes nothing.
	dup := fullOutbox(id, "a2a", "agent:main:other", "run-2", store.OutboxDead, at(9), at(9))
	wantErr(t, "PutOutbox of an existing id", s.PutOutbox(ctx, dup), store.ErrConflict)
	if diff := cmp.Diff(want, mustGetOutbox(t, s, id), cmpOpts); diff != "" {
		t.Errorf("conflicting PutOutbox changed the item (-want +got):\n%s", diff)
	}

	// Final statuses round-trip, DeliveredAt included.
	for _, st := range []store.OutboxStatus{store.OutboxDelivered, store.OutboxDead} {
		want := fullOutbox("item-"+string(st), "a2a", "agent:main:main", "", st, at(3), at(2))
		mustPutOutbox(t, s, want.Clone())
		if diff := cmp.Diff(want, mustGetOutbox(t, s, want.ID), cmpOpts); diff != "" {
			t.Errorf("%s item round trip (-want +got):\n%s", st, diff)
		}
	}

	// Defaults: pending, created and updated now, due at creation.
	minimal := &store.OutboxItem{ID: "a2a:min", Kind: "a2a", SessionKey: "agent:main:x"}
	orig := *minimal
	c := startClock()
	mustPutOutbox(t, s, minimal)
	c.stop()
	if diff := cmp.Diff(&orig, minimal); diff != "" {
		t.Errorf("PutOutbox modified its input (-want +got):\n%s", diff)
	}
	got := mustGetOutbox(t, s, "a2a:min")
	c.check(t, "default CreatedAt", got.CreatedAt)
	c.check(t, "default UpdatedAt", got.UpdatedAt)
	wantMin := orig
	wantMin.Status = store.OutboxPending
	wantMin.CreatedAt, wantMin.UpdatedAt, wantMin.NextAttemptAt = got.CreatedAt, got.UpdatedAt, got.CreatedAt
	if diff := cmp.Diff(&wantMin, got, cmpOpts); diff != "" {
		t.Errorf("minimal item defaults (-want +got):\n%s", diff)
	}

	// A given CreatedAt is the default NextAttemptAt; UpdatedAt still
	// defaults to now.
	c = startClock()
	mustPutOutbox(t, s, &store.OutboxItem{ID: "a2a:created", Kind: "a2a", CreatedAt: at(7)})
	c.stop()
	got = mustGetOutbox(t, s, "a2a:created")
	if !got.CreatedAt.Equal(at(7)) || !got.NextAttemptAt.Equal(at(7)) {
		t.Errorf("CreatedAt, NextAttemptAt = %v, %v; want both %v", got.CreatedAt, got.NextAttemptAt, at(7))
	}
	c.check(t, "default UpdatedAt", got.UpdatedAt)

	// Invalid items are rejected and not stored.
	for _, bad := range []*store.OutboxItem{
		{Kind: "a2a"},
		{ID: "bad-status", Kind: "a2a", Status: "sent"},
		{ID: "bad-payload", Kind: "a2a", Payload: json.RawMessage(`{"x":`)},
	} {
		if err := s.PutOutbox(ctx, bad); err == nil {
			t.Errorf("PutOutbox(%+v) succeeded", bad)
		}
		if bad.ID != "" {
			_, err := s.GetOutbox(ctx, bad.ID)
			wantErr(t, "GetOutbox of a rejected item", err, store.ErrNotFound)
		}
	}
}

func testGetOutboxNotFound(t *testing.T, s store.Store) {
	_, err := s.GetOutbox(context.Background(), "missing")
	wantErr(t, "GetOutbox of a missing id", err, store.ErrNotFound)
}

func testListOutbox(t *testing.T, s store.Store) {
	ctx := context.Background()
	const a, b = "agent:main:a", "agent:main:b"
	items := []*store.OutboxItem{
		fullOutbox("o1", "announce", a, "r1", store.OutboxPending, at(10), at(1)),
		fullOutbox("o2", "a2a", a, "r2", store.OutboxPending, at(5), at(2)),
		fullOutbox("o3", "a2a", b, "r1", store.OutboxDelivered, at(3), at(3)),
		fullOutbox("o4", "announce", b, "", store.OutboxDead, at(4), at(0)),
		fullOutbox("o5", "a2a", b, "r2", store.OutboxPending, at(10), at(1)),      // ties o1: ID order
		fullOutbox("o6", "announce", a, "r1", store.OutboxPending, at(10), at(0)), // ties o1 on due: CreatedAt order
		fullOutbox("o7", "a2a", a, "r3", store.OutboxPending, at(100), at(4)),     // not due yet
	}
	for _, it := range items {
		mustPutOutbox(t, s, it)
	}
	pending := []store.OutboxStatus{store.OutboxPending}
	tests := []struct {
		name string
		f    store.OutboxFilter
		want []string
	}{
		{"all", store.OutboxFilter{}, []string{"o3", "o4", "o2", "o6", "o1", "o5", "o7"}},
		{"kind", store.OutboxFilter{Kind: "a2a"}, []string{"o3", "o2", "o5", "o7"}},
		{"session", store.OutboxFilter{SessionKey: a}, []string{"o2", "o6", "o1", "o7"}},
		{"run", store.OutboxFilter{RunID: "r1"}, []string{"o3", "o6", "o1"}},
		{"pending", store.OutboxFilter{Statuses: pending}, []string{"o2", "o6", "o1", "o5", "o7"}},
		{"final", store.OutboxFilter{Statuses: []store.OutboxStatus{store.OutboxDelivered, store.OutboxDead}}, []string{"o3", "o4"}},
		{"due", store.OutboxFilter{DueBefore: at(10)}, []string{"o2", "o6", "o1", "o5"}},
		{"due earlier", store.OutboxFilter{DueBefore: at(9)}, []string{"o2"}},
		{"due none", store.OutboxFilter{DueBefore: at(4)}, nil},
		{"due pending", store.OutboxFilter{DueBefore: at(10), Statuses: pending}, []string{"o2", "o6", "o1", "o5"}},
		{"due pending or dead", store.OutboxFilter{DueBefore: at(10), Statuses: []store.OutboxStatus{store.OutboxDead, store.OutboxPending}}, []string{"o2", "o6", "o1", "o5"}},
		{"due dead", store.OutboxFilter{DueBefore: at(10), Statuses: []store.OutboxStatus{store.OutboxDead}}, nil},
		{"due kind", store.OutboxFilter{DueBefore: at(10), Kind: "announce"}, []string{"o6", "o1"}},
		{"due session", store.OutboxFilter{DueBefore: at(1000), SessionKey: a}, []string{"o2", "o6", "o1", "o7"}},
		{"due limit", store.OutboxFilter{DueBefore: at(10), Limit: 2}, []string{"o2", "o6"}},
		{"limit", store.OutboxFilter{Limit: 3}, []string{"o3", "o4", "o2"}},
		{"kind session status", store.OutboxFilter{Kind: "a2a", SessionKey: b, Statuses: pending}, []string{"o5"}},
		{"none", store.OutboxFilter{SessionKey: "agent:main:nobody"}, nil},
		{"newest", store.OutboxFilter{Newest: true}, []string{"o7", "o3", "o2", "o5", "o1", "o6", "o4"}},
		{"newest kind", store.OutboxFilter{Newest: true, Kind: "a2a"}, []string{"o7", "o3", "o2", "o5"}},
		{"newest page", store.OutboxFilter{Newest: true, Limit: 2, Offset: 1}, []string{"o3", "o2"}},
		{"offset only", store.OutboxFilter{Newest: true, Offset: 5}, []string{"o6", "o4"}},
		{"dispatch order page", store.OutboxFilter{Limit: 2, Offset: 2}, []string{"o2", "o6"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ListOutbox(ctx, tt.f)
			if err != nil {
				t.Fatalf("ListOutbox(%+v): %v", tt.f, err)
			}
			var ids []string
			for _, it := range got {
				ids = append(ids, it.ID)
			}
			if diff := cmp.Diff(tt.want, ids, cmpOpts); diff != "" {
				t.Errorf("ListOutbox(%+v) ids (-want +got):\n%s", tt.f, diff)
			}
		})
	}
	got, err := s.ListOutbox(ctx, store.OutboxFilter{Statuses: []store.OutboxStatus{store.OutboxDelivered}})
	if err != nil || len(got) != 1 {
		t.Fatalf("ListOutbox: %v, %d rows", err, len(got))
	}
	if diff := cmp.Diff(items[2], got[0], cmpOpts); diff != "" {
		t.Errorf("listed item (-want +got):\n%s", diff)
	}
}

func testUpdateOutbox(t *testing.T, s store.Store) {
	ctx := context.Background()
	boom := errors.New("boom")
	const id = "a2a:1"
	orig := fullOutbox(id, "a2a", "agent:main:main", "run-1", store.OutboxPending, at(5), at(1))
	mustPutOutbox(t, s, orig.Clone())

	_, err := s.UpdateOutbox(ctx, "missing", func(*store.OutboxItem) error { return nil })
	wantErr(t, "UpdateOutbox of a missing id", err, store.ErrNotFound)

	_, err = s.UpdateOutbox(ctx, id, func(it *store.OutboxItem) error {
		it.Status = store.OutboxDead
		it.Attempts = 99
		it.Payload[0] = 'X'
		return boom
	})
	wantErr(t, "UpdateOutbox with failing fn", err, boom)
	if diff := cmp.Diff(orig, mustGetOutbox(t, s, id), cmpOpts); diff != "" {
		t.Errorf("failing fn changed the item (-want +got):\n%s", diff)
	}

	if _, err := s.UpdateOutbox(ctx, id, func(it *store.OutboxItem) error {
		it.ID = "a2a:renamed"
		return nil
	}); err == nil {
		t.Errorf("UpdateOutbox let fn change the id")
	}
	if diff := cmp.Diff(orig, mustGetOutbox(t, s, id), cmpOpts); diff != "" {
		t.Errorf("id-changing fn changed the item (-want +got):\n%s", diff)
	}
	_, err = s.GetOutbox(ctx, "a2a:renamed")
	wantErr(t, "GetOutbox of the rejected new id", err, store.ErrNotFound)

	// A failed attempt, re-routed: fields are stored as fn leaves them and
	// UpdatedAt is bumped to now.
	c := startClock()
	got, err := s.UpdateOutbox(ctx, id, func(it *store.OutboxItem) error {
		if diff := cmp.Diff(orig, it, cmpOpts); diff != "" {
			t.Errorf("fn's item (-want +got):\n%s", diff)
		}
		it.Attempts++
		it.LastError = "timeout"
		it.NextAttemptAt = at(60)
		it.SessionKey = "agent:main:rerouted"
		it.Payload = json.RawMessage(`{"text":"edited"}`)
		it.UpdatedAt = at(-100) // overridden
		return nil
	})
	c.stop()
	if err != nil {
		t.Fatalf("UpdateOutbox: %v", err)
	}
	want := orig.Clone()
	want.Attempts = 3
	want.LastError = "timeout"
	want.NextAttemptAt = at(60)
	want.SessionKey = "agent:main:rerouted"
	want.Payload = json.RawMessage(`{"text":"edited"}`)
	if diff := cmp.Diff(want, got, cmpOpts, ignoreUpdatedAt); diff != "" {
		t.Errorf("UpdateOutbox result (-want +got):\n%s", diff)
	}
	c.check(t, "UpdatedAt after UpdateOutbox", got.UpdatedAt)
	if !got.UpdatedAt.After(orig.UpdatedAt) {
		t.Errorf("UpdatedAt = %v, not bumped past %v", got.UpdatedAt, orig.UpdatedAt)
	}
	if diff := cmp.Diff(got, mustGetOutbox(t, s, id), cmpOpts); diff != "" {
		t.Errorf("stored item after UpdateOutbox (-want +got):\n%s", diff)
	}

	// Delivered with an explicit DeliveredAt keeps it.
	got, err = s.UpdateOutbox(ctx, id, func(it *store.OutboxItem) error {
		it.Status = store.OutboxDelivered
		it.DeliveredAt = at(70)
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateOutbox to delivered: %v", err)
	}
	if got.Status != store.OutboxDelivered || !got.DeliveredAt.Equal(at(70)) {
		t.Errorf("delivered item: status %q, DeliveredAt %v; want delivered, %v", got.Status, got.DeliveredAt, at(70))
	}

	// Delivered without one gets now.
	mustPutOutbox(t, s, &store.OutboxItem{ID: "a2a:2", Kind: "a2a", CreatedAt: at(1)})
	c = startClock()
	got, err = s.UpdateOutbox(ctx, "a2a:2", func(it *store.OutboxItem) error {
		it.Status = store.OutboxDelivered
		return nil
	})
	c.stop()
	if err != nil {
		t.Fatalf("UpdateOutbox to delivered: %v", err)
	}
	c.check(t, "default DeliveredAt", got.DeliveredAt)
	if diff := cmp.Diff(got, mustGetOutbox(t, s, "a2a:2"), cmpOpts); diff != "" {
		t.Errorf("stored delivered item (-want +got):\n%s", diff)
	}

	// fn may not store an invalid status.
	if _, err := s.UpdateOutbox(ctx, "a2a:2", func(it *store.OutboxItem) error {
		it.Status = "sent"
		return nil
	}); err == nil {
		t.Errorf("UpdateOutbox stored an unknown status")
	}
}

func testFinishRunOutbox(t *testing.T, s store.Store) {
	ctx := context.Background()
	const key = "agent:main:main"
	mustCreate(t, s, &store.Session{Key: key, SessionID: "s1", CreatedAt: at(0), UpdatedAt: at(0)})
	mustCreateRun(t, s, fullRun("run-1", key, store.RunRunning, at(1)))

	// Queued before the finish (say, by an earlier attempt that crashed).
	pre := fullOutbox("announce:run-1:agent:main:parent", "announce", "agent:main:parent", "run-1",
		store.OutboxPending, at(2), at(2))
	mustPutOutbox(t, s, pre.Clone())

	items := []store.OutboxItem{
		{ID: pre.ID, Kind: "announce", SessionKey: "agent:main:parent", Payload: json.RawMessage(`{"v":2}`)},
		{ID: "a2a:run-1:1", Kind: "a2a", SessionKey: "agent:main:other", Payload: json.RawMessage(`{"v":1}`), NextAttemptAt: at(50)},
		{ID: "a2a:run-1:1", Kind: "a2a", SessionKey: "agent:main:dup"}, // repeated in the slice
		{ID: "a2a:explicit", Kind: "a2a", SessionKey: "agent:main:third", RunID: "run-other", CreatedAt: at(3)},
	}
	res := store.RunResult{Status: store.RunOK, StopReason: "stop", EndedAt: at(100), Outbox: items}
	snapshot := make([]store.OutboxItem, len(items))
	for i := range items {
		snapshot[i] = *items[i].Clone()
	}
	c := startClock()
	if _, err := s.FinishRun(ctx, "run-1", res); err != nil {
		t.Fatalf("FinishRun with outbox: %v", err)
	}
	c.stop()
	if diff := cmp.Diff(snapshot, items); diff != "" {
		t.Errorf("FinishRun modified res.Outbox (-want +got):\n%s", diff)
	}
	if got := mustGetRun(t, s, "run-1"); got.Status != store.RunOK {
		t.Errorf("run status = %q, want ok", got.Status)
	}
	if diff := cmp.Diff(pre, mustGetOutbox(t, s, pre.ID), cmpOpts); diff != "" {
		t.Errorf("FinishRun overwrote a queued item (-want +got):\n%s", diff)
	}
	got := mustGetOutbox(t, s, "a2a:run-1:1")
	c.check(t, "CreatedAt of a finish item", got.CreatedAt)
	c.check(t, "UpdatedAt of a finish item", got.UpdatedAt)
	want := &store.OutboxItem{ID: "a2a:run-1:1", Kind: "a2a", SessionKey: "agent:main:other", RunID: "run-1",
		Payload: json.RawMessage(`{"v":1}`), Status: store.OutboxPending, NextAttemptAt: at(50),
		CreatedAt: got.CreatedAt, UpdatedAt: got.UpdatedAt}
	if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
		t.Errorf("finish item (-want +got):\n%s", diff)
	}
	got = mustGetOutbox(t, s, "a2a:explicit")
	if got.RunID != "run-other" || !got.NextAttemptAt.Equal(at(3)) || got.Status != store.OutboxPending {
		t.Errorf("explicit item = %+v; want RunID run-other, due %v, pending", got, at(3))
	}
	list, err := s.ListOutbox(ctx, store.OutboxFilter{RunID: "run-1"})
	if err != nil || len(list) != 2 {
		t.Errorf("ListOutbox(run-1) = %d items, %v; want 2", len(list), err)
	}

	// A finish that fails with ErrConflict or ErrNotFound inserts nothing.
	late := []store.OutboxItem{{ID: "a2a:late", Kind: "a2a", SessionKey: key}}
	_, err = s.FinishRun(ctx, "run-1", store.RunResult{Status: store.RunAborted, Outbox: late})
	wantErr(t, "second FinishRun", err, store.ErrConflict)
	_, err = s.FinishRun(ctx, "run-missing", store.RunResult{Status: store.RunOK, Outbox: late})
	wantErr(t, "FinishRun of a missing run", err, store.ErrNotFound)
	_, err = s.GetOutbox(ctx, "a2a:late")
	wantErr(t, "item of a failed FinishRun", err, store.ErrNotFound)

	// An invalid item fails the whole finish: the run stays live and its
	// valid siblings are not queued.
	mustCreateRun(t, s, fullRun("run-2", key, store.RunRunning, at(200)))
	bad := []store.OutboxItem{{ID: "a2a:run-2:ok", Kind: "a2a"}, {Kind: "a2a"}}
	if _, err := s.FinishRun(ctx, "run-2", store.RunResult{Status: store.RunOK, Outbox: bad}); err == nil {
		t.Errorf("FinishRun with an item without id succeeded")
	}
	if got := mustGetRun(t, s, "run-2"); got.Status != store.RunRunning {
		t.Errorf("run-2 status = %q after a rejected finish, want running", got.Status)
	}
	_, err = s.GetOutbox(ctx, "a2a:run-2:ok")
	wantErr(t, "item of a rejected FinishRun", err, store.ErrNotFound)

	// Without items FinishRun behaves as before.
	if _, err := s.FinishRun(ctx, "run-2", store.RunResult{Status: store.RunError, Usage: transcript.Usage{Input: 1}}); err != nil {
		t.Fatalf("FinishRun without outbox: %v", err)
	}
	if list, err := s.ListOutbox(ctx, store.OutboxFilter{RunID: "run-2"}); err != nil || len(list) != 0 {
		t.Errorf("ListOutbox(run-2) = %d items, %v; want none", len(list), err)
	}
}

func testPutOutboxConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	const n = 32
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = s.PutOutbox(ctx, &store.OutboxItem{
				ID: "announce:run-1:agent:main:main", Kind: "announce",
				SessionKey: fmt.Sprintf("agent:main:s%d", i),
			})
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("PutOutbox %d and %d both succeeded", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("PutOutbox %d: %v, want ErrConflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("no PutOutbox succeeded")
	}
	got := mustGetOutbox(t, s, "announce:run-1:agent:main:main")
	if want := fmt.Sprintf("agent:main:s%d", winner); got.SessionKey != want {
		t.Errorf("stored SessionKey = %q, want the winner's %q", got.SessionKey, want)
	}
	list, err := s.ListOutbox(ctx, store.OutboxFilter{})
	if err != nil || len(list) != 1 {
		t.Errorf("ListOutbox = %d items, %v; want 1", len(list), err)
	}
}

// scribbleOutbox mutates every field of it in place, through shared memory
// where there is any.
func scribbleOutbox(it *store.OutboxItem) {
	it.Status = store.OutboxDead
	it.SessionKey = "scribbled"
	it.Attempts = -1
	for i := range it.Payload {
		it.Payload[i] = ' '
	}
}

// testOutboxCloneIndependence checks Clone, and that no outbox item passed
// in or handed out shares memory with what the store keeps.
func testOutboxCloneIndependence(t *testing.T, s store.Store) {
	ctx := context.Background()
	const id = "a2a:clone"
	fresh := func() *store.OutboxItem {
		return fullOutbox(id, "a2a", "agent:main:main", "run-1", store.OutboxPending, at(5), at(1))
	}
	want := fresh()

	orig := fresh()
	c := orig.Clone()
	if diff := cmp.Diff(orig, c); diff != "" {
		t.Errorf("Clone differs (-orig +clone):\n%s", diff)
	}
	scribbleOutbox(c)
	if diff := cmp.Diff(want, orig); diff != "" {
		t.Errorf("mutating a clone changed the original (-want +got):\n%s", diff)
	}
	if c := (&store.OutboxItem{ID: "x"}).Clone(); c.Payload != nil {
		t.Errorf("Clone of a nil payload = %q, want nil", c.Payload)
	}

	in := fresh()
	mustPutOutbox(t, s, in)
	scribbleOutbox(in)
	check := func(what string, want *store.OutboxItem) {
		t.Helper()
		if diff := cmp.Diff(want, mustGetOutbox(t, s, id), cmpOpts); diff != "" {
			t.Errorf("after mutating %s (-want +got):\n%s", what, diff)
		}
	}
	check("the put item", want)
	scribbleOutbox(mustGetOutbox(t, s, id))
	check("a GetOutbox result", want)
	list, err := s.ListOutbox(ctx, store.OutboxFilter{})
	if err != nil || len(list) != 1 {
		t.Fatalf("ListOutbox: %v, %d rows", err, len(list))
	}
	scribbleOutbox(list[0])
	check("a ListOutbox result", want)

	var kept *store.OutboxItem
	got, err := s.UpdateOutbox(ctx, id, func(it *store.OutboxItem) error {
		kept = it
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stored := got.Clone()
	scribbleOutbox(got)
	check("an UpdateOutbox result", stored)
	scribbleOutbox(kept)
	check("the item fn saw", stored)

	// FinishRun's items.
	mustCreateRun(t, s, fullRun("run-1", "agent:main:main", store.RunRunning, at(1)))
	items := []store.OutboxItem{*fullOutbox("a2a:finish", "a2a", "agent:main:main", "run-1", store.OutboxPending, at(5), at(1))}
	if _, err := s.FinishRun(ctx, "run-1", store.RunResult{Status: store.RunOK, Outbox: items}); err != nil {
		t.Fatal(err)
	}
	scribbleOutbox(&items[0])
	wantFin := fullOutbox("a2a:finish", "a2a", "agent:main:main", "run-1", store.OutboxPending, at(5), at(1))
	if diff := cmp.Diff(wantFin, mustGetOutbox(t, s, "a2a:finish"), cmpOpts); diff != "" {
		t.Errorf("after mutating a FinishRun item (-want +got):\n%s", diff)
	}
}
