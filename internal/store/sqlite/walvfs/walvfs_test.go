package walvfs_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/switchboardhq/switchboard/internal/store/sqlite/walvfs"
)

// pageSize is SQLite's default page size, which the frame counts assume.
const pageSize = 4096

// maxWrite is the most the VFS writes in one call (its buffer).
const maxWrite = 64 << 10

// openDB opens path with the pragmas, through the VFS when gathered (the
// tests' writer) or on SQLite's own unix VFS (their readers, checkpointers
// and other writers, as another process such as the sqlite3 shell would
// be). Its commits do not sync the WAL (synchronous=NORMAL, as the
// store's) unless the pragmas say otherwise: a sync writes the buffer out
// too.
func openDB(tb testing.TB, path string, gathered bool, pragmas ...string) *sql.DB {
	tb.Helper()
	if err := walvfs.Register(); err != nil {
		tb.Fatal(err)
	}
	q := url.Values{"_pragma": append([]string{"busy_timeout(5000)", "journal_mode(WAL)", "synchronous(NORMAL)"}, pragmas...)}
	if gathered {
		q.Set("vfs", walvfs.Name)
	}
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		tb.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	tb.Cleanup(func() { db.Close() })
	return db
}

func exec1(tb testing.TB, db *sql.DB, query string, args ...any) {
	tb.Helper()
	if _, err := db.Exec(query, args...); err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
}

func count(tb testing.TB, db *sql.DB, query string, args ...any) int64 {
	tb.Helper()
	var n int64
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
	return n
}

func integrity(tb testing.TB, db *sql.DB) {
	tb.Helper()
	var res string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&res); err != nil || res != "ok" {
		tb.Fatalf("integrity_check: %q, %v", res, err)
	}
}

func walSize(tb testing.TB, path string) int64 {
	tb.Helper()
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size()
}

// schema is a table with two indexes, so that a commit of a few rows
// writes several pages.
const schema = `CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB NOT NULL, w TEXT NOT NULL);
CREATE INDEX t_v ON t (v);
CREATE INDEX t_w ON t (w)`

