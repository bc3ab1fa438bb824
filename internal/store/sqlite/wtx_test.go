package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"

	"github.com/switchboardhq/switchboard/internal/store"
)

// TestScanValue: what a write body scans a driver value into converts as
// database/sql's Scan would, for each destination type the bodies use;
// NULL into a string, number or bool, and a value that does not fit, are
// errors.
func TestScanValue(t *testing.T) {
	blob := []byte("blob")
	for _, tc := range []struct {
		name    string
		src     driver.Value
		dest    func() any // a new destination
		want    any        // what the destination then points to
		wantErr bool
	}{
		{"string from text", "text", func() any { return new(string) }, "text", false},
		{"string from blob", []byte("b"), func() any { return new(string) }, "b", false},
		{"string from integer", int64(-7), func() any { return new(string) }, "-7", false},
		{"string from NULL", nil, func() any { return new(string) }, "", true},
		{"int64", int64(1 << 40), func() any { return new(int64) }, int64(1 << 40), false},
		{"int64 from text", "12", func() any { return new(int64) }, int64(12), false},
		{"int64 from bad text", "x", func() any { return new(int64) }, int64(0), true},
		{"int64 from NULL", nil, func() any { return new(int64) }, int64(0), true},
		{"int", int64(3), func() any { return new(int) }, 3, false},
		{"int from NULL", nil, func() any { return new(int) }, 0, true},
		{"bool 1", int64(1), func() any { return new(bool) }, true, false},
		{"bool 0", int64(0), func() any { return new(bool) }, false, false},
		{"bool 2", int64(2), func() any { return new(bool) }, false, true},
		{"bool from NULL", nil, func() any { return new(bool) }, false, true},
		{"float64", 1.5, func() any { return new(float64) }, 1.5, false},
		{"float64 from integer", int64(2), func() any { return new(float64) }, 2.0, false},
		{"bytes from blob", blob, func() any { return new([]byte) }, []byte("blob"), false},
		{"bytes from text", "t", func() any { return new([]byte) }, []byte("t"), false},
		{"bytes from NULL", nil, func() any { b := []byte("old"); return &b }, []byte(nil), false},
		{"any integer", int64(5), func() any { return new(any) }, any(int64(5)), false},
		{"any blob", blob, func() any { return new(any) }, any([]byte("blob")), false},
		{"any NULL", nil, func() any { return new(any) }, any(nil), false},
		{"NullString", "s", func() any { return new(sql.NullString) }, sql.NullString{String: "s", Valid: true}, false},
		{"NullString from NULL", nil, func() any { return new(sql.NullString) }, sql.NullString{}, false},
		{"NullInt64", int64(9), func() any { return new(sql.NullInt64) }, sql.NullInt64{Int64: 9, Valid: true}, false},
		{"NullInt64 from NULL", nil, func() any { return new(sql.NullInt64) }, sql.NullInt64{}, false},
		{"unsupported destination", int64(1), func() any { return new(uint8) }, uint8(0), true},
		{"int64 from blob into bool", blob, func() any { return new(bool) }, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dest := tc.dest()
			err := scanValue(dest, tc.src)
			if (err != nil) != tc.wantErr {
				t.Fatalf("scanValue(%T, %#v) error = %v, want error %v", dest, tc.src, err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			got := deref(dest)
			if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", tc.want) {
				t.Errorf("scanValue(%T, %#v) stored %#v, want %#v", dest, tc.src, got, tc.want)
			}
		})
	}
	// A blob is copied: the driver may reuse its buffer.
	var b []byte
	var a any
	src := []byte("lent")
	if err := scanValue(&b, src); err != nil {
		t.Fatal(err)
	}
	if err := scanValue(&a, src); err != nil {
		t.Fatal(err)
	}
	copy(src, "XXXX")
	if !bytes.Equal(b, []byte("lent")) || !bytes.Equal(a.([]byte), []byte("lent")) {
		t.Errorf("scanned blobs %q, %q share the driver's buffer", b, a)
	}
}

