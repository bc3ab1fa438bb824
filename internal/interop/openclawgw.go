package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// OpenClawGateway is the reference gateway itself (npm openclaw, run with
// node 24 from the npm cache) on a loopback port, its model an offline
// fake OpenAI-compatible server in this process. Channels are started
// (OPENCLAW_SKIP_CHANNELS is unset), so its A2A channel serves when the
// config has channels.a2a. Its state, home and log file live in the
// test's temporary directory.
type OpenClawGateway struct {
	// URL is the gateway's base URL (http://127.0.0.1:PORT), known before
	// Start so that a peer's config can name it.
	URL string
	// Token is the gateway's operator token.
	Token string

	node, mjs, dir string
	llm            *fakeLLM

	mu     sync.Mutex
	output bytes.Buffer // the gateway's stdout and stderr
}

// WSURL is the gateway's WebSocket URL.
func (g *OpenClawGateway) WSURL() string { return "ws" + strings.TrimPrefix(g.URL, "http") }

// NewOpenClawGateway finds the reference's install, picks a free loopback
// port and starts the fake model. It skips the test when the npm cache
// lacks node 24 or openclaw (fails it under CI=true).
func NewOpenClawGateway(t testing.TB) *OpenClawGateway {
	t.Helper()
	node, mjs, err := locateOpenClaw()
	if errors.Is(err, errNoCache) {
		skipOrFatal(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	llm := &fakeLLM{}
	srv := httptest.NewServer(llm)
	t.Cleanup(srv.Close)
	llm.url = srv.URL
	return &OpenClawGateway{URL: fmt.Sprintf("http://127.0.0.1:%d", port), Token: "openclaw-peer-token",
		node: node, mjs: mjs, dir: t.TempDir(), llm: llm}
}

// Start writes the gateway's config, with a2a as its channels.a2a (nil:
// none), starts it and waits until it is ready and, with a2a, until its
// agent card is served. The gateway is stopped when the test ends.
func (g *OpenClawGateway) Start(t testing.TB, a2a map[string]any) {
	t.Helper()
	port := strings.TrimPrefix(g.URL, "http://127.0.0.1:")
	home, state, ws := filepath.Join(g.dir, "home"), filepath.Join(g.dir, "state"), filepath.Join(g.dir, "ws")
	for _, d := range []string{home, state, ws} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cfg := map[string]any{
		"gateway": map[string]any{"mode": "local", "bind": "loopback", "auth": map[string]any{"mode": "token", "token": g.Token}},
		"models": map[string]any{"mode": "replace", "providers": map[string]any{"fake": map[string]any{
			"baseUrl": g.llm.url + "/v1", "apiKey": "fake-key", "api": "openai-completions",
			"models": []any{map[string]any{"id": "fake-1", "name": "Fake LLM", "reasoning": false, "input": []string{"text"},
				"cost":          map[string]int{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
				"contextWindow": 128000, "maxTokens": 4096}},
		}}},
		"update":  map[string]any{"checkOnStart": false},
		"tools":   map[string]any{"toolSearch": false},
		"agents":  map[string]any{"defaults": map[string]any{"workspace": ws, "model": map[string]any{"primary": "fake/fake-1"}}},
		"logging": map[string]any{"file": filepath.Join(g.dir, "openclaw.log")},
	}
	if a2a != nil {
		cfg["channels"] = map[string]any{"a2a": a2a}
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(state, "openclaw.json")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(g.node, g.mjs, "gateway", "run", "--port", port, "--bind", "loopback")
	cmd.Dir = g.dir
	cmd.Env = append(openclawEnv(os.Environ()),
		"PATH="+filepath.Dir(g.node)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+home, "OPENCLAW_STATE_DIR="+state, "OPENCLAW_CONFIG_PATH="+cfgPath,
		"OPENCLAW_GATEWAY_TOKEN="+g.Token, "OPENCLAW_DISABLE_BONJOUR=1", "OPENCLAW_NO_RESPAWN=1",
		"OPENCLAW_EXEC_SHELL_SNAPSHOT=0", "OPENCLAW_NO_AUTO_UPDATE=1", "NO_COLOR=1")
	cmd.Stdout = lockedBuffer{&g.mu, &g.output}
	cmd.Stderr = cmd.Stdout
	// Its own process group, so that stopping it stops the helpers it
	// starts (see stopGroup).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { stopGroup(cmd.Process.Pid, exited) })

	ready := "/readyz"
	deadline := time.Now().Add(3 * time.Minute) // a cold start takes ~20 s on an idle machine
	for {
		select {
		case <-exited:
			t.Fatalf("openclaw gateway exited:\n%s", g.Output())
		case <-time.After(250 * time.Millisecond):
		}
		if httpStatus(g.URL+ready) == http.StatusOK {
			if ready == "/readyz" && a2a != nil {
				ready = "/.well-known/agent-card.json"
				continue
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("openclaw gateway: %s not 200 after 3m:\n%s", ready, g.Output())
		}
	}
}

// Output returns what the gateway has printed.
func (g *OpenClawGateway) Output() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.output.String()
}

// ModelInputs returns the text of the last user message of each request
// the gateway's model has received.
func (g *OpenClawGateway) ModelInputs() []string { return g.llm.inputs() }

// locateOpenClaw returns node 24 and openclaw.mjs in the npm cache; the
// error wraps errNoCache when either is missing or at another version.
func locateOpenClaw() (node, mjs string, err error) {
	cache, err := NPMCache()
	if err != nil {
		return "", "", err
	}
	prefix := filepath.Join(cache, "openclaw")
	dir := filepath.Join(prefix, "node_modules", openclawPackage)
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if errors.Is(err, os.ErrNotExist) {
		return "", "", fmt.Errorf("%s@%s not found in %s: %w", openclawPackage, openclawVersion, prefix, errNoCache)
	}
	if err != nil {
		return "", "", err
	}
	var meta struct{ Version string }
	if err := json.Unmarshal(data, &meta); err != nil {
		return "", "", fmt.Errorf("%s/package.json: %w", dir, err)
	}
	if meta.Version != openclawVersion {
		return "", "", fmt.Errorf("%s in %s is %s, want %s: %w", openclawPackage, prefix, meta.Version, openclawVersion, errNoCache)
	}
	node = filepath.Join(cache, "node24", "node_modules", nodePackage, "bin", "node")
	if _, err := os.Stat(node); err != nil {
		return "", "", fmt.Errorf("node 24 for %s: %v: %w", openclawPackage, err, errNoCache)
	}
	return node, filepath.Join(dir, "openclaw.mjs"), nil
}

// openclawEnv is env without the OPENCLAW_ variables of whoever runs the
// tests (OPENCLAW_SKIP_CHANNELS among them) and without CI, HOME and
// PATH, which the caller sets: the gateway runs as it would for an
// operator.
func openclawEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, "OPENCLAW_") || strings.HasPrefix(kv, "CI=") ||
			strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "PATH=")
	})
}

