// Package e2e runs the real switchboard binary as a subprocess on
// 127.0.0.1:0 against a fake model served over the real OpenAI wire format,
// and drives it through the WebSocket protocol and signals.
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/store/postgres/pgtest"
)

const token = "e2e-secret-token"

var binPath string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	binPath = os.Getenv("SWITCHBOARD_TEST_BIN")
	if binPath == "" {
		dir, err := os.MkdirTemp("", "sb-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		binPath = filepath.Join(dir, "switchboard")
		cmd := exec.Command("go", "build", "-o", binPath, "github.com/switchboardhq/switchboard/cmd/switchboard")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build switchboard:", err)
			return 1
		}
	}
	return pgtest.Run(m)
}

type gateway struct {
	t     *testing.T
	cmd   *exec.Cmd
	dir   string
	url   string
	done  chan error
	llm   *fakellm.Server
	stdio *lockedWriter
}

var listenRE = regexp.MustCompile(`listening on http://(\S+)`)

// start runs the binary with a config pointing at a fake OpenAI server.
func start(t *testing.T, dir string, llm *fakellm.Server, extraEnv ...string) *gateway {
	t.Helper()
	return startWith(t, dir, llm, "", "", extraEnv...)
}

// startWith is start with agents.list entries and extra top-level config
// members (JSON5, e.g. `tools: {...}, session: {...},`).
func startWith(t *testing.T, dir string, llm *fakellm.Server, agentsList, extraConfig string, extraEnv ...string) *gateway {
	t.Helper()
	return startModel(t, dir, llm, `{ id: "fake-1" }`, agentsList, extraConfig, extraEnv...)
}

// startModel is startWith with the fake-1 model's catalogue entry (JSON5).
func startModel(t *testing.T, dir string, llm *fakellm.Server, modelDef, agentsList, extraConfig string, extraEnv ...string) *gateway {
	t.Helper()
	return startDefaults(t, dir, llm, modelDef, "", agentsList, extraConfig, extraEnv...)
}

// startDefaults is startModel with extra members of agents.defaults
// (JSON5, e.g. `compaction: {...},`).
func startDefaults(t *testing.T, dir string, llm *fakellm.Server, modelDef, defaults, agentsList, extraConfig string, extraEnv ...string) *gateway {
	t.Helper()
	return startOn(t, 0, dir, llm, modelDef, defaults, agentsList, extraConfig, extraEnv...)
}

// startOn is startDefaults listening on port (0: any free one).
func startOn(t *testing.T, port int, dir string, llm *fakellm.Server, modelDef, defaults, agentsList, extraConfig string, extraEnv ...string) *gateway {
	t.Helper()
	return startFiles(t, port, nil, dir, llm, modelDef, defaults, agentsList, extraConfig, extraEnv...)
}

// startFiles is startOn with the gateway process inheriting files as
// descriptors 3, 4, … (exec.Cmd.ExtraFiles; a nil entry is closed).
func startFiles(t *testing.T, port int, files []*os.File, dir string, llm *fakellm.Server, modelDef, defaults, agentsList, extraConfig string, extraEnv ...string) *gateway {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	if llm == nil {
		llm = fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	}
	cfg := fmt.Sprintf(`{
  gateway: { auth: { mode: "token", token: %q } },
  models: { mode: "replace", providers: { fake: { baseUrl: %q, apiKey: "llm-key", api: "openai-completions", models: [%s] } } },
  agents: { defaults: { model: { primary: "fake/fake-1" }, subagents: { maxChildrenPerAgent: 200 }, %s }, list: [%s] },
  %s
}`, token, llm.URL(), modelDef, defaults, agentsList, extraConfig)
	return startConfigFiles(t, port, files, dir, cfg, llm, extraEnv...)
}

// startConfig starts a gateway on port (0: any free one) with the config
// file text cfg; llm is recorded as the gateway's model server.
func startConfig(t *testing.T, port int, dir, cfg string, llm *fakellm.Server, extraEnv ...string) *gateway {
	t.Helper()
	return startConfigFiles(t, port, nil, dir, cfg, llm, extraEnv...)
}

