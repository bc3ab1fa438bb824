package httpapi_test

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
	"testing"

	"go.uber.org/goleak"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/fakellm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const token = "http-api-test-token"

// gw is a real gateway (the daemon, in process) on 127.0.0.1:0 whose
// agents talk to a fake LLM over the real OpenAI wire format.
type gw struct {
	t    testing.TB
	d    *daemon.Daemon
	base string // http://127.0.0.1:port
	llm  *fakellm.Server
	dir  string
}

// startGateway starts a gateway with agents main (default) and ops, the
// OpenAI-compatible endpoints on unless gatewayExtra turns them off, and
// gatewayExtra added to the gateway section (JSON5 members); env holds
// extra environment entries as name, value pairs.
func startGateway(t testing.TB, gatewayExtra string, llmOpts fakellm.Options, env ...string) *gw {
	t.Helper()
	return startGatewayWith(t, gatewayExtra, "", llmOpts, false, env...)
}

// startGatewayWith is startGateway with top added to the config's top
// level (JSON5 members); offline runs the agents on the built-in offline
// model in process instead of the fake LLM.
func startGatewayWith(t testing.TB, gatewayExtra, top string, llmOpts fakellm.Options, offline bool, env ...string) *gw {
	t.Helper()
	llmOpts.APIKey = "llm-key"
	llm := fakellm.Start(t, llmOpts)
	dir := t.TempDir()
	endpoints := `http: { endpoints: { chatCompletions: { enabled: true }, responses: { enabled: true } } },`
	if strings.Contains(gatewayExtra, "http:") {
		endpoints = ""
	}
	auth := fmt.Sprintf(`auth: { mode: "token", token: %q },`, token)
	if strings.Contains(gatewayExtra, "auth:") {
		auth = ""
	}
	models := fmt.Sprintf(`models: { mode: "replace", providers: { fake: { baseUrl: %q, apiKey: "llm-key", api: "openai-completions", models: [{ id: "fake-1" }, { id: "fake-2" }] } } },
  agents: { defaults: { model: { primary: "fake/fake-1" } }, list: [{ id: "main", default: true }, { id: "ops" }] },`, llm.URL())
	if offline {
		// The built-in offline model, in process.
		models = `agents: { list: [{ id: "main", default: true }, { id: "ops" }] },`
	}
	cfg := fmt.Sprintf(`{
  gateway: { %s %s %s },
  %s
  %s
}`, auth, endpoints, gatewayExtra, models, top)
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	port := 0
	vars := map[string]string{"SWITCHBOARD_STATE_DIR": dir, "HOME": dir}
	for i := 0; i+1 < len(env); i += 2 {
		vars[env[i]] = env[i+1]
	}
	d, err := daemon.Start(context.Background(), daemon.Options{
		Env:    config.MapEnv(vars),
		Port:   &port,
		Stdout: io.Discard,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatalf("daemon.Start: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return &gw{t: t, d: d, base: "http://" + d.Addrs[0].String(), llm: llm, dir: dir}
}

// do sends a request with the test token (unless headers set
// Authorization) and returns the status, headers and body.
func (g *gw) do(method, path, body string, headers ...string) (int, http.Header, []byte) {
	g.t.Helper()
	req, err := http.NewRequest(method, g.base+path, strings.NewReader(body))
	if err != nil {
		g.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		g.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// decode unmarshals b into a generic value, failing the test on bad JSON.
func decode(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("response is not a JSON object: %v\n%s", err, b)
	}
	return v
}

// errorOf returns error.type and error.message of an error body.
func errorOf(t testing.TB, b []byte) (typ, msg string) {
	t.Helper()
	e, _ := decode(t, b)["error"].(map[string]any)
	typ, _ = e["type"].(string)
	msg, _ = e["message"].(string)
	return typ, msg
}

func compactJSON(t testing.TB, b []byte) string {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	return out.String()
}
