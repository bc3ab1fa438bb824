package sqlite

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

var updateSchemaImage = flag.Bool("update-schema-image", false, "rewrite schema.db.gz from the migrations")

// TestSchemaImage checks the embedded schema image against the
// migrations: a database created from it (and migrated on, should the
// image be older) has the schema, version, journal mode and page size
// (pageSize) of one built by running every migration. With
// -update-schema-image it rewrites the image.
func TestSchemaImage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	built := filepath.Join(dir, "built.db")
	// The page size first: the database's first write (journal_mode=WAL's
	// header) fixes it, and the driver runs its _pragma list sorted,
	// journal_mode before page_size.
	db := sql.OpenDB(connector{dsn: fmt.Sprintf("%s?_pragma=page_size(%d)", built, pageSize)})
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `PRAGMA journal_mode=WAL`); err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, db, time.Now); err != nil {
		t.Fatal(err)
	}
	if *updateSchemaImage {
		img := filepath.Join(dir, "image.db")
		if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, img); err != nil {
			t.Fatal(err)
		}
		db.Close()
		idb := sql.OpenDB(connector{dsn: img + "?_pragma=journal_mode(WAL)"})
		if err := idb.PingContext(ctx); err != nil {
			t.Fatal(err)
		}
		idb.Close() // checkpoints: the header says WAL, the WAL is gone
		raw, err := os.ReadFile(img)
		if err != nil {
			t.Fatal(err)
		}
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		zw.Write(raw)
		zw.Close()
		if err := os.WriteFile("schema.db.gz", gz.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("schema.db.gz rewritten: %d bytes (%d uncompressed)", gz.Len(), len(raw))
		return
	}
	want := schemaOf(t, db)
	db.Close()

	fresh := filepath.Join(dir, "fresh.db")
	s := openAt(t, fresh)
	if got := schemaOf(t, s.w); got != want {
		t.Fatalf("a database created from the image differs from the migrations':\n%s\nwant:\n%s\n(regenerate: go test ./internal/store/sqlite -run TestSchemaImage -update-schema-image)", got, want)
	}
}

// TestCreateFreshStreamsTheImage checks that a fresh database is the
// image, written without holding the whole uncompressed image in memory: a
// fresh start runs no collection before ready, so every byte allocated
// stays resident (read whole, the 217 KB image of 4 KiB pages cost 457 KB).
func TestCreateFreshStreamsTheImage(t *testing.T) {
	zr, err := gzip.NewReader(bytes.NewReader(schemaImageGz))
	if err != nil {
		t.Fatal(err)
	}
	want, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "fresh.db")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := createFresh(path); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the fresh database (%d bytes) is not the schema image (%d bytes)", len(got), len(want))
	}
	// Streamed, it allocates the gzip reader's state and one 32 KiB copy
	// buffer, whatever the image's size; read whole, the image and the
	// buffers it outgrew besides.
	const copyBuf = 32 << 10
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc >= uint64(len(want))+copyBuf {
		t.Errorf("createFresh allocated %d bytes for a %d-byte image; want less than the image and a 32 KiB buffer", alloc, len(want))
	}
	if _, err := os.Stat(path + ".new"); !os.IsNotExist(err) {
		t.Errorf("the temporary file is left behind: %v", err)
	}
}

// schemaOf describes a database's schema, version and journal mode.
func schemaOf(t *testing.T, db *sql.DB) string {
	t.Helper()
	ctx := context.Background()
	var b bytes.Buffer
	rows, err := db.QueryContext(ctx, `SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var typ, name, tbl, q string
		if err := rows.Scan(&typ, &name, &tbl, &q); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s %s: %s\n", typ, name, tbl, q)
	}
	var uv, mv int
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&uv); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&mv); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	var page int
	if err := db.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&page); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "user_version %d, migrations %d, journal %s, page size %d\n", uv, mv, mode, page)
	return b.String()
}
