// Package sqlite owns the SQLite backend of the store: the schema, its
// versioned migrations and an implementation of store.Store on top of
// modernc.org/sqlite (pure Go, no cgo).
//
// Only the daemon (and tests) import it; everything else depends on the
// store.Store interface.
//
// # Connections
//
// A Store holds two connection pools to one database file in WAL mode:
//
//   - a writer: one connection (MaxOpenConns=1) that every write transaction
//     goes through, each begun with BEGIN IMMEDIATE. Writers therefore queue
//     in Go rather than spin on SQLITE_BUSY, and read-modify-write sequences
//     (AppendMessages assigning seq, UpdateSession, FinishRun, UpdateOutbox)
//     are serialized. Once Open has migrated the schema through
//     database/sql, the group committer holds that connection and runs the
//     transactions on it without database/sql (see committer, wtx).
//   - readers: a bounded pool (Options.Readers, default 4) of query_only
//     connections. WAL lets them read a consistent snapshot while the writer
//     commits.
//
// The writer remembers what it wrote that a later write would read back
// (each transcript's tail, the runs OpenRun stored and their message
// counts; see writeMemo), so a warm chat turn's commits read no row. A
// run's open can leave its transaction open for the run's end to join
// (store.Linger, lingerTx): with a quick model a warm turn is one commit.
//
// A third connection, the checkpointer's, copies the WAL back into the
// database file in the background (every 400 write bodies, or a second
// after the first body since the last), so that the writer's commits need
// not wait for a checkpoint's fsyncs; the writer itself only finishes a
// checkpoint when the WAL has grown past 6,000 pages under a steady stream
// of commits (see checkpointer).
//
// # Durability
//
// By default the writer runs with PRAGMA synchronous=NORMAL. In WAL mode this
// never corrupts the database and loses nothing when the process crashes, but
// the last transactions committed before a power loss or an operating system
// crash may be rolled back, because the WAL is only fsynced at checkpoints:
// at most about a second's, or 400 bodies' under a heavy load.
// Options.FullSync selects synchronous=FULL, which fsyncs the WAL on every
// commit: durable across power loss, at the cost of one fsync per write.
package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"modernc.org/sqlite"

	"github.com/switchboardhq/switchboard/internal/lazy"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlite/walvfs"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

// pageSize is the page size of the databases this package creates (the
// schema image's; a database keeps the size it was created with). A warm
// chat turn changes about 15 b-tree pages, each a leaf or a row that
// changed by a few hundred bytes, and a commit writes every changed page
// whole to the WAL; the checkpoint copies it again. With SQLite's default
// of 4 KiB a turn wrote 62 KB twice; with 1 KiB it writes 19 KB (a few more
// pages, 18.3 a turn), and the kernel dirties a third of the page-cache
// pages. The store's part of a warm turn took 96–97 µs of CPU instead of
// 114–122 (BenchmarkWarmTurn), and the reads measured were as fast or
// faster (docs/benchmarks.md, twentieth round).
// A row larger than about a kilobyte spills into overflow pages, which
// only costs a longer chain to read.
const pageSize = 1024

// SQLite's own page caches, per connection. Its default (2,000 KiB each)
// kept a copy of most of a small database in every connection, in
// anonymous memory: 3.5 MiB of the gateway's resident set after 1,000
// sessions. A page not cached is read from the kernel's page cache, which
// holds the file once for all connections; the writer keeps more for the
// b-tree pages its appends walk.
const (
	writerCacheKiB = 512
	readerCacheKiB = 256
)

// Options configures Open. The zero value is a sensible default.
type Options struct {
	// Readers is the maximum number of read connections; 0 means 4.
	Readers int
	// FullSync selects PRAGMA synchronous=FULL instead of NORMAL (see the
	// package documentation for the trade-off).
	FullSync bool
	// BusyTimeout is how long a connection waits for a lock held by another
	// process before failing with SQLITE_BUSY; 0 means 5s.
	BusyTimeout time.Duration
	// Now returns the current time; nil means time.Now. Stored times have
	// millisecond resolution.
	Now func() time.Time
	// NewEntryID returns a fresh transcript entry id for AppendMessages;
	// nil means a UUIDv7 string.
	NewEntryID func() string

	// checkpointEvery (tests) is how many write bodies pass between two
	// checkpoints; 0 means checkpointEvery, < 0 never.
	checkpointEvery int
	// checkpointAfter (tests) is how long a committed body waits at most
	// for its checkpoint; 0 means checkpointAfter, < 0 never.
	checkpointAfter time.Duration
	// checkpointed, when set (tests), is sent to after each checkpoint.
	checkpointed chan struct{}
}

