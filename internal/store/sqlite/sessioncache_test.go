package sqlite

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// TestSessionCacheFollowsWrites reads a session between every kind of
// write that changes session rows: each read sees the write before it.
func TestSessionCacheFollowsWrites(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	const key = "agent:main:main"
	get := func() *store.Session {
		t.Helper()
		sess, err := s.GetSession(ctx, key)
		if err != nil {
			t.Fatalf("GetSession: %v", err)
		}
		return sess
	}
	if err := s.CreateSession(ctx, &store.Session{Key: key, SessionID: "s1", AgentID: "main"}); err != nil {
		t.Fatal(err)
	}
	if got := get(); got.SessionID != "s1" {
		t.Fatalf("after create: %+v", got)
	}
	// A caller changing its copy changes nothing cached.
	mine := get()
	mine.Model = "mutated"
	if got := get(); got.Model != "" {
		t.Fatalf("a returned copy leaked into the cache: model %q", got.Model)
	}

	if _, err := s.UpdateSession(ctx, key, false, func(sess *store.Session) error { sess.Model = "m2"; return nil }); err != nil {
		t.Fatal(err)
	}
	if got := get(); got.Model != "m2" {
		t.Fatalf("after update: model %q", got.Model)
	}

	// FinishRun adds the run's usage to the session.
	if err := s.CreateRun(ctx, &store.Run{RunID: "r1", SessionKey: key, AgentID: "main"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.StartRun(ctx, "r1", time.Now(), "s1", nil); err != nil {
		t.Fatal(err)
	}
	get()
	if _, err := s.FinishRun(ctx, "r1", store.RunResult{Status: store.RunOK, Usage: transcript.Usage{Input: 7, Output: 3, TotalTokens: 10}}); err != nil {
		t.Fatal(err)
	}
	cached := get()
	if cached.TotalTokens != 10 || cached.InputTokens != 7 {
		t.Fatalf("after finish: tokens %d/%d", cached.InputTokens, cached.TotalTokens)
	}
	// The row the finish cached is the row a read returns.
	s.sessions.drop(key)
	if read := get(); !reflect.DeepEqual(cached, read) {
		t.Fatalf("cached row %+v differs from the stored one %+v", cached, read)
	}

	// AbortInterrupted marks the sessions of running runs.
	if err := s.CreateRun(ctx, &store.Run{RunID: "r2", SessionKey: key, AgentID: "main"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.StartRun(ctx, "r2", time.Now(), "s1", nil); err != nil {
		t.Fatal(err)
	}
	if get().AbortedLastRun {
		t.Fatal("aborted before AbortInterrupted")
	}
	if _, err := s.AbortInterrupted(ctx, time.Time{}, "interrupted"); err != nil {
		t.Fatal(err)
	}
	if !get().AbortedLastRun {
		t.Fatal("after AbortInterrupted: AbortedLastRun not seen")
	}

	if err := s.DeleteSession(ctx, key, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSession(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after delete: %v, want ErrNotFound", err)
	}
}

// TestSessionCacheRefusesReadsOverlappingADrop: a row read before a write
// committed is not cached once the write dropped its key.
func TestSessionCacheRefusesReadsOverlappingADrop(t *testing.T) {
	var c sessionCache
	gen := c.generation()
	c.drop("k") // a write committed while the read ran
	c.fill(gen, &store.Session{Key: "k", Model: "old"})
	if _, ok := c.get("k"); ok {
		t.Fatal("a read that overlapped a drop was cached")
	}
	gen = c.generation()
	c.fill(gen, &store.Session{Key: "k", Model: "new"})
	if got, ok := c.get("k"); !ok || got.Model != "new" {
		t.Fatalf("get = %+v, %v; want the filled row", got, ok)
	}
	c.drop("")
	if _, ok := c.get("k"); ok {
		t.Fatal("drop of every row left k")
	}
}

// TestEndRunIsOneTransaction: EndRun stores the run's last messages and
// its end together; when the end is refused (the run is already over),
// the messages are not stored either.
func TestEndRunIsOneTransaction(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	const key = "agent:main:main"
	if err := s.CreateSession(ctx, &store.Session{Key: key, SessionID: "s1", AgentID: "main"}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRun(ctx, &store.Run{RunID: "r1", SessionKey: key, AgentID: "main"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.StartRun(ctx, "r1", time.Now(), "s1", nil); err != nil {
		t.Fatal(err)
	}
	reply := func() []store.Message {
		m := transcript.NewAssistantMessage([]transcript.Block{transcript.TextBlock("done")}, time.Now())
		return []store.Message{{Entry: transcript.MessageEntry(m, time.Now()), RunID: "r1"}}
	}
	run, stored, err := s.EndRun(ctx, "r1", store.RunResult{Status: store.RunOK, Usage: transcript.Usage{TotalTokens: 4}}, "s1", reply())
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.RunOK || len(stored) != 1 || stored[0].Seq != 1 {
		t.Fatalf("EndRun = %+v, %+v", run, stored)
	}
	if _, _, err := s.EndRun(ctx, "r1", store.RunResult{Status: store.RunOK}, "s1", reply()); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second EndRun: %v, want ErrConflict", err)
	}
	if n, err := s.CountMessages(ctx, "s1"); err != nil || n != 1 {
		t.Fatalf("transcript has %d entries (%v) after a refused end, want 1", n, err)
	}
	if got, err := s.GetSession(ctx, key); err != nil || got.TotalTokens != 4 {
		t.Fatalf("session after the end: %+v, %v", got, err)
	}
}
