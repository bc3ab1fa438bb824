package anthropic_test

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
	"github.com/switchboardhq/switchboard/internal/provider/anthropic"
	"github.com/switchboardhq/switchboard/internal/provider/providertest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testKey = "sk-ant-test-123"

// newProvider starts a fake server running h and returns a provider
// pointed at it, with retries off.
func newProvider(t testing.TB, h http.HandlerFunc, edit ...func(*anthropic.Config)) (*anthropic.Provider, *providertest.Recorder) {
	t.Helper()
	rec := &providertest.Recorder{}
	srv := providertest.NewServer(t, rec.Wrap(h))
	cfg := anthropic.Config{
		BaseURL:    srv.URL,
		APIKey:     testKey,
		Headers:    map[string]string{"X-Switchboard-Test": "yes"},
		HTTPClient: srv.Client(),
		Name:       "claude",
	}
	for _, e := range edit {
		e(&cfg)
	}
	p, err := anthropic.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, rec
}

// ev is one named SSE event of the Messages stream.
type ev struct {
	name string
	data any
}

func messageStart(input, cacheRead, cacheWrite int) ev {
	return ev{"message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant", "content": []any{},
		"model": "claude-sonnet-4-5", "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": input, "cache_creation_input_tokens": cacheWrite, "cache_read_input_tokens": cacheRead, "output_tokens": 1},
	}}}
}

func blockStart(index int, block map[string]any) ev {
	return ev{"content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": block}}
}

func delta(index int, d map[string]any) ev {
	return ev{"content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": d}}
}

func textDelta(index int, text string) ev {
	return delta(index, map[string]any{"type": "text_delta", "text": text})
}

func jsonDelta(index int, partial string) ev {
	return delta(index, map[string]any{"type": "input_json_delta", "partial_json": partial})
}

func blockStop(index int) ev {
	return ev{"content_block_stop", map[string]any{"type": "content_block_stop", "index": index}}
}

func messageDelta(stop string, output int) ev {
	return ev{"message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": output}}}
}

var (
	ping        = ev{"ping", map[string]any{"type": "ping"}}
	messageStop = ev{"message_stop", map[string]any{"type": "message_stop"}}
)

// replay serves the given events as an SSE stream.
func replay(events ...ev) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sse := providertest.NewSSE(w)
		for _, e := range events {
			sse.Event(e.name, e.data)
		}
	}
}

func textReply(text string) []ev {
	return []ev{
		messageStart(10, 0, 0),
		blockStart(0, map[string]any{"type": "text", "text": ""}),
		textDelta(0, text),
		blockStop(0),
		messageDelta("end_turn", 3),
		messageStop,
	}
}

func simpleRequest() *provider.Request {
	return &provider.Request{Model: "claude-sonnet-4-5", Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}
}

