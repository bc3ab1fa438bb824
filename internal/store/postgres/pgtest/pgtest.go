// Package pgtest owns the PostgreSQL test harness: a throwaway cluster made
// with the machine's initdb and pg_ctl under a temporary directory, on a free
// port with its unix socket in that directory, run as an unprivileged OS user
// when the tests run as root, and torn down after. One cluster serves a test
// package's process (started from TestMain with Main); each test gets a fresh
// database from DB.
//
// Test-only: test files of the postgres backend and of packages that run the
// gateway on PostgreSQL import it; production code never does.
//
// When the PostgreSQL binaries are missing, DB skips the test, except under
// CI=true where it fails: CI must run these tests. SWITCHBOARD_TEST_PG_URL,
// when set, names an existing server (a superuser DSN) to use instead of a
// throwaway cluster.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Environment variables the harness reads.
const (
	// EnvURL names an existing server to create test databases on.
	EnvURL = "SWITCHBOARD_TEST_PG_URL"
	// EnvBin names the directory holding initdb and pg_ctl.
	EnvBin = "SWITCHBOARD_PG_BIN"
)

// TestUser is the OS user the cluster runs as when the tests run as root
// (PostgreSQL refuses to run as root). It is created when missing.
const TestUser = "switchboard-test"

// Cluster is a running PostgreSQL server for tests.
type Cluster struct {
	// URL is a superuser DSN for the "postgres" database.
	URL string

	dir   string // removed by Stop; empty for an external server
	data  string
	pgCtl string
	cred  *syscall.Credential
	log   string
	seq   atomic.Int64
}

var (
	mu       sync.Mutex // guards the fields that follow
	shared   *Cluster
	startErr error
	started  bool
)

// Main runs a test package's tests with one shared cluster, started on the
// first DB call and stopped after the tests, and exits. Call it from
// TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main for a TestMain that does more: it runs the tests, stops the
// shared cluster if one was started, and returns the exit code.
func Run(m *testing.M) int {
	code := m.Run()
	mu.Lock()
	c := shared
	mu.Unlock()
	if c != nil {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// get starts the shared cluster once.
func get() (*Cluster, error) {
	mu.Lock()
	defer mu.Unlock()
	if !started {
		started = true
		if u := os.Getenv(EnvURL); u != "" {
			shared = &Cluster{URL: u}
		} else {
			shared, startErr = Start()
		}
	}
	return shared, startErr
}

// ErrNoPostgres reports that the PostgreSQL binaries are not installed.
var ErrNoPostgres = errors.New("pgtest: PostgreSQL binaries not found (install Debian's postgresql package, or set " + EnvBin + " or " + EnvURL + ")")

// Available reports whether tests can get a database, and why not.
func Available() error {
	_, err := get()
	return err
}

// DB creates a fresh, empty database on the shared cluster and returns its
// DSN; the database is dropped when the test ends. Without PostgreSQL it
// skips the test, or fails it under CI=true.
func DB(t testing.TB) string {
	t.Helper()
	c, err := get()
	if err != nil {
		if skip(err, os.Getenv("CI")) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), c.seq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// FILE_COPY is the faster strategy with fsync off (PostgreSQL 15+);
	// older servers know only the plain form.
	if err := c.exec(ctx, `CREATE DATABASE `+name+` TEMPLATE template0 STRATEGY FILE_COPY`); err != nil {
		if err2 := c.exec(ctx, `CREATE DATABASE `+name+` TEMPLATE template0`); err2 != nil {
			t.Fatalf("pgtest: create database: %v", err2)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			t.Errorf("pgtest: drop database: %v", err)
		}
	})
	return withDatabase(c.URL, name)
}

// skip reports whether a test without a database skips (PostgreSQL is not
// installed, outside CI) rather than fails (under CI=true, or any other
// error).
func skip(err error, ci string) bool {
	return errors.Is(err, ErrNoPostgres) && ci != "true"
}

// withDatabase returns dsn (a URL) pointing at database name.
func withDatabase(dsn, name string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn
	}
	u.Path = "/" + name
	return u.String()
}

// exec runs one statement on the cluster's maintenance database.
func (c *Cluster) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, c.URL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// Start creates and starts a new cluster under a temporary directory. The
// caller stops it with Stop.
func Start() (_ *Cluster, err error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	c := &Cluster{pgCtl: filepath.Join(bin, "pg_ctl")}
	if os.Geteuid() == 0 {
		if c.cred, err = testUser(); err != nil {
			return nil, err
		}
	}
	reapStale(c.pgCtl, c.cred)
	if c.dir, err = os.MkdirTemp("", dirPrefix+"*"); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	// The owner file lets a later Start reap this cluster if this process
	// dies without stopping it (a panic, a kill).
	if err := os.WriteFile(filepath.Join(c.dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(c.dir)
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(c.dir)
		}
	}()
	if c.cred != nil {
		if err := os.Chown(c.dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			return nil, fmt.Errorf("pgtest: %w", err)
		}
	}
	c.data = filepath.Join(c.dir, "data")
	c.log = filepath.Join(c.dir, "server.log")
	if out, err := c.run(filepath.Join(bin, "initdb"), "-D", c.data, "-U", "postgres",
		"--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"); err != nil {
		return nil, fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	// A free port can be taken between our probe and the server's bind:
	// try a few.
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		opts := strings.Join([]string{
			"-c listen_addresses=127.0.0.1",
			"-c port=" + strconv.Itoa(port),
			"-c unix_socket_directories=" + c.dir,
			// Throwaway data: durability off for speed.
			"-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off",
			"-c max_connections=300",
		}, " ")
		out, err := c.run(c.pgCtl, "start", "-w", "-t", "60", "-D", c.data, "-l", c.log, "-o", opts)
		if err == nil {
			c.URL = (&url.URL{Scheme: "postgres", User: url.User("postgres"), Path: "/postgres",
				RawQuery: url.Values{"host": {c.dir}, "port": {strconv.Itoa(port)}, "sslmode": {"disable"}}.Encode()}).String()
			return c, nil
		}
		if attempt == 2 {
			logText, _ := os.ReadFile(c.log)
			return nil, fmt.Errorf("pgtest: pg_ctl start: %w\n%s\n%s", err, out, logText)
		}
	}
}

