package sqlite

import (
	"context"
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
