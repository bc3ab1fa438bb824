package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/store"
)

// testSubagents covers the sub-agent registry: insert, conflict, get,
// the filters and order of ListSubagents, and compare-and-set updates.
func testSubagents(t *testing.T, s store.Store) {
	ctx := context.Background()
	rows := []*store.SubagentRun{
		{ChildRunID: "r1", ChildSessionKey: "agent:main:subagent:a", RequesterKey: "agent:main:main", Status: store.SubagentActive,
			ArchiveAt: base.Add(time.Hour), Payload: json.RawMessage(`{"task":"one"}`), CreatedAt: base, UpdatedAt: base},
		{ChildRunID: "r2", ChildSessionKey: "agent:main:subagent:b", RequesterKey: "agent:main:main",
			CreatedAt: base.Add(time.Second)},
		{ChildRunID: "r3", ChildSessionKey: "agent:main:subagent:c", RequesterKey: "agent:main:other", Status: store.SubagentRetired,
			ArchiveAt: base.Add(2 * time.Hour), CreatedAt: base.Add(2 * time.Second)},
	}
	for _, r := range rows {
		if err := s.PutSubagent(ctx, r); err != nil {
			t.Fatalf("PutSubagent(%s): %v", r.ChildRunID, err)
		}
	}
	if err := s.PutSubagent(ctx, &store.SubagentRun{ChildRunID: "r1"}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("PutSubagent existing = %v, want ErrConflict", err)
	}
	if err := s.PutSubagent(ctx, &store.SubagentRun{ChildRunID: "bad", Status: "weird"}); err == nil {
		t.Error("PutSubagent with an unknown status succeeded")
	}
	got, err := s.GetSubagent(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rows[0], got); diff != "" {
		t.Errorf("GetSubagent(r1) (-want +got):\n%s", diff)
	}
	r2, err := s.GetSubagent(ctx, "r2")
	if err != nil || r2.Status != store.SubagentActive || r2.UpdatedAt.IsZero() {
		t.Errorf("defaults: %+v, %v", r2, err)
	}
	if _, err := s.GetSubagent(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetSubagent(nope) = %v, want ErrNotFound", err)
	}
	ids := func(f store.SubagentFilter) []string {
		t.Helper()
		rs, err := s.ListSubagents(ctx, f)
		if err != nil {
			t.Fatalf("ListSubagents(%+v): %v", f, err)
		}
		out := []string{}
		for _, r := range rs {
			out = append(out, r.ChildRunID)
		}
		return out
	}
	for _, tc := range []struct {
		f    store.SubagentFilter
		want []string
	}{
		{store.SubagentFilter{}, []string{"r3", "r2", "r1"}},
		{store.SubagentFilter{RequesterKey: "agent:main:main"}, []string{"r2", "r1"}},
		{store.SubagentFilter{ChildSessionKey: "agent:main:subagent:c"}, []string{"r3"}},
		{store.SubagentFilter{Statuses: []store.SubagentStatus{store.SubagentActive}}, []string{"r2", "r1"}},
		{store.SubagentFilter{Statuses: []store.SubagentStatus{store.SubagentActive, store.SubagentRetired}}, []string{"r3", "r2", "r1"}},
		{store.SubagentFilter{ArchiveDueBefore: base.Add(time.Hour)}, []string{"r1"}},
		{store.SubagentFilter{Limit: 1, Offset: 1}, []string{"r2"}},
		{store.SubagentFilter{Offset: 2}, []string{"r1"}},
	} {
		if diff := cmp.Diff(tc.want, ids(tc.f)); diff != "" {
			t.Errorf("ListSubagents(%+v) (-want +got):\n%s", tc.f, diff)
		}
	}
	errStop := errors.New("stop")
	if _, err := s.UpdateSubagent(ctx, "r1", func(r *store.SubagentRun) error {
		r.Status = store.SubagentRetired
		return errStop
	}); !errors.Is(err, errStop) {
		t.Errorf("UpdateSubagent fn error = %v", err)
	}
	if r, _ := s.GetSubagent(ctx, "r1"); r.Status != store.SubagentActive {
		t.Errorf("a failed update changed the row: %+v", r)
	}
	up, err := s.UpdateSubagent(ctx, "r1", func(r *store.SubagentRun) error {
		r.Status = store.SubagentRetired
		return nil
	})
	if err != nil || up.Status != store.SubagentRetired {
		t.Fatalf("UpdateSubagent = %+v, %v", up, err)
	}
	if r, _ := s.GetSubagent(ctx, "r1"); r.Status != store.SubagentRetired || string(r.Payload) != `{"task":"one"}` {
		t.Errorf("after update: %+v", r)
	}
	if _, err := s.UpdateSubagent(ctx, "nope", func(*store.SubagentRun) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UpdateSubagent(nope) = %v", err)
	}
	if _, err := s.UpdateSubagent(ctx, "r2", func(r *store.SubagentRun) error { r.ChildRunID = "x"; return nil }); err == nil {
		t.Error("UpdateSubagent changing the id succeeded")
	}
}

