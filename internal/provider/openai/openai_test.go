package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/provider/openai"
	"github.com/switchboardhq/switchboard/internal/provider/providertest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testKey = "sk-test-123"

// newProvider starts a fake server running h and returns a provider
// pointed at it, with retries off.
func newProvider(t testing.TB, h http.HandlerFunc, edit ...func(*openai.Config)) (*openai.Provider, *providertest.Recorder) {
	t.Helper()
	rec := &providertest.Recorder{}
	srv := providertest.NewServer(t, rec.Wrap(h))
	cfg := openai.Config{
		BaseURL:    srv.URL + "/v1",
		APIKey:     testKey,
		Headers:    map[string]string{"X-Switchboard-Test": "yes"},
		HTTPClient: srv.Client(),
		Name:       "local",
	}
	for _, e := range edit {
		e(&cfg)
	}
	p, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, rec
}

// chunk is one chat.completion.chunk with a single choice.
func chunk(delta map[string]any, finish any) map[string]any {
	return map[string]any{
		"id":                 "chatcmpl-42",
		"object":             "chat.completion.chunk",
		"created":            1700000000,
		"model":              "test-model",
		"system_fingerprint": "fp_test",
		"choices": []any{map[string]any{
			"index":         0,
			"delta":         delta,
			"logprobs":      nil,
			"finish_reason": finish,
		}},
	}
}

// usageChunk is the final include_usage chunk, with no choices.
func usageChunk(prompt, completion, cached int) map[string]any {
	return map[string]any{
		"id":      "chatcmpl-42",
		"object":  "chat.completion.chunk",
		"created": 1700000000,
		"model":   "test-model",
		"choices": []any{},
		"usage": map[string]any{
			"prompt_tokens":             prompt,
			"completion_tokens":         completion,
			"total_tokens":              prompt + completion,
			"prompt_tokens_details":     map[string]any{"cached_tokens": cached, "audio_tokens": 0},
			"completion_tokens_details": map[string]any{"reasoning_tokens": 0},
		},
	}
}

func toolDelta(index int, id, name, args string) map[string]any {
	tc := map[string]any{"index": index, "function": map[string]any{"arguments": args}}
	if id != "" {
		tc["id"] = id
		tc["type"] = "function"
		tc["function"].(map[string]any)["name"] = name
	}
	return map[string]any{"tool_calls": []any{tc}}
}

// split cuts s into pieces of n bytes.
func split(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// replay serves the given chunks as an SSE stream ending with [DONE].
func replay(chunks ...any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sse := providertest.NewSSE(w)
		for _, c := range chunks {
			sse.Data(c)
		}
		sse.Data("[DONE]")
	}
}

func simpleRequest() *provider.Request {
	return &provider.Request{Model: "test-model", Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}
}

// collect drains a stream, failing on error.
func collect(t *testing.T, p *openai.Provider, req *provider.Request) []provider.Event {
	t.Helper()
	var evs []provider.Event
	for ev, err := range p.Stream(t.Context(), req) {
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		evs = append(evs, *ev)
	}
	return evs
}

