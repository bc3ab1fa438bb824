package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// TestSessionMemo: a turn's admission (a context with a session check) is
// served the session row this store last read or wrote at a run's end; a
// run opened or created on that row when another writer (another node)
// changed it since is refused with ErrSessionMoved, writing nothing, and
// the next read is the database's.
func TestSessionMemo(t *testing.T) {
	ctx := context.Background()
	nodes := openNodes(t, 2)
	s, other := nodes[0], nodes[1]
	const key = "agent:main:memo"
	fctx, _ := claimedSession(t, s, key)
	admit := func() (context.Context, *store.Session) {
		t.Helper()
		actx := store.WithSessionCheck(fctx)
		sess, err := s.GetSession(actx, key)
		if err != nil {
			t.Fatal(err)
		}
		return actx, sess
	}
	served := func(actx context.Context) bool {
		_, ok := store.SessionCheckOf(actx).Version(key)
		return ok
	}
	open := func(actx context.Context, id string) error { return openTurn(actx, s, key, id) }
	exists := func(id string) bool {
		t.Helper()
		_, err := s.GetRun(ctx, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}

	// A plain read is the database's and is remembered; the admission's
	// next read is served from memory, and a run opens on it.
	if _, err := s.GetSession(ctx, key); err != nil {
		t.Fatal(err)
	}
	actx, _ := admit()
	if !served(actx) {
		t.Fatal("the admission's read after a plain read was not served from memory")
	}
	if err := open(actx, "r1"); err != nil {
		t.Fatalf("open on the current row: %v", err)
	}
	// The run's end remembers the row it wrote: the next admission sees
	// the end's tokens without a read.
	if _, _, err := s.EndRun(fctx, "r1", store.RunResult{Status: store.RunOK, Usage: transcript.Usage{Input: 7, Output: 3, TotalTokens: 10}}, "sid", []store.Message{reply("r1", "hello")}); err != nil {
		t.Fatal(err)
	}
	actx, sess := admit()
	if !served(actx) || sess.TotalTokens != 10 {
		t.Fatalf("admission after the end: served %v, total tokens %d; want served from memory with 10", served(actx), sess.TotalTokens)
	}
	if err := open(actx, "r2"); err != nil {
		t.Fatalf("open on the row the end wrote: %v", err)
	}
	if _, _, err := s.EndRun(fctx, "r2", store.RunResult{Status: store.RunOK}, "sid", []store.Message{reply("r2", "hello")}); err != nil {
		t.Fatal(err)
	}

	// Another node changes the session: the row served from memory is
	// stale, and the open is refused without writing.
	actx, sess = admit()
	if !served(actx) {
		t.Fatal("not served from memory")
	}
	if _, err := other.UpdateSession(ctx, key, false, func(x *store.Session) error {
		x.Model = "patched-elsewhere"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if sess.Model == "patched-elsewhere" {
		t.Fatal("memory already had the other node's write")
	}
	if err := open(actx, "r3"); !errors.Is(err, store.ErrSessionMoved) {
		t.Fatalf("open on a moved row = %v, want ErrSessionMoved", err)
	}
	if exists("r3") {
		t.Fatal("the refused open stored its run")
	}
	n, err := s.CountMessages(ctx, "sid")
	if err != nil || n != 4 {
		t.Fatalf("%d messages (%v) after the refused open, want 4", n, err)
	}
	// The admission's retry reads the database.
	actx, sess = admit()
	if served(actx) || sess.Model != "patched-elsewhere" {
		t.Fatalf("retry: served %v, model %q; want the database's row", served(actx), sess.Model)
	}
	if err := open(actx, "r3"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.EndRun(fctx, "r3", store.RunResult{Status: store.RunOK}, "sid", []store.Message{reply("r3", "hello")}); err != nil {
		t.Fatal(err)
	}

	// A queued run (CreateRun) is checked the same way.
	actx, _ = admit()
	if _, err := other.UpdateSession(ctx, key, false, func(x *store.Session) error {
		x.Label = "elsewhere"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	q := &store.Run{RunID: "q1", SessionKey: key, SessionID: "sid", Status: store.RunQueued, CreatedAt: time.Now(), Input: []byte(`{}`)}
	if err := s.CreateRun(actx, q); !errors.Is(err, store.ErrSessionMoved) || exists("q1") {
		t.Fatalf("CreateRun on a moved row = %v (stored %v), want ErrSessionMoved and nothing stored", err, exists("q1"))
	}
	actx, _ = admit()
	if err := s.CreateRun(actx, q); err != nil {
		t.Fatal(err)
	}

	// This store's own write of the session within the admission
	// (UpdateSession) needs no retry.
	actx, _ = admit()
	if _, err := s.UpdateSession(actx, key, false, func(x *store.Session) error {
		x.Label = "here"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if served(actx) {
		t.Fatal("the check still holds the row this store wrote over")
	}
	if err := open(actx, "r4"); err != nil {
		t.Fatalf("open after this store's own write: %v", err)
	}

	// Without a session check, reads are the database's.
	if _, err := other.UpdateSession(ctx, key, false, func(x *store.Session) error {
		x.Label = "again"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if sess, err := s.GetSession(ctx, key); err != nil || sess.Label != "again" {
		t.Fatalf("plain read = %+v, %v; want the database's row", sess, err)
	}
}

// TestSessionMemoFill: a read's row is not remembered over a row put or
// dropped after the read began (a write that may have come after it).
func TestSessionMemoFill(t *testing.T) {
	row := func(label string) *store.Session { return &store.Session{Key: "k", Label: label} }
	var c sessionMemo
	before := c.now()
	c.put(row("written"), 2)
	c.fill(before, row("read before the write"), 1)
	if s, ver, ok := c.get("k"); !ok || ver != 2 || s.Label != "written" {
		t.Fatalf("after a stale fill: %+v %d %v; want the written row", s, ver, ok)
	}
	c.fill(c.now(), row("read after"), 3)
	if s, ver, ok := c.get("k"); !ok || ver != 3 || s.Label != "read after" {
		t.Fatalf("after a fresh fill: %+v %d %v; want the read row", s, ver, ok)
	}
	before = c.now()
	c.drop("k")
	c.fill(before, row("read before the drop"), 3)
	if _, _, ok := c.get("k"); ok {
		t.Fatal("a read begun before a drop was remembered")
	}
	c.fill(c.now(), row("read after the drop"), 4)
	if s, _, ok := c.get("k"); !ok || s.Label != "read after the drop" {
		t.Fatalf("after the drop and a fresh fill: %+v %v", s, ok)
	}
	s, _, _ := c.get("k")
	s.Label = "changed by a caller"
	if s2, _, _ := c.get("k"); s2.Label != "read after the drop" {
		t.Fatal("get returned the remembered row, not a copy")
	}
}