// stopGroup stops process group pgid (SIGTERM, then SIGKILL after 20 s)
// and waits for its leader to exit. Descendants that moved to a group of
// their own (the reference's spawn broker does) are found first and
// killed if they outlive the leader.
func stopGroup(pgid int, exited <-chan struct{}) {
	desc := descendants(pgid)
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-exited
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	for _, pid := range desc {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// descendants lists the processes below pid, from /proc (none where
// there is no /proc).
func descendants(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if f := strings.Fields(string(b[i+1:])); i >= 0 && len(f) > 1 {
			if pp, err := strconv.Atoi(f[1]); err == nil {
				parent[p] = pp
			}
		}
	}
	var out []int
	for p := range parent {
		for q, depth := parent[p], 0; q > 1 && depth < 64; q, depth = parent[q], depth+1 { // bounded: pids are reused
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// httpStatus is GET url's status code, 0 when it cannot be reached.
func httpStatus(url string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// fakeLLM is an OpenAI-compatible chat-completions server for the
// reference's agent. Its reply names what it was asked: the text between
// « and » in the last user message ("reference heard «x»"), or
// "reference here" when there is none. A user message holding
// "TOOL:<name> <json>" makes it call that tool once instead, and answer
// "tool result: <text>" when the result is back. The reference's trailing
// internal context messages are not the user's.
type fakeLLM struct {
	url string

	mu   sync.Mutex
	seen []string
}

const openclawInternalMarker = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"

func (f *fakeLLM) inputs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

func (f *fakeLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		writeJSON(w, map[string]any{"object": "list", "data": []any{map[string]any{"id": "fake-1", "object": "model"}}})
		return
	case r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions"):
		http.NotFound(w, r)
		return
	}
	var body struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var last, result string
	for _, m := range body.Messages {
		switch s := contentText(m.Content); {
		case m.Role == "user" && !strings.Contains(s, openclawInternalMarker):
			last, result = s, ""
		case m.Role == "tool":
			result = s
		}
	}
	f.mu.Lock()
	f.seen = append(f.seen, last)
	f.mu.Unlock()
	reply, tool, args := "reference here", "", ""
	_, call, isCall := strings.Cut(last, "TOOL:")
	switch {
	case isCall && result != "":
		reply = "tool result: " + result
	case isCall:
		tool, args, _ = strings.Cut(strings.TrimSpace(call), " ")
		args, _, _ = strings.Cut(strings.TrimSpace(args), "\n")
		if !json.Valid([]byte(args)) {
			args = "{}"
		}
	default:
		if _, rest, ok := strings.Cut(last, "«"); ok {
			if heard, _, ok := strings.Cut(rest, "»"); ok {
				reply = "reference heard «" + heard + "»"
			}
		}
	}
	msg, delta, finish := map[string]any{"role": "assistant", "content": reply}, map[string]any{"content": reply}, "stop"
	if tool != "" {
		calls := []any{map[string]any{"index": 0, "id": "call_1", "type": "function", "function": map[string]any{"name": tool, "arguments": args}}}
		msg, delta, finish = map[string]any{"role": "assistant", "content": nil, "tool_calls": calls}, map[string]any{"tool_calls": calls}, "tool_calls"
	}
	id, model := "chatcmpl-fake", body.Model
	usage := map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	if !body.Stream {
		writeJSON(w, map[string]any{"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	chunk := func(delta map[string]any, finish any, usage any) {
		ev := map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			ev["usage"] = usage
		}
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	chunk(delta, nil, nil)
	chunk(map[string]any{}, finish, usage)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// contentText is a chat message's content as text: a string, or the text
// of its parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