// startConfigFiles is startConfig with the gateway process inheriting
// files (see startFiles).
func startConfigFiles(t *testing.T, port int, files []*os.File, dir, cfg string, llm *fakellm.Server, extraEnv ...string) *gateway {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binPath, "serve", "--port", strconv.Itoa(port))
	cmd.Env = append(os.Environ(), "SWITCHBOARD_STATE_DIR="+dir, "SWITCHBOARD_CONFIG=", "SWITCHBOARD_GATEWAY_TOKEN=", "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=", "SWITCHBOARD_DATABASE_URL=")
	cmd.Env = append(cmd.Env, extraEnv...)
	cmd.ExtraFiles = files
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedWriter{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g := &gateway{t: t, cmd: cmd, dir: dir, llm: llm, done: make(chan error, 1), stdio: logs}
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(lines)
	}()
	go func() { g.done <- cmd.Wait() }()
	t.Cleanup(func() {
		g.kill()
		keepLog(t, g)
	})
	select {
	case line := <-lines:
		m := listenRE.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("unexpected first line %q", line)
		}
		g.url = "ws://" + m[1]
	case err := <-g.done:
		t.Fatalf("gateway exited: %v\n%s", err, logs)
	case <-time.After(20 * time.Second):
		t.Fatal("gateway did not start")
	}
	return g
}

// serveOutput runs serve on the state dir dir with the extra environment
// and returns its output once it exits, for a start it must refuse.
func serveOutput(t *testing.T, dir string, extraEnv ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, "serve", "--port", "0")
	cmd.Env = append(append(os.Environ(), "SWITCHBOARD_STATE_DIR="+dir, "SWITCHBOARD_CONFIG="), extraEnv...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// keepLog writes g's whole log into the directory SWITCHBOARD_E2E_LOGS
// names, when it is set and the test failed: a flaky failure's logs are
// then there to read (CI=true runs print only their WARN lines).
func keepLog(t *testing.T, g *gateway) {
	dir := os.Getenv("SWITCHBOARD_E2E_LOGS")
	if dir == "" || !t.Failed() {
		return
	}
	name := fmt.Sprintf("%s-%d-%d.log", strings.ReplaceAll(t.Name(), "/", "_"), os.Getpid(), g.cmd.Process.Pid)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(g.stdio.String()), 0o600); err != nil {
		t.Logf("gateway log not kept: %v", err)
		return
	}
	t.Logf("gateway log kept in %s", filepath.Join(dir, name))
}

// lockedWriter is an io.Writer safe to read from other goroutines via
// String.
type lockedWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (g *gateway) kill() {
	if g.cmd.ProcessState == nil {
		g.cmd.Process.Kill()
		<-g.done
	}
}

func (g *gateway) dial(t *testing.T) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{URL: g.url, Token: token})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func call(t *testing.T, c *client.Client, method string, params any) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out map[string]any
	if err := c.Call(ctx, method, params, &out); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return out
}

// rawHandshake connects without the client and returns the close status
// and the error response of the given connect params.
func rawHandshake(t *testing.T, url string, first map[string]any) (websocket.StatusCode, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	if _, _, err := conn.Read(ctx); err != nil { // connect.challenge
		t.Fatal(err)
	}
	b, _ := json.Marshal(first)
	if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return websocket.CloseStatus(err), res
		}
		json.Unmarshal(data, &res)
	}
}

func connectParams(min, max int, tok string) map[string]any {
	return map[string]any{"type": "req", "id": "c1", "method": "connect", "params": map[string]any{
		"minProtocol": min, "maxProtocol": max,
		"client": map[string]any{"id": "cli", "version": "1", "platform": "linux", "mode": "cli"},
		"role":   "operator", "scopes": []string{"operator.read", "operator.write", "operator.admin"},
		"auth": map[string]any{"token": tok},
	}}
}

