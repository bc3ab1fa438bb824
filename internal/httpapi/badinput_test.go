package httpapi_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/store"
)

func TestOpenAICompatBadInput(t *testing.T) {
	g := startGateway(t, "", fakellm.Options{})
	user := `"messages":[{"role":"user","content":"hi"}]`
	tests := []struct {
		name, method, path, body string
		headers                  []string
		status                   int
		typ, msg                 string // error type and message; msg "" skips
	}{
		{"invalid JSON", "POST", "/v1/chat/completions", `{"model":`, nil, 400, "invalid_request_error", ""},
		{"not an object", "POST", "/v1/chat/completions", `[]`, nil, 400, "invalid_request_error", ": Invalid input: expected object, received array"},
		{"model type", "POST", "/v1/chat/completions", `{"model":5,` + user + `}`, nil, 400, "invalid_request_error", "model: Invalid input: expected string, received number"},
		{"messages type", "POST", "/v1/chat/completions", `{"messages":"hi"}`, nil, 400, "invalid_request_error", "messages: Invalid input: expected array, received string"},
		{"stream type", "POST", "/v1/chat/completions", `{"stream":"yes",` + user + `}`, nil, 400, "invalid_request_error", "stream: Invalid input: expected boolean, received string"},
		{"max_tokens zero", "POST", "/v1/chat/completions", `{"max_tokens":0,` + user + `}`, nil, 400, "invalid_request_error", "max_tokens: Too small: expected number to be >0"},
		{"max_tokens fraction", "POST", "/v1/chat/completions", `{"max_tokens":1.5,` + user + `}`, nil, 400, "invalid_request_error", "max_tokens: Invalid input: expected int, received number"},
		{"temperature range", "POST", "/v1/chat/completions", `{"temperature":3,` + user + `}`, nil, 400, "invalid_request_error", "`temperature` must be between 0 and 2."},
		{"seed fraction", "POST", "/v1/chat/completions", `{"seed":1.5,` + user + `}`, nil, 400, "invalid_request_error", "`seed` must be an integer."},
		{"too many stops", "POST", "/v1/chat/completions", `{"stop":["a","b","c","d","e"],` + user + `}`, nil, 400, "invalid_request_error", "Invalid stop: stop supports at most 4 sequences"},
		{"response_format", "POST", "/v1/chat/completions", `{"response_format":{"type":"xml"},` + user + `}`, nil, 400, "invalid_request_error", "Invalid response_format: response_format.type must be text, json_object, or json_schema"},
		{"unknown model", "POST", "/v1/chat/completions", `{"model":"gpt-4o",` + user + `}`, nil, 400, "invalid_request_error", "Invalid `model`. Use `openclaw` or `openclaw/<agentId>`."},
		{"unknown agent", "POST", "/v1/chat/completions", `{"model":"openclaw/ghost",` + user + `}`, nil, 400, "invalid_request_error", "Unknown agent 'ghost'."},
		{"unknown agent header", "POST", "/v1/chat/completions", `{` + user + `}`, []string{"X-Openclaw-Agent-Id", "ghost"}, 400, "invalid_request_error", "Unknown agent 'ghost'."},
		{"reserved session key", "POST", "/v1/chat/completions", `{` + user + `}`, []string{"X-Openclaw-Session-Key", "subagent:x"}, 400, "invalid_request_error", "`x-openclaw-session-key` cannot use reserved internal session namespaces."},
		{"reserved cron key", "POST", "/v1/chat/completions", `{` + user + `}`, []string{"X-Openclaw-Session-Key", "agent:main:cron:job"}, 400, "invalid_request_error", "`x-openclaw-session-key` cannot use reserved internal session namespaces."},
		{"model override unknown", "POST", "/v1/chat/completions", `{` + user + `}`, []string{"X-Openclaw-Model", "nope/none"}, 400, "invalid_request_error", "Model 'nope/none' is not allowed for agent 'main'."},
		{"no user message", "POST", "/v1/chat/completions", `{"messages":[{"role":"system","content":"x"}]}`, nil, 400, "invalid_request_error", "Missing user message in `messages`."},
		{"bad tools", "POST", "/v1/chat/completions", `{"tools":[{"type":"retrieval"}],` + user + `}`, nil, 400, "invalid_request_error", "Invalid tools/tool_choice: only function tools are supported"},
		{"tool_choice unknown tool", "POST", "/v1/chat/completions", `{"tools":[{"type":"function","function":{"name":"a"}}],"tool_choice":{"type":"function","function":{"name":"b"}},` + user + `}`, nil, 400, "invalid_request_error", "Invalid tools/tool_choice: tool_choice requested unknown tool: b"},
		{"image parts", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}`, nil, 400, "invalid_request_error", "Invalid image_url content in `messages`."},
		{"oversize", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 20<<20) + `"}]}`, nil, 413, "invalid_request_error", "Payload too large"},
		{"wrong token", "POST", "/v1/chat/completions", `{` + user + `}`, []string{"Authorization", "Bearer nope"}, 401, "unauthorized", "Unauthorized"},
		{"models wrong token", "GET", "/v1/models", ``, []string{"Authorization", "Bearer nope"}, 401, "unauthorized", "Unauthorized"},
		{"responses wrong token", "POST", "/v1/responses", `{"model":"openclaw","input":"x"}`, []string{"Authorization", "Bearer nope"}, 401, "unauthorized", "Unauthorized"},
		{"model bad id", "GET", "/v1/models/gpt-4o", ``, nil, 400, "invalid_request_error", "Invalid model id."},
		{"responses unknown key", "POST", "/v1/responses", `{"model":"openclaw","input":"x","foo":1}`, nil, 400, "invalid_request_error", `: Unrecognized key: "foo"`},
		{"responses no input", "POST", "/v1/responses", `{"model":"openclaw"}`, nil, 400, "invalid_request_error", "input: Invalid input: expected string, received undefined"},
		{"responses input type", "POST", "/v1/responses", `{"model":"openclaw","input":7}`, nil, 400, "invalid_request_error", "input: Invalid input: expected string, received number"},
		{"responses bad role", "POST", "/v1/responses", `{"model":"openclaw","input":[{"type":"message","role":"robot","content":"x"}]}`, nil, 400, "invalid_request_error", ""},
		{"responses empty input", "POST", "/v1/responses", `{"model":"openclaw","input":[]}`, nil, 400, "invalid_request_error", "Missing user message in `input`."},
		{"responses bad tools", "POST", "/v1/responses", `{"model":"openclaw","input":"x","tools":[{"type":"function"}]}`, nil, 400, "invalid_request_error", "invalid tool configuration"},
		{"embeddings no provider", "POST", "/v1/embeddings", `{"model":"openclaw/ops","input":["a","b"]}`, nil, 400, "invalid_request_error", "No embedding provider is configured for agent 'ops': no embedding provider: no API key for provider openai: set OPENAI_API_KEY or models.providers.openai.apiKey"},
		{"embeddings bad dimensions", "POST", "/v1/embeddings", `{"model":"openclaw","input":"a","dimensions":0}`, nil, 400, "invalid_request_error", "`dimensions` must be a positive integer."},
		{"embeddings bad input", "POST", "/v1/embeddings", `{"model":"openclaw","input":[1]}`, nil, 400, "invalid_request_error", "`input` must be a string or an array of strings."},
		{"embeddings no model", "POST", "/v1/embeddings", `{"input":"a"}`, nil, 400, "invalid_request_error", "Missing `model`."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, b := g.do(tt.method, tt.path, tt.body, tt.headers...)
			if status != tt.status {
				t.Fatalf("status = %d, want %d: %.300s", status, tt.status, b)
			}
			typ, msg := errorOf(t, b)
			if tt.status == 502 {
				// The OpenResponses shape carries error.code; chat's
				// error.type.
				typ = "api_error"
			}
			if typ != tt.typ || (tt.msg != "" && msg != tt.msg) {
				t.Errorf("error = %s %q, want %s %q", typ, msg, tt.typ, tt.msg)
			}
		})
	}
	if n := g.llm.Count(); n != 0 {
		t.Errorf("refused requests reached the model %d times", n)
	}
	for _, m := range []struct{ method, path, allow string }{
		{"GET", "/v1/chat/completions", "POST"}, {"POST", "/v1/models", "GET"}, {"PUT", "/v1/responses", "POST"},
	} {
		status, h, _ := g.do(m.method, m.path, "")
		if status != 405 || h.Get("Allow") != m.allow {
			t.Errorf("%s %s = %d Allow %q", m.method, m.path, status, h.Get("Allow"))
		}
	}
}

