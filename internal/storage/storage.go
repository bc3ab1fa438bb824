// Package storage owns opening the configured store — SQLite in the state
// dir, or PostgreSQL shared by gateway nodes — and "switchboard migrate",
// which copies SQLite state into PostgreSQL. The daemon, doctor and the
// command import it.
package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/postgres"
	"github.com/switchboardhq/switchboard/internal/store/sqlite"
)

// DBFile is the SQLite database file name inside the state dir.
const DBFile = "switchboard.db"

// Opened is the store the gateway serves from.
type Opened struct {
	store.Store
	// Name is what the sessions methods report as "path": the SQLite
	// file, or the PostgreSQL URL without its password.
	Name string
	// Ping checks that the database answers (readiness); nil when the
	// store is a local file.
	Ping func(context.Context) error
}

// Open opens the configured backend: SQLite in the state dir, or
// PostgreSQL, which this gateway may share with other gateway nodes.
func Open(ctx context.Context, ss settings.StorageSettings, stateDir string) (*Opened, error) {
	if ss.Backend != settings.BackendPostgres {
		path := filepath.Join(stateDir, DBFile)
		st, err := sqlite.Open(ctx, path, sqlite.Options{})
		if err != nil {
			return nil, fmt.Errorf("storage: %w", err)
		}
		return &Opened{Store: st, Name: path}, nil
	}
	st, err := postgres.Open(ctx, ss.URL, postgres.Options{})
	if err != nil {
		return nil, fmt.Errorf("storage: %s: %w", ss.Display, err)
	}
	return &Opened{Store: st, Name: ss.Display, Ping: st.Ping}, nil
}

// EndRun keeps the opened store's one-transaction end of a run
// (store.RunEnder) visible through Opened, which the runner is handed:
// without it the runner appended a turn's reply and finished the run in
// two commits.
func (o *Opened) EndRun(ctx context.Context, runID string, res store.RunResult, sessionID string, msgs []store.Message) (*store.Run, []store.Message, error) {
	return store.EndRun(ctx, o.Store, runID, res, sessionID, msgs)
}

// OpenRun keeps the opened store's one-transaction queue and start of a
// run (store.RunOpener) visible through Opened.
func (o *Opened) OpenRun(ctx context.Context, r *store.Run, msgs []store.Message) (*store.Run, []store.Message, error) {
	return store.OpenRun(ctx, o.Store, r, msgs)
}

// OpenChildRun keeps the opened store's one-transaction spawn and child
// run (store.ChildRunOpener) visible through Opened.
func (o *Opened) OpenChildRun(ctx context.Context, c *store.ChildOpen, r *store.Run, msgs []store.Message) (*store.Run, []store.Message, error) {
	return store.OpenChildRun(ctx, o.Store, c, r, msgs)
}

// CreateChild keeps the opened store's one-transaction spawn
// (store.ChildCreator) visible through Opened.
func (o *Opened) CreateChild(ctx context.Context, key string, fn func(*store.Session) error, r *store.SubagentRun) (*store.Session, error) {
	return store.CreateChild(ctx, o.Store, key, fn, r)
}

// PostToSession keeps the opened store's one-transaction post
// (store.SessionPoster) visible through Opened: without it an announce's
// post took two commits, and its flow's settle a third.
func (o *Opened) PostToSession(ctx context.Context, key, sessionID, idemKey string, msg store.Message, at time.Time) (store.Message, bool, error) {
	return store.PostToSession(ctx, o.Store, key, sessionID, idemKey, msg, at)
}

// ClaimsWithRuns keeps the opened store's claims in a run's transaction
// (store.RunClaimer) visible through Opened.
func (o *Opened) ClaimsWithRuns() bool { return store.ClaimsWithRuns(o.Store) }