// dirPrefix names cluster directories in the temporary directory, and
// ownerFile, inside one, holds the pid of the test process that made it.
const (
	dirPrefix = "switchboard-pg-"
	ownerFile = "owner.pid"
)

// reapStale stops and removes the clusters whose test process is gone.
func reapStale(pgCtl string, cred *syscall.Credential) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // being created, or not ours
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue // its owner is alive (or unknown)
		}
		stale := &Cluster{dir: dir, data: filepath.Join(dir, "data"), pgCtl: pgCtl, cred: cred}
		stale.Stop()
	}
}

// Restart restarts the shared cluster's server (pg_ctl restart -m fast:
// every connection is cut, and the server comes back on the same port)
// and returns when it accepts connections again, for tests of what
// clients do across a database restart. It skips the test on an external
// server (EnvURL), which it does not own.
func Restart(t testing.TB) {
	t.Helper()
	c, err := get()
	if err != nil {
		t.Fatal(err)
	}
	if c.dir == "" {
		t.Skip("pgtest: cannot restart an external server")
	}
	if out, err := c.run(c.pgCtl, "restart", "-m", "fast", "-w", "-t", "60", "-D", c.data, "-l", c.log); err != nil {
		t.Fatalf("pgtest: pg_ctl restart: %v\n%s", err, out)
	}
}

// Stop stops the server at once and removes its directory. Stopping an
// external server's handle does nothing.
func (c *Cluster) Stop() error {
	if c.dir == "" {
		return nil
	}
	var errs []error
	if out, err := c.run(c.pgCtl, "stop", "-m", "immediate", "-w", "-D", c.data); err != nil {
		errs = append(errs, fmt.Errorf("pgtest: pg_ctl stop: %w\n%s", err, out))
	}
	if err := os.RemoveAll(c.dir); err != nil {
		errs = append(errs, fmt.Errorf("pgtest: %w", err))
	}
	return errors.Join(errs...)
}

// PID returns the server's postmaster process id (0 for an external
// server), e.g. for a benchmark to count the server's CPU time.
func (c *Cluster) PID() (int, error) {
	if c.dir == "" {
		return 0, nil
	}
	b, err := os.ReadFile(filepath.Join(c.data, "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("pgtest: %w", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return 0, fmt.Errorf("pgtest: postmaster.pid: %w", err)
	}
	return pid, nil
}

// run runs a PostgreSQL program, as the test user when there is one.
func (c *Cluster) run(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "PGTZ=UTC")
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd.CombinedOutput()
}

// findBin returns the directory with initdb and pg_ctl: SWITCHBOARD_PG_BIN,
// else the newest /usr/lib/postgresql/<version>/bin (Debian), else PATH.
func findBin() (string, error) {
	if d := os.Getenv(EnvBin); d != "" {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
			return "", fmt.Errorf("%w: %s=%s: %v", ErrNoPostgres, EnvBin, d, err)
		}
		return d, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(matches, func(i, j int) bool { return version(matches[i]) > version(matches[j]) })
	for _, m := range matches {
		if _, err := os.Stat(filepath.Join(filepath.Dir(m), "pg_ctl")); err == nil {
			return filepath.Dir(m), nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", ErrNoPostgres
}

// version extracts the major version from /usr/lib/postgresql/<v>/bin/initdb.
func version(p string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p))))
	return v
}

// testUser returns the credentials of TestUser, creating the user first if
// needed (another test process may be creating it at the same time).
func testUser() (*syscall.Credential, error) {
	u, err := user.Lookup(TestUser)
	if err != nil {
		out, aerr := exec.Command("useradd", "--system", "--user-group", "--no-create-home",
			"--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", TestUser).CombinedOutput()
		if u, err = user.Lookup(TestUser); err != nil {
			return nil, fmt.Errorf("pgtest: cannot create OS user %s to run PostgreSQL as (not root): %v\n%s", TestUser, aerr, out)
		}
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("pgtest: user %s: %w", TestUser, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Count returns the number query (a SELECT count(*) … with args) reads
// from the database at dsn, on a connection of its own; t fails on error.
func Count(t testing.TB, dsn, query string, args ...any) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
