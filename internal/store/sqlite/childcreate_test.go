package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/store"
)

// CreateChild leaves the child's row cached as a read of the database
// returns it, so the child's run does not read it again.
func TestCreateChildCachesTheStoredRow(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	const key = "agent:main:subagent:c1"
	at := time.Date(2026, 11, 28, 12, 0, 0, 123456789, time.UTC) // finer than the stored milliseconds
	row := &store.SubagentRun{ChildRunID: "c1", ChildSessionKey: key, RequesterKey: "agent:main:main"}
	if _, err := s.CreateChild(ctx, key, func(sess *store.Session) error {
		sess.SessionID, sess.AgentID, sess.SpawnedBy, sess.SpawnDepth = "s-c1", "main", "agent:main:main", 1
		sess.Label, sess.Model, sess.ThinkingLevel = "kid", "scripted/echo-1", "low"
		sess.CreatedAt, sess.UpdatedAt = at, at
		return nil
	}, row); err != nil {
		t.Fatalf("CreateChild: %v", err)
	}
	cached, ok := s.sessions.get(key)
	if !ok {
		t.Fatal("the child's row is not cached after CreateChild")
	}
	s.sessions.drop(key)
	read, err := s.GetSession(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(read, cached); diff != "" {
		t.Errorf("cached row differs from the stored one (-read +cached):\n%s", diff)
	}
}

// OpenChildRun stores the child's session and record with its run's open
// in one transaction, leaves the session row cached as a read returns
// it, and writes nothing of the three when any is refused.
func TestOpenChildRun(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	at := time.Date(2026, 11, 28, 12, 0, 0, 123456789, time.UTC)
	child := func(n string) (*store.ChildOpen, *store.Run) {
		key := "agent:main:subagent:" + n
		c := &store.ChildOpen{
			Session: &store.Session{Key: key, SessionID: "s-" + n, AgentID: "main", SpawnedBy: "agent:main:main", SpawnDepth: 1, CreatedAt: at, UpdatedAt: at},
			Row:     &store.SubagentRun{ChildRunID: "r-" + n, ChildSessionKey: key, RequesterKey: "agent:main:main"},
		}
		return c, &store.Run{RunID: "r-" + n, SessionKey: key, SessionID: "s-" + n, AgentID: "main", Status: store.RunRunning, StartedAt: at}
	}
	msg := func(sid string) []store.Message {
		m := chatMsg("user", "the task", "r-"+sid[2:])
		m.SessionID = sid
		return []store.Message{m}
	}
	c, run := child("c1")
	if _, _, err := s.OpenChildRun(ctx, c, run, msg("s-c1")); err != nil {
		t.Fatalf("OpenChildRun: %v", err)
	}
	cached, ok := s.sessions.get(c.Session.Key)
	if !ok {
		t.Fatal("the child's row is not cached after OpenChildRun")
	}
	s.sessions.drop(c.Session.Key)
	read, err := s.GetSession(ctx, c.Session.Key)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(read, cached); diff != "" {
		t.Errorf("cached row differs from the stored one (-read +cached):\n%s", diff)
	}
	if _, err := s.GetSubagent(ctx, "r-c1"); err != nil {
		t.Errorf("record: %v", err)
	}
	if got, err := s.GetRun(ctx, "r-c1"); err != nil || got.Status != store.RunRunning {
		t.Errorf("run = %+v, %v", got, err)
	}

	// A second child whose record's id is taken: nothing is written.
	c2, run2 := child("c2")
	c2.Row.ChildRunID = "r-c1"
	if _, _, err := s.OpenChildRun(ctx, c2, run2, msg("s-c2")); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("OpenChildRun with a taken record id: %v, want ErrConflict", err)
	}
	if _, err := s.GetSession(ctx, c2.Session.Key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("refused child's session: %v, want ErrNotFound", err)
	}
	if _, err := s.GetRun(ctx, "r-c2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("refused child's run: %v, want ErrNotFound", err)
	}
}
