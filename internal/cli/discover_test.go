package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/statedir"
)

// With no --url and no SWITCHBOARD_URL, the CLI talks to the gateway that
// runs on its state dir, whatever port it chose.
func TestURLFromRunningGateway(t *testing.T) {
	g := startGateway(t, "") // port 0: not the default port
	out := runCLI(t, map[string]string{config.EnvStateDir: g.dir}, "status")
	if out.err != nil {
		t.Fatalf("status without --url: %v", out.err)
	}
	if !strings.Contains(out.stdout, "Gateway:        "+g.url) {
		t.Errorf("status did not use the running gateway's URL %s:\n%s", g.url, out.stdout)
	}
	// --url and SWITCHBOARD_URL still win.
	bad := "ws://127.0.0.1:1"
	if r := runCLI(t, map[string]string{config.EnvStateDir: g.dir, EnvURL: bad}, "status"); r.err == nil || !strings.Contains(r.errText(), bad) {
		t.Errorf("SWITCHBOARD_URL ignored: %v", r.err)
	}
}

// With no gateway running on the state dir, gateway.port from the config
// file names the port.
func TestURLFromConfigPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	cfg := "{ gateway: { port: " + strconv.Itoa(port) + " } }"
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, map[string]string{config.EnvStateDir: dir}, "status")
	want := "ws://127.0.0.1:" + strconv.Itoa(port)
	if r.err == nil || !strings.Contains(r.errText(), want) {
		t.Fatalf("status = %v, want an unreachable-gateway error naming %s", r.err, want)
	}
}

