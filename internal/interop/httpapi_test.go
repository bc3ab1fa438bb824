package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// startHTTPAPI runs the real daemon with the OpenAI-compatible endpoints
// on and the offline scripted model, and returns its http:// base. extra
// is added to the config's top level.
func startHTTPAPI(t *testing.T, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`{ gateway: { auth: { mode: "token", token: %q },
  http: { endpoints: { chatCompletions: { enabled: true }, responses: { enabled: true } } } }, %s }`, testToken, strings.Join(extra, ",\n"))
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	port := 0
	d, err := daemon.Start(context.Background(), daemon.Options{
		Env:    config.MapEnv(map[string]string{"SWITCHBOARD_STATE_DIR": dir, "HOME": dir}),
		Port:   &port,
		Stdout: io.Discard,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return "http://" + d.Addrs[0].String()
}

// TestOpenAIJSClientAgainstSwitchboard drives the OpenAI-compatible API
// with the official OpenAI JS client from npm.
func TestOpenAIJSClientAgainstSwitchboard(t *testing.T) {
	base := startHTTPAPI(t)
	r := OpenAIJSClient{BaseURL: base + "/v1", Token: testToken}.Run(t)
	if r.Err != nil {
		t.Fatalf("%v\nsteps:\n%s\nstderr:\n%s", r.Err, formatSteps(r.Steps), r.Stderr)
	}
	want := []string{"load", "models", "chat", "chat.stream", "chat.user", "chat.tools", "chat.tools.stream", "responses", "responses.previous", "responses.stream", "unknown-model", "done"}
	if got := stepNames(r.Steps); !slices.Equal(got, want) {
		t.Fatalf("steps %q, want %q\n%s", got, want, formatSteps(r.Steps))
	}
	checks := []struct {
		step, key string
		want      any
	}{
		{"models", "retrieved", "openclaw/default"},
		{"chat", "content", "echo: hello from the js client"},
		{"chat", "object", "chat.completion"},
		{"chat", "finish", "stop"},
		{"chat.stream", "content", "echo: stream to js"},
		{"chat.stream", "finish", "stop"},
		{"chat.tools", "finish", "tool_calls"},
		{"chat.tools", "name", "get_weather"},
		{"chat.tools", "args", "Paris"},
		{"chat.tools", "followFinish", "stop"},
		{"chat.tools.stream", "finish", "tool_calls"},
		{"chat.tools.stream", "count", 1.0},
		{"chat.tools.stream", "name", "get_weather"},
		{"chat.tools.stream", "city", "Oslo"},
		{"chat.tools.stream", "hasId", true},
		{"responses", "text", "echo: js response one"},
		{"responses", "status", "completed"},
		{"responses.previous", "text", "echo: js response two"},
		{"responses.stream", "text", "echo: js streamed response"},
		{"responses.stream", "final", "echo: js streamed response"},
		{"unknown-model", "status", 400.0},
		{"unknown-model", "type", "invalid_request_error"},
		{"unknown-model", "message", "Invalid `model`. Use `openclaw` or `openclaw/<agentId>`."},
	}
	for _, c := range checks {
		if got := r.Step(c.step)[c.key]; got != c.want {
			t.Errorf("%s.%s = %v, want %v", c.step, c.key, got, c.want)
		}
	}
	ids := fmt.Sprint(r.Step("models")["ids"])
	if ids != "[openclaw openclaw/default openclaw/main]" {
		t.Errorf("model ids = %s", ids)
	}
	if u, _ := r.Step("chat.stream")["usage"].(map[string]any); u == nil || u["total_tokens"] == 0.0 {
		t.Errorf("stream usage = %v", r.Step("chat.stream")["usage"])
	}
	if got, _ := r.Step("chat.tools")["followText"].(string); !strings.Contains(got, "sunny in Paris") {
		t.Errorf("tool follow-up reply = %q", got)
	}
	if got := fmt.Sprint(r.Step("chat.user")["replies"]); got != "[echo: first js turn echo: second js turn]" {
		t.Errorf("user conversation replies = %s", got)
	}
}

// TestOpenAIJSEmbeddings calls /v1/embeddings with the official OpenAI JS
// client's defaults (it asks for encoding_format "base64" and decodes the
// base64 float32 vectors itself), then with encoding_format "float"; both
// must give the embedding model's vectors.
func TestOpenAIJSEmbeddings(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	base := startHTTPAPI(t, fmt.Sprintf(`
  models: { providers: { fake: { baseUrl: %q, apiKey: "llm-key", api: "openai-completions", models: [{ id: "embed-small" }] } } },
  memory: { search: { provider: "fake", model: "embed-small", outputDimensionality: 4 } }`, llm.URL()))
	r := OpenAIJSClient{BaseURL: base + "/v1", Token: testToken, Embeddings: true}.Run(t)
	if r.Err != nil {
		t.Fatalf("%v\nsteps:\n%s\nstderr:\n%s", r.Err, formatSteps(r.Steps), r.Stderr)
	}
	type vec struct {
		Index, Length int
		Head          []float64
	}
	var got struct {
		Defaults, Floats []vec
		Wire             []struct{ Asked, Got any }
	}
	b, _ := json.Marshal(r.Step("embeddings"))
	if err := json.Unmarshal(b, &got); err != nil || len(got.Defaults) != 2 || len(got.Floats) != 1 {
		t.Fatalf("embeddings step %s: %v", b, err)
	}
	for i, in := range []string{"alpha beta", "gamma"} {
		want := fakellm.Embedding(in, 4)
		d := got.Defaults[i]
		if d.Index != i || d.Length != 4 || len(d.Head) != 3 {
			t.Fatalf("default-format vector %d = %+v", i, d)
		}
		for j, w := range want[:3] {
			if float32(d.Head[j]) != float32(w) { // the base64 form carries float32s
				t.Errorf("default-format vector %d[%d] = %v, want %v", i, j, d.Head[j], float32(w))
			}
		}
	}
	if w := fmt.Sprint(got.Wire); w != "[{base64 string} {float array}]" {
		t.Errorf("wire formats (asked, answered) = %s, want [{base64 string} {float array}]", w)
	}
	if f := got.Floats[0]; f.Length != 4 || f.Head[0] != fakellm.Embedding("alpha beta", 4)[0] {
		t.Errorf("float vector = %+v", f)
	}
}

// TestCurlToolsInvoke calls /tools/invoke with curl: an allowed call, one
// the default HTTP deny list refuses, malformed JSON and a wrong token.
func TestCurlToolsInvoke(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("curl not found (CI=true: not skipping; .ci/run installs it): %v", err)
		}
		t.Skipf("curl not found: %v", err)
	}
	base := startHTTPAPI(t)
	tests := []struct {
		name, token, body string
		status            string
		want              string
	}{
		{"allowed", testToken, `{"tool":"agents_list","args":{}}`, "200", `"ok":true`},
		{"denied", testToken, `{"tool":"sessions_send","args":{"message":"x"}}`, "404", `{"ok":false,"error":{"type":"not_found","message":"Tool not available: sessions_send"}}`},
		{"malformed", testToken, `{"tool": `, "400", `"type":"invalid_request_error"`},
		{"wrong token", "nope", `{"tool":"agents_list"}`, "401", `{"error":{"message":"Unauthorized","type":"unauthorized"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, curl, "-sS", "-w", "\n%{http_code}", base+"/tools/invoke",
				"-H", "Authorization: Bearer "+tt.token, "-H", "Content-Type: application/json", "-d", tt.body).Output()
			if err != nil {
				t.Fatalf("curl: %v", err)
			}
			body, status, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
			if status != tt.status || !strings.Contains(body, tt.want) {
				t.Errorf("curl = %s %s, want %s with %s", status, body, tt.status, tt.want)
			}
		})
	}
}
