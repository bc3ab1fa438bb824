package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/storage"
	"github.com/switchboardhq/switchboard/internal/store"
)

// writeConfig writes a switchboard.json5 that points the default agent at
// the fake LLM over the real OpenAI wire format.
func writeConfig(t testing.TB, stateDir, llmURL string) {
	t.Helper()
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stateDir, "switchboard.json5"), []byte(testConfig(llmURL)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// testConfig is a config whose default model is fake-1 at llmURL.
func testConfig(llmURL string) string {
	return fmt.Sprintf(`// test config, OpenClaw key names
{
  models: {
    mode: "replace",
    providers: {
      fake: { baseUrl: %q, apiKey: "test-key", api: "openai-completions", models: [{ id: "fake-1" }] },
    },
  },
  agents: { defaults: { model: { primary: "fake/fake-1" } } },
}
`, llmURL)
}

func startDaemon(t testing.TB, stateDir string) *Daemon {
	t.Helper()
	port := 0
	var out bytes.Buffer
	d, err := Start(context.Background(), Options{
		Env:    config.MapEnv(map[string]string{"SWITCHBOARD_STATE_DIR": stateDir, "HOME": stateDir}),
		Port:   &port,
		Stdout: &out,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if !strings.Contains(out.String(), "listening on http://127.0.0.1:") {
		t.Errorf("start notice = %q", out.String())
	}
	for _, a := range d.Addrs { // loopback is 127.0.0.1 and ::1: both named
		if !strings.Contains(out.String(), "http://"+a.String()) {
			t.Errorf("start notice %q does not name %s", out.String(), a)
		}
	}
	return d
}

func TestServeRunsAgainstOpenAIWire(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "test-key"})
	dir := t.TempDir()
	writeConfig(t, dir, llm.URL())
	d := startDaemon(t, dir)
	defer d.Close()

	for _, a := range d.Addrs {
		resp, err := http.Get("http://" + a.String() + "/healthz")
		if err != nil {
			t.Fatalf("GET /healthz on %s: %v", a, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"ok":true`) {
			t.Errorf("healthz on %s = %d %s", a, resp.StatusCode, body)
		}
	}

	ctx := context.Background()
	if _, _, err := d.Runner.Submit(ctx, agent.Input{RunID: "r1", SessionKey: "agent:main:main", AgentID: "main", Message: "hello over http"}); err != nil {
		t.Fatal(err)
	}
	run, done, err := d.Runner.Wait(ctx, "r1", 20*time.Second)
	if err != nil || !done || run.Status != store.RunOK {
		t.Fatalf("run = %+v done=%v err=%v", run, done, err)
	}
	sess, err := d.Store.GetSession(ctx, "agent:main:main")
	if err != nil {
		t.Fatal(err)
	}
	if sess.Kind != "direct" || sess.AgentID != "main" || sess.TotalTokens == 0 {
		t.Errorf("session = %+v", sess)
	}
	msgs, _ := d.Store.History(ctx, sess.SessionID, store.HistoryOptions{})
	if len(msgs) != 2 || msgs[1].Entry.Message.Content.Text() != "echo: hello over http" ||
		msgs[1].Entry.Message.Provider != "fake" || msgs[1].Entry.Message.Model != "fake-1" {
		b, _ := json.Marshal(msgs)
		t.Fatalf("transcript = %s", b)
	}
	if n := llm.Count(); n != 1 {
		t.Errorf("LLM requests = %d, want 1", n)
	}
	if err := d.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := d.Close(); err == nil {
		t.Error("second Close returned nil")
	}
}

func TestStartRejectsBadConfig(t *testing.T) {
	dir := t.TempDir()
	bad := "{\n  session: { scope: 7 },\n  tools: { sessions: { visibility: \"everyone\" } },\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), Options{
		Env:    config.MapEnv(map[string]string{"SWITCHBOARD_STATE_DIR": dir}),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err == nil {
		t.Fatal("Start accepted a bad config")
	}
	msg := err.Error()
	for _, want := range []string{"switchboard.json5:2:", "switchboard.json5:3:"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, storage.DBFile)); err == nil {
		t.Error("a bad config still created the database")
	}
}

// TestAuthExplicitlyOff: "none" must be written down; then loopback
// clients need no secret, and no token file is made.
func TestAuthExplicitlyOff(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(`{ gateway: { auth: { mode: "none" } } }`), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir)
	defer d.Close()
	if got := d.Settings.Auth; got.Mode != "none" {
		t.Errorf("auth mode = %q", got.Mode)
	}
	if _, err := os.Stat(filepath.Join(dir, config.GatewayTokenFile)); err == nil {
		t.Error("a token was generated although auth is explicitly off")
	}
	// Without any auth config a token is generated and used.
	dir2 := t.TempDir()
	d2 := startDaemon(t, dir2)
	defer d2.Close()
	tok, err := config.ReadGatewayToken(dir2)
	if err != nil {
		t.Fatal(err)
	}
	if got := d2.Settings.Auth; got.Mode != "token" || got.Token != tok {
		t.Errorf("auth = %v, want token mode with the generated token", got)
	}
}

// TestCloseDrainsRunsForConnectedClients: a run that ends within the
// shutdown grace reaches the client waiting on it with its final event
// before the connection closes, and the drain's start and end are logged.
func TestCloseDrainsRunsForConnectedClients(t *testing.T) {
	gate, held := make(chan struct{}), make(chan struct{})
	var once sync.Once
	llm := fakellm.Start(t, fakellm.Options{APIKey: "test-key", OnRequest: func(r *http.Request, _ *provider.Request) {
		once.Do(func() { close(held) })
		select {
		case <-gate:
		case <-r.Context().Done():
		}
	}})
	dir := t.TempDir()
	writeConfig(t, dir, llm.URL())
	logs := &syncBuffer{}
	port := 0
	d, err := Start(context.Background(), Options{
		Env:           config.MapEnv(map[string]string{"SWITCHBOARD_STATE_DIR": dir, "HOME": dir}),
		Port:          &port,
		Stdout:        io.Discard,
		Logger:        slog.New(slog.NewTextHandler(logs, nil)),
		ShutdownGrace: 2 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	token, err := os.ReadFile(filepath.Join(dir, config.GatewayTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{URL: "ws://" + d.Addrs[0].String(), Token: strings.TrimSpace(string(token))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Call(ctx, "chat.send", map[string]any{"sessionKey": "main", "message": "in time", "idempotencyKey": "drain-1"}, nil); err != nil {
		t.Fatal(err)
	}
	<-held // the run is under way: shut down under it
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	logs.await(t, "shutdown: draining", 1)
	close(gate)
	for final := false; !final; {
		var ev client.Event
		select {
		case ev = <-c.Events():
		case <-ctx.Done():
			t.Fatal("no final chat event before the connection closed")
		}
		var p struct {
			RunID, State string
			Message      json.RawMessage
		}
		json.Unmarshal(ev.Payload, &p)
		if ev.Event == "chat" && p.RunID == "drain-1" && p.State != "delta" {
			final = true
			if p.State != "final" || !strings.Contains(string(p.Message), "echo: in time") {
				t.Errorf("the run ended %s with %s, want final with its reply", p.State, p.Message)
			}
		}
	}
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
	if !strings.Contains(logs.String(), "shutdown: drained") || !strings.Contains(logs.String(), "cutShort=false") {
		t.Errorf("logs lack the drain's end:\n%s", logs.String())
	}
}
