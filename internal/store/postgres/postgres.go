// Package postgres owns the PostgreSQL backend of the store: its schema, the
// versioned migrations and an implementation of store.Store on pgx v5
// (pgxpool), for deployments that keep their state in PostgreSQL, and for
// several gateway nodes sharing one database.
//
// Only the daemon, the migrate command (and tests) import it; everything
// else depends on the store.Store interface.
//
// # Concurrency
//
// Every write is one transaction at READ COMMITTED. Read-modify-write
// methods lock the row they change (SELECT … FOR UPDATE); appends to a
// transcript take a transaction-scoped advisory lock on the transcript id,
// so its sequence numbers and parent chain stay gapless when several
// writers, in this process or on other nodes, append at once. Unique
// indexes back every idempotency rule (run ids, outbox ids, PostMessage
// keys), whatever the interleaving.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

// Options configures Open. The zero value is a sensible default.
type Options struct {
	// MaxConns bounds the connection pool; 0 means 16 (or the URL's
	// pool_max_conns).
	MaxConns int
	// Now returns the current time; nil means time.Now. Stored times have
	// millisecond resolution.
	Now func() time.Time
	// NewEntryID returns a fresh transcript entry id; nil means a UUIDv7.
	NewEntryID func() string
}

// ErrNewerSchema is returned by Open when the database was migrated by a
// newer Switchboard than this binary.
var ErrNewerSchema = errors.New("database schema is newer than this binary")

// Store is a store.Store backed by a PostgreSQL database. It is safe for
// concurrent use, also by several processes on one database.
type Store struct {
	// Reads answers the reads both SQL stores share, on the pool.
	sqlstore.Reads

	pool   *pgxpool.Pool
	q      *statements // the statements built from sqlstore's (stmts)
	now    func() time.Time
	newID  func() string
	closed atomic.Bool

	node atomic.Pointer[string] // the gateway node this store acts for (SetNode)

	tails    tailCache      // transcript tails, for OpenRun
	sessions sessionMemo    // session rows, for a turn's admission (sessionMemo)
	ends     groupCommitter // runs' ends sent together (endGrouped)

	// renewMu guards renewConn, the connection lease renewals use
	// (RenewNode); nil until the first renewal and after a failed one.
	renewMu   sync.Mutex
	renewConn *pgx.Conn
}

var _ store.Store = (*Store)(nil)

// parseConfig parses a database URL (postgres://… or key=value pairs)
// without echoing it: a URL carries the password.
func parseConfig(url string) (*pgxpool.Config, error) {
	if url == "" {
		return nil, errors.New("empty database URL")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		if _, ok := errors.AsType[*pgconn.ParseConfigError](err); ok {
			return nil, errors.New("cannot parse the database URL (want postgres://user:password@host:port/database or key=value pairs)")
		}
		return nil, err
	}
	return cfg, nil
}

// Open connects to the database at url and brings its schema up to date.
// It fails with ErrNewerSchema if the database was written by a newer
// version.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	cfg, err := parseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres.Open: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = int32(opts.MaxConns)
	} else if cfg.MaxConns < 16 {
		cfg.MaxConns = 16
	}
	s := &Store{q: stmts.Get(), now: opts.Now, newID: opts.NewEntryID}
	s.Reads = sqlstore.NewReads(sqlstore.ReadConfig{Dialect: sqlstore.Postgres, Name: "postgres", DB: poolReads{s},
		NoRows: pgx.ErrNoRows, CheckOpen: s.checkOpen})
	if s.now == nil {
		s.now = time.Now
	}
	if s.newID == nil {
		s.newID = func() string { return uuid.Must(uuid.NewV7()).String() }
	}
	s.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres.Open: %w", err)
	}
	if err := s.pool.Ping(ctx); err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("postgres.Open: %w", err)
	}
	if err := migrate(ctx, s.pool, s.now); err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("postgres.Open: %w", err)
	}
	return s, nil
}

// Close closes the pool. A second call returns net.ErrClosed.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return net.ErrClosed
	}
	s.renewMu.Lock()
	s.closeRenewConn()
	s.renewMu.Unlock()
	s.pool.Close()
	return nil
}

// Ping checks that the database answers (readiness).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.checkOpen("Ping"); err != nil {
		return err
	}
	// A connection cut while idle fails once and leaves the pool. After a
	// database restart every idle connection is such a one: try each of
	// them, and then a fresh one, before calling the database unreachable.
	tries := int(s.pool.Stat().IdleConns()) + 1
	err := s.pool.Ping(ctx)
	for i := 1; err != nil && i < tries && ctx.Err() == nil; i++ {
		err = s.pool.Ping(ctx)
	}
	if err != nil {
		return fmt.Errorf("postgres.Ping: %w", err)
	}
	return nil
}

// checkOpen returns a wrapped net.ErrClosed after Close.
func (s *Store) checkOpen(op string) error {
	if s.closed.Load() {
		return fmt.Errorf("postgres.%s: %w", op, net.ErrClosed)
	}
	return nil
}

// writeTx runs fn in one transaction and commits it if fn returns nil.
// When ctx carries a store.Fence, the transaction first checks it (and
// locks the lane's row): a fence that no longer holds fails the
// transaction's first statement with store.ErrFenced, and no statement of
// fn is executed. BEGIN and the check travel with that first statement
// (see pipeTx).
func (s *Store) writeTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.inTx(ctx, fn)
}

// qLockTranscript takes the transaction-scoped advisory lock of a
// transcript: appends to one transcript are serialized across connections
// and nodes.
const qLockTranscript = `SELECT pg_advisory_xact_lock($1)`

// transcriptLockKey is the advisory lock key of transcript sessionID.
func transcriptLockKey(sessionID string) int64 {
	h := fnv.New64a()
	h.Write([]byte("transcript\x00" + sessionID))
	return int64(h.Sum64())
}

// lockTranscript takes the lock of transcript sessionID.
func lockTranscript(ctx context.Context, tx pgx.Tx, sessionID string) error {
	_, err := tx.Exec(ctx, qLockTranscript, transcriptLockKey(sessionID))
	return err
}

// nowTime is the current time truncated to the stored resolution.
func (s *Store) nowTime() time.Time { return s.now().Truncate(time.Millisecond) }

// toMs converts t to unix milliseconds; the zero time is 0.
func toMs(t time.Time) int64 { return sqlstore.ToMs(t) }

// poolReads runs sqlstore.Reads' statements on s's pool.
type poolReads struct{ s *Store }

func (r poolReads) Query(ctx context.Context, query string, args ...any) (sqlstore.Cursor, error) {
	return r.s.pool.Query(ctx, query, args...)
}

func (r poolReads) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Scanner {
	return r.s.pool.QueryRow(ctx, query, args...)
}

func (r poolReads) QueryRowKey(ctx context.Context, query, key string) sqlstore.Scanner {
	return r.s.pool.QueryRow(ctx, query, key)
}
