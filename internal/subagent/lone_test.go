package subagent

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// TestLoneAnnounceIsNotClaimed: on a store no other node delivers from, a
// lone announce is delivered under its own run id with no claim written
// (one commit less before the requester's turn); when its settle is lost
// and it is taken again together with another announce, it is settled,
// not posted a second time.
func TestLoneAnnounceIsNotClaimed(t *testing.T) {
	e := newEnv(t, `{}`)
	ctx := context.Background()
	const requester = "agent:main:main"
	e.mustSpawn(requester, map[string]any{"task": "x\n/reply the first result"})
	e.eventually("the announce settled", func() bool {
		it, _, ok := e.announceItem()
		return ok && it.Status == store.OutboxDelivered
	})
	it, a, _ := e.announceItem()
	if a.BatchRunID != "" || a.ClaimedBy != "" {
		t.Fatalf("lone announce claimed for %q by %q", a.BatchRunID, a.ClaimedBy)
	}
	if _, err := e.store.GetRun(ctx, announceRunID(a.ChildSessionKey, a.ChildRunID)); err != nil {
		t.Fatalf("the lone announce's own run: %v", err)
	}
	if got := e.announces(requester); len(got) != 1 || got[0] != a.Message {
		t.Fatalf("announces %q, want the first result once", got)
	}

	// The settle is lost (as in a crash just before it), and another
	// announce for the same requester is due: one batch takes both.
	if _, err := e.store.UpdateOutbox(ctx, it.ID, func(x *store.OutboxItem) error {
		x.Status, x.NextAttemptAt = store.OutboxPending, time.Now()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	second := Announce{ChildRunID: "second-child-run", ChildSessionKey: "agent:main:subagent:second", RequesterKey: requester,
		Status: "ok", Message: "the second result"}
	payload, err := json.Marshal(second)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.store.PutOutbox(ctx, &store.OutboxItem{
		ID: announceID(second.ChildRunID, requester), Kind: KindAnnounce, SessionKey: requester, RunID: second.ChildRunID,
		Payload: payload, NextAttemptAt: time.Now(),
	}); err != nil {
		t.Fatal(err)
	}
	e.eventually("both announces settled", func() bool {
		e.passLater()
		items, err := e.store.ListOutbox(ctx, store.OutboxFilter{Kind: KindAnnounce, Statuses: []store.OutboxStatus{store.OutboxDelivered}})
		return err == nil && len(items) == 2
	})
	got := e.announces(requester)
	slices.Sort(got)
	want := []string{a.Message, second.Message}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("announces %q, want each result once: %q", got, want)
	}
}
