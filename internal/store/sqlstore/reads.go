package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// DB runs Reads' statements: SQLite's reader pool or the PostgreSQL pool.
type DB interface {
	Query(ctx context.Context, query string, args ...any) (Cursor, error)
	QueryRow(ctx context.Context, query string, args ...any) Scanner
	// QueryRowKey is QueryRow with one string argument: the hot reads by
	// id, whose argument list, built by the store, then need not escape
	// through this interface.
	QueryRowKey(ctx context.Context, query, key string) Scanner
}

// Cursor is the rows of a query (pgx.Rows, or *sql.Rows with a Close that
// returns nothing).
type Cursor interface {
	Scanner
	Next() bool
	Err() error
	Close()
}

// ReadConfig describes a store to NewReads.
type ReadConfig struct {
	// Dialect is the store's SQL.
	Dialect Dialect
	// Name prefixes errors: "sqlite" or "postgres".
	Name string
	// DB runs the reads.
	DB DB
	// NoRows is the driver's error for a single-row read that found none.
	NoRows error
	// CheckOpen fails once the store is closed; op names the method.
	CheckOpen func(op string) error
}

// Reads implements the reading methods of store.Store, store.CronStore,
// store.A2ATaskStore and store.MemoryVectorStore that both SQL stores
// answer alike, from their shared statements; a store embeds it. The zero
// value is not usable: see NewReads.
type Reads struct{ c *reads }

type reads struct {
	ReadConfig
	getRun, getOutbox, getSubagent, getCronJob, listCronJobs, cronRuns   string
	getA2ATask, listA2ATasks, listA2ATasksCtx, memoryFiles, memoryChunks string
	countMessages, sessionsByID, dueCronJobs, openA2ATasks               string
	history                                                              [4]string
}

// NewReads returns the reads of the store c describes.
func NewReads(c ReadConfig) Reads {
	q := c.Dialect.Q
	r := &reads{ReadConfig: c,
		getRun: q(GetRun), getOutbox: q(GetOutbox), getSubagent: q(GetSubagent),
		getCronJob: q(GetCronJob), listCronJobs: q(ListCronJobs), cronRuns: q(CronRuns),
		getA2ATask: q(GetA2ATask), listA2ATasks: q(ListA2ATasks), listA2ATasksCtx: q(ListA2ATasksCtx),
		memoryFiles: q(MemoryFiles), memoryChunks: q(MemoryChunks),
		countMessages: q(CountMessages), sessionsByID: q(SessionsByID),
		dueCronJobs: c.Dialect.DueCronJobs(), openA2ATasks: c.Dialect.OpenA2ATasks(),
	}
	r.history = c.Dialect.HistoryStmts()
	return Reads{r}
}

// errorf prefixes an error with the store's name and the method.
func (r *reads) errorf(op, format string, args ...any) error {
	return fmt.Errorf(r.Name+"."+op+format, args...)
}

