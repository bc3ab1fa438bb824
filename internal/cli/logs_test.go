package cli

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/daemon"
)

// startLoggingGateway starts a daemon that logs as serve does: to the
// console (discarded here) and to the log file in its state dir.
func startLoggingGateway(t *testing.T, env map[string]string) *gateway {
	t.Helper()
	dir := t.TempDir()
	e := map[string]string{config.EnvStateDir: dir, "HOME": dir}
	for k, v := range env {
		e[k] = v
	}
	port := 0
	d, err := daemon.Start(context.Background(), daemon.Options{
		Env:           config.MapEnv(e),
		Port:          &port,
		Stdout:        io.Discard,
		Stderr:        io.Discard,
		ShutdownGrace: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("daemon.Start: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return &gateway{t: t, url: "ws://" + d.Addrs[0].String(), dir: dir}
}

func TestLogsTail(t *testing.T) {
	g := startLoggingGateway(t, nil)
	path := filepath.Join(g.dir, "logs", "switchboard.log")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("no log file: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("log file mode %v", fi.Mode())
	}

	// Raw JSON lines, as written.
	out := g.mustRun("logs", "--json")
	var sawToken bool
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line is not JSON: %q", l)
		}
		if m["message"] == "generated a gateway token" {
			sawToken = true
		}
	}
	if !sawToken {
		t.Errorf("logs --json lacks the start-up line:\n%s", out)
	}
	tok, err := os.ReadFile(filepath.Join(g.dir, config.GatewayTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, strings.TrimSpace(string(tok))) {
		t.Error("the gateway token is in the log")
	}

	// Human form.
	if out := g.mustRun("logs"); !strings.Contains(out, "INFO  generated a gateway token file=") {
		t.Errorf("logs:\n%s", out)
	}

	// The method itself: cursor semantics and the reference's bounds.
	raw := g.mustRun("call", "logs.tail", `{"limit":1}`)
	var res logsTailResult
	if err := json.Unmarshal([]byte(raw), &res); err != nil {
		t.Fatal(err)
	}
	if res.File != path || len(res.Lines) != 1 || res.Cursor != res.Size {
		t.Errorf("logs.tail {limit:1} = %+v", res)
	}
	raw = g.mustRun("call", "logs.tail", `{"cursor":`+jsonInt(res.Cursor)+`}`)
	var next logsTailResult
	json.Unmarshal([]byte(raw), &next)
	if next.Reset || next.Cursor < res.Cursor {
		t.Errorf("continuing from the cursor: %+v", next)
	}
	for _, bad := range []string{`{"limit":0}`, `{"limit":5001}`, `{"maxBytes":1000001}`, `{"cursor":-1}`, `{"nope":1}`} {
		if r := g.run("call", "logs.tail", bad); r.err == nil || !strings.Contains(r.errText(), "INVALID_REQUEST") {
			t.Errorf("logs.tail %s: %v", bad, r.err)
		}
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestLogLevelFromEnv(t *testing.T) {
	g := startLoggingGateway(t, map[string]string{config.EnvLogLevel: "error"})
	// At level error the info start-up line is not written.
	if out := g.mustRun("logs", "--json"); strings.Contains(out, "generated a gateway token") {
		t.Errorf("info line written at level error:\n%s", out)
	}
}

func TestFormatLogLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`not json`, `not json`},
		{`{"level":"WARN","msg":"slow consumer","conn":"c1","n":3}`, `WARN  slow consumer conn=c1 n=3`},
		{`{"level":"INFO","msg":"x","path":"a b","empty":""}`, `INFO  x empty="" path="a b"`},
		{`{"msg":"nested","attrs":{"a":1}}`, `nested attrs={"a":1}`},
		{`{"level":"INFO","message":"file form","msg":"a field"}`, `INFO  file form msg="a field"`},
	} {
		if got := formatLogLine(tc.in); got != tc.want {
			t.Errorf("formatLogLine(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
	got := formatLogLine(`{"time":"2026-01-02T03:04:05.5Z","level":"INFO","msg":"m"}`)
	if !strings.HasSuffix(got, " INFO  m") || !strings.Contains(got, ":04:05.500") {
		t.Errorf("with time: %q", got)
	}
}

// One structured INFO line per run, at its end (the start is DEBUG), and
// one per refused request.
func TestRunAndRefusalLogLines(t *testing.T) {
	g := startLoggingGateway(t, nil)
	g.mustRun("sessions", "send", "main", "log me", "--wait")
	g.run("sessions", "history", "agent:main:nosuch") // refused by sessions.resolve
	out := g.mustRun("logs", "--json", "--limit", "5000")
	var started, ended, refused bool
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		switch m["message"] {
		case "run started":
			started = true
		case "run ended":
			ended = m["status"] == "ok" && m["durationMs"] != nil && m["totalTokens"] != nil &&
				m["sessionKey"] == "agent:main:main" && m["agentId"] == "main" && m["runId"] != nil
		case "request refused":
			refused = refused || m["code"] == "INVALID_REQUEST"
		}
	}
	if started || !ended || !refused {
		t.Errorf("log lines: run started %v, run ended %v, request refused %v\n%s", started, ended, refused, out)
	}
}

// With no gateway on the state dir (it stopped, or never started),
// `switchboard logs` reads the log file itself: the lines that say why
// the gateway is down are what a user runs it for.
func TestLogsWithoutGateway(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "logs", "switchboard.log")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	lines := `{"time":"2026-01-02T03:04:05Z","level":"INFO","message":"first"}` + "\n" +
		`{"time":"2026-01-02T03:04:06Z","level":"ERROR","message":"serve failed","err":"boom"}` + "\n"
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{config.EnvStateDir: dir, "HOME": dir}

	r := runCLI(t, env, "logs")
	if r.err != nil {
		t.Fatalf("logs: %v", r.err)
	}
	if !strings.Contains(r.stdout, "INFO  first") || !strings.Contains(r.stdout, "ERROR serve failed err=boom") {
		t.Errorf("logs:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "no gateway is running on "+dir+"; reading "+path) {
		t.Errorf("stderr = %q, want it to say the file is read directly", r.stderr)
	}
	if r := runCLI(t, env, "logs", "--limit", "1", "--json"); r.err != nil || r.stdout != `{"time":"2026-01-02T03:04:06Z","level":"ERROR","message":"serve failed","err":"boom"}`+"\n" {
		t.Errorf("logs --limit 1 --json: %v %q", r.err, r.stdout)
	}
	if r := runCLI(t, env, "logs", "--limit", "0"); r.err == nil || !strings.Contains(r.errText(), "--limit must be") {
		t.Errorf("logs --limit 0: %v", r.err)
	}
	// A state dir whose gateway never logged: the note says so.
	empty := t.TempDir()
	if r := runCLI(t, map[string]string{config.EnvStateDir: empty, "HOME": empty}, "logs"); r.err != nil || r.stdout != "" || !strings.Contains(r.stderr, "it has no log file yet") {
		t.Errorf("logs on a state dir with no log file: %v %q %q", r.err, r.stdout, r.stderr)
	}
	// A --url names a gateway elsewhere: no local reading.
	if r := runCLI(t, env, "--url", "ws://127.0.0.1:1", "logs"); r.err == nil || !strings.Contains(r.errText(), "cannot reach the gateway") {
		t.Errorf("logs --url: %v", r.err)
	}

	// -f follows the file: a line appended shows up.
	out := &notifyWriter{wrote: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"logs", "-f", "--interval", "10ms"}, Options{Env: config.MapEnv(env), Stdout: out, Stderr: io.Discard, Stdin: strings.NewReader("")})
	}()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(out.String(), "serve failed") {
		<-out.wrote
	}
	if _, err := f.WriteString(`{"time":"2026-01-02T03:04:07Z","level":"INFO","message":"appended"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for !strings.Contains(out.String(), "INFO  appended") {
		<-out.wrote
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("logs -f: %v", err)
	}
}

// notifyWriter collects what is written and signals each write.
type notifyWriter struct {
	mu    sync.Mutex
	b     strings.Builder
	wrote chan struct{}
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.b.Write(p)
	w.mu.Unlock()
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *notifyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
