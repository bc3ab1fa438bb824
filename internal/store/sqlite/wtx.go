package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// wtx is the writer's open transaction as a write body sees it: its
// statements run on the writer's connection directly, through the
// statements the connection keeps prepared (writerConn.PrepareContext),
// without database/sql's Tx (a context and a goroutine watching it per
// transaction, the connection's locks around each statement). Only the
// committer's goroutine of the moment (see committer) holds one.
type wtx struct{ w *writerConn }

// ExecContext runs query, a statement that returns no rows, with args.
func (t wtx) ExecContext(ctx context.Context, query string, args ...any) (driver.Result, error) {
	return t.w.exec(ctx, query, args)
}

// QueryContext runs query with args; the rows must be closed.
func (t wtx) QueryContext(ctx context.Context, query string, args ...any) (*wrows, error) {
	return t.w.query(ctx, query, args)
}

// QueryRowContext runs query with args for its first row; Scan reports
// its error, sql.ErrNoRows when there is no row.
func (t wtx) QueryRowContext(ctx context.Context, query string, args ...any) *wrow {
	rows, err := t.w.query(ctx, query, args)
	if err != nil {
		return &wrow{err: err}
	}
	return &wrow{rows: *rows}
}

// prepare returns query's statement, prepared at its first use and kept by
// the connection for its lifetime.
func (t wtx) prepare(ctx context.Context, query string) (wstmt, error) {
	st, err := t.w.PrepareContext(ctx, query)
	if err != nil {
		return wstmt{}, err
	}
	k, ok := st.(*keptStmt)
	if !ok {
		// The connection keeps no more statements: each use prepares
		// the query again and closes its statement.
		if err := st.Close(); err != nil {
			return wstmt{}, err
		}
	}
	return wstmt{w: t.w, query: query, kept: k}, nil
}

// wstmt is a statement of the writer's connection (see wtx.prepare).
type wstmt struct {
	w     *writerConn
	query string
	kept  *keptStmt // nil: prepared at each use
}

// ExecContext runs the statement, which returns no rows, with args.
func (s wstmt) ExecContext(ctx context.Context, args ...any) (driver.Result, error) {
	if s.kept == nil {
		return s.w.exec(ctx, s.query, args)
	}
	return s.w.execStmt(ctx, s.kept, args)
}

// QueryContext runs the statement with args; the rows must be closed.
func (s wstmt) QueryContext(ctx context.Context, args ...any) (*wrows, error) {
	if s.kept == nil {
		return s.w.query(ctx, s.query, args)
	}
	rows := new(wrows)
	if err := s.w.queryStmt(ctx, rows, s.kept, args); err != nil {
		return nil, err
	}
	return rows, nil
}

// QueryRowContext runs the statement with args for its first row.
func (s wstmt) QueryRowContext(ctx context.Context, args ...any) *wrow {
	if s.kept == nil {
		return wtx{s.w}.QueryRowContext(ctx, s.query, args...)
	}
	r := new(wrow)
	r.err = s.w.queryStmt(ctx, &r.rows, s.kept, args)
	return r
}

// wrow is the outcome of QueryRowContext.
type wrow struct {
	rows wrows
	err  error
}

// Scan stores the row's columns in dest (see scanValue) and closes the
// rows; sql.ErrNoRows when there is no row.
func (r *wrow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	return r.rows.Close()
}

// wrows are the rows of a query on the writer's connection.
type wrows struct {
	rows   driver.Rows
	stmt   driver.Stmt // closed with the rows: a statement the connection does not keep
	vals   []driver.Value
	err    error
	closed bool
}

// Next moves to the next row; false at the end or on an error (Err).
func (r *wrows) Next() bool {
	if r.closed {
		return false
	}
	if r.vals == nil {
		r.vals = make([]driver.Value, len(r.rows.Columns()))
	}
	if err := r.rows.Next(r.vals); err != nil {
		if err != io.EOF {
			r.err = err
		}
		r.Close()
		return false
	}
	return true
}

// Scan stores the current row's columns in dest (see scanValue).
func (r *wrows) Scan(dest ...any) error {
	if r.closed || r.vals == nil {
		return errors.New("sqlite: Scan called without a row (Next)")
	}
	if len(dest) != len(r.vals) {
		return fmt.Errorf("sqlite: Scan of %d columns into %d destinations", len(r.vals), len(dest))
	}
	for i, v := range r.vals {
		if err := scanValue(dest[i], v); err != nil {
			return fmt.Errorf("sqlite: Scan column %d: %w", i, err)
		}
	}
	return nil
}

// Err is the error that ended Next, if any.
func (r *wrows) Err() error { return r.err }

// Close ends the query; it may be called more than once.
func (r *wrows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	clear(r.vals) // holds no value past the rows
	err := r.rows.Close()
	if r.stmt != nil {
		err = errors.Join(err, r.stmt.Close())
	}
	return err
}

// scanValue stores src, a value of the driver, in dest, converting it as
// database/sql's Scan would for the destinations the write bodies use:
// *string, *[]byte (a copy; nil for NULL), *int64, *int, *bool (an integer
// 0 or 1), *float64, *any (bytes copied), and any sql.Scanner (NullString,
// NullInt64, ...). NULL into a string, number or bool is an error.
func scanValue(dest any, src driver.Value) error {
	if sc, ok := dest.(sql.Scanner); ok {
		return sc.Scan(src)
	}
	switch d := dest.(type) {
	case *any:
		if b, ok := src.([]byte); ok {
			src = bytes.Clone(b)
		}
		*d = src
		return nil
	case *[]byte:
		switch v := src.(type) {
		case nil:
			*d = nil
			return nil
		case []byte:
			*d = bytes.Clone(v)
			return nil
		case string:
			*d = []byte(v)
			return nil
		}
	case *string:
		switch v := src.(type) {
		case string:
			*d = v
			return nil
		case []byte:
			*d = string(v)
			return nil
		case int64:
			*d = strconv.FormatInt(v, 10)
			return nil
		case float64:
			*d = strconv.FormatFloat(v, 'g', -1, 64)
			return nil
		}
	case *int64:
		n, err := scanInt(src, 64)
		if err == nil {
			*d = n
		}
		return err
	case *int:
		n, err := scanInt(src, strconv.IntSize)
		if err == nil {
			*d = int(n)
		}
		return err
	case *bool:
		switch v := src.(type) {
		case bool:
			*d = v
			return nil
		case int64:
			if v == 0 || v == 1 {
				*d = v == 1
				return nil
			}
			return fmt.Errorf("converting %d to bool: not 0 or 1", v)
		}
	case *float64:
		switch v := src.(type) {
		case float64:
			*d = v
			return nil
		case int64:
			*d = float64(v)
			return nil
		}
	}
	if src == nil {
		return fmt.Errorf("converting NULL to %T is unsupported", dest)
	}
	return fmt.Errorf("unsupported Scan, storing %T into %T", src, dest)
}

// scanInt converts src to an integer of bits bits.
func scanInt(src driver.Value, bits int) (int64, error) {
	switch v := src.(type) {
	case int64:
		if bits < 64 && (v < -1<<(bits-1) || v >= 1<<(bits-1)) {
			return 0, fmt.Errorf("converting %d to a %d-bit integer: out of range", v, bits)
		}
		return v, nil
	case string:
		return strconv.ParseInt(v, 10, bits)
	case []byte:
		return strconv.ParseInt(string(v), 10, bits)
	case nil:
		return 0, errors.New("converting NULL to an integer is unsupported")
	}
	return 0, fmt.Errorf("unsupported Scan, storing %T into an integer", src)
}