// All runs query on db and reads every row with scan; hint > 0
// preallocates for that many rows.
func All[T any](ctx context.Context, db DB, hint int, scan func(Scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := db.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return Rows(rows, hint, scan)
}

// list is a listing method: the open check, the rows, the error's prefix.
func list[T any](ctx context.Context, r *reads, op string, hint int, scan func(Scanner) (T, error), query string, args ...any) ([]T, error) {
	if err := r.CheckOpen(op); err != nil {
		return nil, err
	}
	out, err := All(ctx, r.DB, hint, scan, query, args...)
	if err != nil {
		return nil, r.errorf(op, ": %w", err)
	}
	return out, nil
}

// listQuery is list for a query built from a filter; a nil query
// matches nothing.
func listQuery[T any](ctx context.Context, r *reads, op string, hint int, scan func(Scanner) (T, error), build func() (*Query, error)) ([]T, error) {
	if err := r.CheckOpen(op); err != nil {
		return nil, err
	}
	q, err := build()
	if err != nil {
		return nil, r.errorf(op, ": %w", err)
	}
	if q == nil {
		return nil, nil
	}
	out, err := All(ctx, r.DB, hint, scan, q.String(), q.Args()...)
	if err != nil {
		return nil, r.errorf(op, ": %w", err)
	}
	return out, nil
}

// one is a single-row read by id: the open check, the row, ErrNotFound
// for none.
func one[T any](ctx context.Context, r *reads, op, id string, scan func(Scanner) (T, error), query string) (T, error) {
	var zero T
	if err := r.CheckOpen(op); err != nil {
		return zero, err
	}
	v, err := scan(r.DB.QueryRowKey(ctx, query, id))
	if errors.Is(err, r.NoRows) {
		return zero, r.errorf(op, ": %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return zero, r.errorf(op, ": %w", err)
	}
	return v, nil
}

// GetRun returns the run, or ErrNotFound.
func (rd Reads) GetRun(ctx context.Context, runID string) (*store.Run, error) {
	return one(ctx, rd.c, "GetRun", runID, ScanRun, rd.c.getRun)
}

// ListRuns returns runs matching f, ordered by CreatedAt, then RunID.
func (rd Reads) ListRuns(ctx context.Context, f store.RunFilter) ([]*store.Run, error) {
	return listQuery(ctx, rd.c, "ListRuns", 0, ScanRun, func() (*Query, error) { return rd.c.Dialect.ListRuns(f) })
}

// GetOutbox returns the item, or ErrNotFound.
func (rd Reads) GetOutbox(ctx context.Context, id string) (*store.OutboxItem, error) {
	return one(ctx, rd.c, "GetOutbox", id, ScanOutbox, rd.c.getOutbox)
}

// ListOutbox returns items matching f, ordered by NextAttemptAt, then
// CreatedAt, then ID (or newest first with f.Newest). With DueBefore set it
// returns only pending items due by then, served by the (status,
// next_attempt_at, …) index without a sort.
func (rd Reads) ListOutbox(ctx context.Context, f store.OutboxFilter) ([]*store.OutboxItem, error) {
	return listQuery(ctx, rd.c, "ListOutbox", f.Limit, ScanOutbox, func() (*Query, error) {
		q, ok, err := rd.c.Dialect.ListOutbox(f)
		if !ok {
			return nil, err
		}
		return q, err
	})
}

// GetSubagent returns the row of a child run, or ErrNotFound.
func (rd Reads) GetSubagent(ctx context.Context, childRunID string) (*store.SubagentRun, error) {
	return one(ctx, rd.c, "GetSubagent", childRunID, ScanSubagent, rd.c.getSubagent)
}

// ListSubagents returns rows matching f, newest first, from the
// requester, child and status indexes.
func (rd Reads) ListSubagents(ctx context.Context, f store.SubagentFilter) ([]*store.SubagentRun, error) {
	return listQuery(ctx, rd.c, "ListSubagents", 0, ScanSubagent, func() (*Query, error) { return rd.c.Dialect.ListSubagents(f) })
}

// GetCronJob implements store.CronStore.
func (rd Reads) GetCronJob(ctx context.Context, id string) (*store.CronJob, error) {
	r := rd.c
	if err := r.CheckOpen("GetCronJob"); err != nil {
		return nil, err
	}
	j, err := ScanCronJob(r.DB.QueryRowKey(ctx, r.getCronJob, id))
	if errors.Is(err, r.NoRows) {
		return nil, r.errorf("GetCronJob", " %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, r.errorf("GetCronJob", " %q: %w", id, err)
	}
	return j, nil
}

// ListCronJobs implements store.CronStore.
func (rd Reads) ListCronJobs(ctx context.Context) ([]*store.CronJob, error) {
	return list(ctx, rd.c, "ListCronJobs", 0, ScanCronJob, rd.c.listCronJobs)
}

// DueCronJobs implements store.CronStore.
func (rd Reads) DueCronJobs(ctx context.Context, now time.Time, limit int) ([]*store.CronJob, error) {
	if limit <= 0 {
		return nil, rd.c.errorf("DueCronJobs", ": limit must be positive")
	}
	return list(ctx, rd.c, "DueCronJobs", 0, ScanCronJob, rd.c.dueCronJobs, ToMs(now), limit)
}

// CronRuns implements store.CronStore.
func (rd Reads) CronRuns(ctx context.Context, id string, limit int) ([]*store.CronRun, error) {
	r := rd.c
	if err := r.CheckOpen("CronRuns"); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, r.errorf("CronRuns", ": limit must be positive")
	}
	return list(ctx, r, "CronRuns", 0, ScanCronRun, r.cronRuns, id, limit)
}

// GetA2ATask implements store.A2ATaskStore.
func (rd Reads) GetA2ATask(ctx context.Context, peer, id string) (*store.A2ATask, error) {
	r := rd.c
	if err := r.CheckOpen("GetA2ATask"); err != nil {
		return nil, err
	}
	t, err := ScanA2ATask(r.DB.QueryRow(ctx, r.getA2ATask, peer, id))
	if errors.Is(err, r.NoRows) {
		return nil, r.errorf("GetA2ATask", " %q/%q: %w", peer, id, store.ErrNotFound)
	}
	if err != nil {
		return nil, r.errorf("GetA2ATask", " %q/%q: %w", peer, id, err)
	}
	return t, nil
}

// ListA2ATasks implements store.A2ATaskStore.
func (rd Reads) ListA2ATasks(ctx context.Context, peer, contextID string, limit int) ([]*store.A2ATask, error) {
	r := rd.c
	if limit <= 0 || limit > store.MaxA2ATaskList {
		return nil, r.errorf("ListA2ATasks", ": limit %d not in 1..%d", limit, store.MaxA2ATaskList)
	}
	if contextID == "" {
		return list(ctx, r, "ListA2ATasks", 0, ScanA2ATask, r.listA2ATasks, peer, limit)
	}
	return list(ctx, r, "ListA2ATasks", 0, ScanA2ATask, r.listA2ATasksCtx, peer, contextID, limit)
}

// OpenA2ATasks implements store.A2ATaskStore.
func (rd Reads) OpenA2ATasks(ctx context.Context, limit int) ([]*store.A2ATask, error) {
	r := rd.c
	if limit <= 0 || limit > store.MaxA2ATaskList {
		return nil, r.errorf("OpenA2ATasks", ": limit %d not in 1..%d", limit, store.MaxA2ATaskList)
	}
	return list(ctx, r, "OpenA2ATasks", 0, ScanA2ATask, r.openA2ATasks, limit)
}

// MemoryFiles implements store.MemoryStore.
func (rd Reads) MemoryFiles(ctx context.Context, scope string) ([]store.MemoryFile, error) {
	return list(ctx, rd.c, "MemoryFiles", 0, ScanMemoryFile, rd.c.memoryFiles, scope)
}

// MemoryChunks implements store.MemoryVectorStore.
func (rd Reads) MemoryChunks(ctx context.Context, scope string) ([]store.MemoryChunkRow, error) {
	return list(ctx, rd.c, "MemoryChunks", 0, ScanMemoryChunk, rd.c.memoryChunks, scope)
}

// History returns a window of transcript sessionID in ascending Seq.
func (rd Reads) History(ctx context.Context, sessionID string, opts store.HistoryOptions) ([]store.Message, error) {
	r := rd.c
	if err := r.CheckOpen("History"); err != nil {
		return nil, err
	}
	i, args := HistoryStmt(sessionID, opts)
	rows, err := r.DB.Query(ctx, r.history[i], args...)
	if err != nil {
		return nil, r.errorf("History", ": %w", err)
	}
	defer rows.Close()
	var out []store.Message
	if r.Dialect == SQLite {
		// The driver lends the line until the next row.
		out, err = History[sql.RawBytes](rows, sessionID, opts.Limit)
	} else {
		out, err = History[[]byte](rows, sessionID, opts.Limit)
	}
	if err != nil {
		return nil, r.errorf("History", ": %w", err)
	}
	return out, nil
}

// CountMessages returns the number of entries in transcript sessionID.
func (rd Reads) CountMessages(ctx context.Context, sessionID string) (int64, error) {
	r := rd.c
	if err := r.CheckOpen("CountMessages"); err != nil {
		return 0, err
	}
	var n int64
	if err := r.DB.QueryRowKey(ctx, r.countMessages, sessionID).Scan(&n); err != nil {
		return 0, r.errorf("CountMessages", ": %w", err)
	}
	return n, nil
}

// SessionsByID returns every session whose current SessionID is id, ordered
// by key.
func (rd Reads) SessionsByID(ctx context.Context, id string) ([]*store.Session, error) {
	return list(ctx, rd.c, "SessionsByID", 0, ScanSession, rd.c.sessionsByID, id)
}

// ListSessions returns sessions matching opts, ordered by UpdatedAt
// descending, then Key.
func (rd Reads) ListSessions(ctx context.Context, opts store.ListOptions) ([]*store.Session, error) {
	q := rd.c.Dialect.ListSessions(opts)
	return list(ctx, rd.c, "ListSessions", opts.Limit, ScanSession, q.String(), q.Args()...)
}

// CountSessions implements store.Store.
func (rd Reads) CountSessions(ctx context.Context, opts store.ListOptions) (int64, error) {
	r := rd.c
	if err := r.CheckOpen("CountSessions"); err != nil {
		return 0, err
	}
	q := r.Dialect.CountSessions(opts)
	var n int64
	if err := r.DB.QueryRow(ctx, q.String(), q.Args()...).Scan(&n); err != nil {
		return 0, r.errorf("CountSessions", ": %w", err)
	}
	return n, nil
}
