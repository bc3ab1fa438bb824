package subagent

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/switchboardhq/switchboard/internal/store"
)

// writeCounter is the manager's store that counts the writes a spawn makes
// of its child before the child's run: the session row and the registry
// row. It is no store.ChildCreator (the Store it embeds hides that).
type writeCounter struct {
	Store
	writes atomic.Int32
}

func (w *writeCounter) UpdateSession(ctx context.Context, key string, create bool, fn func(*store.Session) error) (*store.Session, error) {
	w.writes.Add(1)
	return w.Store.UpdateSession(ctx, key, create, fn)
}

func (w *writeCounter) PutSubagent(ctx context.Context, r *store.SubagentRun) error {
	w.writes.Add(1)
	return w.Store.PutSubagent(ctx, r)
}

// childCounter is a writeCounter that keeps the wrapped store's
// one-transaction CreateChild.
type childCounter struct{ *writeCounter }

func (c childCounter) CreateChild(ctx context.Context, key string, fn func(*store.Session) error, r *store.SubagentRun) (*store.Session, error) {
	c.writes.Add(1)
	return store.CreateChild(ctx, c.Store, key, fn, r)
}

// spawnWrites spawns one child through the manager's store st and checks
// that the child's session and record are stored and that it announces.
func spawnWrites(t *testing.T, wrap func(*writeCounter) Store) int32 {
	t.Helper()
	var wc *writeCounter
	e := newEnvWith(t, `{}`, func(c *Config) {
		wc = &writeCounter{Store: c.Store}
		c.Store = wrap(wc)
	})
	out := e.mustSpawn("agent:main:main", map[string]any{"task": "answer\n/reply done", "label": "one"})
	writes := wc.writes.Load()
	child, runID := out["childSessionKey"].(string), out["runId"].(string)
	ctx := context.Background()
	sess, err := e.store.GetSession(ctx, child)
	if err != nil || sess.SpawnedBy != "agent:main:main" || sess.SpawnDepth != 1 || sess.Label != "one" || sess.SessionID == "" {
		t.Errorf("child session = %+v, %v", sess, err)
	}
	if rec, err := e.store.GetSubagent(ctx, runID); err != nil || rec.ChildSessionKey != child {
		t.Errorf("child record = %+v, %v", rec, err)
	}
	e.eventually("the announce", func() bool { return len(e.announces("agent:main:main")) == 1 })
	return writes
}

// A spawn stores its child's session row and record with the child's
// run, in the commit that opens it (store.ChildOpen), where the manager's
// store can keep them in one commit and the runner's store can open a
// run with them: no write of their own.
func TestSpawnStoresChildWithItsRun(t *testing.T) {
	if n := spawnWrites(t, func(w *writeCounter) Store { return childCounter{w} }); n != 0 {
		t.Errorf("a spawn wrote its child in %d store writes of its own, want 0 (with the run's open)", n)
	}
}

// A store that is no ChildCreator gets the two writes, one after the
// other.
func TestSpawnWithoutChildCreator(t *testing.T) {
	if n := spawnWrites(t, func(w *writeCounter) Store { return w }); n != 2 {
		t.Errorf("a spawn wrote its child in %d store writes, want 2 (UpdateSession, PutSubagent)", n)
	}
}
