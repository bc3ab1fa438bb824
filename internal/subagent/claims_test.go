package subagent

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// heldClaims holds the manager's outbox updates (a batch's claims) until
// open is closed, counting those in flight.
type heldClaims struct {
	Store
	inFlight atomic.Int32
	open     chan struct{}
}

func (h *heldClaims) UpdateOutbox(ctx context.Context, id string, fn func(*store.OutboxItem) error) (*store.OutboxItem, error) {
	h.inFlight.Add(1)
	<-h.open
	return h.Store.UpdateOutbox(ctx, id, fn)
}

// TestBatchClaimsWrittenTogether: the claims of a batch of announces are
// written side by side (with SQLite's group commit, in one commit), not
// one after another, before the batch's one run; the requester gets both
// results in that run, once each.
func TestBatchClaimsWrittenTogether(t *testing.T) {
	held := &heldClaims{open: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(held.open) }) }
	e := newEnvWith(t, `{}`, func(c *Config) { held.Store = c.Store; c.Store = held })
	t.Cleanup(release)
	ctx := context.Background()
	const requester = "agent:main:main"
	want := putTwoAnnounces(t, e, requester)
	passed := make(chan struct{})
	go func() { defer close(passed); e.passLater() }()
	e.eventually("both claims in flight", func() bool { return held.inFlight.Load() == 2 })
	release()
	<-passed
	e.eventually("both announces settled", func() bool {
		items, err := e.store.ListOutbox(ctx, store.OutboxFilter{Kind: KindAnnounce, Statuses: []store.OutboxStatus{store.OutboxDelivered}})
		return err == nil && len(items) == 2
	})
	got := e.announces(requester)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("announces %q, want each result once: %q", got, want)
	}
	if n := held.inFlight.Load(); n != 2 {
		t.Errorf("%d claim writes, want 2", n)
	}
}

// countedClaims counts the manager's outbox updates (a batch's claims
// made on their own) and keeps the store's claims with a run
// (store.RunClaimer) visible.
type countedClaims struct {
	Store
	updates atomic.Int32
}

func (c *countedClaims) UpdateOutbox(ctx context.Context, id string, fn func(*store.OutboxItem) error) (*store.OutboxItem, error) {
	c.updates.Add(1)
	return c.Store.UpdateOutbox(ctx, id, fn)
}

func (c *countedClaims) ClaimsWithRuns() bool { return store.ClaimsWithRuns(c.Store) }

// TestBatchClaimedWithItsRun: on a store no other node delivers from, and
// that can (store.RunClaimer), a batch's claims are made in the
// transaction that stores the batch's run, not in writes of their own
// before it; each item is claimed for that run, which carries both, and
// the requester gets both results once each.
func TestBatchClaimedWithItsRun(t *testing.T) {
	counted := &countedClaims{}
	e := newEnvWith(t, `{}`, func(c *Config) { counted.Store = c.Store; c.Store = counted })
	ctx := context.Background()
	const requester = "agent:main:main"
	want := putTwoAnnounces(t, e, requester)
	e.passLater()
	e.eventually("both announces settled", func() bool {
		items, err := e.store.ListOutbox(ctx, store.OutboxFilter{Kind: KindAnnounce, Statuses: []store.OutboxStatus{store.OutboxDelivered}})
		return err == nil && len(items) == 2
	})
	if n := counted.updates.Load(); n != 0 {
		t.Errorf("%d claims written on their own, want 0 (with the batch's run)", n)
	}
	items, err := e.store.ListOutbox(ctx, store.OutboxFilter{Kind: KindAnnounce, Statuses: []store.OutboxStatus{store.OutboxDelivered}})
	if err != nil {
		t.Fatal(err)
	}
	batch := ""
	for _, it := range items {
		var a Announce
		if err := json.Unmarshal(it.Payload, &a); err != nil {
			t.Fatal(err)
		}
		if a.BatchRunID == "" || (batch != "" && a.BatchRunID != batch) {
			t.Fatalf("item %s claimed for %q, want both for one batch run", it.ID, a.BatchRunID)
		}
		batch = a.BatchRunID
	}
	run, err := e.store.GetRun(ctx, batch)
	if err != nil {
		t.Fatalf("the batch's run %q: %v", batch, err)
	}
	if !strings.Contains(string(run.Input), "result one") || !strings.Contains(string(run.Input), "result two") {
		t.Errorf("the batch's run does not carry both results: %s", run.Input)
	}
	got := e.announces(requester)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("announces %q, want each result once: %q", got, want)
	}
}

// putTwoAnnounces stores the announces of two children of requester, due
// together at the env's next passLater, and returns their messages.
func putTwoAnnounces(t *testing.T, e *env, requester string) []string {
	t.Helper()
	var want []string
	for _, n := range []string{"one", "two"} {
		a := Announce{ChildRunID: "child-run-" + n, ChildSessionKey: "agent:main:subagent:" + n, RequesterKey: requester,
			Status: "ok", Message: "result " + n}
		payload, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.store.PutOutbox(context.Background(), &store.OutboxItem{
			ID: announceID(a.ChildRunID, requester), Kind: KindAnnounce, SessionKey: requester, RunID: a.ChildRunID,
			Payload: payload, NextAttemptAt: time.Now().Add(30 * time.Second), // due together, at passLater
		}); err != nil {
			t.Fatal(err)
		}
		want = append(want, a.Message)
	}
	return want
}
