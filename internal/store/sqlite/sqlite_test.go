package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/storetest"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

func openTest(t *testing.T, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "store.db"), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// writerExec runs query, which returns no rows, with args in a write
// transaction of s's writer.
func writerExec(tb testing.TB, s *Store, query string, args ...any) {
	tb.Helper()
	if err := s.writeTx(context.Background(), func(ctx context.Context, tx wtx) error {
		_, err := tx.ExecContext(ctx, query, args...)
		return err
	}); err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
}

// writerRow scans the row of query into dest, in a write transaction of
// s's writer: for what the writer's own connection reports (its pragmas).
func writerRow(tb testing.TB, s *Store, query string, dest ...any) {
	tb.Helper()
	if err := s.writeTx(context.Background(), func(ctx context.Context, tx wtx) error {
		return tx.QueryRowContext(ctx, query).Scan(dest...)
	}); err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTest(t, Options{}) })
}

func TestConformanceFullSyncOneReader(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTest(t, Options{FullSync: true, Readers: 1}) })
}

func TestPragmas(t *testing.T) {
	ctx := context.Background()
	for _, full := range []bool{false, true} {
		s := openTest(t, Options{FullSync: full})
		var mode string
		var syncLevel, fk, busy, qo int
		writerRow(t, s, `PRAGMA journal_mode`, &mode)
		writerRow(t, s, `PRAGMA synchronous`, &syncLevel)
		writerRow(t, s, `PRAGMA foreign_keys`, &fk)
		writerRow(t, s, `PRAGMA busy_timeout`, &busy)
		wantSync := 1 // NORMAL
		if full {
			wantSync = 2
		}
		if mode != "wal" || syncLevel != wantSync || fk != 1 || busy != 5000 {
			t.Errorf("writer pragmas (full=%v): journal_mode=%s synchronous=%d foreign_keys=%d busy_timeout=%d",
				full, mode, syncLevel, fk, busy)
		}
		if err := s.r.QueryRowContext(ctx, `PRAGMA query_only`).Scan(&qo); err != nil {
			t.Fatal(err)
		}
		if qo != 1 {
			t.Errorf("reader query_only = %d, want 1", qo)
		}
		if _, err := s.r.ExecContext(ctx, `DELETE FROM sessions`); err == nil {
			t.Errorf("reader pool accepted a write")
		}
		if got := s.w.Stats().MaxOpenConnections; got != 1 {
			t.Errorf("writer MaxOpenConnections = %d, want 1", got)
		}
		if got := s.r.Stats().MaxOpenConnections; got != 4 {
			t.Errorf("reader MaxOpenConnections = %d, want 4", got)
		}
	}
}

