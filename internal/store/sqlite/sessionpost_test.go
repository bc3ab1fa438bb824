package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/store"
)

// PostToSession posts as PostMessage does and moves the session's
// updated_at forward in the same transaction (never back); a repeat with the
// same key posts nothing and moves nothing; the cached row stays what a
// read of the database returns.
func TestPostToSession(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	const key = "agent:main:main"
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	if _, err := s.UpdateSession(ctx, key, true, func(sess *store.Session) error {
		sess.SessionID, sess.AgentID, sess.CreatedAt, sess.UpdatedAt = "sid-1", "main", t0, t0
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSession(ctx, key); err != nil { // cached
		t.Fatal(err)
	}
	updatedAt := func() time.Time {
		t.Helper()
		sess, err := s.GetSession(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return sess.UpdatedAt
	}
	at := t0.Add(time.Minute)
	first, posted, err := s.PostToSession(ctx, key, "sid-1", "k1", chatMsg("assistant", "announce", "p-1"), at)
	if err != nil || !posted {
		t.Fatalf("PostToSession = %v, %v", posted, err)
	}
	if got := updatedAt(); !got.Equal(at) {
		t.Errorf("updated_at = %v, want %v", got, at)
	}
	cached, _ := s.sessions.get(key)
	s.sessions.drop(key)
	if read, err := s.GetSession(ctx, key); err != nil || cmp.Diff(read, cached) != "" {
		t.Errorf("cached row differs from the stored one: %v\n%s", err, cmp.Diff(read, cached))
	}

	again, posted, err := s.PostToSession(ctx, key, "sid-1", "k1", chatMsg("assistant", "announce again", "p-2"), at.Add(time.Minute))
	if err != nil || posted || again.Entry.ID != first.Entry.ID {
		t.Fatalf("repeat = %v, %v, %v; want the first message, not posted", again.Entry.ID, posted, err)
	}
	if got := updatedAt(); !got.Equal(at) {
		t.Errorf("a repeat moved updated_at to %v", got)
	}
	if _, _, err := s.PostToSession(ctx, key, "sid-1", "k2", chatMsg("assistant", "late", "p-3"), t0); err != nil {
		t.Fatal(err)
	}
	if got := updatedAt(); !got.Equal(at) {
		t.Errorf("an older time moved updated_at back to %v", got)
	}
	if n, err := s.CountMessages(ctx, "sid-1"); err != nil || n != 2 {
		t.Errorf("transcript has %d messages (%v), want 2", n, err)
	}
	// A session row that is gone is not an error: the message stands.
	if _, posted, err := s.PostToSession(ctx, "agent:main:gone", "sid-gone", "", chatMsg("assistant", "x", "p-4"), at); err != nil || !posted {
		t.Errorf("post to a transcript without a session row = %v, %v", posted, err)
	}
	if _, _, err := s.PostToSession(ctx, "", "sid-1", "", chatMsg("assistant", "x", "p-5"), at); err == nil {
		t.Error("an empty session key was accepted")
	}
}

// An outbox item the context carries to settle with a post
// (store.PostSettle) takes its outcome in the post's transaction, and is
// marked stored; a repeated post settles nothing; an item that is gone
// does not refuse the post; a refused outcome refuses it.
func TestPostSettlesItsItem(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	const key = "agent:main:t"
	if _, err := s.UpdateSession(ctx, key, true, func(sess *store.Session) error {
		sess.SessionID, sess.AgentID = "sid-t", "main"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a2a:1", "a2a:2"} {
		if err := s.PutOutbox(ctx, &store.OutboxItem{ID: id, Kind: "a2a", SessionKey: "agent:main:req", Payload: []byte(`{}`), NextAttemptAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	deliver := func(x *store.OutboxItem) error {
		x.Status, x.Attempts = store.OutboxDelivered, x.Attempts+1
		return nil
	}
	statusOf := func(id string) store.OutboxStatus {
		t.Helper()
		it, err := s.GetOutbox(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return it.Status
	}
	now := time.Now()
	ps := &store.PostSettle{OutboxChange: store.OutboxChange{ID: "a2a:1", Apply: deliver}}
	if _, posted, err := s.PostToSession(store.WithPostSettle(ctx, ps), key, "sid-t", "k1", chatMsg("assistant", "announce", "p-1"), now); err != nil || !posted {
		t.Fatalf("post = %v, %v", posted, err)
	}
	if !ps.Stored() || statusOf("a2a:1") != store.OutboxDelivered {
		t.Fatalf("settled with the post: stored %v, item %s", ps.Stored(), statusOf("a2a:1"))
	}
	ps = &store.PostSettle{OutboxChange: store.OutboxChange{ID: "a2a:2", Apply: deliver}}
	if _, posted, err := s.PostToSession(store.WithPostSettle(ctx, ps), key, "sid-t", "k1", chatMsg("assistant", "announce", "p-2"), now); err != nil || posted {
		t.Fatalf("repeat = %v, %v", posted, err)
	}
	if ps.Stored() || statusOf("a2a:2") != store.OutboxPending {
		t.Fatalf("a repeat settled: stored %v, item %s", ps.Stored(), statusOf("a2a:2"))
	}
	ps = &store.PostSettle{OutboxChange: store.OutboxChange{ID: "a2a:gone", Apply: deliver}}
	if _, posted, err := s.PostToSession(store.WithPostSettle(ctx, ps), key, "sid-t", "k3", chatMsg("assistant", "x", "p-3"), now); err != nil || !posted || ps.Stored() {
		t.Fatalf("post with an item that is gone = %v, %v, stored %v", posted, err, ps.Stored())
	}
	refused := errors.New("refused")
	ps = &store.PostSettle{OutboxChange: store.OutboxChange{ID: "a2a:2", Apply: func(*store.OutboxItem) error { return refused }}}
	if _, _, err := s.PostToSession(store.WithPostSettle(ctx, ps), key, "sid-t", "k4", chatMsg("assistant", "y", "p-4"), now); !errors.Is(err, refused) {
		t.Fatalf("post with a refused outcome = %v, want its error", err)
	}
	if n, err := s.CountMessages(ctx, "sid-t"); err != nil || n != 2 {
		t.Errorf("transcript has %d messages (%v), want 2 (the refused post not stored)", n, err)
	}
}
