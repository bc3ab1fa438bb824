package daemon

import (
	"bytes"
	"context"
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

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/statedir"
)

// syncBuffer is a log sink the test reads while the gateway writes; await
// waits for what the gateway writes.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed and replaced at every write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		close(s.written)
		s.written = nil
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// await waits until the text written holds sub n times. A fail-safe ends
// the test should it never come (it is not a timing assumption: the
// gateway writes sub or the test has failed).
func (s *syncBuffer) await(t *testing.T, sub string, n int) {
	t.Helper()
	failsafe := time.After(3 * time.Minute)
	for {
		s.mu.Lock()
		if strings.Count(s.b.String(), sub) >= n {
			s.mu.Unlock()
			return
		}
		if s.written == nil {
			s.written = make(chan struct{})
		}
		written := s.written
		s.mu.Unlock()
		select {
		case <-written:
		case <-failsafe:
			t.Fatalf("%q was never written %d times:\n%s", sub, n, s.String())
		}
	}
}

// listening opens the line a gateway prints once it serves (its address
// is in the state dir by then).
const listening = "switchboard: listening on "

// TestServeAppliesConfigEdits edits the config file of a running gateway
// the way a newcomer does: a valid edit takes effect without a manual
// restart (on the same port), an invalid one is logged and changes
// nothing, a running run is not cut by the reload, and with
// gateway.reload.mode "off" edits wait for the next start.
func TestServeAppliesConfigEdits(t *testing.T) {
	gate := make(chan struct{})
	var gated sync.Once
	held := make(chan struct{})
	llm := fakellm.Start(t, fakellm.Options{APIKey: "test-key", OnRequest: func(r *http.Request, req *provider.Request) {
		for _, m := range req.Messages {
			if m.Role == provider.RoleUser && strings.Contains(m.Text, "slow") {
				gated.Do(func() { close(held) })
				select {
				case <-gate:
				case <-r.Context().Done():
				}
				return
			}
		}
	}})
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "switchboard.json5")
	logs, stdout := &syncBuffer{}, &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	port := 0
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, Options{
			Env:        config.MapEnv(map[string]string{"SWITCHBOARD_STATE_DIR": dir, "HOME": dir}),
			Port:       &port,
			Stdout:     stdout,
			Logger:     slog.New(slog.NewTextHandler(logs, nil)),
			ReloadPoll: 20 * time.Millisecond,
		})
	}()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()

	running := func() statedir.Record {
		rec, ok, err := statedir.Running(dir)
		if err != nil || !ok {
			return statedir.Record{}
		}
		return rec
	}
	stdout.await(t, listening, 1)
	first := running()
	token, err := os.ReadFile(filepath.Join(dir, config.GatewayTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	dial := func() *client.Client {
		t.Helper()
		dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer dcancel()
		c, err := client.Dial(dctx, client.Options{URL: running().URL, Token: strings.TrimSpace(string(token))})
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		return c
	}
	turn := func(c *client.Client, id, msg string) string {
		t.Helper()
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		if err := c.Call(cctx, "chat.send", map[string]any{"sessionKey": "main", "message": msg, "idempotencyKey": id}, nil); err != nil {
			t.Fatalf("chat.send %s: %v", id, err)
		}
		var w struct{ Status string }
		if err := c.Call(cctx, "agent.wait", map[string]any{"runId": id, "timeoutMs": 30000}, &w); err != nil {
			t.Fatalf("agent.wait %s: %v", id, err)
		}
		return w.Status
	}

	// No config: the offline model answers, the fake LLM sees nothing.
	c := dial()
	if s := turn(c, "r1", "hello"); s != "ok" || llm.Count() != 0 {
		t.Fatalf("before the edit: status %s, LLM requests %d", s, llm.Count())
	}
	c.Close()

	// A valid edit: the gateway restarts in place, on the same address,
	// and the next turn goes to the configured provider.
	replaceFile(t, cfgPath, testConfig(llm.URL()))
	stdout.await(t, listening, 2)
	second := running()
	if second.URL != first.URL {
		t.Errorf("address after reload = %s, want %s", second.URL, first.URL)
	}
	c = dial()
	defer func() { c.Close() }()
	if s := turn(c, "r2", "hello again"); s != "ok" || llm.Count() != 1 {
		t.Fatalf("after the edit: status %s, LLM requests %d", s, llm.Count())
	}
	// The Prometheus counters count on across the reload: r1 (before) and
	// r2 (after) both ended ok.
	req, _ := http.NewRequest("GET", strings.Replace(second.URL, "ws://", "http://", 1)+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	scrape, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(scrape), `switchboard_runs_total{status="ok"} 2`+"\n") {
		t.Errorf("runs_total after the reload, want 2 ok:\n%s", grepLines(string(scrape), "switchboard_runs_total"))
	}

	// An invalid edit is skipped: logged, no restart, same model.
	replaceFile(t, cfgPath, "{ agents: { defaults: ")
	logs.await(t, "config reload skipped (invalid config)", 1)
	if s := turn(c, "r3", "still there?"); s != "ok" || llm.Count() != 2 {
		t.Fatalf("after the invalid edit: status %s, LLM requests %d", s, llm.Count())
	}
	if r := running(); !r.StartedAt.Equal(second.StartedAt) {
		t.Fatal("an invalid edit restarted the gateway")
	}

	// A valid edit while a run is running: the restart waits for the
	// run, which ends ok rather than aborted.
	if err := c.Call(ctx, "chat.send", map[string]any{"sessionKey": "main", "message": "slow one", "idempotencyKey": "r4"}, nil); err != nil {
		t.Fatal(err)
	}
	<-held
	replaceFile(t, cfgPath, testConfig(llm.URL()))
	// The notice is logged when the watcher has seen the change and found
	// the run running; the run is held until gate closes.
	logs.await(t, "when its running runs end", 1)
	if r := running(); !r.StartedAt.Equal(second.StartedAt) {
		t.Fatal("the gateway restarted under a running run")
	}
	close(gate)
	stdout.await(t, listening, 3)
	third := running()
	// The run ended ok before the restart; a client that reconnects
	// waits on it again and gets that.
	c.Close()
	c = dial()
	var w struct{ Status string }
	if err := c.Call(ctx, "agent.wait", map[string]any{"runId": "r4", "timeoutMs": 30000}, &w); err != nil || w.Status != "ok" {
		t.Fatalf("run under the reload: %v %q", err, w.Status)
	}

	// gateway.reload.mode "off": the edit is noted, not applied.
	off := fmt.Sprintf(`{
  gateway: { reload: { mode: "off" } },
  models: { mode: "replace", providers: { fake: { baseUrl: %q, apiKey: "test-key", api: "openai-completions", models: [{ id: "fake-1" }] } } },
  agents: { defaults: { model: { primary: "fake/fake-1" } } },
}`, llm.URL())
	replaceFile(t, cfgPath, off)
	// The notice is logged as the watcher decides not to restart.
	logs.await(t, `gateway.reload.mode is \"off\"`, 1)
	if r := running(); !r.StartedAt.Equal(third.StartedAt) {
		t.Fatal(`gateway.reload.mode "off" restarted the gateway`)
	}
}

// replaceFile replaces path's content in one step (a new file renamed
// over it), as editors that save atomically do. (A plain truncate and
// write that stalls between the two for more than two polls of the
// watcher would show it an empty config, which is a valid one.)
func replaceFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