// insertRows inserts rows [from, to) in one transaction of db.
func insertRows(tb testing.TB, db *sql.DB, from, to, size int) {
	tb.Helper()
	tx, err := db.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	for k := from; k < to; k++ {
		if _, err := tx.Exec(`INSERT INTO t (k, v, w) VALUES (?, randomblob(?), hex(randomblob(40)))`, k, size); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}

// TestCommitIsOneWrite: a commit of many pages reaches the WAL in one
// write, and a connection on the plain VFS reads it as soon as COMMIT
// returns. The unix VFS writes two a frame. With synchronous=FULL, each
// commit also syncs the WAL.
func TestCommitIsOneWrite(t *testing.T) {
	for _, sync := range []string{"NORMAL", "FULL"} {
		t.Run(sync, func(t *testing.T) { testCommitIsOneWrite(t, sync) })
	}
}

func testCommitIsOneWrite(t *testing.T, sync string) {
	path := filepath.Join(t.TempDir(), "one.db")
	w := openDB(t, path, true, "synchronous("+sync+")")
	r := openDB(t, path, false)
	exec1(t, w, schema)
	insertRows(t, w, 0, 1, 100) // the WAL's header is written
	for i := 1; i <= 20; i++ {
		before, size := walvfs.Writes(), walSize(t, path)
		insertRows(t, w, i*10, i*10+10, 400) // 4 KB in three b-trees
		bytes := walSize(t, path) - size
		frames := bytes / (pageSize + 24)
		// One write, or one per buffer when the random keys of t_v split
		// many pages: each but the last holds more than a buffer less a
		// page.
		most := (bytes + maxWrite - pageSize - 1) / (maxWrite - pageSize)
		if got := walvfs.Writes() - before; got < 1 || got > most || frames < 3 {
			t.Fatalf("commit %d: %d writes for %d frames, want 1 to %d for at least 3", i, got, frames, most)
		}
		if got := count(t, r, `SELECT count(*) FROM t`); got != int64(1+10*i) {
			t.Fatalf("commit %d: the plain reader sees %d rows, want %d", i, got, 1+10*i)
		}
		if got := count(t, r, `SELECT count(*) FROM t WHERE k >= ?`, i*10); got != 10 {
			t.Fatalf("commit %d: the plain reader sees %d of its rows, want 10", i, got)
		}
	}
	integrity(t, r)
}

// TestSpilledTransactions: transactions larger than the writer's page
// cache write frames before their commit, which the writer reads back
// and rewrites; larger than the buffer they go out in several writes;
// one rolled back after spilling leaves nothing behind.
func TestSpilledTransactions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spill.db")
	w := openDB(t, path, true, "cache_size(20)")
	r := openDB(t, path, false)
	exec1(t, w, schema)

	// 600 rows of 2 KB: about 1,000 pages through a cache of 20, rows
	// updated while inside the transaction, so spilled pages are read
	// back from the WAL and written again.
	tx, err := w.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for k := range 600 {
		if _, err := tx.Exec(`INSERT INTO t (k, v, w) VALUES (?, randomblob(2000), ?)`, k, strconv.Itoa(k)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Exec(`UPDATE t SET w = w || '-x' WHERE k % 7 = 0`); err != nil {
		t.Fatal(err)
	}
	var inside int64
	if err := tx.QueryRow(`SELECT count(*) FROM t WHERE w LIKE '%-x'`).Scan(&inside); err != nil || inside != 86 {
		t.Fatalf("inside the transaction: %d rows updated, %v; want 86", inside, err)
	}
	if got := count(t, r, `SELECT count(*) FROM t`); got != 0 {
		t.Fatalf("before the commit the reader sees %d rows", got)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := count(t, r, `SELECT count(*) FROM t WHERE w LIKE '%-x'`); got != 86 {
		t.Fatalf("after the commit the reader sees %d updated rows, want 86", got)
	}

	// One that spills and is rolled back.
	tx, err = w.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for k := 1000; k < 1600; k++ {
		if _, err := tx.Exec(`INSERT INTO t (k, v, w) VALUES (?, randomblob(2000), 'gone')`, k); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	insertRows(t, w, 2000, 2010, 100)
	for _, db := range []*sql.DB{w, r} {
		if got := count(t, db, `SELECT count(*) FROM t`); got != 610 {
			t.Fatalf("%d rows, want 610", got)
		}
		if got := count(t, db, `SELECT count(*) FROM t WHERE w = 'gone'`); got != 0 {
			t.Fatalf("%d rolled-back rows are visible", got)
		}
	}
	integrity(t, r)
	exec1(t, r, `PRAGMA wal_checkpoint(TRUNCATE)`)
	integrity(t, r)
	// VACUUM rewrites every page of the database through the WAL.
	exec1(t, w, `DELETE FROM t WHERE k % 2 = 0`)
	exec1(t, w, `VACUUM`)
	if got := count(t, r, `SELECT count(*) FROM t`); got != 305 {
		t.Fatalf("after VACUUM: %d rows, want 305", got)
	}
	integrity(t, r)
}

// TestRestartedLog: after another connection checkpoints and truncates
// the WAL, the writer starts a new log (its header, then frames from the
// start) and its commits are single writes again.
func TestRestartedLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "restart.db")
	w := openDB(t, path, true)
	r := openDB(t, path, false)
	exec1(t, w, schema)
	next := 0
	for round := range 5 {
		insertRows(t, w, next, next+10, 400)
		next += 10
		mode := "TRUNCATE"
		if round%2 == 1 {
			mode = "RESTART"
		}
		var busy, log, done int
		if err := r.QueryRow(`PRAGMA wal_checkpoint(`+mode+`)`).Scan(&busy, &log, &done); err != nil || busy != 0 {
			t.Fatalf("checkpoint %s: busy %d, %v", mode, busy, err)
		}
		before := walvfs.Writes()
		insertRows(t, w, next, next+1, 400) // the new log's header, then the frames
		insertRows(t, w, next+1, next+2, 400)
		next += 2
		if got := walvfs.Writes() - before; got != 3 {
			t.Fatalf("round %d (%s): %d writes for two commits on a new log, want 3", round, mode, got)
		}
		if got := count(t, r, `SELECT count(*) FROM t`); got != int64(next) {
			t.Fatalf("round %d: the reader sees %d rows, want %d", round, got, next)
		}
	}
	integrity(t, r)
}

// childEnv makes the test binary a writer that commits until killed.
const childEnv = "WALVFS_TEST_WRITER"

// TestKillLosesNoCommit: a writer killed with SIGKILL in the middle of its
// commits keeps every commit that had returned, and the database is
// sound, as read by the plain VFS.
func TestKillLosesNoCommit(t *testing.T) {
	if path := os.Getenv(childEnv); path != "" {
		writeUntilKilled(path)
		return
	}
	path := filepath.Join(t.TempDir(), "kill.db")
	setup := openDB(t, path, false)
	exec1(t, setup, schema)
	setup.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestKillLosesNoCommit$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Each line is a commit that returned. Kill after 300, while the
	// writer is committing more.
	lines := bufio.NewScanner(out)
	last := -1
	for lines.Scan() {
		k, err := strconv.Atoi(lines.Text())
		if err != nil {
			t.Fatalf("writer said %q", lines.Text())
		}
		last = k
		if k == 300 {
			break
		}
	}
	if last != 300 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the writer stopped at %d: %v", last, lines.Err())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	r := openDB(t, path, false)
	integrity(t, r)
	var n, maxK int64
	if err := r.QueryRow(`SELECT count(*), coalesce(max(k), -1) FROM t`).Scan(&n, &maxK); err != nil {
		t.Fatal(err)
	}
	if maxK < 300 || n != maxK+1 {
		t.Fatalf("after the kill: %d rows, the last %d; want every commit up to 300 at least, with none missing", n, maxK)
	}
}

// writeUntilKilled commits one row at a time to path, printing each key
// once its commit returned.
func writeUntilKilled(path string) {
	if err := walvfs.Register(); err != nil {
		panic(err)
	}
	db, err := sql.Open("sqlite", path+"?vfs="+walvfs.Name+"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		panic(err)
	}
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	for k := 0; ; k++ {
		if _, err := db.ExecContext(ctx, `INSERT INTO t (k, v, w) VALUES (?, randomblob(3000), hex(randomblob(40)))`, k); err != nil {
			panic(err)
		}
		fmt.Println(k)
	}
}

// TestRandomWorkload runs random transactions on a writer through the VFS
// (a small page cache, so large ones spill; some rolled back) and some on
// another connection on the plain VFS, random checkpoints of every mode
// and reopenings of the writer, and checks after each step that the plain
// connection reads exactly what a model of the table holds.
func TestRandomWorkload(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("seed %d", seed)
	path := filepath.Join(t.TempDir(), "random.db")
	open := func() *sql.DB { return openDB(t, path, true, "cache_size(16)") }
	w := open()
	r := openDB(t, path, false)
	exec1(t, w, `CREATE TABLE kv (k INTEGER PRIMARY KEY, v BLOB NOT NULL)`)
	exec1(t, w, `CREATE INDEX kv_v ON kv (v)`)
	model := map[int64]int{} // key → length of its value, all bytes = key % 251

	check := func(step int) {
		t.Helper()
		var n, total int64
		if err := r.QueryRow(`SELECT count(*), coalesce(sum(length(v)), 0) FROM kv`).Scan(&n, &total); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		var want int64
		for _, l := range model {
			want += int64(l)
		}
		if n != int64(len(model)) || total != want {
			t.Fatalf("step %d: the reader sees %d rows of %d bytes, want %d of %d", step, n, total, len(model), want)
		}
	}
	for step := range 150 {
		switch op := rng.IntN(20); {
		case op < 14: // a transaction of 1 to 400 changes, a tenth rolled back
			db := w
			if op < 3 {
				db = r // another connection writes, on the plain VFS
			}
			tx, err := db.Begin()
			if err != nil {
				t.Fatal(err)
			}
			pending := map[int64]int{}
			for range 1 + rng.IntN(400) {
				k := int64(rng.IntN(2000))
				if rng.IntN(4) == 0 {
					if _, err := tx.Exec(`DELETE FROM kv WHERE k = ?`, k); err != nil {
						t.Fatal(err)
					}
					pending[k] = -1
					continue
				}
				l := 1 + rng.IntN(6000)
				v := bytes.Repeat([]byte{byte(k % 251)}, l)
				if _, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v`, k, v); err != nil {
					t.Fatal(err)
				}
				pending[k] = l
			}
			if rng.IntN(10) == 0 {
				if err := tx.Rollback(); err != nil {
					t.Fatal(err)
				}
				break
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			for k, l := range pending {
				if l < 0 {
					delete(model, k)
				} else {
					model[k] = l
				}
			}
		case op < 18: // a checkpoint by the plain connection
			mode := []string{"PASSIVE", "FULL", "RESTART", "TRUNCATE"}[rng.IntN(4)]
			var busy, log, done int
			if err := r.QueryRow(`PRAGMA wal_checkpoint(`+mode+`)`).Scan(&busy, &log, &done); err != nil {
				t.Fatalf("step %d: checkpoint %s: %v", step, mode, err)
			}
		default: // the writer reopens
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			w = open()
		}
		check(step)
	}
	// Every value holds only its key's byte.
	var wrong int64
	if err := r.QueryRow(`SELECT count(*) FROM kv WHERE replace(hex(v), printf('%02X', k % 251), '') != ''`).Scan(&wrong); err != nil || wrong != 0 {
		t.Fatalf("%d values hold other bytes than their key's (%v)", wrong, err)
	}
	integrity(t, r)
}

// TestRollbackLeavesNothingBehind: frames a transaction spilled and then
// rolled back are never written later over what another connection
// committed in their place, and the writer's next commits (which start
// where the rolled-back frames did) are complete when they return.
func TestRollbackLeavesNothingBehind(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rollback.db")
	w := openDB(t, path, true, "cache_size(8)")
	other := openDB(t, path, false) // another writer, on the plain VFS
	exec1(t, w, `CREATE TABLE u (k INTEGER PRIMARY KEY, v BLOB NOT NULL)`)
	tx, err := w.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for k := range 500 {
		if _, err := tx.Exec(`INSERT INTO u (k, v) VALUES (?, randomblob(300))`, k); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	want := int64(500)
	for round := range 8 {
		// The log restarts, the pages are read from the database file, and
		// an update of every row spills its pages in order, none read
		// again: most wait in the buffer when the transaction is rolled
		// back.
		exec1(t, other, `PRAGMA wal_checkpoint(TRUNCATE)`)
		tx, err := w.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`UPDATE u SET v = randomblob(300 + ?)`, round); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		// The other connection commits where those frames were: in odd
		// rounds one transaction of fewer frames, so that the writer's
		// next commit lies where they did; in even rounds 30, past them.
		base := 1000 + round*100
		if round%2 == 1 {
			exec1(t, other, `INSERT INTO u (k, v) SELECT ? + x, randomblob(500) FROM
				(WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c WHERE x < 29) SELECT x FROM c)`, base)
		} else {
			for k := base; k < base+30; k++ {
				exec1(t, other, `INSERT INTO u (k, v) VALUES (?, randomblob(500))`, k)
			}
		}
		want += 30
		// The writer reads, then commits where the rolled-back frames
		// were.
		if got := count(t, w, `SELECT count(*) FROM u`); got != want {
			t.Fatalf("round %d: the writer reads %d rows, want %d", round, got, want)
		}
		exec1(t, w, `INSERT INTO u (k, v) VALUES (?, randomblob(200))`, 5000+round)
		want++
		r := openDB(t, path, false)
		if got := count(t, r, `SELECT count(*) FROM u`); got != want {
			t.Fatalf("round %d: a new reader sees %d rows, want %d", round, got, want)
		}
		integrity(t, r)
		r.Close()
	}
}

// BenchmarkCommit is a commit of about eight pages (four rows of 3 KB
// appended to a table with an index, as a warm chat turn appends to a
// transcript), on SQLite's unix VFS and through this one, with the WAL
// restarted every 1,000 commits. It reports the frames a commit wrote.
func BenchmarkCommit(b *testing.B) {
	for _, gathered := range []bool{false, true} {
		name := "unix"
		if gathered {
			name = "gathered"
		}
		b.Run(name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "bench.db")
			w := openDB(b, path, gathered, "wal_autocheckpoint(0)") // as the store's writer
			exec1(b, w, `CREATE TABLE b (k INTEGER PRIMARY KEY, sid TEXT NOT NULL, v BLOB NOT NULL);
				CREATE INDEX b_sid ON b (sid, k)`)
			row := bytes.Repeat([]byte("transcript line "), 3000/16)
			b.ReportAllocs()
			var k, frames int64
			size := walSize(b, path)
			for b.Loop() {
				tx, err := w.Begin()
				if err != nil {
					b.Fatal(err)
				}
				for range 4 {
					if _, err := tx.Exec(`INSERT INTO b (k, sid, v) VALUES (?, 'session', ?)`, k, row); err != nil {
						b.Fatal(err)
					}
					k++
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
				if k%4000 == 0 {
					b.StopTimer()
					frames += (walSize(b, path) - size) / (pageSize + 24)
					exec1(b, w, `PRAGMA wal_checkpoint(TRUNCATE)`)
					size = walSize(b, path)
					b.StartTimer()
				}
			}
			frames += (walSize(b, path) - size) / (pageSize + 24)
			b.ReportMetric(float64(frames)/float64(b.N), "frames/op")
		})
	}
}