func TestReopenKeepsData(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSession(ctx, &store.Session{Key: "agent:main:main", SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if _, err := s.GetSession(ctx, "agent:main:main"); err != nil {
		t.Errorf("GetSession after reopen: %v", err)
	}
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != schemaVersion() {
		t.Errorf("schema_migrations rows = %d, %v; want %d", n, err, schemaVersion())
	}
}

func TestRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// What a newer binary's migration leaves: its version in the table
	// and in the header.
	writerExec(t, s, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)`, schemaVersion()+1)
	writerExec(t, s, fmt.Sprintf(`PRAGMA user_version = %d`, schemaVersion()+1))
	s.Close()
	if s, err := Open(ctx, path, Options{}); !errors.Is(err, ErrNewerSchema) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Open of a newer schema: %v, want ErrNewerSchema", err)
	}
}

func TestMemoryPath(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, MemoryPath, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := s.tempDir
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("temp dir: %v", err)
	}
	if _, err := s.AppendMessages(ctx, "x", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temp dir %s still there after Close: %v", dir, err)
	}
}

func TestClosedStore(t *testing.T) {
	s := openTest(t, Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSession(context.Background(), "k"); !errors.Is(err, net.ErrClosed) {
		t.Errorf("GetSession after Close: %v, want net.ErrClosed", err)
	}
	if err := s.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second Close: %v, want net.ErrClosed", err)
	}
}

func TestInjectedClockAndIDs(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 5, 6, 7, 8, 9, 123456789, time.UTC)
	n := 0
	s := openTest(t, Options{
		Now:        func() time.Time { return now },
		NewEntryID: func() string { n++; return "id-" + string(rune('a'+n-1)) },
	})
	if err := s.CreateSession(ctx, &store.Session{Key: "agent:main:main", SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetSession(ctx, "agent:main:main")
	if err != nil {
		t.Fatal(err)
	}
	want := now.Truncate(time.Millisecond)
	if !got.CreatedAt.Equal(want) || !got.UpdatedAt.Equal(want) {
		t.Errorf("times = %v, %v; want %v", got.CreatedAt, got.UpdatedAt, want)
	}
	msgs, err := s.AppendMessages(ctx, "s1", []store.Message{
		{Entry: entry("message")}, {Entry: entry("custom")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if msgs[0].Entry.ID != "id-a" || msgs[1].Entry.ID != "id-b" || *msgs[1].Entry.ParentID != "id-a" {
		t.Errorf("ids = %q, %q (parent %q)", msgs[0].Entry.ID, msgs[1].Entry.ID, *msgs[1].Entry.ParentID)
	}
	if msgs[0].Entry.Timestamp != "2026-05-06T07:08:09.123Z" || !msgs[0].CreatedAt.Equal(want) {
		t.Errorf("timestamp = %q, created %v", msgs[0].Entry.Timestamp, msgs[0].CreatedAt)
	}
	if _, err := s.AppendMessages(ctx, "s1", []store.Message{{}}); err == nil {
		t.Errorf("AppendMessages accepted an entry without a type")
	}
	if _, err := s.AppendMessages(ctx, "", []store.Message{{Entry: entry("message")}}); err == nil {
		t.Errorf("AppendMessages accepted an empty session id")
	}
}

// entry returns a minimal entry of type typ.
func entry(typ string) transcript.Entry {
	e := transcript.Entry{Type: typ}
	if typ == transcript.TypeMessage {
		e.Message = &transcript.Message{Role: transcript.RoleUser, Content: transcript.StringContent("x")}
	}
	return e
}

func TestWriteTxIsImmediate(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other := sql.OpenDB(connector{dsn: path + "?_pragma=busy_timeout(0)"})
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The write lock is taken at BEGIN, before any statement: another
	// connection cannot start a write transaction.
	if err := s.writeTx(ctx, func(context.Context, wtx) error {
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err == nil {
			conn.ExecContext(ctx, "ROLLBACK")
			return errors.New("a second writer got the lock while a store transaction was open")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateFromV1 opens a database left at schema version 1 (before the
// outbox) and checks that Open upgrades it and keeps its rows.
func TestMigrateFromV1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	writeAtVersion(t, path, 1,
		`INSERT INTO runs (run_id, session_key, status, created_at) VALUES ('run-1', 'agent:main:main', 'running', 1)`)

	s := openAt(t, path)
	if r, err := s.GetRun(ctx, "run-1"); err != nil || r.Status != store.RunRunning {
		t.Fatalf("GetRun after migration = %+v, %v", r, err)
	}
	item := &store.OutboxItem{ID: "announce:run-1:agent:main:main", Kind: "announce", SessionKey: "agent:main:main"}
	if _, err := s.FinishRun(ctx, "run-1", store.RunResult{Status: store.RunOK, Outbox: []store.OutboxItem{*item}}); err != nil {
		t.Fatalf("FinishRun after migration: %v", err)
	}
	if got, err := s.GetOutbox(ctx, item.ID); err != nil || got.RunID != "run-1" {
		t.Fatalf("GetOutbox after migration = %+v, %v", got, err)
	}
	var v int
	if err := s.r.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&v); err != nil || v != schemaVersion() {
		t.Errorf("schema version = %d, %v; want %d", v, err, schemaVersion())
	}
}

// writeAtVersion writes a database at path left at schema version v (the
// first v migrations, v recorded as applied), then runs rows in it.
func writeAtVersion(t *testing.T, path string, v int, rows ...string) {
	t.Helper()
	db := sql.OpenDB(connector{dsn: path})
	defer db.Close()
	qs := []string{`CREATE TABLE schema_migrations (version INTEGER NOT NULL PRIMARY KEY, applied_at INTEGER NOT NULL)`}
	qs = append(qs, migrations[:v]...)
	qs = append(qs, fmt.Sprintf(`INSERT INTO schema_migrations (version, applied_at) VALUES (%d, 0)`, v))
	for _, q := range append(qs, rows...) {
		if _, err := db.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// openAt opens the database at path, closing it when the test ends.
func openAt(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestMigrateSubagentRegistry opens a database at schema version 7, whose
// sub-agent registry records are outbox items of kind "subagent", and
// checks that Open moves them into subagent_runs with their state and
// leaves the other outbox items alone.
func TestMigrateSubagentRegistry(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	writeAtVersion(t, path, 7,
		`INSERT INTO outbox (id, kind, session_key, run_id, payload, status, next_attempt_at, created_at, updated_at)
			VALUES ('subagent:r1', 'subagent', 'agent:main:main', 'r1', '{"childRunId":"r1","childSessionKey":"agent:main:subagent:a","archiveAtMs":5000}', 'pending', 0, 1000, 1000)`,
		`INSERT INTO outbox (id, kind, session_key, run_id, payload, status, next_attempt_at, created_at, updated_at)
			VALUES ('subagent:r2', 'subagent', 'agent:main:main', 'r2', '{"childRunId":"r2","childSessionKey":"agent:main:subagent:b"}', 'delivered', 0, 2000, 2000)`,
		`INSERT INTO outbox (id, kind, session_key, run_id, payload, status, next_attempt_at, created_at, updated_at)
			VALUES ('announce:r2:agent:main:main', 'announce', 'agent:main:main', 'r2', '{}', 'pending', 0, 3000, 3000)`,
	)

	s := openAt(t, path)
	r1, err := s.GetSubagent(ctx, "r1")
	if err != nil || r1.Status != store.SubagentActive || r1.ChildSessionKey != "agent:main:subagent:a" ||
		r1.RequesterKey != "agent:main:main" || r1.ArchiveAt.UnixMilli() != 5000 || r1.CreatedAt.UnixMilli() != 1000 {
		t.Errorf("r1 after migration = %+v, %v", r1, err)
	}
	if r2, err := s.GetSubagent(ctx, "r2"); err != nil || r2.Status != store.SubagentRetired || !r2.ArchiveAt.IsZero() {
		t.Errorf("r2 after migration = %+v, %v", r2, err)
	}
	if items, err := s.ListOutbox(ctx, store.OutboxFilter{Kind: "subagent"}); err != nil || len(items) != 0 {
		t.Errorf("registry items left in the outbox: %v, %v", items, err)
	}
	if _, err := s.GetOutbox(ctx, "announce:r2:agent:main:main"); err != nil {
		t.Errorf("announce lost by the migration: %v", err)
	}
}

func TestCronConformance(t *testing.T) {
	storetest.RunCron(t, func(t *testing.T) store.CronStore { return openTest(t, Options{}) })
}

func TestA2ATaskConformance(t *testing.T) {
	storetest.RunA2ATasks(t, func(t *testing.T, now func() time.Time) store.A2ATaskStore {
		return openTest(t, Options{Now: now})
	})
}

// TestUserVersionMarksACurrentSchema: the migration leaves its version in
// the header; a database migrated by a binary before that (header 0, table
// current) gets it on its next open, and a start on a current header skips
// the migration (the table is not even looked at).
func TestUserVersionMarksACurrentSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	userVersion := func(s *Store) int {
		t.Helper()
		var v int
		if err := s.r.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	s := openAt(t, path)
	if v := userVersion(s); v != schemaVersion() {
		t.Fatalf("user_version after a fresh open = %d, want %d", v, schemaVersion())
	}
	writerExec(t, s, `PRAGMA user_version = 0`)
	s.Close()
	s = openAt(t, path)
	if v := userVersion(s); v != schemaVersion() {
		t.Fatalf("user_version after opening an older binary's database = %d, want %d", v, schemaVersion())
	}
	writerExec(t, s, `DROP TABLE schema_migrations`)
	s.Close()
	s = openAt(t, path)
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'schema_migrations'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("a current header still ran the migration: schema_migrations tables %d (%v)", n, err)
	}
}

// TestPageCacheSizes checks the bounded page caches of the writer and the
// readers (SQLite's default is 2,000 KiB per connection).
func TestPageCacheSizes(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "cache.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		name string
		db   *sql.DB
		want int
	}{{"writer", s.w, -writerCacheKiB}, {"reader", s.r, -readerCacheKiB}} {
		var got int
		if err := tc.db.QueryRowContext(context.Background(), `PRAGMA cache_size`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%s cache_size %d, want %d", tc.name, got, tc.want)
		}
	}
}