// testPruneOutbox: only delivered items of the kind, delivered before the
// cut-off, are deleted.
func testPruneOutbox(t *testing.T, s store.Store) {
	ctx := context.Background()
	put := func(id, kind string, status store.OutboxStatus, delivered time.Time) {
		t.Helper()
		if err := s.PutOutbox(ctx, &store.OutboxItem{ID: id, Kind: kind, Status: status, DeliveredAt: delivered, CreatedAt: base}); err != nil {
			t.Fatal(err)
		}
	}
	put("old-a", "a", store.OutboxDelivered, base)
	put("new-a", "a", store.OutboxDelivered, base.Add(time.Hour))
	put("old-b", "b", store.OutboxDelivered, base)
	put("pending-a", "a", store.OutboxPending, time.Time{})
	put("dead-a", "a", store.OutboxDead, time.Time{})
	n, err := s.PruneOutbox(ctx, "a", base.Add(time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("PruneOutbox(a) = %d, %v; want 1", n, err)
	}
	for id, want := range map[string]bool{"old-a": false, "new-a": true, "old-b": true, "pending-a": true, "dead-a": true} {
		_, err := s.GetOutbox(ctx, id)
		if got := err == nil; got != want {
			t.Errorf("%s kept = %v, want %v (%v)", id, got, want, err)
		}
	}
	if n, err := s.PruneOutbox(ctx, "", base.Add(2*time.Hour)); err != nil || n != 2 {
		t.Errorf("PruneOutbox(all) = %d, %v; want 2", n, err)
	}
}

// testCreateChild covers store.CreateChild: the session row and the
// registry row are stored together, and when the registry row conflicts
// or fn fails neither is. A store that is no ChildCreator skips it.
func testCreateChild(t *testing.T, s store.Store) {
	if _, ok := s.(store.ChildCreator); !ok {
		t.Skip("not a store.ChildCreator")
	}
	ctx := context.Background()
	newChild := func(id string) func(*store.Session) error {
		return func(sess *store.Session) error {
			sess.SessionID, sess.SpawnedBy, sess.SpawnDepth, sess.Label = id, "agent:main:main", 1, "kid"
			return nil
		}
	}
	row := &store.SubagentRun{ChildRunID: "c1", ChildSessionKey: "agent:main:subagent:c1", RequesterKey: "agent:main:main", CreatedAt: base}
	got, err := store.CreateChild(ctx, s, row.ChildSessionKey, newChild("s-c1"), row)
	if err != nil {
		t.Fatalf("CreateChild: %v", err)
	}
	if got.SessionID != "s-c1" || got.SpawnedBy != "agent:main:main" || got.SpawnDepth != 1 || got.Label != "kid" {
		t.Errorf("CreateChild returned %+v", got)
	}
	if sess := mustGet(t, s, row.ChildSessionKey); sess.SessionID != "s-c1" || sess.SpawnDepth != 1 {
		t.Errorf("stored child session %+v", sess)
	}
	if r, err := s.GetSubagent(ctx, "c1"); err != nil || r.ChildSessionKey != row.ChildSessionKey || r.Status != store.SubagentActive {
		t.Errorf("GetSubagent(c1) = %+v, %v", r, err)
	}

	// A registry row that exists: no session either.
	dup := &store.SubagentRun{ChildRunID: "c1", ChildSessionKey: "agent:main:subagent:c2", RequesterKey: "agent:main:main"}
	_, err = store.CreateChild(ctx, s, dup.ChildSessionKey, newChild("s-c2"), dup)
	wantErr(t, "CreateChild with an existing run id", err, store.ErrConflict)
	if _, err := s.GetSession(ctx, dup.ChildSessionKey); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("conflicting CreateChild left its session: %v", err)
	}

	// fn's error is returned as it is, and nothing is stored.
	boom := errors.New("boom")
	r3 := &store.SubagentRun{ChildRunID: "c3", ChildSessionKey: "agent:main:subagent:c3", RequesterKey: "agent:main:main"}
	_, err = store.CreateChild(ctx, s, r3.ChildSessionKey, func(*store.Session) error { return boom }, r3)
	if err != boom {
		t.Errorf("CreateChild with failing fn = %v, want boom itself", err)
	}
	if _, err := s.GetSession(ctx, r3.ChildSessionKey); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("failing fn left a session: %v", err)
	}
	if _, err := s.GetSubagent(ctx, "c3"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("failing fn left a registry row: %v", err)
	}
}
