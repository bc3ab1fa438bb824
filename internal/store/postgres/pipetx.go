package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/switchboardhq/switchboard/internal/store"
)

// A write transaction costs a round trip per statement, and pgx adds one
// for BEGIN and, with a fence, checkFence one more. pipeTx saves both: its
// BEGIN and its fence check are sent in one pipeline with the
// transaction's first statement (or batch), so a transaction of one
// statement and COMMIT takes two round trips, not four. The fence check
// fails with division_by_zero when the fence no longer holds: the server
// then skips the rest of the pipeline, so a fenced statement is never
// executed, not even in a transaction rolled back later.

// fenceHeld is the lane row of fence ($1 lane, $2 node, $3 epoch) while
// its node's lease is live, share-locked as qCheckFence does: the fence
// checks divide by its count.
const fenceHeld = `FROM (SELECT 1 FROM lanes l
		WHERE l.session_key = $1 AND l.node_id = $2 AND l.epoch = $3
		AND EXISTS (SELECT 1 FROM nodes n WHERE n.node_id = l.node_id AND n.lease_until > now())
		FOR SHARE OF l) held`

const (
	// qFenceGuard is qCheckFence failing (division_by_zero) unless the
	// fence holds, setting the transaction's idle timeout ($4).
	qFenceGuard = `SELECT set_config('idle_in_transaction_session_timeout', $4, true), 1 / count(*) ` + fenceHeld
	// qFenceGuardLock is qFenceGuard that also takes the
	// transaction-scoped advisory lock $5 (a transcript's, see leadLock),
	// in the same statement.
	qFenceGuardLock = `SELECT set_config('idle_in_transaction_session_timeout', $4, true), pg_advisory_xact_lock($5), 1 / count(*) ` + fenceHeld
	// qFenceGuardOnly and qFenceGuardOnlyLock (lock $4) are the two for a
	// transaction of one batch (sendLast): it is never idle between
	// statements (the server runs the batch through to its Sync and
	// commits), so they set no idle timeout.
	qFenceGuardOnly     = `SELECT 1 / count(*) ` + fenceHeld
	qFenceGuardOnlyLock = `SELECT pg_advisory_xact_lock($4), 1 / count(*) ` + fenceHeld
)

// pipeTx is a pgx.Tx on one connection whose BEGIN (and fence check) is
// deferred to its first statement. Savepoints, COPY, large objects and
// Prepare are not supported (the store uses none in transactions).
type pipeTx struct {
	conn      *pgx.Conn
	fence     *store.Fence // checked with the first statement; nil: none
	lock      *int64       // advisory lock the fence check takes (leadLock)
	begun     bool         // BEGIN was sent
	closed    bool         // committed or rolled back
	committed bool         // by sendLast's COMMIT, or its batch's Sync
	// implicit: the transaction is one batch (sendLast as its first
	// statements), sent without BEGIN and COMMIT (see sendLast).
	implicit bool
}

var _ pgx.Tx = (*pipeTx)(nil)

// errTxUnsupported is returned by the pgx.Tx methods pipeTx does not have.
var errTxUnsupported = errors.New("postgres: not supported in a store transaction")

// inTx runs fn in a transaction on a pooled connection: committed when fn
// returns nil, rolled back otherwise. A fence in ctx is checked with the
// transaction's first statement (see pipeTx).
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) (err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// A connection left in a transaction (a failed ROLLBACK) is closed by
	// the pool on release.
	defer conn.Release()
	tx := &pipeTx{conn: conn.Conn()}
	if f, ok := store.FenceOf(ctx); ok {
		tx.fence = &f
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(ctx) // the error to return is fn's
		return err
	}
	return tx.Commit(ctx)
}

// lead returns a batch that begins the transaction (and checks the fence)
// followed by the queries of b, or nil when it has begun already.
func (tx *pipeTx) lead(b *pgx.Batch) *pgx.Batch {
	if tx.begun {
		return nil
	}
	tx.begun = true
	lead := &pgx.Batch{}
	if !tx.implicit {
		lead.Queue("begin")
	}
	if f := tx.fence; f != nil && tx.implicit {
		if tx.lock != nil {
			lead.Queue(qFenceGuardOnlyLock, f.SessionKey, f.Node, f.Epoch, *tx.lock)
		} else {
			lead.Queue(qFenceGuardOnly, f.SessionKey, f.Node, f.Epoch)
		}
	} else if f != nil {
		timeout := strconv.FormatInt(fenceIdleTimeout.Milliseconds(), 10)
		if tx.lock != nil {
			lead.Queue(qFenceGuardLock, f.SessionKey, f.Node, f.Epoch, timeout, *tx.lock)
		} else {
			lead.Queue(qFenceGuard, f.SessionKey, f.Node, f.Epoch, timeout)
		}
	}
	if b != nil {
		lead.QueuedQueries = append(lead.QueuedQueries, b.QueuedQueries...)
	}
	return lead
}