// MemoryPath is the path that makes Open create a private database in a
// temporary directory, removed again by Close. (A real in-memory database
// cannot be shared between the writer and the reader pools.)
const MemoryPath = ":memory:"

// ErrNewerSchema is returned by Open when the database was migrated by a
// newer Switchboard than this binary.
var ErrNewerSchema = errors.New("database schema is newer than this binary")

// Store is a store.Store backed by one SQLite database file. It is safe for
// concurrent use.
type Store struct {
	// Reads answers the reads both SQL stores share, on the readers.
	sqlstore.Reads

	w     *sql.DB // the single writer connection; the committer's once Open returns
	r     *sql.DB // the bounded reader pool
	rc    stmtCache
	q     *statements // the statements built from sqlstore's (stmts)
	now   func() time.Time
	newID func() string

	commits  *committer // the writer's group commit; set once the schema is ready
	memo     writeMemo  // the committer's: tails and live runs it wrote
	ckpt     *checkpointer
	sessions sessionCache

	tempDir string // removed by Close when opened with MemoryPath
	closed  atomic.Bool
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database at path and brings its schema
// up to date. path may be MemoryPath. It fails with ErrNewerSchema if the
// database was written by a newer version.
func Open(ctx context.Context, path string, opts Options) (_ *Store, err error) {
	if opts.Readers <= 0 {
		opts.Readers = 4
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 5 * time.Second
	}
	s := &Store{q: stmts.Get(), now: opts.Now, newID: opts.NewEntryID}
	s.Reads = sqlstore.NewReads(sqlstore.ReadConfig{Dialect: sqlstore.SQLite, Name: "sqlite", DB: readers{s},
		NoRows: sql.ErrNoRows, CheckOpen: s.checkOpen})
	if s.now == nil {
		s.now = time.Now
	}
	if s.newID == nil {
		s.newID = func() string { return uuid.Must(uuid.NewV7()).String() }
	}
	if path == "" {
		return nil, errors.New("sqlite.Open: empty path")
	}
	if path == MemoryPath {
		dir, err := os.MkdirTemp("", "switchboard-sqlite-*")
		if err != nil {
			return nil, fmt.Errorf("sqlite.Open: %w", err)
		}
		s.tempDir = dir
		path = filepath.Join(dir, "store.db")
	}
	if strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("sqlite.Open: path %q contains '?'", path)
	}
	defer func() {
		if err != nil {
			s.closeAll(nil)
		}
	}()
	if err := createFresh(path); err != nil {
		return nil, fmt.Errorf("sqlite.Open: %w", err)
	}
	if err := privateFiles(path); err != nil {
		return nil, fmt.Errorf("sqlite.Open: %w", err)
	}

	busy := strconv.FormatInt(opts.BusyTimeout.Milliseconds(), 10)
	syncMode := "NORMAL"
	if opts.FullSync {
		syncMode = "FULL"
	}
	wq := url.Values{
		"_pragma": {
			"busy_timeout(" + busy + ")",
			"journal_mode(WAL)",
			"synchronous(" + syncMode + ")",
			"foreign_keys(1)",
			"cache_size(" + strconv.Itoa(-writerCacheKiB) + ")",
			"wal_autocheckpoint(0)", // the checkpointer's job
		},
		"_txlock": {"immediate"},
		// The writer's WAL frames go out in one write a commit (see
		// package walvfs); the other connections never write the WAL.
		"vfs": {walvfs.Name},
	}
	if err := walvfs.Register(); err != nil {
		return nil, fmt.Errorf("sqlite.Open: %w", err)
	}
	s.w = sql.OpenDB(connector{dsn: path + "?" + wq.Encode(), writer: true})
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)
	if err := migrate(ctx, s.w, s.now); err != nil {
		return nil, fmt.Errorf("sqlite.Open: %w", err)
	}
	if err := backfillKeyClass(ctx, s.w); err != nil {
		return nil, fmt.Errorf("sqlite.Open: %w", err)
	}
	cq := url.Values{"_pragma": {"busy_timeout(" + busy + ")"}}
	cdb := sql.OpenDB(connector{dsn: path + "?" + cq.Encode()})
	cdb.SetMaxOpenConns(1)
	cdb.SetMaxIdleConns(1)
	cdb.SetConnMaxLifetime(0)
	cdb.SetConnMaxIdleTime(0)
	// What the migrations wrote (or a crash left in the WAL) is copied back
	// here, on the writer, which is idle until Open returns: the
	// checkpointer's connection, with its own parse of the schema, is
	// opened at its first due checkpoint, not at every start. With nothing
	// in the WAL this is a no-op; a failure is left to the checkpointer.
	var busyFrames, walFrames, copiedFrames int
	_ = s.w.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busyFrames, &walFrames, &copiedFrames)
	s.ckpt = newCheckpointer(cdb, opts.checkpointEvery, opts.checkpointAfter, opts.checkpointed)
	s.commits = newCommitter(s.w, &s.memo, func(bodies int, w wtx) {
		s.ckpt.committed(bodies)
		s.ckpt.finish(w)
	})

	rq := url.Values{
		"_pragma": {
			"busy_timeout(" + busy + ")",
			"foreign_keys(1)",
			"query_only(1)",
			"cache_size(" + strconv.Itoa(-readerCacheKiB) + ")",
		},
	}
	s.r = sql.OpenDB(connector{dsn: path + "?" + rq.Encode()})
	s.r.SetMaxOpenConns(opts.Readers)
	s.r.SetMaxIdleConns(opts.Readers)
	s.r.SetConnMaxLifetime(0)
	s.r.SetConnMaxIdleTime(0)
	if err := s.r.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("sqlite.Open: readers: %w", err)
	}
	return s, nil
}