func TestHandshakeAndAuth(t *testing.T) {
	g := start(t, "", nil)
	c := g.dial(t)
	h := c.Hello()
	if h.Protocol != 4 || h.Snapshot.SessionDefaults.MainSessionKey != "agent:main:main" {
		t.Errorf("hello-ok = %+v", h)
	}

	code, res := rawHandshake(t, g.url, connectParams(3, 4, "wrong-token"))
	if code != websocket.StatusPolicyViolation {
		t.Errorf("bad token closed with %v, want 1008", code)
	}
	if e, _ := res["error"].(map[string]any); e["message"] != "unauthorized: gateway token mismatch (use this gateway's gateway.auth.token or pair the device)" {
		t.Errorf("bad token error = %v", res)
	}
	code, res = rawHandshake(t, g.url, connectParams(5, 6, token))
	if code != websocket.StatusProtocolError {
		t.Errorf("protocol mismatch closed with %v, want 1002", code)
	}
	if e, _ := res["error"].(map[string]any); e["message"] != "protocol mismatch" {
		t.Errorf("protocol mismatch error = %v", res)
	}
	code, _ = rawHandshake(t, g.url, map[string]any{"type": "req", "id": "x", "method": "health"})
	if code != websocket.StatusPolicyViolation {
		t.Errorf("non-connect first frame closed with %v, want 1008", code)
	}
	if strings.Contains(g.stdio.String(), token) {
		t.Error("the gateway logged its token")
	}
}

// events collects chat/agent events of one run until the chat final.
func runEvents(t *testing.T, c *client.Client, runID string) (chat, agent []map[string]any) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-c.Events():
			if !ok {
				t.Fatal("connection closed")
			}
			var p map[string]any
			json.Unmarshal(ev.Payload, &p)
			if p["runId"] != runID {
				continue
			}
			switch ev.Event {
			case "agent":
				agent = append(agent, p)
			case "chat":
				chat = append(chat, p)
				if s := p["state"]; s == "final" || s == "error" || s == "aborted" {
					return chat, agent
				}
			}
		case <-deadline:
			t.Fatalf("run %s: no chat final", runID)
		}
	}
}

