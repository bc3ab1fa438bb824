package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/store"
)

func TestCheck(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "db.sqlite")
	if _, err := Check(ctx, path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Check(missing) = %v, want ErrNotExist", err)
	}
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// While the store is open (as under a running gateway).
	res, err := Check(ctx, path)
	if err != nil {
		t.Fatalf("Check(open db) = %v", err)
	}
	if res.SchemaVersion != schemaVersion() || res.BinaryVersion != schemaVersion() {
		t.Fatalf("versions = %+v, want %d", res, schemaVersion())
	}
	if res.PageSize != pageSize || res.NewPageSize != pageSize {
		t.Fatalf("page sizes = %+v, want %d", res, pageSize)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// A database of 4 KiB pages, as made before the twentieth round.
	db := sql.OpenDB(connector{dsn: path})
	for _, q := range []string{`PRAGMA journal_mode=DELETE`, `PRAGMA page_size=4096`, `VACUUM`, `PRAGMA journal_mode=WAL`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	if res, err := Check(ctx, path); err != nil || res.PageSize != 4096 || res.NewPageSize != pageSize {
		t.Fatalf("Check(4 KiB pages) = %+v, %v", res, err)
	}

	// A file that is not a database.
	bad := filepath.Join(dir, "bad.sqlite")
	if err := os.WriteFile(bad, []byte(strings.Repeat("not a database ", 512)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Check(ctx, bad); err == nil {
		t.Fatal("Check(garbage) = nil")
	}
}

// The database and its WAL and shared-memory files are private, and an
// existing world-readable database is tightened.
func TestFilesArePrivate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "db.sqlite")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %o, want 600", filepath.Base(p), fi.Mode().Perm())
		}
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(p), err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %o after reopen, want 600", filepath.Base(p), fi.Mode().Perm())
		}
	}
}

// Sessions stored before key classes existed are classified on open.
func TestKeyClassBackfill(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db.sqlite")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"agent:main:main", "agent:main:subagent:x", "global"} {
		if err := s.CreateSession(ctx, &store.Session{Key: k, SessionID: "sid-" + k}); err != nil {
			t.Fatal(err)
		}
	}
	writerExec(t, s, `UPDATE sessions SET key_class = -1`)
	s.Close()
	s, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.ListSessions(ctx, store.ListOptions{Exclude: store.ClassSubagent | store.ClassGlobal})
	if err != nil || len(got) != 1 || got[0].Key != "agent:main:main" {
		t.Fatalf("after backfill: %v, %v", got, err)
	}
}
