package sqlite

import (
	"context"
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