// Close closes both pools, after letting SQLite refresh its planner
// statistics (PRAGMA optimize). A second call returns net.ErrClosed.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return net.ErrClosed
	}
	if err := s.closeAll(func(w *writerConn) {
		w.ExecContext(context.Background(), `PRAGMA optimize`, nil) // best effort
	}); err != nil {
		return fmt.Errorf("sqlite.Close: %w", err)
	}
	return nil
}

// closeAll releases statements, pools and the temporary directory; last
// (may be nil) runs on the writer's connection once the committer is
// stopped.
func (s *Store) closeAll(last func(w *writerConn)) error {
	var errs []error
	if s.commits != nil {
		errs = append(errs, s.commits.close(last))
	}
	if s.ckpt != nil {
		errs = append(errs, s.ckpt.close())
	}
	errs = append(errs, s.rc.close())
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	if s.tempDir != "" {
		errs = append(errs, os.RemoveAll(s.tempDir))
	}
	return errors.Join(errs...)
}

// checkOpen returns a wrapped net.ErrClosed after Close.
func (s *Store) checkOpen(op string) error {
	if s.closed.Load() {
		return fmt.Errorf("sqlite.%s: %w", op, net.ErrClosed)
	}
	return nil
}

// writeTx runs fn in a BEGIN IMMEDIATE transaction on the writer and
// commits it if fn returns nil; if fn fails, nothing it wrote is kept.
// Bodies that wait for the writer at the same time share one commit (see
// committer), so fn may run more than once when a shared commit has to be
// redone: it must set, not accumulate, what it reports through captured
// variables. fn gets ctx without its cancellation (see writeReq) and must
// use it rather than the caller's.
func (s *Store) writeTx(ctx context.Context, fn func(ctx context.Context, tx wtx) error) error {
	return s.commits.run(ctx, fn, nil)
}

// writeTxThen is writeTx running after once fn's work is committed, in
// commit order with every other write's after (the session cache's
// updates).
func (s *Store) writeTxThen(ctx context.Context, fn func(ctx context.Context, tx wtx) error, after func()) error {
	return s.commits.run(ctx, fn, after)
}

// wstmt returns the writer statement for query bound to tx. The writer's
// connection prepares each statement at its first use and keeps it for its
// lifetime (writerConn.PrepareContext): a statement a process never runs is
// never prepared (Open prepared 21 on every start: SQLite's parser, and
// about 300 KiB of its heap, before the gateway was ready).
func (s *Store) wstmt(ctx context.Context, tx wtx, query string) (wstmt, error) {
	return tx.prepare(ctx, query)
}

// wexec runs query, a write that returns no rows, in tx (see
// writerConn.exec).
func (s *Store) wexec(ctx context.Context, tx wtx, query string, args ...any) (driver.Result, error) {
	return tx.ExecContext(ctx, query, args...)
}

