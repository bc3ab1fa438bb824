package doctor_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/doctor"
	"github.com/switchboardhq/switchboard/internal/sandbox"
	"github.com/switchboardhq/switchboard/internal/storage"
	"github.com/switchboardhq/switchboard/internal/store/postgres"
	"github.com/switchboardhq/switchboard/internal/store/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func doctorIn(t *testing.T, dir string, env map[string]string, port *int) map[string]doctor.Check {
	t.Helper()
	e := map[string]string{config.EnvStateDir: dir, "HOME": dir}
	for k, v := range env {
		e[k] = v
	}
	got := map[string]doctor.Check{}
	for _, c := range doctor.Run(context.Background(), doctor.Options{Env: config.MapEnv(e), Port: port}) {
		got[c.Name] = c
	}
	for _, name := range []string{"config", "models", "state dir", "gateway", "port", "store"} {
		if _, ok := got[name]; !ok {
			t.Fatalf("no %q check in %v", name, got)
		}
	}
	return got
}

func writeDoctorConfig(t *testing.T, dir, text string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestDoctorFreshStateDir(t *testing.T) {
	port := 0
	got := doctorIn(t, filepath.Join(t.TempDir(), "state"), nil, &port)
	for name, c := range got {
		if c.Status != doctor.CheckOK {
			t.Errorf("%s: %s %s", name, c.Status, c.Detail)
		}
	}
}

// TestDoctorModelsDetail: the models line reads as a sentence for one
// model and for several.
func TestDoctorModelsDetail(t *testing.T) {
	dir := t.TempDir()
	if c := doctorIn(t, dir, nil, nil)["models"]; c.Detail != "scripted/echo-1 resolves" {
		t.Errorf("one model: %q", c.Detail)
	}
	writeDoctorConfig(t, dir, `{agents: {list: [{id: "main"}, {id: "ops", model: "scripted/echo-2"}]}}`)
	if c := doctorIn(t, dir, nil, nil)["models"]; c.Detail != "scripted/echo-1, scripted/echo-2 resolve" {
		t.Errorf("two models: %q", c.Detail)
	}
}

func TestDoctorFindsProblems(t *testing.T) {
	t.Run("bad model ref", func(t *testing.T) {
		dir := t.TempDir()
		os.Chmod(dir, 0o700)
		writeDoctorConfig(t, dir, `{agents: {defaults: {model: "nope/x"}}}`)
		c := doctorIn(t, dir, nil, nil)["models"]
		if c.Status != doctor.CheckFail || !strings.Contains(c.Detail, `"nope"`) || c.Fix == "" {
			t.Errorf("models = %+v", c)
		}
	})
	t.Run("missing API key", func(t *testing.T) {
		dir := t.TempDir()
		writeDoctorConfig(t, dir, `{agents: {defaults: {model: "openai/gpt-4o"}}}`)
		c := doctorIn(t, dir, nil, nil)["models"]
		if c.Status != doctor.CheckFail || !strings.Contains(c.Detail, "no API key for provider openai") || !strings.Contains(c.Fix, "OPENAI_API_KEY") {
			t.Errorf("models = %+v", c)
		}
		if c := doctorIn(t, dir, map[string]string{"OPENAI_API_KEY": "sk-test"}, nil)["models"]; c.Status != doctor.CheckOK {
			t.Errorf("with a key: models = %+v", c)
		}
	})
	t.Run("config syntax", func(t *testing.T) {
		dir := t.TempDir()
		writeDoctorConfig(t, dir, `{agents: `)
		got := doctor.Run(context.Background(), doctor.Options{Env: config.MapEnv(map[string]string{config.EnvStateDir: dir})})
		if len(got) != 1 || got[0].Name != "config" || got[0].Status != doctor.CheckFail {
			t.Errorf("checks = %+v", got)
		}
	})
	t.Run("loose modes", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		c := doctorIn(t, dir, nil, nil)["state dir"]
		if c.Status != doctor.CheckWarn || !strings.Contains(c.Fix, "chmod") {
			t.Errorf("state dir = %+v", c)
		}
	})
	t.Run("read-only state dir", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root writes to read-only directories")
		}
		dir := t.TempDir()
		os.Chmod(dir, 0o500)
		defer os.Chmod(dir, 0o700)
		c := doctorIn(t, dir, nil, nil)["state dir"]
		if c.Status != doctor.CheckFail || !strings.Contains(c.Detail, "not writable") {
			t.Errorf("state dir = %+v", c)
		}
	})
	t.Run("port taken", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		p := ln.Addr().(*net.TCPAddr).Port
		c := doctorIn(t, t.TempDir(), nil, &p)["port"]
		if c.Status != doctor.CheckFail || !strings.Contains(c.Detail, strconv.Itoa(p)) {
			t.Errorf("port = %+v", c)
		}
	})
	t.Run("corrupt store", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, storage.DBFile), []byte(strings.Repeat("garbage!", 1024)), 0o600); err != nil {
			t.Fatal(err)
		}
		if c := doctorIn(t, dir, nil, nil)["store"]; c.Status != doctor.CheckFail {
			t.Errorf("store = %+v", c)
		}
	})
}

