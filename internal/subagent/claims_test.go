package subagent

import (
	"context"
	"encoding/json"
	"slices"
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
	var want []string
	for _, n := range []string{"one", "two"} {
		a := Announce{ChildRunID: "child-run-" + n, ChildSessionKey: "agent:main:subagent:" + n, RequesterKey: requester,
			Status: "ok", Message: "result " + n}
		payload, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.store.PutOutbox(ctx, &store.OutboxItem{
			ID: announceID(a.ChildRunID, requester), Kind: KindAnnounce, SessionKey: requester, RunID: a.ChildRunID,
			Payload: payload, NextAttemptAt: time.Now().Add(30 * time.Second), // due together, at passLater
		}); err != nil {
			t.Fatal(err)
		}
		want = append(want, a.Message)
	}
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