// query runs a read query on the reader pool through a cached prepared
// statement, or directly when it cannot be cached.
func (s *Store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	commitPending(ctx)
	if st := s.rc.get(ctx, s.r, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.r.QueryContext(ctx, query, args...)
}

// commitPending commits the write ctx's run left waiting for company
// (store.WithPending) before a read made with ctx, which then sees it. A
// commit that fails leaves the read to see the store without that write,
// which is what it holds; whoever waits for the write is told.
func commitPending(ctx context.Context) { _ = store.CommitPending(ctx) }

// readers runs sqlstore.Reads' statements on s's readers.
type readers struct{ s *Store }

func (r readers) Query(ctx context.Context, query string, args ...any) (sqlstore.Cursor, error) {
	rows, err := r.s.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return cursor{rows}, nil
}

func (r readers) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Scanner {
	return r.s.queryRow(ctx, query, args...)
}

func (r readers) QueryRowKey(ctx context.Context, query, key string) sqlstore.Scanner {
	return r.s.queryRow(ctx, query, key)
}

// cursor is *sql.Rows as a sqlstore.Cursor.
type cursor struct{ *sql.Rows }

func (c cursor) Close() { c.Rows.Close() }

// queryRow is query for a single row.
func (s *Store) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	commitPending(ctx)
	if st := s.rc.get(ctx, s.r, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.r.QueryRowContext(ctx, query, args...)
}

// nowTime is the current time truncated to the stored resolution.
func (s *Store) nowTime() time.Time { return s.now().Truncate(time.Millisecond) }

// toMs converts t to unix milliseconds; the zero time is 0.
func toMs(t time.Time) int64 { return sqlstore.ToMs(t) }

// maxCachedStmts bounds a stmtCache; queries beyond it are not prepared.
const maxCachedStmts = 256

// stmtCache holds prepared statements by query text. The set of queries is
// fixed by the code (filters only toggle clauses), so it stays small;
// maxCachedStmts is a safety net.
type stmtCache struct {
	mu sync.Mutex // guards the field that follows
	m  map[string]*sql.Stmt
}

// lookup returns the cached statement for query, or nil.
func (c *stmtCache) lookup(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[query]
}

// get returns the statement for query on db, preparing and caching it on
// first use. It returns nil when the cache is full or preparing fails; the
// caller then runs the query unprepared, which reports any error.
func (c *stmtCache) get(ctx context.Context, db *sql.DB, query string) *sql.Stmt {
	if st := c.lookup(query); st != nil {
		return st
	}
	c.mu.Lock()
	full := len(c.m) >= maxCachedStmts
	c.mu.Unlock()
	if full {
		return nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[query]; old != nil {
		st.Close()
		return old
	}
	if c.m == nil {
		c.m = make(map[string]*sql.Stmt)
	}
	c.m[query] = st
	return st
}

// close closes every cached statement.
func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, st := range c.m {
		errs = append(errs, st.Close())
	}
	c.m = nil
	return errors.Join(errs...)
}

// drv is the package's private driver instance, so the functions it
// registers reach only this package's connections. It is made on the first
// connection, not at process start (a gateway on PostgreSQL links this
// package but never opens it).
var drv = lazy.Value[*sqlite.Driver]{New: newDriver}

// newDriver makes drv.
func newDriver() *sqlite.Driver {
	d := &sqlite.Driver{}
	// sb_icontains(haystack, needle) reports whether the lower-cased
	// haystack contains needle, which the caller lower-cases. SQLite's own
	// lower() and LIKE fold ASCII only.
	d.MustRegisterDeterministicScalarFunction("sb_icontains", 2,
		func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			h, _ := args[0].(string)
			n, _ := args[1].(string)
			if strings.Contains(strings.ToLower(h), n) {
				return int64(1), nil
			}
			return int64(0), nil
		})
	return d
}

// connector opens connections of drv with a fixed DSN; the writer's are
// writerConns.
type connector struct {
	dsn    string
	writer bool
}

func (c connector) Connect(context.Context) (driver.Conn, error) {
	conn, err := drv.Get().Open(c.dsn)
	if err != nil || !c.writer {
		return conn, err
	}
	return newWriterConn(conn)
}

func (c connector) Driver() driver.Driver { return drv.Get() }

// createFresh creates the database at path from the embedded schema image
// (see schemaimage.go) when neither it nor its WAL exists: parsing and
// running every migration took most of a fresh gateway's start. The image
// is written beside path, synced once and renamed into place, so a crash
// leaves no database or a complete one; Open then migrates it on from the
// image's version as it would any older database.
func createFresh(path string) (err error) {
	for _, p := range []string{path, path + "-wal"} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			return err // exists (nil), or cannot be looked at
		}
	}
	tmp := path + ".new"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	err = writeSchemaImage(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("create: %w", err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync() // best effort: makes the rename durable
		d.Close()
	}
	return nil
}

// privateFiles creates the database file 0600 when it does not exist, so
// that SQLite, which gives its WAL and shared-memory files the database
// file's mode, creates those 0600 too; existing files are tightened to
// 0600. Transcripts are private.
func privateFiles(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p, fi.Mode().Perm()&0o600); err != nil {
				return err
			}
		}
	}
	return nil
}