// deref is what dest, a pointer, points to.
func deref(dest any) any {
	switch d := dest.(type) {
	case *string:
		return *d
	case *int64:
		return *d
	case *int:
		return *d
	case *bool:
		return *d
	case *float64:
		return *d
	case *[]byte:
		return *d
	case *any:
		return *d
	case *sql.NullString:
		return *d
	case *sql.NullInt64:
		return *d
	case *uint8:
		return *d
	}
	panic(fmt.Sprintf("deref: %T", dest))
}

// TestWriterQueries: a body's queries on the writer's connection return
// their rows, sql.ErrNoRows for no row, and run as well once the connection
// keeps no more statements (each then prepared and closed at its use).
func TestWriterQueries(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	writerExec(t, s, `CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT)`)
	n := maxCachedStmts + 10
	err := s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
		for i := range n {
			// Distinct queries: the connection keeps the first ones only.
			if _, err := tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO kv (k, v) VALUES (?, 'v%d')`, i), i); err != nil {
				return fmt.Errorf("insert %d: %w", i, err)
			}
		}
		for _, i := range []int{0, n - 1} {
			st, err := tx.prepare(ctx, fmt.Sprintf(`SELECT v FROM kv WHERE k = ? -- %d`, i))
			if err != nil {
				return err
			}
			var v string
			if err := st.QueryRowContext(ctx, i).Scan(&v); err != nil || v != fmt.Sprintf("v%d", i) {
				return fmt.Errorf("row %d: %q, %v", i, v, err)
			}
			if err := st.QueryRowContext(ctx, -1).Scan(&v); !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("no row: %v, want sql.ErrNoRows", err)
			}
			rows, err := st.QueryContext(ctx, i)
			if err != nil {
				return err
			}
			got := 0
			for rows.Next() {
				got++
			}
			if err := rows.Err(); err != nil || got != 1 {
				return fmt.Errorf("rows of %d: %d, %v", i, got, err)
			}
			rows.Close()
		}
		var count int
		return tx.QueryRowContext(ctx, `SELECT count(*) FROM kv -- uncached`).Scan(&count)
	})
	if err != nil {
		t.Fatal(err)
	}
	var w *writerConn
	if err := s.writeTx(ctx, func(_ context.Context, tx wtx) error { w = tx.w; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(w.kept) != maxCachedStmts {
		t.Errorf("the writer keeps %d statements, want %d", len(w.kept), maxCachedStmts)
	}
	var count int
	if err := s.r.QueryRow(`SELECT count(*) FROM kv`).Scan(&count); err != nil || count != n {
		t.Errorf("%d rows stored (%v), want %d", count, err, n)
	}
}

// TestWriterReopensABrokenConnection: when the writer's connection is
// closed underneath the committer, the next write takes a new connection
// (as the pool did for database/sql's transactions) and commits, and Close
// still closes cleanly.
func TestWriterReopensABrokenConnection(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	writerConnOf := func() *writerConn {
		t.Helper()
		var w *writerConn
		if err := s.writeTx(ctx, func(_ context.Context, tx wtx) error { w = tx.w; return nil }); err != nil {
			t.Fatal(err)
		}
		return w
	}
	if err := s.CreateSession(ctx, &store.Session{Key: "agent:main:a", SessionID: "sid-a", AgentID: "main"}); err != nil {
		t.Fatal(err)
	}
	old := writerConnOf()
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSession(ctx, &store.Session{Key: "agent:main:b", SessionID: "sid-b", AgentID: "main"}); err != nil {
		t.Fatalf("the write after the connection broke: %v", err)
	}
	if w := writerConnOf(); w == old {
		t.Error("the writer kept its closed connection")
	}
	for _, key := range []string{"agent:main:a", "agent:main:b"} {
		if got, err := s.GetSession(ctx, key); err != nil || got == nil {
			t.Errorf("GetSession(%q) = %v, %v", key, got, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close after a reopen: %v", err)
	}
}
