package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// TestOpenRunFenced: a run opened (stored started, with its input) under
// the live claim of its lane lands whole, running on the node; an id that
// exists comes back with ErrConflict and appends nothing. Without the
// lane's fence, and once the claim moved (a newer epoch, an ended lease,
// another node's claim), the open is refused with ErrFenced and writes
// nothing: neither the run nor its input.
func TestOpenRunFenced(t *testing.T) {
	ctx := context.Background()
	a, b := liveNodes(t)
	const key = "agent:main:open"
	if err := a.CreateSession(ctx, &store.Session{Key: key, SessionID: "sid", AgentID: "main"}); err != nil {
		t.Fatal(err)
	}
	_, e1, err := a.ClaimLane(ctx, "a", key)
	if err != nil {
		t.Fatal(err)
	}
	open := func(ctx context.Context, id string) (*store.Run, []store.Message, error) {
		msg := userMsg("input of " + id)
		msg.RunID = id
		return a.OpenRun(ctx, &store.Run{RunID: id, SessionKey: key, SessionID: "sid", AgentID: "main",
			Status: store.RunRunning, StartedAt: time.Now(), Input: []byte(`{"message":"hi"}`)}, []store.Message{msg})
	}
	fenced := func(when string, ctx context.Context, id string) {
		t.Helper()
		if _, _, err := open(ctx, id); !errors.Is(err, store.ErrFenced) {
			t.Errorf("OpenRun %s = %v, want ErrFenced", when, err)
		}
		if _, err := a.GetRun(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: the refused run %s was stored (%v)", when, id, err)
		}
		if n, err := a.CountMessages(context.Background(), "sid"); err != nil || n != 1 {
			t.Errorf("%s: %d messages after a refused open (%v), want 1", when, n, err)
		}
	}
	live := store.WithFence(ctx, store.Fence{Node: "a", SessionKey: key, Epoch: e1})

	run, stored, err := open(live, "r1")
	if err != nil || run.Status != store.RunRunning || run.StartedAt.IsZero() || len(stored) != 1 || stored[0].Seq != 1 {
		t.Fatalf("OpenRun under the live claim = %+v, %+v, %v", run, stored, err)
	}
	if runs, err := a.RunningOn(ctx, "a"); err != nil || len(runs) != 1 || runs[0].RunID != "r1" {
		t.Fatalf("RunningOn(a) = %v, %v; want r1 (the open records the node)", runs, err)
	}
	if got, _, err := open(live, "r1"); !errors.Is(err, store.ErrConflict) || got == nil || !got.StartedAt.Equal(run.StartedAt) {
		t.Fatalf("OpenRun of an existing id = %+v, %v; want the stored run and ErrConflict", got, err)
	}

	fenced("without a fence", ctx, "r2")
	fenced("with another lane's fence", store.WithFence(ctx, store.Fence{Node: "a", SessionKey: "agent:main:other", Epoch: e1}), "r2")

	// The lane is claimed again (by the same node): the old epoch is refused.
	if _, err := a.pool.Exec(ctx, `DELETE FROM lanes WHERE session_key = $1`, key); err != nil {
		t.Fatal(err)
	}
	_, e2, err := a.ClaimLane(ctx, "a", key)
	if err != nil || e2 <= e1 {
		t.Fatalf("second ClaimLane epoch %d after %d, %v", e2, e1, err)
	}
	fenced("with an old epoch", live, "r2")

	// The lease ends: the current epoch is refused too.
	current := store.WithFence(ctx, store.Fence{Node: "a", SessionKey: key, Epoch: e2})
	if _, err := a.pool.Exec(ctx, `UPDATE nodes SET lease_until = now() - interval '1 second' WHERE node_id = 'a'`); err != nil {
		t.Fatal(err)
	}
	fenced("after the lease ended", current, "r2")

	// Another node claims the lane; a's lease is live again.
	if o, _, err := b.ClaimLane(ctx, "b", key); err != nil || o != "b" {
		t.Fatalf("b's claim = %q, %v", o, err)
	}
	if _, err := a.pool.Exec(ctx, `UPDATE nodes SET lease_until = now() + interval '1 minute' WHERE node_id = 'a'`); err != nil {
		t.Fatal(err)
	}
	fenced("once another node holds the lane", current, "r2")
}

