package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// TestFencedWrites: every write kind a node makes for a lane (append,
// finish with its outbox, session update, outbox item) lands while its
// claim holds, and is refused with ErrFenced, writing nothing, once the
// lease ended, once another node claimed the lane, and once the node
// claimed it again (an older epoch).
func TestFencedWrites(t *testing.T) {
	ctx := context.Background()
	a, b := liveNodes(t)
	const key = "agent:main:f"
	if err := a.CreateSession(ctx, &store.Session{Key: key, SessionID: "sid"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r1", "r2", "r3"} {
		queue(t, a, id, key)
	}
	owner, e1, err := a.ClaimLane(ctx, "a", key)
	if err != nil || owner != "a" || e1 == 0 {
		t.Fatalf("ClaimLane = %q, %d, %v", owner, e1, err)
	}
	fctx := store.WithFence(ctx, store.Fence{Node: "a", SessionKey: key, Epoch: e1})
	if _, _, err := a.StartRun(fctx, "r1", time.Now(), "sid", []store.Message{userMsg("hi")}); err != nil {
		t.Fatalf("fenced StartRun under a live claim: %v", err)
	}
	writes := func(ctx context.Context, s *Store, runID, tag string) map[string]error {
		out := map[string]error{}
		_, out["AppendMessages"] = s.AppendMessages(ctx, "sid", []store.Message{userMsg(tag)})
		_, out["UpdateSession"] = s.UpdateSession(ctx, key, false, func(x *store.Session) error { x.Label = tag; return nil })
		out["PutOutbox"] = s.PutOutbox(ctx, &store.OutboxItem{ID: "ob-" + tag, Kind: "announce", SessionKey: key})
		_, out["FinishRun"] = s.FinishRun(ctx, runID, store.RunResult{Status: store.RunOK,
			Outbox: []store.OutboxItem{{ID: "fin-" + tag, Kind: "announce", SessionKey: key}}})
		return out
	}
	for op, err := range writes(fctx, a, "r1", "live") {
		if err != nil {
			t.Fatalf("%s under a live claim: %v", op, err)
		}
	}
	n0, _ := a.CountMessages(ctx, "sid")

	refused := func(when string, ctx context.Context, runID string) {
		t.Helper()
		for op, err := range writes(ctx, a, runID, when) {
			if !errors.Is(err, store.ErrFenced) {
				t.Errorf("%s %s = %v, want ErrFenced", op, when, err)
			}
		}
		if n, _ := a.CountMessages(context.Background(), "sid"); n != n0 {
			t.Errorf("%s: a refused append wrote (%d messages, want %d)", when, n, n0)
		}
		if s, _ := a.GetSession(context.Background(), key); s.Label != "live" {
			t.Errorf("%s: a refused update wrote label %q", when, s.Label)
		}
		if r, _ := a.GetRun(context.Background(), runID); r.Status.Terminal() {
			t.Errorf("%s: a refused finish wrote status %s", when, r.Status)
		}
		for _, id := range []string{"ob-" + when, "fin-" + when} {
			if _, err := a.GetOutbox(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s: a refused outbox item %s exists (%v)", when, id, err)
			}
		}
	}

	// The same node claims the lane again (as after a fence): the old
	// epoch's writes are refused.
	if _, err := a.pool.Exec(ctx, `DELETE FROM lanes WHERE session_key = $1`, key); err != nil {
		t.Fatal(err)
	}
	_, e2, err := a.ClaimLane(ctx, "a", key)
	if err != nil || e2 <= e1 {
		t.Fatalf("second ClaimLane epoch %d after %d, %v", e2, e1, err)
	}
	if _, _, err := a.StartRun(store.WithFence(ctx, store.Fence{Node: "a", SessionKey: key, Epoch: e2}), "r2", time.Now(), "sid", nil); err != nil {
		t.Fatal(err)
	}
	refused("old-epoch", fctx, "r2")

	// The lease ends: even the current epoch is refused.
	f2 := store.WithFence(ctx, store.Fence{Node: "a", SessionKey: key, Epoch: e2})
	if _, err := a.pool.Exec(ctx, `UPDATE nodes SET lease_until = now() - interval '1 second' WHERE node_id = 'a'`); err != nil {
		t.Fatal(err)
	}
	refused("lease-ended", f2, "r2")

	// Another node claims the lane.
	if o, _, err := b.ClaimLane(ctx, "b", key); err != nil || o != "b" {
		t.Fatalf("b's claim = %q, %v", o, err)
	}
	if _, err := a.pool.Exec(ctx, `UPDATE nodes SET lease_until = now() + interval '1 minute' WHERE node_id = 'a'`); err != nil {
		t.Fatal(err)
	}
	refused("other-owner", f2, "r2")

	// The run a's refused finish left running is listed as running on a
	// (for a's sweep of orphaned runs), and on no other node.
	if runs, err := a.RunningOn(ctx, "a"); err != nil || len(runs) != 1 || runs[0].RunID != "r2" {
		t.Errorf("RunningOn(a) = %v, %v; want r2", runs, err)
	}
	if runs, err := a.RunningOn(ctx, "b"); err != nil || len(runs) != 0 {
		t.Errorf("RunningOn(b) = %v, %v; want none", runs, err)
	}
}

// TestFencedWriteHoldsOffAdoption: a fenced write in flight share-locks
// its lane, so an adoption of its node waits for it to commit: the write
// lands before the adoption, never after; the next write is refused.
func TestFencedWriteHoldsOffAdoption(t *testing.T) {
	ctx := context.Background()
	a, b := liveNodes(t)
	const key = "agent:main:h"
	if err := a.CreateSession(ctx, &store.Session{Key: key, SessionID: "sid"}); err != nil {
		t.Fatal(err)
	}
	_, epoch, err := a.ClaimLane(ctx, "a", key)
	if err != nil {
		t.Fatal(err)
	}
	fctx := store.WithFence(ctx, store.Fence{Node: "a", SessionKey: key, Epoch: epoch})
	inFn, release := make(chan struct{}), make(chan struct{})
	wrote := make(chan error, 1)
	go func() {
		_, err := a.UpdateSession(fctx, key, false, func(s *store.Session) error {
			close(inFn)
			<-release
			s.Label = "late"
			return nil
		})
		wrote <- err
	}()
	<-inFn
	if _, err := a.pool.Exec(ctx, `UPDATE nodes SET lease_until = now() - interval '1 second' WHERE node_id = 'a'`); err != nil {
		t.Fatal(err)
	}
	adopted := make(chan Adoption, 1)
	go func() {
		ad, err := b.AdoptDead(ctx, "interrupted")
		if err != nil {
			t.Error(err)
		}
		adopted <- ad
	}()
	// Wait until the adoption waits for the lane's lock.
	for {
		var waiting int
		if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case ad := <-adopted:
			t.Fatalf("adoption finished while a fenced write held the lane: %+v", ad)
		case <-time.After(5 * time.Millisecond):
		}
	}
	close(release)
	if err := <-wrote; err != nil {
		t.Fatalf("the write in flight: %v", err)
	}
	if ad := <-adopted; len(ad.Nodes) != 1 || ad.Lanes != 1 {
		t.Fatalf("adoption = %+v", ad)
	}
	if s, _ := a.GetSession(ctx, key); s.Label != "late" {
		t.Fatalf("label = %q", s.Label)
	}
	if _, err := a.AppendMessages(fctx, "sid", []store.Message{userMsg("after")}); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("append after the adoption = %v, want ErrFenced", err)
	}
}

// TestLaneRowsSpread: lane rows, which every fenced write share-locks,
// are spread over many pages (fillfactor), so that nodes' concurrent
// transactions do not queue on the few buffers a packed table has.
func TestLaneRowsSpread(t *testing.T) {
	ctx := context.Background()
	s := openNodes(t, 1)[0]
	s.SetNode("a")
	register(t, s, "a", time.Minute)
	const lanes = 100
	for i := range lanes {
		if _, _, err := s.ClaimLane(ctx, "a", fmt.Sprintf("agent:main:spread-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var pages int
	if err := s.pool.QueryRow(ctx, `SELECT count(DISTINCT (ctid::text::point)[0]) FROM lanes`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	// Packed, 100 rows fit in two pages; at fillfactor 10 a page takes
	// about ten.
	if pages < lanes/15 {
		t.Fatalf("%d lane rows on %d pages, want them spread over at least %d", lanes, pages, lanes/15)
	}
}