func TestOpenAICompatDisabledByDefault(t *testing.T) {
	g := startGateway(t, `http: {},`, fakellm.Options{})
	for _, p := range []struct{ method, path string }{
		{"GET", "/v1/models"}, {"GET", "/v1/models/openclaw"}, {"POST", "/v1/chat/completions"},
		{"POST", "/v1/responses"}, {"POST", "/v1/embeddings"},
	} {
		status, _, b := g.do(p.method, p.path, `{"messages":[{"role":"user","content":"hi"}]}`)
		if status != 404 || string(b) != "Not Found" {
			t.Errorf("%s %s = %d %q", p.method, p.path, status, b)
		}
	}
	// /tools/invoke is always on.
	if status, _, b := g.do("POST", "/tools/invoke", `{"tool":"agents_list"}`); status != 200 {
		t.Errorf("/tools/invoke = %d %s", status, b)
	}
}

func TestResponsesOnlyEnablesModelsNotChat(t *testing.T) {
	g := startGateway(t, `http: { endpoints: { responses: { enabled: true } } },`, fakellm.Options{})
	if status, _, _ := g.do("GET", "/v1/models", ""); status != 200 {
		t.Errorf("/v1/models = %d", status)
	}
	if status, _, _ := g.do("POST", "/v1/chat/completions", `{}`); status != 404 {
		t.Errorf("/v1/chat/completions = %d", status)
	}
}