// leadLock has tx take the advisory lock key (qLockTranscript's) in its
// fence check's statement, one statement fewer, when tx is a pipeTx with a
// fence that has sent nothing yet; it reports whether it will. When it
// will not, the caller takes the lock itself. Either way the lock is held
// from the transaction's first statements on, and a statement after them
// reads what the lock's holders before wrote (a statement's snapshot is
// taken when it starts: never read what the lock guards in the statement
// that takes it).
func leadLock(tx pgx.Tx, key int64) bool {
	p, ok := tx.(*pipeTx)
	if !ok || p.begun || p.closed || p.fence == nil {
		return false
	}
	p.lock = &key
	return true
}

// readLead reads the results of lead's BEGIN and fence check.
func (tx *pipeTx) readLead(br pgx.BatchResults) error {
	if !tx.implicit {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
	}
	if f := tx.fence; f != nil {
		if _, err := br.Exec(); err != nil {
			if pe, ok := errors.AsType[*pgconn.PgError](err); ok && pe.Code == "22012" {
				return fmt.Errorf("node %s, lane %s, epoch %d: %w", f.Node, f.SessionKey, f.Epoch, store.ErrFenced)
			}
			return fmt.Errorf("fence check: %w", err)
		}
	}
	return nil
}

// begin sends the deferred BEGIN (and fence check) on its own, for the
// statements that cannot be pipelined with it.
func (tx *pipeTx) begin(ctx context.Context) error {
	lead := tx.lead(nil)
	if lead == nil {
		return nil
	}
	br := tx.conn.SendBatch(ctx, lead)
	return firstErr(tx.readLead(br), br.Close())
}

