package escapetest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/sandbox"
)

const token = "escape-test-token-5f1c9a"

var binPath string

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sb-escape-")
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
	return m.Run()
}

// requireBwrap skips without the backend, except under CI=true.
func requireBwrap(t *testing.T) {
	t.Helper()
	if _, err := sandbox.Check(context.Background()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("sandbox backend required under CI (install bubblewrap): %v", err)
		}
		t.Skip(err)
	}
}

type gateway struct {
	dir, url, addr string
	pid            int
	llm            *fakellm.Server
	c              *client.Client
}

var listenRE = regexp.MustCompile(`listening on http://(\S+)`)

// start runs the gateway with agents JSON5 and extra top-level config.
func start(t *testing.T, agents, extra string, env ...string) *gateway {
	t.Helper()
	dir := t.TempDir()
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	cfg := fmt.Sprintf(`{
  gateway: { auth: { mode: "token", token: %q } },
  models: { mode: "replace", providers: { fake: { baseUrl: %q, apiKey: "llm-key", api: "openai-completions", models: [{ id: "fake-1" }] } } },
  agents: { defaults: { model: { primary: "fake/fake-1" } }, list: [%s] },
  %s
}`, token, llm.URL(), agents, extra)
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binPath, "serve", "--port", "0")
	cmd.Env = append(os.Environ(), "SWITCHBOARD_STATE_DIR="+dir, "SWITCHBOARD_CONFIG=", "SWITCHBOARD_GATEWAY_TOKEN=",
		"OPENAI_API_KEY=", "ANTHROPIC_API_KEY=", "SWITCHBOARD_DATABASE_URL=")
	cmd.Env = append(cmd.Env, env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	first := make(chan string, 1)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case first <- sc.Text():
			default:
			}
		}
		_ = cmd.Wait()
	}()
	g := &gateway{dir: dir, llm: llm, pid: cmd.Process.Pid}
	select {
	case line := <-first:
		m := listenRE.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("unexpected first line %q", line)
		}
		g.addr, g.url = m[1], "ws://"+m[1]
	case <-time.After(20 * time.Second):
		t.Fatal("gateway did not start")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g.c, err = client.Dial(ctx, client.Options{URL: g.url, Token: token})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { g.c.Close() })
	return g
}

func (g *gateway) call(t *testing.T, method string, params any) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out map[string]any
	if err := g.c.Call(ctx, method, params, &out); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return out
}

// send runs one chat.send whose fake model calls tool with args, and
// returns the agent.wait result.
func (g *gateway) send(t *testing.T, key, runID, tool string, args any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(args)
	g.call(t, "chat.send", map[string]any{"sessionKey": key, "message": "/tool " + tool + " " + string(b) + "\n/then done", "idempotencyKey": runID})
	return g.call(t, "agent.wait", map[string]any{"runId": runID, "timeoutMs": 60000})
}

// tool runs tool through the model and returns the tool result's text.
func (g *gateway) tool(t *testing.T, key, runID, tool string, args any) string {
	t.Helper()
	if w := g.send(t, key, runID, tool, args); w["status"] != "ok" {
		t.Fatalf("run %s = %v", runID, w)
	}
	hist := g.call(t, "chat.history", map[string]any{"sessionKey": key, "limit": 1000})
	msgs, _ := hist["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["role"] == "toolResult" && m["toolName"] == tool {
			b, _ := json.Marshal(m["content"])
			var blocks []struct{ Type, Text string }
			if err := json.Unmarshal(b, &blocks); err != nil {
				t.Fatalf("tool result content %s: %v", b, err)
			}
			var s strings.Builder
			for _, bl := range blocks {
				s.WriteString(bl.Text)
			}
			return s.String()
		}
	}
	t.Fatalf("no %s result in %s", tool, key)
	return ""
}