// TestStreamClientDisconnect: a client that goes away mid-stream aborts
// the run; the transcript records it and nothing keeps running (the
// package's goleak check covers the handler and its helpers).
func TestStreamClientDisconnect(t *testing.T) {
	g := startGateway(t, "", fakellm.Options{StallAfterFirstChunk: true})
	for _, path := range []string{"/v1/chat/completions", "/v1/responses"} {
		t.Run(path, func(t *testing.T) {
			user := "disc-" + strings.Trim(strings.ReplaceAll(path, "/", "-"), "-")
			body := `{"model":"openclaw","stream":true,"user":"` + user + `","messages":[{"role":"user","content":"hello there"}]}`
			prefix := "openai"
			if path == "/v1/responses" {
				body = `{"model":"openclaw","stream":true,"user":"` + user + `","input":"hello there"}`
				prefix = "openresponses"
			}
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, "POST", g.base+path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			// Read until the model's first delta arrived, then leave.
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if strings.Contains(sc.Text(), "echo") {
					break
				}
			}
			cancel()
			resp.Body.Close()
			key := "agent:main:" + prefix + "-user:" + user
			deadline := time.Now().Add(15 * time.Second)
			for {
				runs, err := g.d.Store.ListRuns(context.Background(), store.RunFilter{SessionKey: key})
				if err != nil {
					t.Fatal(err)
				}
				if len(runs) == 1 && runs[0].Status == store.RunAborted {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("runs of %s = %+v, want one aborted", key, runs)
				}
				time.Sleep(20 * time.Millisecond)
			}
			msgs := g.sessionMessages(key)
			if len(msgs) == 0 || msgs[0] != "user: hello there" {
				t.Errorf("transcript = %q", msgs)
			}
		})
	}
}

// TestShutdownReleasesWaitingRequests: requests whose runs outlast the
// shutdown grace get "gateway shutting down" (plain: 503; streamed: an
// error event and [DONE]), Close returns, and no goroutine is left.
func TestShutdownReleasesWaitingRequests(t *testing.T) {
	g := startGateway(t, "", fakellm.Options{StallAfterFirstChunk: true}, "SWITCHBOARD_SHUTDOWN_GRACE", "300ms")
	type answer struct {
		status int
		body   string
	}
	answers := make(chan answer, 2)
	for _, stream := range []string{"false", "true"} {
		go func() {
			req, _ := http.NewRequest("POST", g.base+"/v1/chat/completions",
				strings.NewReader(`{"model":"openclaw","stream":`+stream+`,"messages":[{"role":"user","content":"slow"}]}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers <- answer{body: err.Error()}
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			answers <- answer{resp.StatusCode, string(b)}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for g.llm.Count() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the model never got both requests")
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	if err := g.d.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("Close took %v", d)
	}
	for range 2 {
		select {
		case a := <-answers:
			plain := a.status == 503 && strings.Contains(a.body, "gateway shutting down")
			streamed := a.status == 200 && strings.Contains(a.body, `"message":"gateway shutting down"`) && strings.HasSuffix(a.body, "data: [DONE]\n\n")
			if !plain && !streamed {
				t.Errorf("answer = %d %q", a.status, a.body)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a client got no answer")
		}
	}
}
