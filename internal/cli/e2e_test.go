package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// gateway is a daemon running in-process on 127.0.0.1 with its own state
// dir, as "switchboard serve" would run it.
type gateway struct {
	t   *testing.T
	url string
	dir string // state dir: where a local gateway keeps its generated token
}

// startGateway starts a daemon with the given switchboard.json5 (none when
// empty), on the default offline scripted model unless the config says
// otherwise.
func startGateway(t *testing.T, configJSON5 string) *gateway {
	t.Helper()
	dir := t.TempDir()
	if configJSON5 != "" {
		if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(configJSON5), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	port := 0
	d, err := daemon.Start(context.Background(), daemon.Options{
		Env:           config.MapEnv(map[string]string{config.EnvStateDir: dir, "HOME": dir}),
		Port:          &port,
		Stdout:        io.Discard,
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		ShutdownGrace: 200 * time.Millisecond,
		Version:       "test-version",
	})
	if err != nil {
		t.Fatalf("daemon.Start: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return &gateway{t: t, url: "ws://" + d.Addrs[0].String(), dir: dir}
}

// result is what one CLI invocation printed and returned.
type result struct {
	stdout, stderr string
	err            error
}

// errText is the error line main would print after "switchboard: ".
func (r result) errText() string {
	if r.err == nil {
		return ""
	}
	return r.err.Error()
}

// run runs the CLI against the gateway with an environment holding only
// the gateway's state dir, as on the gateway's own host (the CLI finds the
// generated token there).
func (g *gateway) run(args ...string) result {
	g.t.Helper()
	return runCLI(g.t, map[string]string{config.EnvStateDir: g.dir}, append([]string{"--url", g.url}, args...)...)
}

// env is the CLI environment of run.
func (g *gateway) env() config.Env {
	return config.MapEnv(map[string]string{config.EnvStateDir: g.dir})
}

// mustRun is run that fails the test on an error.
func (g *gateway) mustRun(args ...string) string {
	g.t.Helper()
	r := g.run(args...)
	if r.err != nil {
		g.t.Fatalf("switchboard %s: %v (stderr %q)", strings.Join(args, " "), r.err, r.stderr)
	}
	return r.stdout
}

func runCLI(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	return runWith(t, Options{Env: config.MapEnv(env)}, args...)
}

func runWith(t *testing.T, opts Options, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if opts.Stdout == nil {
		opts.Stdout = &stdout
	}
	if opts.Stderr == nil {
		opts.Stderr = &stderr
	}
	if opts.Stdin == nil {
		opts.Stdin = strings.NewReader("")
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err := Run(ctx, args, opts)
	return result{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("output is not a JSON object: %v\n%s", err, s)
	}
	return m
}

func TestStatus(t *testing.T) {
	g := startGateway(t, "")
	out := g.mustRun("status")
	for _, want := range []string{
		"Gateway:        " + g.url,
		"Version:        test-version",
		"Protocol:       4",
		"Conn ID:",
		"Uptime:",
		"Default agent:  main",
		"Default model:  scripted/echo-1",
		"Main session:   agent:main:main",
		"Health:         ok",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}

	// --json, with the URL from SWITCHBOARD_URL.
	r := runCLI(t, map[string]string{EnvURL: g.url, config.EnvStateDir: g.dir}, "status", "--json")
	if r.err != nil {
		t.Fatal(r.err)
	}
	m := decodeJSON(t, r.stdout)
	hello, _ := m["hello"].(map[string]any)
	health, _ := m["health"].(map[string]any)
	if hello["type"] != "hello-ok" || hello["protocol"] != float64(4) {
		t.Errorf("hello = %v", hello)
	}
	if sd, _ := hello["snapshot"].(map[string]any)["sessionDefaults"].(map[string]any); sd["defaultAgentId"] != "main" {
		t.Errorf("sessionDefaults = %v", sd)
	}
	if health["ok"] != true {
		t.Errorf("health = %v", health)
	}
}

func TestCall(t *testing.T) {
	g := startGateway(t, "")
	t.Run("ok", func(t *testing.T) {
		out := g.mustRun("call", "health")
		if m := decodeJSON(t, out); m["ok"] != true || m["defaultAgentId"] != "main" {
			t.Errorf("health = %s", out)
		}
		if !strings.Contains(out, "\n  \"ok\": true") {
			t.Errorf("output is not indented:\n%s", out)
		}
	})
	t.Run("params", func(t *testing.T) {
		out := g.mustRun("call", "sessions.list", `{"limit": 1}`)
		if m := decodeJSON(t, out); m["sessions"] == nil {
			t.Errorf("sessions.list = %s", out)
		}
	})
	t.Run("stdin", func(t *testing.T) {
		r := runWith(t, Options{Env: g.env(), Stdin: strings.NewReader(`{"sessionKey": "main"}`)},
			"--url", g.url, "call", "chat.history", "-")
		if r.err != nil {
			t.Fatal(r.err)
		}
		if m := decodeJSON(t, r.stdout); m["sessionKey"] != "agent:main:main" {
			t.Errorf("chat.history = %s", r.stdout)
		}
	})
	t.Run("gateway error", func(t *testing.T) {
		r := g.run("call", "no.such.method")
		if want := "error: INVALID_REQUEST: unknown method: no.such.method"; r.errText() != want {
			t.Errorf("err = %q, want %q", r.errText(), want)
		}
		if r.stdout != "" {
			t.Errorf("stdout = %q", r.stdout)
		}
		r = g.run("call", "sessions.list", `{"limit": 0}`)
		if !strings.HasPrefix(r.errText(), "error: INVALID_REQUEST: invalid sessions.list params") || strings.Contains(r.errText(), "\n") {
			t.Errorf("err = %q", r.errText())
		}
	})
	t.Run("bad json", func(t *testing.T) {
		r := g.run("call", "health", `{"probe":`)
		if !strings.Contains(r.errText(), "params: invalid JSON") {
			t.Errorf("err = %q", r.errText())
		}
	})
}

func TestSendWait(t *testing.T) {
	g := startGateway(t, "")
	tests := []struct {
		name, key, msg, want string
	}{
		{"echo", "main", "hi", "echo: hi\n"},
		{"reply directive", "main", "/reply Hello from the script", "Hello from the script\n"},
		{"multi-line reply", "agent:main:lines", "/reply first\n/reply second", "first\nsecond\n"},
		// A tool step, then the reply once the (failed) tool result is back.
		{"tool turn", "agent:main:tools", "/tool no_such_tool {}\n/then done", "done\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := g.run("sessions", "send", tt.key, tt.msg, "--wait")
			if r.err != nil {
				t.Fatalf("err = %v", r.err)
			}
			if r.stdout != tt.want {
				t.Errorf("stdout = %q, want %q", r.stdout, tt.want)
			}
		})
	}

	// Commands the gateway answers itself run no model turn; --wait prints
	// their reply instead of waiting for a run that never comes.
	t.Run("gateway commands", func(t *testing.T) {
		for _, tc := range []struct{ msg, want string }{
			{"/new", "✅ New session started.\n"},
			{"/reset", "✅ Session reset.\n"},
		} {
			r := g.run("sessions", "send", "agent:main:cmds", tc.msg, "--wait", "--timeout", "20s")
			if r.err != nil || r.stdout != tc.want {
				t.Errorf("%s: stdout %q, err %v; want %q", tc.msg, r.stdout, r.err, tc.want)
			}
		}
		r := g.run("sessions", "send", "agent:main:cmds", "/compact", "--wait", "--timeout", "20s")
		if r.err != nil || !strings.Contains(r.stdout, "Compact") {
			t.Errorf("/compact: stdout %q, err %v", r.stdout, r.err)
		}
	})

	t.Run("json", func(t *testing.T) {
		out := g.mustRun("sessions", "send", "main", "/reply json reply", "--wait", "--json")
		m := decodeJSON(t, out)
		if m["status"] != "ok" || m["text"] != "json reply" || m["runId"] == "" {
			t.Errorf("status object = %v", m)
		}
	})

	t.Run("no wait", func(t *testing.T) {
		out := g.mustRun("sessions", "send", "agent:main:nowait", "hello", "--idempotency-key", "run-nowait-1")
		if out != "run-nowait-1\n" {
			t.Errorf("stdout = %q, want the run id", out)
		}
		// The same key again starts no second run; --wait then finds
		// the finished run through agent.wait and chat.history.
		r := g.run("sessions", "send", "agent:main:nowait", "hello", "--idempotency-key", "run-nowait-1", "--wait")
		if r.err != nil || r.stdout != "echo: hello\n" {
			t.Errorf("repeated send --wait = %q, %v", r.stdout, r.err)
		}
		out = g.mustRun("sessions", "send", "agent:main:nowait", "again", "--json")
		if m := decodeJSON(t, out); m["status"] != "started" || m["runId"] == "" {
			t.Errorf("send --json = %s", out)
		}
	})
}

// chunkWriter records each write and when it happened.
type chunkWriter struct {
	mu     sync.Mutex
	chunks []string
	at     []time.Time
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.chunks = append(w.chunks, string(p))
	w.at = append(w.at, time.Now())
	return len(p), nil
}

func TestSendWaitStreamsAsTheReplyArrives(t *testing.T) {
	// A slow model behind the real OpenAI wire format: every word comes
	// 150ms after the previous one, longer than the gateway's 100ms delta
	// throttle, so each word is its own chat delta.
	llm := fakellm.Start(t, fakellm.Options{APIKey: "test-key", Delay: 150 * time.Millisecond})
	g := startGateway(t, fmt.Sprintf(`{
  models: { mode: "replace", providers: {
    fake: { baseUrl: %q, apiKey: "test-key", api: "openai-completions", models: [{ id: "fake-1" }] },
  } },
  agents: { defaults: { model: { primary: "fake/fake-1" } } },
}`, llm.URL()))

	var w chunkWriter
	r := runWith(t, Options{Env: g.env(), Stdout: &w},
		"--url", g.url, "sessions", "send", "main", "one two three four", "--wait")
	end := time.Now()
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := strings.Join(w.chunks, ""); got != "echo: one two three four\n" {
		t.Fatalf("stdout = %q", got)
	}
	if len(w.chunks) < 4 {
		t.Fatalf("reply came in %d writes %q, want it streamed word by word", len(w.chunks), w.chunks)
	}
	if early := end.Sub(w.at[0]); early < 300*time.Millisecond {
		t.Errorf("first text was written only %v before the run ended", early)
	}
}

func TestSendWaitFailures(t *testing.T) {
	g := startGateway(t, "")

	t.Run("model error", func(t *testing.T) {
		r := g.run("sessions", "send", "agent:main:fail", "/reply partial answer\n/error 500 boom", "--wait")
		if r.err == nil || !strings.Contains(r.errText(), "failed: ") || !strings.Contains(r.errText(), "boom") {
			t.Errorf("err = %v", r.err)
		}
		if r.stdout != "partial answer\n" {
			t.Errorf("stdout = %q", r.stdout)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		// The client's timeout must leave a loaded machine the time to
		// stream the partial reply.
		r := g.run("sessions", "send", "agent:main:stall", "/reply partial\n/stall", "--wait",
			"--timeout", "3s", "--idempotency-key", "stall-run")
		if !strings.Contains(r.errText(), "run stall-run did not finish within 3s") {
			t.Errorf("err = %v", r.err)
		}
		if r.stdout != "partial\n" {
			t.Errorf("stdout = %q", r.stdout)
		}
	})

	t.Run("aborted", func(t *testing.T) {
		// Follow the stalled run again (same idempotency key) while it
		// is aborted. Whether the abort lands before or after this
		// client joins, the run ends aborted.
		done := make(chan result, 1)
		go func() {
			done <- runCLI(t, map[string]string{config.EnvStateDir: g.dir}, "--url", g.url, "sessions", "send", "agent:main:stall", "again",
				"--wait", "--idempotency-key", "stall-run")
		}()
		g.mustRun("call", "chat.abort", `{"sessionKey": "agent:main:stall"}`)
		r := <-done
		if want := "run stall-run was aborted"; r.errText() != want {
			t.Errorf("err = %q, want %q", r.errText(), want)
		}
	})

	t.Run("blocked", func(t *testing.T) {
		g.mustRun("sessions", "patch", "agent:main:blocked", "--send-policy", "deny", "--create")
		r := g.run("sessions", "send", "agent:main:blocked", "hi", "--wait")
		if want := "error: INVALID_REQUEST: send blocked by session policy"; r.errText() != want {
			t.Errorf("err = %q, want %q", r.errText(), want)
		}
	})
}

func TestSessionsListAndHistory(t *testing.T) {
	g := startGateway(t, "")
	g.mustRun("sessions", "send", "main", "hi", "--wait")
	g.mustRun("sessions", "send", "agent:main:work", "/tool no_such_tool {\"x\": 1}\n/then done", "--wait")
	g.mustRun("sessions", "patch", "agent:main:work", "--label", "work")

	t.Run("table", func(t *testing.T) {
		out := g.mustRun("sessions", "list")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 3 {
			t.Fatalf("want a header and 2 rows:\n%s", out)
		}
		if f := strings.Fields(lines[0]); strings.Join(f, " ") != "KEY KIND AGE MODEL TOKENS LABEL" {
			t.Errorf("header = %q", lines[0])
		}
		var work []string
		for _, l := range lines[1:] {
			if f := strings.Fields(l); f[0] == "agent:main:work" {
				work = f
			}
		}
		// KEY KIND AGE("just now") MODEL TOKENS LABEL
		if len(work) != 7 || work[1] != "direct" || work[2]+" "+work[3] != "just now" ||
			work[4] != "scripted/echo-1" || work[5] == "0" || work[6] != "work" {
			t.Errorf("work row = %q", work)
		}
	})
	t.Run("filters", func(t *testing.T) {
		out := g.mustRun("sessions", "list", "--label", "work")
		if !strings.Contains(out, "agent:main:work") || strings.Contains(out, "agent:main:main") {
			t.Errorf("--label work:\n%s", out)
		}
		out = g.mustRun("sessions", "list", "--limit", "1", "--agent", "main", "--active", "5")
		if n := strings.Count(out, "agent:main:"); n != 1 || !strings.Contains(out, "raise --limit") {
			t.Errorf("--limit 1:\n%s", out)
		}
		out = g.mustRun("sessions", "list", "--search", "nothing-matches-this")
		if out != "No sessions.\n" {
			t.Errorf("--search = %q", out)
		}
	})
	t.Run("json", func(t *testing.T) {
		m := decodeJSON(t, g.mustRun("sessions", "list", "--json"))
		if m["count"] != float64(2) || len(m["sessions"].([]any)) != 2 {
			t.Errorf("sessions.list = %v", m)
		}
	})
	t.Run("history", func(t *testing.T) {
		out := g.mustRun("sessions", "history", "main")
		if want := "user: hi\nassistant: echo: hi\n"; out != want {
			t.Errorf("history = %q, want %q", out, want)
		}
		out = g.mustRun("sessions", "history", "agent:main:work")
		if strings.Contains(out, "tool call") || strings.Contains(out, "tool error") || !strings.HasSuffix(out, "assistant: done\n") {
			t.Errorf("history without --tools:\n%s", out)
		}
		out = g.mustRun("sessions", "history", "agent:main:work", "--tools")
		want := []string{
			"user: /tool no_such_tool {\"x\": 1}\n  /then done\n",
			"tool call no_such_tool {\"x\":1}\n",
			"tool error no_such_tool: ",
			"Tool no_such_tool not found",
			"assistant: done\n",
		}
		pos := 0
		for _, w := range want {
			i := strings.Index(out[pos:], w)
			if i < 0 {
				t.Fatalf("history --tools lacks %q after byte %d:\n%s", w, pos, out)
			}
			pos += i + len(w)
		}
		r := g.run("sessions", "history", "main", "--limit", "1")
		if r.err != nil || r.stdout != "assistant: echo: hi\n" {
			t.Errorf("--limit 1 = %q, %v", r.stdout, r.err)
		}
		// Older entries left out are said on stderr; the whole transcript
		// is not.
		if want := "(the last 1 of 2 transcript entries; --limit N shows up to 1000, and `switchboard sessions export main` writes them all)\n"; r.stderr != want {
			t.Errorf("--limit 1 stderr = %q, want %q", r.stderr, want)
		}
		if r := g.run("sessions", "history", "main", "--limit", "2"); r.err != nil || r.stderr != "" {
			t.Errorf("--limit 2 (the whole transcript): stderr %q, %v", r.stderr, r.err)
		}
		m := decodeJSON(t, g.mustRun("sessions", "history", "main", "--json"))
		if len(m["messages"].([]any)) != 2 {
			t.Errorf("history --json = %v", m)
		}
	})
}

func TestSessionsPatch(t *testing.T) {
	g := startGateway(t, "")
	out := g.mustRun("sessions", "patch", "main", "--label", "triage", "--model", "scripted/other", "--thinking", "low", "--create")
	if want := "Patched agent:main:main: label=triage model=scripted/other thinking=low sendPolicy=inherit\n"; out != want {
		t.Errorf("patch = %q, want %q", out, want)
	}
	out = g.mustRun("sessions", "patch", "main", "--clear-label", "--model", "", "--send-policy", "deny")
	if want := "Patched agent:main:main: label=- model=- thinking=low sendPolicy=deny\n"; out != want {
		t.Errorf("patch = %q, want %q", out, want)
	}
	r := g.run("sessions", "send", "main", "hi", "--wait")
	if want := "error: INVALID_REQUEST: send blocked by session policy"; r.errText() != want {
		t.Errorf("send to a denied session: err = %q, want %q", r.errText(), want)
	}
	m := decodeJSON(t, g.mustRun("sessions", "patch", "main", "--send-policy", "inherit", "--json"))
	if e := m["entry"].(map[string]any); e["sendPolicy"] != nil || m["ok"] != true {
		t.Errorf("patch --json = %v", m)
	}
	if out := g.mustRun("sessions", "send", "main", "hi again", "--wait"); out != "echo: hi again\n" {
		t.Errorf("send after inherit = %q", out)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"main"}, "nothing to change"},
		{[]string{"main", "--label", "x", "--clear-label"}, "none of the others can be"},
		{[]string{"main", "--send-policy", "maybe"}, "--send-policy must be allow, deny or inherit"},
		{[]string{"main", "--thinking", "extreme"}, "error: INVALID_REQUEST: invalid thinkingLevel"},
	} {
		r := g.run(append([]string{"sessions", "patch"}, tt.args...)...)
		if !strings.Contains(r.errText(), tt.want) {
			t.Errorf("patch %q: err = %q, want %q", tt.args, r.errText(), tt.want)
		}
	}
}

func TestSessionsDeleteAndReset(t *testing.T) {
	g := startGateway(t, "")
	g.mustRun("sessions", "send", "main", "hi", "--wait")
	g.mustRun("sessions", "send", "agent:main:temp", "hi", "--wait")
	g.mustRun("sessions", "send", "agent:main:keep", "hi", "--wait")

	if out := g.mustRun("sessions", "delete", "agent:main:temp"); out != "Deleted agent:main:temp.\n" {
		t.Errorf("delete = %q", out)
	}
	if out := g.mustRun("sessions", "delete", "agent:main:temp"); out != "No session agent:main:temp: nothing deleted.\n" {
		t.Errorf("delete again = %q", out)
	}
	m := decodeJSON(t, g.mustRun("sessions", "delete", "agent:main:keep", "--keep-transcript", "--json"))
	if m["deleted"] != true {
		t.Errorf("delete --json = %v", m)
	}
	if out := g.mustRun("sessions", "list"); strings.Contains(out, "temp") || strings.Contains(out, "keep") {
		t.Errorf("deleted sessions still listed:\n%s", out)
	}
	r := g.run("sessions", "delete", "main")
	if !strings.HasPrefix(r.errText(), "error: INVALID_REQUEST: Cannot delete the main session") {
		t.Errorf("delete main: err = %q", r.errText())
	}

	out := g.mustRun("sessions", "export", "main")
	if !strings.HasSuffix(out, ".jsonl\n") || !strings.Contains(out, filepath.Join("agents", "main", "sessions")) {
		t.Errorf("export = %q", out)
	} else if data, err := os.ReadFile(strings.TrimSpace(out)); err != nil || !strings.HasPrefix(string(data), `{"type":"session"`) {
		t.Errorf("exported file: %v\n%s", err, data)
	}

	// A compaction asked for compacts even one turn (its answer stays
	// verbatim), as the reference's does; then nothing is left, and the
	// CLI says why.
	if out := g.mustRun("sessions", "compact", "main"); !strings.HasPrefix(out, "Compacted agent:main:main (") {
		t.Errorf("compact = %q", out)
	}
	if out := g.mustRun("sessions", "compact", "main"); out != "Nothing to compact in agent:main:main (the session is already compacted).\n" {
		t.Errorf("compact again = %q", out)
	}
	g.mustRun("sessions", "send", "main", "again", "--wait")
	if out := g.mustRun("sessions", "compact", "main", "--max-lines", "1"); out != "Compacted agent:main:main: the model keeps the last 1 entries.\n" {
		t.Errorf("compact --max-lines = %q", out)
	}
	if out := g.mustRun("sessions", "history", "main"); !strings.Contains(out, "system: Compaction\n") {
		t.Errorf("history after compact = %q", out)
	}

	out = g.mustRun("sessions", "reset", "main")
	if !strings.HasPrefix(out, "Reset agent:main:main (new session id ") {
		t.Errorf("reset = %q", out)
	}
	if out := g.mustRun("sessions", "history", "main"); out != "system: Reset\n" {
		t.Errorf("history after reset = %q", out)
	}
}

func TestAgentsList(t *testing.T) {
	g := startGateway(t, `{
  agents: { list: [
    { id: "main", name: "Main", default: true },
    { id: "ops", name: "Ops", model: "scripted/ops-1" },
  ] },
  channels: { a2a: { peers: { far: { token: "t", url: "http://127.0.0.1:9/a2a/v1" }, inbound: { token: "u" } } } },
}`)
	out := g.mustRun("agents", "list")
	want := [][]string{
		{"ID", "NAME", "MODEL", "DEFAULT", "REMOTE"},
		{"main", "Main", "scripted/echo-1", "yes"},
		{"ops", "Ops", "scripted/ops-1"},
		{"a2a:far", "far", "-", "yes"}, // a peer we can send to
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(want) {
		t.Fatalf("agents list:\n%s", out)
	}
	for i, l := range lines {
		if got := strings.Fields(l); strings.Join(got, " ") != strings.Join(want[i], " ") {
			t.Errorf("line %d = %q, want %q", i, got, want[i])
		}
	}
	m := decodeJSON(t, g.mustRun("agents", "list", "--json"))
	if m["defaultId"] != "main" || len(m["agents"].([]any)) != 2 || len(m["remotePeers"].([]any)) != 1 {
		t.Errorf("agents.list = %v", m)
	}
}

func TestTokenAuth(t *testing.T) {
	const token = "cli-test-token-0123456789"
	g := startGateway(t, `{ gateway: { auth: { mode: "token", token: "`+token+`" } } }`)

	check := func(name string, r result, wantErr string) {
		t.Helper()
		if strings.Contains(r.stdout+r.stderr+r.errText(), token) {
			t.Errorf("%s: the token was printed", name)
		}
		if wantErr == "" {
			if r.err != nil {
				t.Errorf("%s: %v", name, r.err)
			}
			return
		}
		if !strings.Contains(r.errText(), wantErr) || strings.Contains(r.errText(), "\n") {
			t.Errorf("%s: err = %q, want one line containing %q", name, r.errText(), wantErr)
		}
	}
	check("--token", g.run("--token", token, "status"), "")
	check("env token", runCLI(t, map[string]string{EnvURL: g.url, config.EnvGatewayToken: token}, "status"), "")
	check("wrong token", g.run("--token", "wrong", "status"), "unauthorized")
	check("flag wins over env", runCLI(t, map[string]string{config.EnvGatewayToken: token}, "--url", g.url, "--token", "wrong", "status"), "unauthorized")
	// The config file's gateway.auth.token serves a gateway on this
	// machine; without it (another state dir) there are no credentials.
	check("config token", g.run("status"), "")
	check("no token", runCLI(t, map[string]string{config.EnvStateDir: t.TempDir()}, "--url", g.url, "sessions", "list"), "use --token or SWITCHBOARD_GATEWAY_TOKEN")

	// --help shows no secret taken from the environment.
	r := runCLI(t, map[string]string{config.EnvGatewayToken: token}, "status", "--help")
	check("help", r, "")
}

func TestUnreachableGateway(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	for _, url := range []string{"ws://" + addr, addr} {
		r := runCLI(t, nil, "--url", url, "status")
		if want := "cannot reach the gateway at ws://" + addr + ": is `switchboard serve` running?"; r.errText() != want {
			t.Errorf("err = %q, want %q", r.errText(), want)
		}
		if r.stdout != "" {
			t.Errorf("stdout = %q", r.stdout)
		}
	}
	r := runCLI(t, nil, "--url", "ws://me:hunter2@"+addr, "status")
	if want := "cannot reach the gateway at ws://me:xxxxx@" + addr; !strings.HasPrefix(r.errText(), want) {
		t.Errorf("err = %q, want the password masked", r.errText())
	}
}
