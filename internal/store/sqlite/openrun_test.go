package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// TestOpenRun: a run stored started and its input are one transaction;
// an id that exists is found by the insert, returned with ErrConflict, and
// nothing is written; a run that is not running is refused.
func TestOpenRun(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	const key = "agent:main:open"
	if err := s.CreateSession(ctx, &store.Session{Key: key, SessionID: "sid", AgentID: "main"}); err != nil {
		t.Fatal(err)
	}
	in := func(text string) []store.Message {
		m := transcript.NewUserMessage(text, time.Now())
		return []store.Message{{Entry: transcript.MessageEntry(m, time.Now()), Role: m.Role, RunID: "r1"}}
	}
	started := time.Now().Truncate(time.Millisecond)
	run := &store.Run{RunID: "r1", SessionKey: key, SessionID: "sid", AgentID: "main",
		Status: store.RunRunning, StartedAt: started, Input: []byte(`{"message":"hi"}`)}
	got, stored, err := s.OpenRun(ctx, run, in("hi"))
	if err != nil || got.Status != store.RunRunning || !got.StartedAt.Equal(started) || got.CreatedAt.IsZero() ||
		len(stored) != 1 || stored[0].Seq != 1 {
		t.Fatalf("OpenRun = %+v, %+v, %v", got, stored, err)
	}
	if read, err := s.GetRun(ctx, "r1"); err != nil || read.Status != store.RunRunning || !read.StartedAt.Equal(started) ||
		read.SessionID != "sid" || string(read.Input) != `{"message":"hi"}` {
		t.Fatalf("GetRun after OpenRun = %+v, %v", read, err)
	}

	// The same id again: the stored run comes back, nothing is appended.
	again := run.Clone()
	again.StartedAt = started.Add(time.Second)
	got, stored, err = s.OpenRun(ctx, again, in("hi again"))
	if !errors.Is(err, store.ErrConflict) || got == nil || got.RunID != "r1" || !got.StartedAt.Equal(started) || stored != nil {
		t.Fatalf("OpenRun of an existing id = %+v, %+v, %v; want the stored run and ErrConflict", got, stored, err)
	}
	if n, err := s.CountMessages(ctx, "sid"); err != nil || n != 1 {
		t.Fatalf("%d messages after a conflicting OpenRun (%v), want 1", n, err)
	}

	// Only a started run is opened.
	queued := &store.Run{RunID: "r2", SessionKey: key, SessionID: "sid", Status: store.RunQueued}
	if _, _, err := s.OpenRun(ctx, queued, nil); err == nil {
		t.Fatal("OpenRun of a queued run succeeded")
	}
	if _, err := s.GetRun(ctx, "r2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("refused run stored: %v", err)
	}
}