// With the gateway running, its port and lock are "ours", and the store
// check reads the live database.
func TestDoctorWithRunningGateway(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil { // tightened by Start
		t.Fatal(err)
	}
	port := 0
	d, err := daemon.Start(context.Background(), daemon.Options{
		Env:    config.MapEnv(map[string]string{config.EnvStateDir: dir, "HOME": dir}),
		Port:   &port,
		Stdout: io.Discard,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p := d.Addrs[0].(*net.TCPAddr).Port
	got := doctorIn(t, dir, nil, &p)
	if c := got["gateway"]; c.Status != doctor.CheckOK || !strings.Contains(c.Detail, "pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("gateway = %+v", c)
	}
	if c := got["port"]; c.Status != doctor.CheckOK || !strings.Contains(c.Detail, "this state dir's gateway") {
		t.Errorf("port = %+v", c)
	}
	if c := got["store"]; c.Status != doctor.CheckOK || !strings.Contains(c.Detail, "intact") {
		t.Errorf("store = %+v", c)
	}
	if c := got["state dir"]; c.Status != doctor.CheckOK {
		t.Errorf("state dir = %+v", c)
	}
	// Without --port doctor looks at the port the gateway serves (here a
	// free one, as serve --port 0 picks), not the configured 18789.
	addr := d.Addrs[0].String()
	if c := doctorIn(t, dir, nil, nil)["port"]; c.Status != doctor.CheckWarn || !strings.Contains(c.Detail, "serves "+addr) ||
		!strings.Contains(c.Detail, "18789") || !strings.Contains(c.Fix, "gateway.port") {
		t.Errorf("port without --port = %+v", c)
	}
}

// A config warning names the config path once.
func TestDoctorNamesConfigPathOnce(t *testing.T) {
	dir := t.TempDir()
	writeDoctorConfig(t, dir, `{agents: {bogus: 1}}`)
	c := doctorIn(t, dir, nil, nil)["config"]
	path := filepath.Join(dir, "switchboard.json5")
	if c.Status != doctor.CheckWarn || strings.Count(c.Detail, path) != 1 || !strings.Contains(c.Detail, "agents.bogus") {
		t.Errorf("config = %+v, want a warning naming %s once", c, path)
	}
}

// With a bubblewrap-sandboxed agent doctor probes the backend and says
// how a sandbox's processes are bounded; without one it says nothing.
func TestDoctorSandbox(t *testing.T) {
	port := 0
	if _, ok := doctorIn(t, filepath.Join(t.TempDir(), "state"), nil, &port)["sandbox"]; ok {
		t.Error("a sandbox check without sandboxed agents")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	writeDoctorConfig(t, dir, `{agents: {defaults: {sandbox: {mode: "all"}}}}`)
	c, ok := doctorIn(t, dir, nil, &port)["sandbox"]
	if !ok {
		t.Fatal("no sandbox check for a sandboxed agent")
	}
	if _, err := sandbox.Check(context.Background()); err != nil {
		if c.Status != doctor.CheckFail || c.Detail != err.Error() {
			t.Errorf("unavailable sandbox: %+v, want FAIL %q", c, err)
		}
		return
	}
	if c.Status != doctor.CheckOK || !strings.Contains(c.Detail, "processes bounded by "+sandbox.ProcessBound()) {
		t.Errorf("sandbox check = %+v", c)
	}
}

// TestDoctorPostgres checks doctor's store line on PostgreSQL: reachable
// before and after serve made the schema, and a failure with the fix (and
// no password) when the server is not there.
func TestDoctorPostgres(t *testing.T) {
	dsn := pgtest.DB(t)
	dir := t.TempDir()
	c := doctorIn(t, dir, map[string]string{config.EnvDatabaseURL: dsn}, nil)["store"]
	if c.Status != doctor.CheckOK || !strings.Contains(c.Detail, "reachable; serve creates the schema") {
		t.Errorf("store on a new database = %+v", c)
	}
	port := 0
	d, err := daemon.Start(context.Background(), daemon.Options{
		Env:    config.MapEnv(map[string]string{config.EnvStateDir: dir, "HOME": dir, config.EnvDatabaseURL: dsn}),
		Port:   &port,
		Stdout: io.Discard,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	c = doctorIn(t, dir, map[string]string{config.EnvDatabaseURL: dsn}, nil)["store"]
	chk, err := postgres.Check(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("reachable (schema %d)", chk.BinaryVersion); c.Status != doctor.CheckOK || !strings.Contains(c.Detail, want) {
		t.Errorf("store after serve = %+v", c)
	}
	bad := "postgres://sb:s3cret@127.0.0.1:1/none?connect_timeout=2"
	c = doctorIn(t, t.TempDir(), map[string]string{config.EnvDatabaseURL: bad}, nil)["store"]
	if c.Status != doctor.CheckFail || !strings.Contains(c.Fix, config.EnvDatabaseURL) || strings.Contains(c.Detail+c.Fix, "s3cret") {
		t.Errorf("store on an unreachable server = %+v", c)
	}
}