func TestStreamText(t *testing.T) {
	p, _ := newProvider(t, replay(
		chunk(map[string]any{"role": "assistant", "content": ""}, nil),
		chunk(map[string]any{"content": "Hel"}, nil),
		chunk(map[string]any{"content": "lo, "}, nil),
		chunk(map[string]any{"content": "wor"}, nil),
		chunk(map[string]any{"content": "ld!"}, nil),
		chunk(map[string]any{}, "stop"),
		usageChunk(100, 5, 10),
	))
	got := collect(t, p, simpleRequest())
	want := []provider.Event{
		{Type: provider.EventTextDelta, Text: "Hel"},
		{Type: provider.EventTextDelta, Text: "lo, "},
		{Type: provider.EventTextDelta, Text: "wor"},
		{Type: provider.EventTextDelta, Text: "ld!"},
		{Type: provider.EventUsage, Usage: &provider.Usage{Input: 90, Output: 5, CacheRead: 10}},
		{Type: provider.EventDone, StopReason: provider.StopEnd, ResponseID: "chatcmpl-42"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestStreamReasoning(t *testing.T) {
	p, _ := newProvider(t, replay(
		chunk(map[string]any{"role": "assistant", "reasoning_content": "Let me "}, nil),
		chunk(map[string]any{"reasoning_content": "think."}, nil),
		// Ollama/OpenRouter style, with both fields set: counted once.
		chunk(map[string]any{"reasoning": " Done.", "reasoning_content": " Done."}, nil),
		chunk(map[string]any{"content": "42", "reasoning_content": nil}, nil),
		chunk(map[string]any{}, "length"),
	))
	got := collect(t, p, simpleRequest())
	want := []provider.Event{
		{Type: provider.EventThinkingDelta, Text: "Let me "},
		{Type: provider.EventThinkingDelta, Text: "think."},
		{Type: provider.EventThinkingDelta, Text: " Done."},
		{Type: provider.EventTextDelta, Text: "42"},
		{Type: provider.EventDone, StopReason: provider.StopLength, ResponseID: "chatcmpl-42"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestStreamParallelToolCalls(t *testing.T) {
	args0 := `{"path": "/tmp/a.txt", "lines": [1, 2, 3]}`
	args1 := `{"query":"weather in Paris","limit":5}`
	chunks := []any{
		chunk(map[string]any{"role": "assistant", "content": "Checking."}, nil),
		chunk(toolDelta(0, "call_abc", "read_file", ""), nil),
	}
	// Arguments arrive a few bytes at a time, the two calls interleaved.
	frags0, frags1 := split(args0, 3), split(args1, 4)
	for k := range max(len(frags0), len(frags1)+2) {
		if k < len(frags0) {
			chunks = append(chunks, chunk(toolDelta(0, "", "", frags0[k]), nil))
		}
		if k == 2 {
			chunks = append(chunks, chunk(toolDelta(1, "call_def", "web_search", ""), nil))
		}
		if k >= 2 && k-2 < len(frags1) {
			chunks = append(chunks, chunk(toolDelta(1, "", "", frags1[k-2]), nil))
		}
	}
	chunks = append(chunks, chunk(map[string]any{}, "tool_calls"), usageChunk(50, 20, 0))
	p, _ := newProvider(t, replay(chunks...))

	text, calls, usage, done, err := provider.Collect(p.Stream(t.Context(), simpleRequest()))
	if err != nil {
		t.Fatal(err)
	}
	if text != "Checking." {
		t.Errorf("text = %q", text)
	}
	want := []provider.ToolCall{
		{ID: "call_abc", Name: "read_file", Arguments: json.RawMessage(args0)},
		{ID: "call_def", Name: "web_search", Arguments: json.RawMessage(args1)},
	}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(provider.Usage{Input: 50, Output: 20}, usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if done == nil || done.StopReason != provider.StopToolUse || done.ResponseID != "chatcmpl-42" {
		t.Errorf("done = %+v", done)
	}
}

func TestToolCallArguments(t *testing.T) {
	tests := []struct {
		name      string
		fragments []string
		want      string
	}{
		{"empty", nil, `{}`},
		{"whitespace", []string{" ", "\n"}, `{}`},
		{"null", []string{"nu", "ll"}, `{}`},
		{"object", []string{`{"a"`, `:1}`}, `{"a":1}`},
		{"truncated", []string{`{"a":`, `"unterminated`}, `{"_raw":"{\"a\":\"unterminated"}`},
		{"not an object", []string{`[1,2]`}, `{"_raw":"[1,2]"}`},
		{"plain text", []string{`ls -la`}, `{"_raw":"ls -la"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks := []any{chunk(toolDelta(0, "call_1", "exec", ""), nil)}
			for _, f := range tt.fragments {
				chunks = append(chunks, chunk(toolDelta(0, "", "", f), nil))
			}
			// Some local servers report "stop" after tool calls.
			chunks = append(chunks, chunk(map[string]any{}, "stop"))
			p, _ := newProvider(t, replay(chunks...))
			_, calls, _, done, err := provider.Collect(p.Stream(t.Context(), simpleRequest()))
			if err != nil {
				t.Fatal(err)
			}
			if len(calls) != 1 {
				t.Fatalf("got %d calls", len(calls))
			}
			if got := string(calls[0].Arguments); got != tt.want {
				t.Errorf("Arguments = %s, want %s", got, tt.want)
			}
			if done.StopReason != provider.StopToolUse {
				t.Errorf("StopReason = %q, want %q", done.StopReason, provider.StopToolUse)
			}
		})
	}
}

func TestRequestBody(t *testing.T) {
	p, rec := newProvider(t, replay(chunk(map[string]any{"content": "ok"}, "stop")))
	req := &provider.Request{
		Model:  "qwen3:8b",
		System: "You are a gateway agent.",
		Messages: []provider.Message{
			{Role: provider.RoleUser, Text: "List /tmp and search the web."},
			{Role: provider.RoleAssistant, Text: "On it.", ToolCalls: []provider.ToolCall{
				{ID: "call_1", Name: "exec", Arguments: json.RawMessage(`{"cmd":"ls /tmp"}`)},
				{ID: "call_2", Name: "web_search", Arguments: nil},
			}},
			{Role: provider.RoleTool, ToolCallID: "call_1", ToolName: "exec", Text: "a.txt\nb.txt"},
			{Role: provider.RoleTool, ToolCallID: "call_2", ToolName: "web_search", Text: "no network", IsError: true},
			{Role: provider.RoleUser, Text: "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"},
		},
		Tools: []provider.ToolDef{
			{Name: "exec", Description: "Run a command.", Parameters: json.RawMessage(`{"type":"object","properties":{"cmd":{"type":"string","maxLength":4096}},"required":["cmd"]}`)},
			{Name: "noop"},
		},
		MaxTokens: 8192,
		Thinking:  "high",
	}
	collect(t, p, req)

	got := rec.Last(t)
	if got.Method != http.MethodPost || got.Path != "/v1/chat/completions" {
		t.Errorf("request = %s %s", got.Method, got.Path)
	}
	for k, want := range map[string]string{
		"Authorization":      "Bearer " + testKey,
		"X-Switchboard-Test": "yes",
		"Content-Type":       "application/json",
	} {
		if v := got.Header.Get(k); v != want {
			t.Errorf("header %s = %q, want %q", k, v, want)
		}
	}
	var wantBody map[string]any
	if err := json.Unmarshal([]byte(`{
		"model": "qwen3:8b",
		"stream": true,
		"stream_options": {"include_usage": true},
		"max_completion_tokens": 8192,
		"tool_choice": "auto",
		"messages": [
			{"role": "system", "content": "You are a gateway agent."},
			{"role": "user", "content": "List /tmp and search the web."},
			{"role": "assistant", "content": "On it.", "tool_calls": [
				{"id": "call_1", "type": "function", "function": {"name": "exec", "arguments": "{\"cmd\":\"ls /tmp\"}"}},
				{"id": "call_2", "type": "function", "function": {"name": "web_search", "arguments": "{}"}}
			]},
			{"role": "tool", "tool_call_id": "call_1", "content": "a.txt\nb.txt"},
			{"role": "tool", "tool_call_id": "call_2", "content": "no network"},
			{"role": "user", "content": "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"}
		],
		"tools": [
			{"type": "function", "function": {"name": "exec", "description": "Run a command.",
				"parameters": {"type":"object","properties":{"cmd":{"type":"string","maxLength":4096}},"required":["cmd"]}}},
			{"type": "function", "function": {"name": "noop", "parameters": {"type":"object","properties":{}}}}
		]
	}`), &wantBody); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantBody, got.JSON(t)); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

func TestRequestBodyMinimal(t *testing.T) {
	// Ambient SDK configuration must not leak into a configured provider.
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_ORG_ID", "org-from-env")
	t.Setenv("OPENAI_BASE_URL", "http://192.0.2.1:1/v1")
	p, rec := newProvider(t, replay(chunk(map[string]any{"content": "ok"}, "stop")),
		func(c *openai.Config) { c.APIKey = "" })
	collect(t, p, simpleRequest())
	got := rec.Last(t)
	for _, h := range []string{"Authorization", "OpenAI-Organization"} {
		if v := got.Header.Get(h); v != "" {
			t.Errorf("%s = %q, want none", h, v)
		}
	}
	body := got.JSON(t)
	for _, k := range []string{"tools", "tool_choice", "max_completion_tokens", "max_tokens", "reasoning_effort"} {
		if _, ok := body[k]; ok {
			t.Errorf("body has %q: %v", k, body[k])
		}
	}
	wantMsgs := []any{map[string]any{"role": "user", "content": "hi"}}
	if diff := cmp.Diff(wantMsgs, body["messages"]); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

func TestRequestInvalid(t *testing.T) {
	p, rec := newProvider(t, replay())
	tests := map[string]*provider.Request{
		"nil":         nil,
		"no model":    {Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}},
		"bad role":    {Model: "m", Messages: []provider.Message{{Role: "system", Text: "hi"}}},
		"no call id":  {Model: "m", Messages: []provider.Message{{Role: provider.RoleTool, Text: "x"}}},
		"bad schema":  {Model: "m", Tools: []provider.ToolDef{{Name: "t", Parameters: json.RawMessage(`[`)}}},
		"null schema": {Model: "m", Tools: []provider.ToolDef{{Name: "t", Parameters: json.RawMessage(`null`)}}},
	}
	for name, req := range tests {
		t.Run(name, func(t *testing.T) {
			_, _, _, _, err := provider.Collect(p.Stream(t.Context(), req))
			if err == nil {
				t.Fatal("no error")
			}
			if _, ok := errors.AsType[*provider.Error](err); ok {
				t.Errorf("invalid request reported as an API error: %v", err)
			}
		})
	}
	if n := len(rec.Requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

func TestHTTPErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   provider.Error
	}{
		{"bad request", 400, `{"error":{"message":"Invalid 'messages[2].tool_call_id'","type":"invalid_request_error","param":"messages","code":null}}`,
			provider.Error{Provider: "local", StatusCode: 400, Message: "Invalid 'messages[2].tool_call_id'"}},
		{"rate limit", 429, `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`,
			provider.Error{Provider: "local", StatusCode: 429, Message: "Rate limit reached for requests", Retryable: true}},
		{"server error", 500, `{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`,
			provider.Error{Provider: "local", StatusCode: 500, Message: "The server had an error while processing your request.", Retryable: true}},
		{"ollama string error", 404, `{"error":"model \"llama9\" not found, try pulling it first"}`,
			provider.Error{Provider: "local", StatusCode: 404, Message: `model "llama9" not found, try pulling it first`}},
		{"fastapi detail", 422, `{"detail":"Field required"}`,
			provider.Error{Provider: "local", StatusCode: 422, Message: "Field required"}},
		{"plain text", 502, "Bad Gateway\n",
			provider.Error{Provider: "local", StatusCode: 502, Message: "Bad Gateway", Retryable: true}},
		{"empty", 503, "",
			provider.Error{Provider: "local", StatusCode: 503, Message: "Service Unavailable", Retryable: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, rec := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
				providertest.WriteJSON(w, tt.status, tt.body)
			})
			var n int
			var gotErr error
			for ev, err := range p.Stream(t.Context(), simpleRequest()) {
				n++
				if err == nil {
					t.Fatalf("unexpected event %+v", ev)
				}
				gotErr = err
			}
			if n != 1 {
				t.Errorf("sequence yielded %d items, want 1", n)
			}
			perr, ok := errors.AsType[*provider.Error](gotErr)
			if !ok {
				t.Fatalf("error %T %v is not a *provider.Error", gotErr, gotErr)
			}
			if diff := cmp.Diff(tt.want, *perr); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if n := len(rec.Requests()); n != 1 {
				t.Errorf("%d requests with MaxRetries 0, want 1", n)
			}
		})
	}
}

func TestStreamErrorEvent(t *testing.T) {
	p, _ := newProvider(t, replay(
		chunk(map[string]any{"content": "partial"}, nil),
		map[string]any{"error": map[string]any{"message": "The server is overloaded", "type": "server_error", "code": 503}},
	))
	var text string
	var gotErr error
	for ev, err := range p.Stream(t.Context(), simpleRequest()) {
		if err != nil {
			gotErr = err
			break
		}
		text += ev.Text
	}
	if text != "partial" {
		t.Errorf("text before error = %q", text)
	}
	want := &provider.Error{Provider: "local", StatusCode: 503, Message: "The server is overloaded", Retryable: true}
	if diff := cmp.Diff(want, gotErr); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}

func TestRetryThenSuccess(t *testing.T) {
	var calls atomic.Int32
	p, rec := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After-Ms", "5")
			providertest.WriteJSON(w, 500, `{"error":{"message":"boom","type":"server_error"}}`)
			return
		}
		replay(chunk(map[string]any{"content": "second time lucky"}, "stop"))(w, r)
	}, func(c *openai.Config) { c.MaxRetries = 1 })
	text, _, _, done, err := provider.Collect(p.Stream(t.Context(), simpleRequest()))
	if err != nil {
		t.Fatal(err)
	}
	if text != "second time lucky" || done == nil {
		t.Errorf("text = %q, done = %v", text, done)
	}
	reqs := rec.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if string(reqs[0].Body) != string(reqs[1].Body) {
		t.Errorf("retry body differs:\n%s\n%s", reqs[0].Body, reqs[1].Body)
	}
}

func TestNotAStream(t *testing.T) {
	p, _ := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
		providertest.WriteJSON(w, 200, `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
	})
	_, _, _, _, err := provider.Collect(p.Stream(t.Context(), simpleRequest()))
	if _, ok := errors.AsType[*provider.Error](err); !ok {
		t.Errorf("err = %v, want a *provider.Error", err)
	}
}

func TestConnectionRefused(t *testing.T) {
	srv := providertest.NewServer(t, http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	p, err := openai.New(openai.Config{BaseURL: url + "/v1", Name: "gone"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, _, err = provider.Collect(p.Stream(t.Context(), simpleRequest()))
	perr, ok := errors.AsType[*provider.Error](err)
	if !ok || !perr.Retryable || perr.StatusCode != 0 || perr.Provider != "gone" {
		t.Fatalf("err = %#v, want a retryable *provider.Error", err)
	}
	// The message says what to check, not only that the dial failed.
	if want := "is the server running, and is models.providers.gone.baseUrl right?"; !strings.Contains(perr.Error(), want) {
		t.Errorf("err = %q, want it to say %q", perr.Error(), want)
	}
}

func TestConcurrentStreams(t *testing.T) {
	p, rec := newProvider(t, replay(
		chunk(map[string]any{"content": "a"}, nil),
		chunk(map[string]any{"content": "b"}, "stop"),
		usageChunk(3, 2, 0),
	))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			text, _, usage, done, err := provider.Collect(p.Stream(t.Context(), simpleRequest()))
			if err != nil || text != "ab" || usage.Output != 2 || done == nil {
				t.Errorf("Collect = %q, %+v, %v, %v", text, usage, done, err)
			}
		})
	}
	wg.Wait()
	if n := len(rec.Requests()); n != 8 {
		t.Errorf("%d requests, want 8", n)
	}
}

func TestCancelMidStream(t *testing.T) {
	serverDone := make(chan struct{})
	p, _ := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
		defer close(serverDone)
		sse := providertest.NewSSE(w)
		sse.Data(chunk(map[string]any{"content": "first"}, nil))
		<-r.Context().Done() // a model that stalls
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var gotErr error
	var cancelled time.Time
	for ev, err := range p.Stream(ctx, simpleRequest()) {
		if err != nil {
			gotErr = err
			break
		}
		if ev.Text == "first" {
			cancelled = time.Now()
			cancel()
		}
	}
	if elapsed := time.Since(cancelled); elapsed > 2*time.Second {
		t.Errorf("stream ended %v after cancel", elapsed)
	}
	if !errors.Is(gotErr, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", gotErr)
	}
	waitClosed(t, serverDone)
}

func TestBreakEarlyClosesBody(t *testing.T) {
	serverDone := make(chan struct{})
	p, _ := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
		defer close(serverDone)
		sse := providertest.NewSSE(w)
		for i := 0; ; i++ {
			if err := sse.Data(chunk(map[string]any{"content": fmt.Sprint(i, " ")}, nil)); err != nil {
				return
			}
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	n := 0
	for _, err := range p.Stream(t.Context(), simpleRequest()) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 3 {
			break
		}
	}
	// The server only returns once the client has closed the connection.
	waitClosed(t, serverDone)
}

func waitClosed(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("server handler still running: response body not closed")
	}
}

func TestNew(t *testing.T) {
	for _, cfg := range []openai.Config{
		{BaseURL: "localhost:11434"},
		{BaseURL: "ftp://example.com/v1"},
		{BaseURL: "http://"},
		{MaxRetries: -1},
	} {
		if _, err := openai.New(cfg); err == nil {
			t.Errorf("New(%+v) = nil error", cfg)
		}
	}
	p, err := openai.New(openai.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "openai" {
		t.Errorf("default Name = %q", p.Name())
	}
}

func BenchmarkStream50Deltas(b *testing.B) {
	var sb strings.Builder
	for i := range 50 {
		data, _ := json.Marshal(chunk(map[string]any{"content": fmt.Sprintf("token%d ", i)}, nil))
		fmt.Fprintf(&sb, "data: %s\n\n", data)
	}
	data, _ := json.Marshal(chunk(map[string]any{}, "stop"))
	fmt.Fprintf(&sb, "data: %s\n\n", data)
	data, _ = json.Marshal(usageChunk(1000, 50, 0))
	fmt.Fprintf(&sb, "data: %s\n\ndata: [DONE]\n\n", data)
	body := sb.String()
	p, _ := newProvider(b, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(body))
	})
	req := simpleRequest()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for ev, err := range p.Stream(ctx, req) {
			if err != nil {
				b.Fatal(err)
			}
			if ev.Type == provider.EventTextDelta {
				n++
			}
		}
		if n != 50 {
			b.Fatalf("%d deltas", n)
		}
	}
}