// TestOpenRunRemembersTail: an open after the session's last open or end
// on this store appends its input after the remembered tail, checked
// under the transcript's lock; when another write appended meanwhile the
// check fails, nothing of that attempt stays, and the open appends after
// the real tail. A repeated id and an old fence write nothing on that
// path either.
func TestOpenRunRemembersTail(t *testing.T) {
	ctx := context.Background()
	a := openNodes(t, 1)[0]
	a.SetNode("a")
	register(t, a, "a", time.Minute)
	const key = "agent:main:tail"
	if err := a.CreateSession(ctx, &store.Session{Key: key, SessionID: "sid", AgentID: "main"}); err != nil {
		t.Fatal(err)
	}
	_, epoch, err := a.ClaimLane(ctx, "a", key)
	if err != nil {
		t.Fatal(err)
	}
	fctx := store.WithFence(ctx, store.Fence{Node: "a", SessionKey: key, Epoch: epoch})
	open := func(ctx context.Context, id string) (store.Message, error) {
		msg := userMsg("input of " + id)
		msg.RunID = id
		_, stored, err := a.OpenRun(ctx, &store.Run{RunID: id, SessionKey: key, SessionID: "sid", AgentID: "main",
			Status: store.RunRunning, StartedAt: time.Now(), Input: []byte(`{}`)}, []store.Message{msg})
		if err != nil {
			return store.Message{}, err
		}
		if tl, ok := a.tails.get("sid"); !ok || tl != lastOf(stored) {
			t.Errorf("remembered tail after opening %s = %+v, %v; want %+v", id, tl, ok, lastOf(stored))
		}
		return stored[0], nil
	}
	parentIs := func(m store.Message, seq int64, parent string) {
		t.Helper()
		if m.Seq != seq || m.Entry.ParentID == nil || *m.Entry.ParentID != parent {
			t.Errorf("message %s: seq %d, parent %v; want %d after %s", m.Entry.ID, m.Seq, m.Entry.ParentID, seq, parent)
		}
	}
	first, err := open(fctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	second, err := open(fctx, "r2") // after the remembered tail
	if err != nil {
		t.Fatal(err)
	}
	parentIs(second, 2, first.Entry.ID)

	// Another write appends: the remembered tail is stale.
	other, err := a.AppendMessages(ctx, "sid", []store.Message{userMsg("from elsewhere")})
	if err != nil {
		t.Fatal(err)
	}
	third, err := open(fctx, "r3")
	if err != nil {
		t.Fatalf("open after a stale tail: %v", err)
	}
	parentIs(third, 4, other[0].Entry.ID)

	// An old fence, then a repeated id, with the tail remembered: nothing
	// is written.
	if _, err := a.pool.Exec(ctx, `UPDATE lanes SET epoch = epoch + 1 WHERE session_key = $1`, key); err != nil {
		t.Fatal(err)
	}
	if _, err := open(fctx, "r4"); !errors.Is(err, store.ErrFenced) {
		t.Errorf("open under an old epoch = %v, want ErrFenced", err)
	}
	fctx = store.WithFence(ctx, store.Fence{Node: "a", SessionKey: key, Epoch: epoch + 1})
	if _, err := open(fctx, "r3"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("repeated open = %v, want ErrConflict", err)
	}
	if _, err := a.GetRun(ctx, "r4"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the fenced run was stored (%v)", err)
	}
	if n, err := a.CountMessages(ctx, "sid"); err != nil || n != 4 {
		t.Errorf("%d messages (%v), want 4", n, err)
	}
}