// Exec implements pgx.Tx.
func (tx *pipeTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if tx.closed {
		return pgconn.CommandTag{}, pgx.ErrTxClosed
	}
	var b pgx.Batch
	b.Queue(sql, args...)
	lead := tx.lead(&b)
	if lead == nil {
		return tx.conn.Exec(ctx, sql, args...)
	}
	br := tx.conn.SendBatch(ctx, lead)
	if err := tx.readLead(br); err != nil {
		br.Close()
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	return tag, firstErr(err, br.Close())
}

// QueryRow implements pgx.Tx.
func (tx *pipeTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if tx.closed {
		return errRow{pgx.ErrTxClosed}
	}
	var b pgx.Batch
	b.Queue(sql, args...)
	lead := tx.lead(&b)
	if lead == nil {
		return tx.conn.QueryRow(ctx, sql, args...)
	}
	br := tx.conn.SendBatch(ctx, lead)
	if err := tx.readLead(br); err != nil {
		br.Close()
		return errRow{err}
	}
	return batchRow{row: br.QueryRow(), br: br}
}

// Query implements pgx.Tx. Its BEGIN goes first, on its own.
func (tx *pipeTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if tx.closed {
		return nil, pgx.ErrTxClosed
	}
	if err := tx.begin(ctx); err != nil {
		return nil, err
	}
	return tx.conn.Query(ctx, sql, args...)
}

// SendBatch implements pgx.Tx.
func (tx *pipeTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if tx.closed {
		return errBatch{pgx.ErrTxClosed}
	}
	lead := tx.lead(b)
	if lead == nil {
		return tx.conn.SendBatch(ctx, b)
	}
	br := tx.conn.SendBatch(ctx, lead)
	if err := tx.readLead(br); err != nil {
		br.Close()
		return errBatch{err}
	}
	return br
}

// Commit implements pgx.Tx. A transaction that sent nothing has nothing to
// commit, and one that sendLast committed nothing more.
func (tx *pipeTx) Commit(ctx context.Context) error {
	if tx.committed {
		return nil
	}
	if tx.closed {
		return pgx.ErrTxClosed
	}
	tx.closed = true
	if !tx.begun {
		return nil
	}
	tag, err := tx.conn.Exec(ctx, "commit")
	if err != nil {
		return err
	}
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

// Rollback implements pgx.Tx.
func (tx *pipeTx) Rollback(ctx context.Context) error {
	if tx.closed {
		return pgx.ErrTxClosed
	}
	tx.closed = true
	if !tx.begun {
		return nil
	}
	_, err := tx.conn.Exec(ctx, "rollback")
	return err
}

// sendLast sends b as the transaction's last statements: on a pipeTx,
// COMMIT goes in the same round trip (so a transaction of one batch takes
// one round trip, BEGIN and fence check included), and is only executed
// when every statement of b succeeded (the server skips the rest of a
// pipeline after an error, leaving the transaction to roll back). The
// caller reads b's results as usual; Close reports the commit's outcome.
// Nothing may be sent in the transaction after it.
//
// A transaction that sent nothing before is sent without BEGIN and
// COMMIT: pgx ends a batch with one Sync, and the server runs the
// statements before a Sync as one implicit transaction, committed at the
// Sync when all succeeded and rolled back when one failed (the rest
// skipped, as with BEGIN). Two statements fewer per transaction, the
// fence check still first: the one-round-trip open and end of a run.
func sendLast(ctx context.Context, tx pgx.Tx, b *pgx.Batch) pgx.BatchResults {
	p, ok := tx.(*pipeTx)
	if !ok || p.closed {
		return tx.SendBatch(ctx, b)
	}
	n := len(b.QueuedQueries)
	full, led := p.lastBatch(b)
	br := p.conn.SendBatch(ctx, full)
	if led {
		if err := p.readLead(br); err != nil {
			br.Close()
			return errBatch{err}
		}
	}
	return &lastResults{BatchResults: br, tx: p, left: n}
}

// lastBatch is what sendLast sends for b: when the transaction sent
// nothing before (led), b behind the fence check alone, an implicit
// transaction (nothing can follow it, so the pipeTx is closed);
// otherwise b and COMMIT.
func (tx *pipeTx) lastBatch(b *pgx.Batch) (full *pgx.Batch, led bool) {
	if !tx.begun {
		tx.implicit, tx.closed = true, true
		return tx.lead(b), true
	}
	full = &pgx.Batch{QueuedQueries: slices.Clone(b.QueuedQueries)}
	full.Queue("commit")
	return full, false
}

// lastResults are sendLast's results: left of the caller's results are
// unread; the commit's follows them.
type lastResults struct {
	pgx.BatchResults
	tx   *pipeTx
	left int
	done bool
	err  error
}

func (r *lastResults) Exec() (pgconn.CommandTag, error) {
	r.left--
	return r.BatchResults.Exec()
}

func (r *lastResults) Query() (pgx.Rows, error) {
	r.left--
	return r.BatchResults.Query()
}

func (r *lastResults) QueryRow() pgx.Row {
	r.left--
	return r.BatchResults.QueryRow()
}

// Close reads what the caller left unread, then the commit's result.
func (r *lastResults) Close() error {
	if r.done {
		return r.err
	}
	r.done = true
	for ; r.left > 0 && r.err == nil; r.left-- {
		_, r.err = r.BatchResults.Exec()
	}
	if r.err == nil && !r.tx.implicit {
		tag, err := r.BatchResults.Exec()
		switch {
		case err != nil:
			r.err = err
		case tag.String() == "ROLLBACK":
			r.err = pgx.ErrTxCommitRollback
		default:
			r.tx.committed, r.tx.closed = true, true
		}
	}
	r.err = firstErr(r.err, r.BatchResults.Close())
	if r.err == nil && r.tx.implicit {
		r.tx.committed = true // at the batch's Sync
	}
	return r.err
}

// Begin implements pgx.Tx: not supported.
func (tx *pipeTx) Begin(context.Context) (pgx.Tx, error) { return nil, errTxUnsupported }

// CopyFrom implements pgx.Tx: not supported.
func (tx *pipeTx) CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error) {
	return 0, errTxUnsupported
}

// LargeObjects implements pgx.Tx: not supported (the zero value).
func (tx *pipeTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }

// Prepare implements pgx.Tx: not supported.
func (tx *pipeTx) Prepare(context.Context, string, string) (*pgconn.StatementDescription, error) {
	return nil, errTxUnsupported
}

// Conn implements pgx.Tx.
func (tx *pipeTx) Conn() *pgx.Conn { return tx.conn }

// batchRow is the row of a pipeline's last query: scanning it closes the
// pipeline.
type batchRow struct {
	row pgx.Row
	br  pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	return firstErr(err, r.br.Close())
}

// firstErr is err, else then: a pipeline's Close repeats the error its
// statement already returned.
func firstErr(err, then error) error {
	if err != nil {
		return err
	}
	return then
}

// errRow is a row that fails with err.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// errBatch is batch results that fail with err.
type errBatch struct{ err error }

func (b errBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b errBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b errBatch) QueryRow() pgx.Row                { return errRow(b) }
func (b errBatch) Close() error                     { return b.err }
func (b errBatch) Tx() pgx.Tx                       { return nil }

// readTailGuard reads the results of the fence check and tail guard that a
// run's open or end queued: the transcript's lock first, unless led says
// the transaction's lead statement took it, then the guard, whose division
// by zero (22012) means the transcript's tail moved (errTailMoved). The
// caller closes br on an error.
func readTailGuard(br pgx.BatchResults, led bool) error {
	if !led {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	if _, err := br.Exec(); err != nil {
		if isCode(err, "22012") {
			return errTailMoved
		}
		return err
	}
	return nil
}