// A second gateway on the same state dir is refused at once and names the
// first one's pid and address.
func TestSecondGatewayRefused(t *testing.T) {
	g := startGateway(t, "")
	port := 0
	_, err := daemon.Start(context.Background(), daemon.Options{
		Env:    config.MapEnv(map[string]string{config.EnvStateDir: g.dir, "HOME": g.dir}),
		Port:   &port,
		Stdout: io.Discard,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if !errors.Is(err, statedir.ErrLocked) {
		t.Fatalf("second Start = %v, want ErrLocked", err)
	}
	for _, want := range []string{"already running", "pid " + strconv.Itoa(os.Getpid()), g.url} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestVersionString(t *testing.T) {
	info := func(settings ...debug.BuildSetting) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) { return &debug.BuildInfo{Settings: settings}, true }
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	for _, tc := range []struct {
		name, version, commit string
		info                  func() (*debug.BuildInfo, bool)
		want                  string
	}{
		{"stamped", "1.2.3", "0123456789abcdef", none, "1.2.3 (commit 0123456789ab)"},
		{"short commit", "1.2.3", "abc", none, "1.2.3 (commit abc)"},
		{"vcs info", "dev", "", info(debug.BuildSetting{Key: "vcs.revision", Value: "fedcba9876543210"}), "dev (commit fedcba987654)"},
		{"dirty", "dev", "", info(debug.BuildSetting{Key: "vcs.revision", Value: "fedcba9876543210"}, debug.BuildSetting{Key: "vcs.modified", Value: "true"}), "dev (commit fedcba987654, dirty)"},
		{"stamp wins", "1.0", "aaaa", info(debug.BuildSetting{Key: "vcs.revision", Value: "bbbb"}), "1.0 (commit aaaa)"},
		{"unknown", "dev", "", none, "dev"},
	} {
		if got := versionString(tc.version, tc.commit, tc.info); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestVersionFlag(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		r := runCLI(t, nil, args...)
		if r.err != nil || strings.TrimSpace(r.stdout) != "switchboard "+VersionString() {
			t.Errorf("%v: %q %v", args, r.stdout, r.err)
		}
	}
}

// Reading or patching a session that does not exist is an error (exit 1),
// and a turn for an agent that is not configured is refused as the
// reference refuses it, without creating its workspace.
func TestNoSuchSessionAndUnknownAgent(t *testing.T) {
	g := startGateway(t, "")
	for _, args := range [][]string{
		{"sessions", "history", "agent:main:nosuch"},
		{"sessions", "patch", "agent:main:nosuch", "--label", "x"},
	} {
		r := g.run(args...)
		if r.err == nil || !strings.Contains(r.errText(), "no such session: agent:main:nosuch") {
			t.Errorf("%v: %v", args, r.err)
		}
	}
	// Nothing was created by the refused patch.
	if r := g.run("sessions", "history", "agent:main:nosuch"); r.err == nil {
		t.Error("the refused patch created the session")
	}
	r := g.run("sessions", "send", "agent:ghost:main", "hello")
	if r.err == nil || !strings.Contains(r.errText(), "unknown agent id: ghost") {
		t.Errorf("send to an unconfigured agent: %v", r.err)
	}
	if _, err := os.Stat(filepath.Join(g.dir, "workspace-ghost")); !os.IsNotExist(err) {
		t.Errorf("a workspace was created for the unconfigured agent: %v", err)
	}
	// A configured one works, and --create makes a new session.
	if r := g.run("sessions", "patch", "agent:main:fresh", "--label", "fresh", "--create"); r.err != nil {
		t.Errorf("patch --create: %v", r.err)
	}
	if r := g.run("sessions", "history", "agent:main:fresh"); r.err != nil {
		t.Errorf("history after --create: %v", r.err)
	}
}

// A model that cannot run (no API key): the message is kept, and the run
// fails with the cause and the fix.
func TestUnrunnableModelKeepsTheMessage(t *testing.T) {
	g := startGateway(t, `{agents: {defaults: {model: "openai/gpt-4o"}}}`)
	r := g.run("sessions", "send", "main", "please keep me", "--wait")
	if r.err == nil || !strings.Contains(r.errText(), "no API key for provider openai: set OPENAI_API_KEY or models.providers.openai.apiKey") {
		t.Fatalf("send --wait: %v", r.err)
	}
	out := g.mustRun("sessions", "history", "main")
	if !strings.Contains(out, "please keep me") {
		t.Errorf("the message is not in the history:\n%s", out)
	}
}

// sessions send --wait shows its stages on stderr when stderr is a
// terminal, and nothing extra when it is not.
func TestSendWaitProgress(t *testing.T) {
	g := startGateway(t, "")
	msg := "/tool agents_list {}\n/then all done"
	tty := Options{Env: g.env(), IsTerminal: func(io.Writer) bool { return true }}
	r := runWith(t, tty, "--url", g.url, "sessions", "send", "main", msg, "--wait")
	if r.err != nil {
		t.Fatal(r.err)
	}
	if strings.TrimSpace(r.stdout) != "all done" {
		t.Errorf("stdout = %q", r.stdout)
	}
	for _, want := range []string{"· queued as run ", "· running\n", "· tool agents_list\n", "· final in "} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	piped := g.run("sessions", "send", "main", msg, "--wait")
	if piped.err != nil || piped.stderr != "" {
		t.Errorf("piped: err %v, stderr %q", piped.err, piped.stderr)
	}

	// Behind a busy run (followup mode queues instead of steering), the
	// stage line says where the message waits. The busy run stalls until
	// it is aborted, once the waiting send has printed its first line.
	g.mustRun("sessions", "send", "agent:main:busy", "/queue followup", "--wait")
	watch := g.dial(t)
	g.mustRun("sessions", "send", "agent:main:busy", "/stall", "--idempotency-key", "busy-run")
	waitLifecycle(t, watch, "busy-run", "start")
	stderr := &signalWriter{want: "· queued as run ", seen: make(chan struct{})}
	behind := tty
	behind.Stderr = stderr
	done := make(chan result, 1)
	go func() {
		done <- runWith(t, behind, "--url", g.url, "sessions", "send", "agent:main:busy", "behind it", "--wait")
	}()
	<-stderr.seen
	g.mustRun("call", "chat.abort", `{"sessionKey": "agent:main:busy", "runId": "busy-run"}`)
	if r = <-done; r.err != nil {
		t.Fatal(r.err)
	}
	if got := stderr.String(); !strings.Contains(got, "(position 1: waiting for the session's current run)") || !strings.Contains(got, "· running\n") {
		t.Errorf("queued send's stderr:\n%s", got)
	}
}

// signalWriter collects what is written to it and closes seen once the
// text holds want.
type signalWriter struct {
	want string
	seen chan struct{}

	mu   sync.Mutex
	b    strings.Builder
	done bool
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if !w.done && strings.Contains(w.b.String(), w.want) {
		w.done = true
		close(w.seen)
	}
	return len(p), nil
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// dial connects a WebSocket client to the gateway with its generated
// token; it is closed when the test ends.
func (g *gateway) dial(t *testing.T) *client.Client {
	t.Helper()
	tok, _, err := config.LoadOrCreateGatewayToken(g.dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(t.Context(), client.Options{URL: g.url, Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitLifecycle waits for the lifecycle agent event of run runID in
// phase.
func waitLifecycle(t *testing.T, c *client.Client, runID, phase string) {
	t.Helper()
	for ev := range c.Events() {
		var ae wire.AgentEvent
		if ev.Event != wire.EventAgent || json.Unmarshal(ev.Payload, &ae) != nil || ae.RunID != runID || ae.Stream != wire.StreamLifecycle {
			continue
		}
		var data struct{ Phase string }
		if json.Unmarshal(ae.Data, &data) == nil && data.Phase == phase {
			return
		}
	}
	t.Fatalf("connection closed before run %s's %s event", runID, phase)
}

// syncWriter is one terminal that stdout and stderr both write to.
type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// On a terminal, where stdout and stderr are one screen, the reply ends
// its line before the "· final in …" stage line.
func TestSendWaitOnTerminalEndsReplyLine(t *testing.T) {
	g := startGateway(t, "")
	var screen syncWriter
	tty := Options{Env: g.env(), IsTerminal: func(io.Writer) bool { return true }, Stdout: &screen, Stderr: &screen}
	r := runWith(t, tty, "--url", g.url, "sessions", "send", "main", "/reply no newline here", "--wait")
	if r.err != nil {
		t.Fatal(r.err)
	}
	out := screen.b.String()
	if !strings.Contains(out, "no newline here\n· final in ") {
		t.Errorf("screen:\n%s", out)
	}
	for line := range strings.SplitSeq(out, "\n") {
		if i := strings.Index(line, "· "); i > 0 {
			t.Errorf("a stage line runs on from the reply: %q", line)
		}
	}
}

// "/reset hello" with --wait resets the session and prints the reply to
// "hello", not the reset notice.
func TestSendResetWithMessageWaitsForTheReply(t *testing.T) {
	g := startGateway(t, "")
	g.mustRun("sessions", "send", "main", "/reply first", "--wait")
	out := g.mustRun("sessions", "send", "main", "/reset /reply hello back", "--wait")
	if out != "hello back\n" {
		t.Errorf("stdout = %q, want the reply to the message after /reset", out)
	}
}