// collect drains a stream, failing on error.
func collect(t *testing.T, p *anthropic.Provider, req *provider.Request) []provider.Event {
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
		messageStart(2095, 1800, 120),
		blockStart(0, map[string]any{"type": "text", "text": ""}),
		ping,
		textDelta(0, "Hel"),
		textDelta(0, "lo, "),
		textDelta(0, "wor"),
		textDelta(0, "ld!"),
		blockStop(0),
		messageDelta("end_turn", 15),
		messageStop,
	))
	got := collect(t, p, simpleRequest())
	want := []provider.Event{
		{Type: provider.EventTextDelta, Text: "Hel"},
		{Type: provider.EventTextDelta, Text: "lo, "},
		{Type: provider.EventTextDelta, Text: "wor"},
		{Type: provider.EventTextDelta, Text: "ld!"},
		{Type: provider.EventUsage, Usage: &provider.Usage{Input: 2095, Output: 15, CacheRead: 1800, CacheWrite: 120}},
		{Type: provider.EventDone, StopReason: provider.StopEnd, ResponseID: "msg_01XFDUDYJgAACzvnptvVoYEL"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestStreamThinkingAndToolUse(t *testing.T) {
	args := `{"location": "San Francisco, CA", "unit": "fahrenheit", "days": [1, 2]}`
	events := []ev{
		messageStart(472, 0, 0),
		blockStart(0, map[string]any{"type": "thinking", "thinking": "", "signature": ""}),
		delta(0, map[string]any{"type": "thinking_delta", "thinking": "The user wants "}),
		delta(0, map[string]any{"type": "thinking_delta", "thinking": "the weather."}),
		delta(0, map[string]any{"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}),
		blockStop(0),
		blockStart(1, map[string]any{"type": "text", "text": ""}),
		textDelta(1, "Let me check."),
		blockStop(1),
		blockStart(2, map[string]any{"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "get_weather", "input": map[string]any{}}),
		jsonDelta(2, ""),
		ping,
	}
	for i := 0; i < len(args); i += 4 {
		events = append(events, jsonDelta(2, args[i:min(i+4, len(args))]))
	}
	events = append(events,
		blockStop(2),
		blockStart(3, map[string]any{"type": "tool_use", "id": "toolu_02", "name": "list_sessions", "input": map[string]any{}}),
		blockStop(3),
		messageDelta("tool_use", 89),
		messageStop,
	)
	p, _ := newProvider(t, replay(events...))
	got := collect(t, p, simpleRequest())
	want := []provider.Event{
		{Type: provider.EventThinkingDelta, Text: "The user wants "},
		{Type: provider.EventThinkingDelta, Text: "the weather."},
		{Type: provider.EventTextDelta, Text: "Let me check."},
		{Type: provider.EventToolCall, ToolCall: &provider.ToolCall{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "get_weather", Arguments: json.RawMessage(args)}},
		{Type: provider.EventToolCall, ToolCall: &provider.ToolCall{ID: "toolu_02", Name: "list_sessions", Arguments: json.RawMessage(`{}`)}},
		{Type: provider.EventUsage, Usage: &provider.Usage{Input: 472, Output: 89}},
		{Type: provider.EventDone, StopReason: provider.StopToolUse, ResponseID: "msg_01XFDUDYJgAACzvnptvVoYEL"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestStopReasons(t *testing.T) {
	for stop, want := range map[string]string{
		"end_turn":                      provider.StopEnd,
		"stop_sequence":                 provider.StopEnd,
		"max_tokens":                    provider.StopLength,
		"model_context_window_exceeded": provider.StopLength,
		"tool_use":                      provider.StopToolUse,
		"refusal":                       provider.StopError,
	} {
		t.Run(stop, func(t *testing.T) {
			p, _ := newProvider(t, replay(messageStart(1, 0, 0), messageDelta(stop, 1), messageStop))
			_, _, _, done, err := provider.Collect(p.Stream(t.Context(), simpleRequest()))
			if err != nil {
				t.Fatal(err)
			}
			if done.StopReason != want {
				t.Errorf("StopReason = %q, want %q", done.StopReason, want)
			}
		})
	}
}

func TestTruncatedToolInput(t *testing.T) {
	p, _ := newProvider(t, replay(
		messageStart(1, 0, 0),
		blockStart(0, map[string]any{"type": "tool_use", "id": "toolu_1", "name": "write", "input": map[string]any{}}),
		jsonDelta(0, `{"path":"a.txt","content":"hel`),
		blockStop(0),
		messageDelta("max_tokens", 4096),
		messageStop,
	))
	_, calls, _, done, err := provider.Collect(p.Stream(t.Context(), simpleRequest()))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"_raw":"{\"path\":\"a.txt\",\"content\":\"hel"}`
	if len(calls) != 1 || string(calls[0].Arguments) != want {
		t.Errorf("calls = %+v, want arguments %s", calls, want)
	}
	if done.StopReason != provider.StopLength {
		t.Errorf("StopReason = %q", done.StopReason)
	}
}

func TestStreamEndsEarly(t *testing.T) {
	p, _ := newProvider(t, replay(messageStart(1, 0, 0), textDelta(0, "cut")))
	_, _, _, _, err := provider.Collect(p.Stream(t.Context(), simpleRequest()))
	perr, ok := errors.AsType[*provider.Error](err)
	if !ok || !perr.Retryable {
		t.Errorf("err = %v, want a retryable *provider.Error", err)
	}
}

func TestRequestBody(t *testing.T) {
	p, rec := newProvider(t, replay(textReply("ok")...))
	req := &provider.Request{
		Model:  "claude-sonnet-4-5",
		System: "You are a gateway agent.",
		Messages: []provider.Message{
			{Role: provider.RoleUser, Text: "List /tmp and search the web."},
			{Role: provider.RoleAssistant, Text: "On it.", ToolCalls: []provider.ToolCall{
				{ID: "toolu_1", Name: "exec", Arguments: json.RawMessage(`{"cmd":"ls /tmp"}`)},
				{ID: "toolu_2", Name: "web_search"},
			}},
			{Role: provider.RoleTool, ToolCallID: "toolu_1", ToolName: "exec", Text: "a.txt\nb.txt"},
			{Role: provider.RoleTool, ToolCallID: "toolu_2", ToolName: "web_search", Text: "no network", IsError: true},
			{Role: provider.RoleUser, Text: "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"},
			{Role: provider.RoleAssistant, Text: "Done."},
			{Role: provider.RoleUser, Text: "Thanks"},
		},
		Tools: []provider.ToolDef{
			{Name: "exec", Description: "Run a command.", Parameters: json.RawMessage(
				`{"type":"object","properties":{"cmd":{"type":"string","maxLength":4096}},"required":["cmd"],"additionalProperties":false}`)},
			{Name: "noop"},
		},
		MaxTokens: 8192,
		Thinking:  "medium",
	}
	collect(t, p, req)

	got := rec.Last(t)
	if got.Method != http.MethodPost || got.Path != "/v1/messages" {
		t.Errorf("request = %s %s", got.Method, got.Path)
	}
	for k, want := range map[string]string{
		"X-Api-Key":          testKey,
		"Anthropic-Version":  "2023-06-01",
		"X-Switchboard-Test": "yes",
		"Content-Type":       "application/json",
		"Authorization":      "",
	} {
		if v := got.Header.Get(k); v != want {
			t.Errorf("header %s = %q, want %q", k, v, want)
		}
	}
	var wantBody map[string]any
	if err := json.Unmarshal([]byte(`{
		"model": "claude-sonnet-4-5",
		"max_tokens": 8192,
		"stream": true,
		"system": [{"type": "text", "text": "You are a gateway agent."}],
		"thinking": {"type": "enabled", "budget_tokens": 4096},
		"messages": [
			{"role": "user", "content": [{"type": "text", "text": "List /tmp and search the web."}]},
			{"role": "assistant", "content": [
				{"type": "text", "text": "On it."},
				{"type": "tool_use", "id": "toolu_1", "name": "exec", "input": {"cmd": "ls /tmp"}},
				{"type": "tool_use", "id": "toolu_2", "name": "web_search", "input": {}}
			]},
			{"role": "user", "content": [
				{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "a.txt\nb.txt"}]},
				{"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "no network"}], "is_error": true},
				{"type": "text", "text": "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"}
			]},
			{"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
			{"role": "user", "content": [{"type": "text", "text": "Thanks"}]}
		],
		"tools": [
			{"name": "exec", "description": "Run a command.", "input_schema":
				{"type": "object", "properties": {"cmd": {"type": "string", "maxLength": 4096}}, "required": ["cmd"], "additionalProperties": false}},
			{"name": "noop", "input_schema": {"type": "object", "properties": {}}}
		]
	}`), &wantBody); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantBody, got.JSON(t)); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

func TestRequestThinkingAndMaxTokens(t *testing.T) {
	toolLoop := []provider.Message{
		{Role: provider.RoleUser, Text: "hi"},
		{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "toolu_1", Name: "exec"}}},
		{Role: provider.RoleTool, ToolCallID: "toolu_1", Text: "ok"},
	}
	tests := []struct {
		name      string
		thinking  string
		maxTokens int
		msgs      []provider.Message
		defMax    int
		want      map[string]any // thinking, or nil
		wantMax   float64
	}{
		{"off", "", 0, nil, 0, nil, 4096},
		{"config default", "off", 0, nil, 1000, nil, 1000},
		{"unknown level", "minimal", 2000, nil, 0, nil, 2000},
		{"low", "low", 8000, nil, 0, map[string]any{"type": "enabled", "budget_tokens": 1024.0}, 8000},
		{"high raises max_tokens", "high", 4096, nil, 0, map[string]any{"type": "enabled", "budget_tokens": 16384.0}, 16384 + 4096},
		{"tool loop", "high", 0, toolLoop, 0, nil, 4096},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, rec := newProvider(t, replay(textReply("ok")...), func(c *anthropic.Config) { c.DefaultMaxTokens = tt.defMax })
			req := simpleRequest()
			req.Thinking, req.MaxTokens = tt.thinking, tt.maxTokens
			if tt.msgs != nil {
				req.Messages = tt.msgs
			}
			collect(t, p, req)
			body := rec.Last(t).JSON(t)
			if got := body["max_tokens"]; got != tt.wantMax {
				t.Errorf("max_tokens = %v, want %v", got, tt.wantMax)
			}
			got, _ := body["thinking"].(map[string]any)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("thinking (-want +got):\n%s", diff)
			}
		})
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
		{"bad request", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0: unexpected tool_use_id"},"request_id":"req_011"}`,
			provider.Error{Provider: "claude", StatusCode: 400, Message: "messages.1.content.0: unexpected tool_use_id"}},
		{"rate limit", 429, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`,
			provider.Error{Provider: "claude", StatusCode: 429, Message: "Number of request tokens has exceeded your per-minute rate limit", Retryable: true}},
		{"server error", 500, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`,
			provider.Error{Provider: "claude", StatusCode: 500, Message: "Internal server error", Retryable: true}},
		{"overloaded", 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			provider.Error{Provider: "claude", StatusCode: 529, Message: "Overloaded", Retryable: true}},
		{"proxy text", 502, "upstream connect error\n",
			provider.Error{Provider: "claude", StatusCode: 502, Message: "upstream connect error", Retryable: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, rec := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("x-should-retry", "true") // ignored with MaxRetries 0
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
		messageStart(1, 0, 0),
		blockStart(0, map[string]any{"type": "text", "text": ""}),
		textDelta(0, "partial"),
		ev{"error", map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": "Overloaded"}}},
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
	want := &provider.Error{Provider: "claude", StatusCode: 529, Message: "Overloaded", Retryable: true}
	if diff := cmp.Diff(want, gotErr); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}

func TestRetryThenSuccess(t *testing.T) {
	var calls atomic.Int32
	p, rec := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After-Ms", "5")
			providertest.WriteJSON(w, 500, `{"type":"error","error":{"type":"api_error","message":"boom"}}`)
			return
		}
		replay(textReply("second time lucky")...)(w, r)
	}, func(c *anthropic.Config) { c.MaxRetries = 1 })
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

func TestConnectionRefused(t *testing.T) {
	srv := providertest.NewServer(t, http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	p, err := anthropic.New(anthropic.Config{BaseURL: url, Name: "gone"})
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
	p, rec := newProvider(t, replay(textReply("ab")...))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			text, _, usage, done, err := provider.Collect(p.Stream(t.Context(), simpleRequest()))
			if err != nil || text != "ab" || usage.Output != 3 || done == nil {
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
		for _, e := range []ev{messageStart(1, 0, 0), blockStart(0, map[string]any{"type": "text", "text": ""}), textDelta(0, "first")} {
			sse.Event(e.name, e.data)
		}
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
		sse.Event(messageStart(1, 0, 0).name, messageStart(1, 0, 0).data)
		for i := 0; ; i++ {
			e := textDelta(0, fmt.Sprint(i, " "))
			if err := sse.Event(e.name, e.data); err != nil {
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
	for _, cfg := range []anthropic.Config{
		{BaseURL: "api.anthropic.com"},
		{BaseURL: "ftp://example.com"},
		{MaxRetries: -1},
		{DefaultMaxTokens: -1},
	} {
		if _, err := anthropic.New(cfg); err == nil {
			t.Errorf("New(%+v) = nil error", cfg)
		}
	}
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
	t.Setenv("ANTHROPIC_BASE_URL", "http://192.0.2.1:1")
	p, rec := newProvider(t, replay(textReply("ok")...), func(c *anthropic.Config) { c.APIKey = ""; c.Name = "" })
	if p.Name() != "anthropic" {
		t.Errorf("default Name = %q", p.Name())
	}
	collect(t, p, simpleRequest())
	if v := rec.Last(t).Header.Get("X-Api-Key"); v != "" {
		t.Errorf("x-api-key = %q: the environment leaked into the provider", v)
	}
}

func BenchmarkStream50Deltas(b *testing.B) {
	events := []ev{messageStart(1000, 0, 0), blockStart(0, map[string]any{"type": "text", "text": ""}), ping}
	for i := range 50 {
		events = append(events, textDelta(0, fmt.Sprintf("token%d ", i)))
	}
	events = append(events, blockStop(0), messageDelta("end_turn", 50), messageStop)
	var sb strings.Builder
	for _, e := range events {
		data, _ := providertest.Encode(e.data)
		fmt.Fprintf(&sb, "event: %s\ndata: %s\n\n", e.name, data)
	}
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

func TestRequestSampling(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	seed := int64(3)
	full := &provider.Sampling{Temperature: f(1.5), TopP: f(0.8), FrequencyPenalty: f(1), PresencePenalty: f(1), Seed: &seed, Stop: []string{"END"}}
	tests := []struct {
		name     string
		sampling *provider.Sampling
		thinking string
		want     map[string]any // members that must be present with these values
		absent   []string
	}{
		{"none", nil, "", nil, []string{"temperature", "top_p", "stop_sequences"}},
		{"clamped temperature, no penalties or seed", full, "",
			map[string]any{"temperature": 1.0, "top_p": 0.8, "stop_sequences": []any{"END"}},
			[]string{"frequency_penalty", "presence_penalty", "seed"}},
		{"in range", &provider.Sampling{Temperature: f(0.2)}, "", map[string]any{"temperature": 0.2}, []string{"top_p"}},
		{"thinking keeps only stop", full, "low", map[string]any{"stop_sequences": []any{"END"}}, []string{"temperature", "top_p"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, rec := newProvider(t, replay(textReply("ok")...))
			req := simpleRequest()
			req.Sampling, req.Thinking, req.MaxTokens = tt.sampling, tt.thinking, 8000
			collect(t, p, req)
			body := rec.Last(t).JSON(t)
			for k, want := range tt.want {
				if diff := cmp.Diff(want, body[k]); diff != "" {
					t.Errorf("%s (-want +got):\n%s", k, diff)
				}
			}
			for _, k := range tt.absent {
				if v, ok := body[k]; ok {
					t.Errorf("%s = %v, want none", k, v)
				}
			}
		})
	}
}

func TestRequestUserImages(t *testing.T) {
	p, rec := newProvider(t, replay(textReply("ok")...))
	req := simpleRequest()
	req.Messages = []provider.Message{{Role: provider.RoleUser, Text: "what is this?", Images: []provider.Image{{MimeType: "image/png", Data: "iVBORw0KGgo="}}}}
	collect(t, p, req)
	body := rec.Last(t).JSON(t)
	msgs, _ := body["messages"].([]any)
	content, _ := msgs[0].(map[string]any)["content"].([]any)
	want := []any{
		map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
		map[string]any{"type": "text", "text": "what is this?"},
	}
	if diff := cmp.Diff(want, content); diff != "" {
		t.Errorf("user content (-want +got):\n%s", diff)
	}
}