func TestMethodsAndEvents(t *testing.T) {
	g := start(t, "", nil)
	c := g.dial(t)

	if h := call(t, c, "health", map[string]any{}); h["ok"] != true {
		t.Errorf("health = %v", h)
	}
	res := call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "hi there", "idempotencyKey": "e2e-1"})
	if res["runId"] != "e2e-1" || res["status"] != "started" {
		t.Errorf("chat.send = %v", res)
	}
	chat, agent := runEvents(t, c, "e2e-1")
	final := chat[len(chat)-1]
	if final["state"] != "final" || final["sessionKey"] != "agent:main:main" {
		t.Errorf("final chat event = %v", final)
	}
	msg, _ := final["message"].(map[string]any)
	if b, _ := json.Marshal(msg); !strings.Contains(string(b), "echo: hi there") {
		t.Errorf("final message = %s", b)
	}
	var streams []string
	for _, a := range agent {
		streams = append(streams, fmt.Sprint(a["stream"]))
	}
	if s := strings.Join(streams, ","); !strings.HasPrefix(s, "lifecycle") || !strings.Contains(s, "assistant") || !strings.HasSuffix(s, "lifecycle") {
		t.Errorf("agent streams = %s", s)
	}
	if g.llm.Count() != 1 {
		t.Errorf("model requests = %d", g.llm.Count())
	}
	// The same idempotency key does not run again.
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "hi there", "idempotencyKey": "e2e-1"})
	hist := call(t, c, "chat.history", map[string]any{"sessionKey": "main"})
	if msgs, _ := hist["messages"].([]any); len(msgs) != 2 {
		t.Errorf("chat.history has %d messages, want 2: %v", len(msgs), hist)
	}

	list := call(t, c, "sessions.list", map[string]any{})
	if list["count"] != 1.0 {
		t.Errorf("sessions.list = %v", list)
	}
	call(t, c, "sessions.patch", map[string]any{"key": "main", "label": "primary"})
	if r := call(t, c, "sessions.resolve", map[string]any{"label": "primary"}); r["key"] != "agent:main:main" {
		t.Errorf("sessions.resolve = %v", r)
	}
	if a := call(t, c, "agents.list", map[string]any{}); a["defaultId"] != "main" {
		t.Errorf("agents.list = %v", a)
	}

	// agent + agent.wait, with a tool call through the real wire format.
	call(t, c, "agent", map[string]any{"message": "/tool no_such_tool {\"x\":1}\n/then tools done", "sessionKey": "agent:main:worker", "idempotencyKey": "e2e-2"})
	w := call(t, c, "agent.wait", map[string]any{"runId": "e2e-2", "timeoutMs": 20000})
	if w["status"] != "ok" {
		t.Errorf("agent.wait = %v", w)
	}
	hist = call(t, c, "chat.history", map[string]any{"sessionKey": "agent:main:worker"})
	b, _ := json.Marshal(hist["messages"])
	if !strings.Contains(string(b), `"toolResult"`) || !strings.Contains(string(b), "tools done") {
		t.Errorf("worker history = %s", b)
	}

	// Send policy blocks input.
	call(t, c, "sessions.patch", map[string]any{"key": "agent:main:worker", "sendPolicy": "deny"})
	err := c.Call(context.Background(), "chat.send", map[string]any{"sessionKey": "agent:main:worker", "message": "x", "idempotencyKey": "e2e-3"}, nil)
	var we *wire.Error
	if !errors.As(err, &we) || we.Message != "send blocked by session policy" {
		t.Errorf("blocked chat.send = %v", err)
	}

	// Abort a stalled run.
	call(t, c, "chat.send", map[string]any{"sessionKey": "agent:main:staller", "message": "/stall", "idempotencyKey": "e2e-4"})
	eventually(t, "the stalled run to start", func() bool {
		return call(t, c, "agent.wait", map[string]any{"runId": "e2e-4", "timeoutMs": 0})["startedAt"] != nil
	})
	if a := call(t, c, "chat.abort", map[string]any{"sessionKey": "agent:main:staller"}); a["aborted"] != true {
		t.Errorf("chat.abort = %v", a)
	}
	chat, _ = runEvents(t, c, "e2e-4")
	if st := chat[len(chat)-1]["state"]; st != "aborted" {
		t.Errorf("stalled run ended %v", st)
	}

	// Reset rotates the transcript; delete removes the session.
	before := call(t, c, "chat.history", map[string]any{"sessionKey": "main"})["sessionId"]
	call(t, c, "sessions.reset", map[string]any{"key": "main"})
	after := call(t, c, "chat.history", map[string]any{"sessionKey": "main"})
	// Only the synthetic Reset row: nothing from before the reset.
	if msgs := after["messages"].([]any); after["sessionId"] == before || len(msgs) != 1 || len(boundaryRows([]map[string]any{msgs[0].(map[string]any)}, "reset")) != 1 {
		t.Errorf("after reset: %v (was %v)", after, before)
	}
	call(t, c, "sessions.delete", map[string]any{"key": "agent:main:worker", "deleteTranscript": true})
	if _, err := c.CallRaw(context.Background(), "sessions.resolve", map[string]any{"key": "agent:main:worker"}); err == nil {
		t.Error("deleted session still resolves")
	}
	call(t, c, "sessions.create", map[string]any{"key": "agent:main:fresh"})
	call(t, c, "chat.inject", map[string]any{"sessionKey": "agent:main:fresh", "message": "a note"})
	if h := call(t, c, "chat.history", map[string]any{"sessionKey": "agent:main:fresh"}); len(h["messages"].([]any)) != 1 {
		t.Errorf("after chat.inject: %v", h)
	}
}

