package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

// TestFreshDatabases checks that each DB call gives a new, empty database
// on a server that answers, and that the server does not run as root.
func TestFreshDatabases(t *testing.T) {
	ctx := context.Background()
	a, b := DB(t), DB(t)
	if a == b {
		t.Fatalf("two DB calls gave the same DSN %q", a)
	}
	for _, dsn := range []string{a, b} {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("fresh database has %d tables", n)
		}
		if _, err := conn.Exec(ctx, `CREATE TABLE x (id int)`); err != nil {
			t.Fatal(err)
		}
		var pid int
		if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			t.Fatal(err)
		}
		if os.Getenv(EnvURL) != "" {
			conn.Close(ctx)
			continue
		}
		// Read while the connection is open: its backend exits with it.
		status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		conn.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" && f[1] == "0" {
				t.Errorf("server backend %d runs as root", pid)
			}
		}
	}
}

// TestDropOnCleanup checks that a test's database is gone after it ends.
func TestDropOnCleanup(t *testing.T) {
	var dsn string
	t.Run("inner", func(t *testing.T) { dsn = DB(t) })
	if t.Skipped() {
		return
	}
	c, err := get()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, cfg.Database).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Errorf("database %s still exists after its test", cfg.Database)
	}
}

func TestSkipOnlyOutsideCI(t *testing.T) {
	missing := fmt.Errorf("wrapped: %w", ErrNoPostgres)
	for _, tt := range []struct {
		err  error
		ci   string
		skip bool
	}{
		{missing, "", true},
		{missing, "false", true},
		{missing, "true", false},
		{errors.New("pg_ctl start: port in use"), "", false},
	} {
		if got := skip(tt.err, tt.ci); got != tt.skip {
			t.Errorf("skip(%v, CI=%q) = %v, want %v", tt.err, tt.ci, got, tt.skip)
		}
	}
	t.Setenv(EnvBin, t.TempDir())
	if _, err := findBin(); !errors.Is(err, ErrNoPostgres) {
		t.Errorf("findBin with an empty %s = %v, want ErrNoPostgres", EnvBin, err)
	}
}

// TestReapStale leaves a cluster behind as a crashed test process would and
// checks that the next Start stops and removes it.
func TestReapStale(t *testing.T) {
	if os.Getenv(EnvURL) != "" {
		t.Skip("uses the local binaries")
	}
	if err := Available(); err != nil {
		if skip(err, os.Getenv("CI")) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	orphan, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer orphan.Stop()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(orphan.dir, ownerFile), []byte(strconv.Itoa(dead.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	pidFile, err := os.ReadFile(filepath.Join(orphan.data, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	postmaster, _ := strconv.Atoi(strings.SplitN(string(pidFile), "\n", 2)[0])
	next, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer next.Stop()
	if _, err := os.Stat(orphan.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the orphan's directory is still there: %v", err)
	}
	if postmaster <= 0 || !exits(postmaster, 10*time.Second) {
		t.Errorf("the orphan's postmaster %d still runs", postmaster)
	}
}

// exits reports whether process pid is gone (or a zombie waiting for its
// parent, here init, to reap it) within d: pg_ctl stop -w returns once the
// server removed its pid file, a moment before the process itself ends.
func exits(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			return true
		}
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if _, rest, ok := strings.Cut(string(stat), ") "); ok && strings.HasPrefix(rest, "Z") {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
