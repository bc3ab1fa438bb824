package daemon

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/sandbox"
)

func doctorIn(t *testing.T, dir string, env map[string]string, port *int) map[string]Check {
	t.Helper()
	e := map[string]string{config.EnvStateDir: dir, "HOME": dir}
	for k, v := range env {
		e[k] = v
	}
	got := map[string]Check{}
	for _, c := range Doctor(context.Background(), DoctorOptions{Env: config.MapEnv(e), Port: port}) {
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
		if c.Status != CheckOK {
			t.Errorf("%s: %s %s", name, c.Status, c.Detail)
		}
	}
}

func TestDoctorFindsProblems(t *testing.T) {
	t.Run("bad model ref", func(t *testing.T) {
		dir := t.TempDir()
		os.Chmod(dir, 0o700)
		writeDoctorConfig(t, dir, `{agents: {defaults: {model: "nope/x"}}}`)
		c := doctorIn(t, dir, nil, nil)["models"]
		if c.Status != CheckFail || !strings.Contains(c.Detail, `"nope"`) || c.Fix == "" {
			t.Errorf("models = %+v", c)
		}
	})
	t.Run("missing API key", func(t *testing.T) {
		dir := t.TempDir()
		writeDoctorConfig(t, dir, `{agents: {defaults: {model: "openai/gpt-4o"}}}`)
		c := doctorIn(t, dir, nil, nil)["models"]
		if c.Status != CheckFail || !strings.Contains(c.Detail, "no API key for provider openai") || !strings.Contains(c.Fix, "OPENAI_API_KEY") {
			t.Errorf("models = %+v", c)
		}
		if c := doctorIn(t, dir, map[string]string{"OPENAI_API_KEY": "sk-test"}, nil)["models"]; c.Status != CheckOK {
			t.Errorf("with a key: models = %+v", c)
		}
	})
	t.Run("config syntax", func(t *testing.T) {
		dir := t.TempDir()
		writeDoctorConfig(t, dir, `{agents: `)
		got := Doctor(context.Background(), DoctorOptions{Env: config.MapEnv(map[string]string{config.EnvStateDir: dir})})
		if len(got) != 1 || got[0].Name != "config" || got[0].Status != CheckFail {
			t.Errorf("checks = %+v", got)
		}
	})
	t.Run("loose modes", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		c := doctorIn(t, dir, nil, nil)["state dir"]
		if c.Status != CheckWarn || !strings.Contains(c.Fix, "chmod") {
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
		if c.Status != CheckFail || !strings.Contains(c.Detail, "not writable") {
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
		if c.Status != CheckFail || !strings.Contains(c.Detail, strconv.Itoa(p)) {
			t.Errorf("port = %+v", c)
		}
	})
	t.Run("corrupt store", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, DBFile), []byte(strings.Repeat("garbage!", 1024)), 0o600); err != nil {
			t.Fatal(err)
		}
		if c := doctorIn(t, dir, nil, nil)["store"]; c.Status != CheckFail {
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
	d, err := Start(context.Background(), Options{
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
	if c := got["gateway"]; c.Status != CheckOK || !strings.Contains(c.Detail, "pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("gateway = %+v", c)
	}
	if c := got["port"]; c.Status != CheckOK || !strings.Contains(c.Detail, "this state dir's gateway") {
		t.Errorf("port = %+v", c)
	}
	if c := got["store"]; c.Status != CheckOK || !strings.Contains(c.Detail, "intact") {
		t.Errorf("store = %+v", c)
	}
	if c := got["state dir"]; c.Status != CheckOK {
		t.Errorf("state dir = %+v", c)
	}
	// Without --port doctor looks at the port the gateway serves (here a
	// free one, as serve --port 0 picks), not the configured 18789.
	addr := d.Addrs[0].String()
	if c := doctorIn(t, dir, nil, nil)["port"]; c.Status != CheckWarn || !strings.Contains(c.Detail, "serves "+addr) ||
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
	if c.Status != CheckWarn || strings.Count(c.Detail, path) != 1 || !strings.Contains(c.Detail, "agents.bogus") {
		t.Errorf("config = %+v, want a warning naming %s once", c, path)
	}
}

func TestLoggingSetup(t *testing.T) {
	dir := t.TempDir()
	ls := config.LogSettings{Level: "info", ConsoleLevel: "warn", ConsoleStyle: "pretty", File: filepath.Join(dir, "logs", "s.log")}
	var console strings.Builder
	l, err := newLogSetup(ls, "", "json", &console)
	if err != nil {
		t.Fatal(err)
	}
	l.logger.Info("hello", "token", "s3cret-token", "apiKey", "sk-abc", "n", 1)
	l.logger.Warn("careful", "password", "hunter2")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	file, _ := os.ReadFile(ls.File)
	for _, secret := range []string{"s3cret-token", "sk-abc", "hunter2"} {
		if strings.Contains(string(file), secret) || strings.Contains(console.String(), secret) {
			t.Errorf("%q was logged", secret)
		}
	}
	if !strings.Contains(string(file), `"message":"hello"`) || !strings.Contains(string(file), `"message":"careful"`) {
		t.Errorf("file:\n%s", file)
	}
	// The console is at warn, in JSON (--log-format json).
	if c := console.String(); strings.Contains(c, "hello") || !strings.Contains(c, `"msg":"careful"`) {
		t.Errorf("console:\n%s", c)
	}
	for _, bad := range [][2]string{{"loud", ""}, {"", "xml"}} {
		if _, err := newLogSetup(ls, bad[0], bad[1], io.Discard); err == nil {
			t.Errorf("newLogSetup(%q, %q) accepted", bad[0], bad[1])
		}
	}
}

// serve warns at start about a model that cannot run, naming the fix.
func TestStartWarnsAboutUnrunnableModel(t *testing.T) {
	dir := t.TempDir()
	writeDoctorConfig(t, dir, `{agents: {defaults: {model: "openai/gpt-4o"}}}`)
	var logs strings.Builder
	port := 0
	d, err := Start(context.Background(), Options{
		Env:    config.MapEnv(map[string]string{config.EnvStateDir: dir, "HOME": dir}),
		Port:   &port,
		Stdout: io.Discard,
		Logger: slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if got := logs.String(); !strings.Contains(got, "no API key for provider openai") || !strings.Contains(got, "OPENAI_API_KEY") {
		t.Errorf("no warning about the missing key:\n%s", got)
	}
	mods := newModels(d.Config)
	_, err = mods.ResolveModel("main", "openai/gpt-4o")
	if err == nil || !strings.Contains(err.Error(), "no API key for provider openai: set OPENAI_API_KEY or models.providers.openai.apiKey") {
		t.Errorf("ResolveModel = %v", err)
	}
}

// syncWriter serialises writes from the daemon's goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
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
		if c.Status != CheckFail || c.Detail != err.Error() {
			t.Errorf("unavailable sandbox: %+v, want FAIL %q", c, err)
		}
		return
	}
	if c.Status != CheckOK || !strings.Contains(c.Detail, "processes bounded by "+sandbox.ProcessBound()) {
		t.Errorf("sandbox check = %+v", c)
	}
}
