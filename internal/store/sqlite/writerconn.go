package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
)

// writerConn is the writer's connection: the driver's, with its
// transactions begun and ended by statements prepared once. The driver
// runs "begin immediate", "commit" and "rollback" through sqlite3_exec,
// which parses each anew: two parses per commit, a turn's writes being two
// commits. The statements the store runs in its transactions are prepared
// at their first use and kept (see PrepareContext).
type writerConn struct {
	driver.Conn
	begin, commit, rollback driver.StmtExecContext

	// kept holds the statements prepared through PrepareContext and exec,
	// by query, up to maxCachedStmts. database/sql uses the connection
	// only before the committer takes it out of the pool (Open's
	// migrations) and after it hands it back (Close), so the two never
	// run at once.
	kept map[string]*keptStmt
	// args serves exec and query.
	args []driver.NamedValue
}

// keptStmt is a statement the writer's connection keeps prepared for its
// lifetime: the Close database/sql calls when a transaction that prepared
// it ends leaves it open; writerConn.Close closes it.
type keptStmt struct{ keepable }

// keepable is a driver statement that runs with a context.
type keepable interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// Close leaves the statement prepared.
func (*keptStmt) Close() error { return nil }

// The driver's connection implements these; writerConn passes them on.
type fullConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.SessionResetter
	driver.Validator
	driver.Pinger
}

var (
	_ fullConn           = (*writerConn)(nil)
	_ driver.ConnBeginTx = (*writerConn)(nil)
)

// newWriterConn prepares c's transaction statements; it closes c when that
// fails.
func newWriterConn(c driver.Conn) (_ *writerConn, err error) {
	if _, ok := c.(fullConn); !ok {
		c.Close()
		return nil, fmt.Errorf("writer connection %T lacks a method", c)
	}
	w := &writerConn{Conn: c}
	defer func() {
		if err != nil {
			w.Close()
		}
	}()
	for _, p := range []struct {
		dst   *driver.StmtExecContext
		query string
	}{{&w.begin, "BEGIN IMMEDIATE"}, {&w.commit, "COMMIT"}, {&w.rollback, "ROLLBACK"}} {
		st, err := c.(driver.ConnPrepareContext).PrepareContext(context.Background(), p.query)
		if err != nil {
			return nil, fmt.Errorf("prepare %s: %w", p.query, err)
		}
		ex, ok := st.(driver.StmtExecContext)
		if !ok {
			st.Close()
			return nil, fmt.Errorf("statement %T cannot execute with a context", st)
		}
		*p.dst = ex
	}
	return w, nil
}

func (w *writerConn) full() fullConn { return w.Conn.(fullConn) }

// Close closes the prepared statements, then the connection.
func (w *writerConn) Close() error {
	var errs []error
	for _, st := range []driver.StmtExecContext{w.begin, w.commit, w.rollback} {
		if st != nil {
			errs = append(errs, st.(driver.Stmt).Close())
		}
	}
	for _, st := range w.kept {
		errs = append(errs, st.keepable.Close())
	}
	return errors.Join(append(errs, w.Conn.Close())...)
}

// exec runs query, a statement that returns no rows, with args in the
// connection's open transaction, through a statement it prepares once.
// It does what database/sql would (the default argument conversion, then
// the driver's exec) without the rest of database/sql's per-statement work:
// a Stmt bound to the Tx, the connection's locks, a Result wrapper. Only
// the goroutine that has the writer (see committer) calls it.
func (w *writerConn) exec(ctx context.Context, query string, args []any) (driver.Result, error) {
	ds, err := w.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if _, ok := ds.(*keptStmt); !ok {
		defer ds.Close() // the cache is full
	}
	return w.execStmt(ctx, ds, args)
}

// execStmt runs ds, a statement of w that returns no rows, with args.
func (w *writerConn) execStmt(ctx context.Context, ds driver.Stmt, args []any) (driver.Result, error) {
	st, ok := ds.(driver.StmtExecContext)
	if !ok {
		return nil, fmt.Errorf("statement %T cannot execute with a context", ds)
	}
	named, err := w.bind(args)
	if err != nil {
		return nil, err
	}
	res, err := st.ExecContext(ctx, named)
	clear(named) // holds no argument past the statement
	return res, err
}

