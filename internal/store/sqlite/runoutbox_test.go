package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// TestRunOutboxStoredWithItsRun: an outbox item the context carries for a
// run (store.RunOutbox) is inserted in the transaction that stores that
// run, by OpenRun and by CreateRun, and marked stored; a run that is not
// stored (its id exists) stores no item and leaves it unmarked; an item
// for another run is not this run's; an item whose id exists is kept as
// it is, and the run is stored.
func TestRunOutboxStoredWithItsRun(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	const key = "agent:main:target"
	if err := s.CreateSession(ctx, &store.Session{Key: key, SessionID: "sid", AgentID: "main"}); err != nil {
		t.Fatal(err)
	}
	item := func(id, payload string) *store.OutboxItem {
		return &store.OutboxItem{ID: id, Kind: "a2a", SessionKey: "agent:main:sender", RunID: id, Payload: []byte(payload), NextAttemptAt: time.Now()}
	}
	started := func(id string) *store.Run {
		return &store.Run{RunID: id, SessionKey: key, SessionID: "sid", AgentID: "main", Status: store.RunRunning, StartedAt: time.Now()}
	}
	payloadOf := func(id string) string {
		t.Helper()
		it, err := s.GetOutbox(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return ""
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(it.Payload)
	}

	// OpenRun.
	o := &store.RunOutbox{RunID: "r1", Item: item("f1", `{"n":1}`)}
	if _, _, err := s.OpenRun(store.WithRunOutbox(ctx, o), started("r1"), nil); err != nil {
		t.Fatal(err)
	}
	if !o.Stored() || payloadOf("f1") != `{"n":1}` {
		t.Fatalf("OpenRun: stored %v, item %q; want the item stored with the run", o.Stored(), payloadOf("f1"))
	}

	// CreateRun (a queued run).
	o = &store.RunOutbox{RunID: "r2", Item: item("f2", `{"n":2}`)}
	if err := s.CreateRun(store.WithRunOutbox(ctx, o), &store.Run{RunID: "r2", SessionKey: key, AgentID: "main"}); err != nil {
		t.Fatal(err)
	}
	if !o.Stored() || payloadOf("f2") != `{"n":2}` {
		t.Fatalf("CreateRun: stored %v, item %q; want the item stored with the run", o.Stored(), payloadOf("f2"))
	}

	// A run id that exists: nothing is written.
	o = &store.RunOutbox{RunID: "r1", Item: item("f3", `{"n":3}`)}
	if _, _, err := s.OpenRun(store.WithRunOutbox(ctx, o), started("r1"), nil); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("OpenRun of an existing id: %v", err)
	}
	if err := s.CreateRun(store.WithRunOutbox(ctx, o), &store.Run{RunID: "r1", SessionKey: key}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("CreateRun of an existing id: %v", err)
	}
	if o.Stored() || payloadOf("f3") != "" {
		t.Fatalf("conflicting run: stored %v, item %q; want neither", o.Stored(), payloadOf("f3"))
	}

	// Another run's item.
	o = &store.RunOutbox{RunID: "other", Item: item("f4", `{"n":4}`)}
	if _, _, err := s.OpenRun(store.WithRunOutbox(ctx, o), started("r4"), nil); err != nil {
		t.Fatal(err)
	}
	if o.Stored() || payloadOf("f4") != "" {
		t.Fatalf("another run's item: stored %v, item %q; want neither", o.Stored(), payloadOf("f4"))
	}

	// An item that exists is kept.
	if err := s.PutOutbox(ctx, item("f5", `{"first":true}`)); err != nil {
		t.Fatal(err)
	}
	o = &store.RunOutbox{RunID: "r5", Item: item("f5", `{"first":false}`)}
	if _, _, err := s.OpenRun(store.WithRunOutbox(ctx, o), started("r5"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetRun(ctx, "r5"); err != nil || !o.Stored() || payloadOf("f5") != `{"first":true}` {
		t.Fatalf("existing item: run %v, stored %v, item %q; want the run, the first item kept", err, o.Stored(), payloadOf("f5"))
	}
}