// TestWaitSurvivesReconnect: a client waiting on a run disconnects, the run
// finishes meanwhile, and a new connection's agent.wait gets the result.
func TestWaitSurvivesReconnect(t *testing.T) {
	g := start(t, "", nil)
	c := g.dial(t)
	call(t, c, "agent", map[string]any{"message": "/sleep 800ms\n/reply slow answer", "sessionKey": "main", "idempotencyKey": "slow-1"})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	var w map[string]any
	err := c.Call(ctx, "agent.wait", map[string]any{"runId": "slow-1", "timeoutMs": 30000}, &w)
	cancel()
	if err == nil {
		t.Fatalf("wait finished early: %v", w)
	}
	c.Close() // disconnect mid-wait

	c2 := g.dial(t)
	w = call(t, c2, "agent.wait", map[string]any{"runId": "slow-1", "timeoutMs": 20000})
	if w["status"] != "ok" {
		t.Fatalf("agent.wait after reconnect = %v", w)
	}
	hist := call(t, c2, "chat.history", map[string]any{"sessionKey": "main"})
	if b, _ := json.Marshal(hist["messages"]); !strings.Contains(string(b), "slow answer") {
		t.Errorf("history = %s", b)
	}
	// A short wait on a new slow run times out, then the result is fetched.
	call(t, c2, "agent", map[string]any{"message": "/sleep 500ms\n/reply late", "sessionKey": "main", "idempotencyKey": "slow-2"})
	if w := call(t, c2, "agent.wait", map[string]any{"runId": "slow-2", "timeoutMs": 50}); w["status"] != "timeout" {
		t.Errorf("short wait = %v", w)
	}
	if w := call(t, c2, "agent.wait", map[string]any{"runId": "slow-2", "timeoutMs": 20000}); w["status"] != "ok" {
		t.Errorf("second wait = %v", w)
	}
}

// TestSIGTERMDrainsRuns: on SIGTERM the gateway lets a run in progress
// finish within the grace period, aborts one that cannot, exits 0, and the
// next start sees both outcomes.
func TestSIGTERMDrainsRuns(t *testing.T) {
	dir := t.TempDir()
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := start(t, dir, llm, "SWITCHBOARD_SHUTDOWN_GRACE=1500ms")
	c := g.dial(t)
	call(t, c, "agent", map[string]any{"message": "/sleep 400ms\n/reply finished in grace", "sessionKey": "agent:main:a", "idempotencyKey": "grace-ok"})
	call(t, c, "agent", map[string]any{"message": "/stall", "sessionKey": "agent:main:b", "idempotencyKey": "grace-stall"})
	time.Sleep(150 * time.Millisecond)
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-g.done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, g.stdio)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("gateway did not exit after SIGTERM")
	}

	g2 := start(t, dir, llm)
	c2 := g2.dial(t)
	if w := call(t, c2, "agent.wait", map[string]any{"runId": "grace-ok", "timeoutMs": 1000}); w["status"] != "ok" {
		t.Errorf("run in grace = %v", w)
	}
	w := call(t, c2, "agent.wait", map[string]any{"runId": "grace-stall", "timeoutMs": 1000})
	if w["status"] != "error" || !strings.Contains(fmt.Sprint(w["error"]), "shutting down") {
		t.Errorf("stalled run = %v", w)
	}
	hist := call(t, c2, "chat.history", map[string]any{"sessionKey": "agent:main:a"})
	if b, _ := json.Marshal(hist["messages"]); !strings.Contains(string(b), "finished in grace") {
		t.Errorf("history a = %s", b)
	}
	list := call(t, c2, "sessions.list", map[string]any{})
	b, _ := json.Marshal(list["sessions"])
	if !strings.Contains(string(b), `"abortedLastRun":true`) {
		t.Errorf("no session with abortedLastRun after the aborted run: %s", b)
	}
}

// TestSessionsExport writes a transcript as reference JSONL on the gateway
// host, at the transcriptPath sessions_list reports.
func TestSessionsExport(t *testing.T) {
	g := start(t, "", nil)
	c := g.dial(t)
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "export me", "idempotencyKey": "x-1"})
	call(t, c, "agent.wait", map[string]any{"runId": "x-1", "timeoutMs": 20000})
	res := call(t, c, "sessions.export", map[string]any{"key": "main"})
	path, _ := res["path"].(string)
	want := filepath.Join(g.dir, "agents", "main", "sessions", fmt.Sprint(res["sessionId"], ".jsonl"))
	if path != want {
		t.Fatalf("export path = %q, want %q", path, want)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"type":"session"`) || !strings.Contains(lines[2], "echo: export me") {
		t.Errorf("exported JSONL:\n%s", data)
	}
	if _, err := c.CallRaw(context.Background(), "sessions.export", map[string]any{"key": "agent:main:nope"}); err == nil {
		t.Error("exporting a missing session succeeded")
	}
}