// query runs query with args as exec does; the rows must be closed.
func (w *writerConn) query(ctx context.Context, query string, args []any) (*wrows, error) {
	ds, err := w.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	rows := new(wrows)
	if _, ok := ds.(*keptStmt); !ok {
		rows.stmt = ds // the cache is full: closed with the rows
	}
	if err := w.queryStmt(ctx, rows, ds, args); err != nil {
		if rows.stmt != nil {
			rows.stmt.Close()
		}
		return nil, err
	}
	return rows, nil
}

// queryStmt runs ds, a statement of w, with args, into rows.
func (w *writerConn) queryStmt(ctx context.Context, rows *wrows, ds driver.Stmt, args []any) error {
	st, ok := ds.(driver.StmtQueryContext)
	if !ok {
		return fmt.Errorf("statement %T cannot query with a context", ds)
	}
	named, err := w.bind(args)
	if err != nil {
		return err
	}
	// The driver binds the arguments before it returns: the rows keep
	// none of named.
	dr, err := st.QueryContext(ctx, named)
	clear(named)
	if err != nil {
		return err
	}
	rows.rows = dr
	return nil
}

// bind converts args as database/sql would (the default conversion) into
// w.args, which the caller clears once the driver has them.
func (w *writerConn) bind(args []any) ([]driver.NamedValue, error) {
	named := w.args[:0]
	for i, a := range args {
		v, err := driver.DefaultParameterConverter.ConvertValue(a)
		if err != nil {
			clear(named)
			return nil, fmt.Errorf("argument %d: %w", i+1, err)
		}
		named = append(named, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	w.args = named
	return named, nil
}

// beginTx begins a write transaction (BEGIN IMMEDIATE) for the committer.
func (w *writerConn) beginTx(ctx context.Context) error {
	_, err := w.begin.ExecContext(ctx, nil)
	return err
}

// commitTx commits the open transaction; should COMMIT fail, the
// transaction is rolled back (the connection must leave it either way),
// as the driver's own Commit does.
func (w *writerConn) commitTx() error {
	_, err := w.commit.ExecContext(context.Background(), nil)
	if err != nil {
		// Fails harmlessly when COMMIT ended the transaction.
		w.rollback.ExecContext(context.Background(), nil)
	}
	return err
}

// rollbackTx rolls the open transaction back.
func (w *writerConn) rollbackTx() error {
	_, err := w.rollback.ExecContext(context.Background(), nil)
	return err
}

// BeginTx begins a write transaction (the writer's are all BEGIN
// IMMEDIATE).
func (w *writerConn) BeginTx(ctx context.Context, _ driver.TxOptions) (driver.Tx, error) {
	if err := w.beginTx(ctx); err != nil {
		return nil, err
	}
	return writerTx{w}, nil
}

// PrepareContext returns the statement kept for query, preparing and
// keeping it at its first use. Once maxCachedStmts are kept, it prepares
// a statement that Close finalizes, as the driver does.
func (w *writerConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if st, ok := w.kept[query]; ok {
		return st, nil
	}
	ds, err := w.full().PrepareContext(ctx, query)
	if err != nil || len(w.kept) >= maxCachedStmts {
		return ds, err
	}
	k, ok := ds.(keepable)
	if !ok {
		return ds, nil
	}
	if w.kept == nil {
		w.kept = make(map[string]*keptStmt)
	}
	st := &keptStmt{k}
	w.kept[query] = st
	return st, nil
}

func (w *writerConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return w.full().ExecContext(ctx, query, args)
}

func (w *writerConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return w.full().QueryContext(ctx, query, args)
}

func (w *writerConn) ResetSession(ctx context.Context) error { return w.full().ResetSession(ctx) }
func (w *writerConn) IsValid() bool                          { return w.full().IsValid() }
func (w *writerConn) Ping(ctx context.Context) error         { return w.full().Ping(ctx) }

// writerTx is a transaction of a writerConn, as database/sql runs it
// (the migrations, before the committer has the connection).
type writerTx struct{ w *writerConn }

func (t writerTx) Commit() error   { return t.w.commitTx() }
func (t writerTx) Rollback() error { return t.w.rollbackTx() }
