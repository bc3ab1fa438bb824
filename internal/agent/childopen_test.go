package agent

import (
	"context"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
)

// enqueueChild queues a spawned child's first run with the child's rows
// in its context (store.ChildOpen), as a spawn's admission does, waits
// for its end, and returns how often the rows were stored on their own
// (ChildOpen.Create).
func enqueueChild(t *testing.T, wrap func(Store) Store, mode string) int {
	t.Helper()
	var st *store.Session
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		return textReply("child done"), nil
	}, func(cfg *Config) {
		if wrap != nil {
			cfg.Store = wrap(cfg.Store)
		}
	})
	const key, runID = "agent:main:subagent:c1", "c1-run"
	now := time.Now()
	st = &store.Session{Key: key, SessionID: "sid-c1", AgentID: "main", SpawnedBy: "agent:main:main", SpawnDepth: 1, CreatedAt: now, UpdatedAt: now}
	creates := 0
	c := &store.ChildOpen{Session: st, Row: &store.SubagentRun{ChildRunID: runID, ChildSessionKey: key, RequesterKey: "agent:main:main", Payload: []byte(`{}`), CreatedAt: now}}
	c.Create = func(ctx context.Context) error {
		creates++
		_, err := h.store.CreateChild(ctx, key, func(s *store.Session) error {
			*s = *st.Clone()
			return nil
		}, c.Row)
		return err
	}
	ctx := store.WithChildOpen(context.Background(), c)
	if _, err := h.runner.Enqueue(ctx, Input{RunID: runID, SessionKey: key, AgentID: "main", Message: "the task", Session: st.Clone(), QueueMode: mode}); err != nil {
		t.Fatal(err)
	}
	if got := h.wait(runID); got.Status != store.RunOK || got.SessionID != "sid-c1" {
		t.Fatalf("child run ended %s in session %q", got.Status, got.SessionID)
	}
	bg := context.Background()
	if sess, err := h.store.GetSession(bg, key); err != nil || sess.SessionID != "sid-c1" || sess.SpawnedBy != "agent:main:main" || sess.SpawnDepth != 1 {
		t.Fatalf("child session = %+v, %v", sess, err)
	}
	if rec, err := h.store.GetSubagent(bg, runID); err != nil || rec.ChildSessionKey != key {
		t.Fatalf("child record = %+v, %v", rec, err)
	}
	if msgs := h.transcript(key); len(msgs) != 2 || msgs[1].Entry.Message.Content.Text() != "child done" {
		t.Fatalf("child transcript = %+v", msgs)
	}
	return creates
}

// TestChildStoredWithItsRun: a spawned child's session and record go in
// the commit that opens its first run where the store can
// (store.ChildRunOpener), not in a commit of their own before it.
func TestChildStoredWithItsRun(t *testing.T) {
	if n := enqueueChild(t, nil, ""); n != 0 {
		t.Errorf("the child's rows were stored on their own %d times, want 0 (with the run's open)", n)
	}
}

// TestChildStoredBeforeItsRun: a store that cannot store them with the
// run's open gets them on their own, once, before the run.
func TestChildStoredBeforeItsRun(t *testing.T) {
	if n := enqueueChild(t, func(s Store) Store { return &sweepingStore{Store: s} }, ""); n != 1 {
		t.Errorf("the child's rows were stored on their own %d times, want 1", n)
	}
}

// TestChildStoredBeforeItsQueuedRun: a run that is queued rather than
// opened (a collect-mode input) has the child's rows stored on their own,
// once, before it is.
func TestChildStoredBeforeItsQueuedRun(t *testing.T) {
	if n := enqueueChild(t, nil, ModeCollect); n != 1 {
		t.Errorf("the child's rows were stored on their own %d times, want 1", n)
	}
}
