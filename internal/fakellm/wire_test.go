package fakellm_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/provider"
)

var fixedNow = func() time.Time { return time.Unix(1700000000, 0) }

// send makes one request with net/http and returns the status, the
// Content-Type and the body.
func send(t testing.TB, srv *fakellm.Server, method, path, body string, header map[string]string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.AnthropicURL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header.Get("Content-Type"), string(b)
}

// chunk is one OpenAI SSE data line of request 1 from model echo-1 at
// fixedNow, with the choices given.
func chunk(choices string) string {
	return `data: {"id":"chatcmpl-fake-1","object":"chat.completion.chunk","created":1700000000,"model":"echo-1","choices":[` + choices + "]}\n\n"
}

// event is one Anthropic SSE event.
func event(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }

const (
	sse     = "text/event-stream; charset=utf-8"
	appJSON = "application/json"
)

func TestWire(t *testing.T) {
	anthropicHdr := map[string]string{"anthropic-version": "2023-06-01"}
	tests := []struct {
		name   string
		key    string // Options.APIKey
		method string // default POST
		path   string
		header map[string]string
		body   string
		status int
		ctype  string
		want   string
	}{
		{
			name:   "openai stream echo",
			path:   "/v1/chat/completions",
			body:   `{"model":"echo-1","messages":[{"role":"user","content":"hello"}],"stream":true,"stream_options":{"include_usage":true}}`,
			status: 200,
			ctype:  sse,
			want: chunk(`{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}`) +
				chunk(`{"index":0,"delta":{"content":"echo: "},"finish_reason":null}`) +
				chunk(`{"index":0,"delta":{"content":"hello"},"finish_reason":null}`) +
				chunk(`{"index":0,"delta":{},"finish_reason":"stop"}`) +
				`data: {"id":"chatcmpl-fake-1","object":"chat.completion.chunk","created":1700000000,"model":"echo-1","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"prompt_tokens_details":{"cached_tokens":0}}}` + "\n\n" +
				"data: [DONE]\n\n",
		},
		{
			name:   "openai stream tool call without usage",
			path:   "/v1/chat/completions",
			body:   `{"model":"echo-1","messages":[{"role":"user","content":"/tool get_weather {\"city\":\"Paris\"}"}],"stream":true}`,
			status: 200,
			ctype:  sse,
			want: chunk(`{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}`) +
				chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}`) +
				chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]},"finish_reason":null}`) +
				chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]},"finish_reason":null}`) +
				chunk(`{"index":0,"delta":{},"finish_reason":"tool_calls"}`) +
				"data: [DONE]\n\n",
		},
		{
			name:   "openai stream error after content",
			path:   "/v1/chat/completions",
			body:   `{"model":"echo-1","messages":[{"role":"user","content":"/reply part\n/error 502 bad gateway"}],"stream":true}`,
			status: 200,
			ctype:  sse,
			want: chunk(`{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}`) +
				chunk(`{"index":0,"delta":{"content":"part"},"finish_reason":null}`) +
				`data: {"error":{"message":"bad gateway","type":"server_error","param":null,"code":502}}` + "\n\n",
		},
		{
			name:   "openai stream error before content",
			path:   "/v1/chat/completions",
			body:   `{"model":"echo-1","messages":[{"role":"user","content":"/error 429 slow down"}],"stream":true}`,
			status: 429,
			ctype:  appJSON,
			want:   `{"error":{"message":"slow down","type":"requests","param":null,"code":"rate_limit_exceeded"}}` + "\n",
		},
		{
			name:   "openai non-stream text",
			path:   "/v1/chat/completions",
			body:   `{"model":"echo-1","messages":[{"role":"user","content":"hi"}]}`,
			status: 200,
			ctype:  appJSON,
			want:   `{"id":"chatcmpl-fake-1","object":"chat.completion","created":1700000000,"model":"echo-1","choices":[{"index":0,"message":{"role":"assistant","content":"echo: hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"prompt_tokens_details":{"cached_tokens":0}}}`,
		},
		{
			name:   "openai non-stream tool call",
			path:   "/v1/chat/completions",
			body:   `{"model":"echo-1","messages":[{"role":"user","content":"/tool get_weather {\"city\":\"Paris\"}\n/usage 10 4 3 2"}],"stream":false}`,
			status: 200,
			ctype:  appJSON,
			want:   `{"id":"chatcmpl-fake-1","object":"chat.completion","created":1700000000,"model":"echo-1","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":15,"completion_tokens":4,"total_tokens":19,"prompt_tokens_details":{"cached_tokens":3,"cache_write_tokens":2}}}`,
		},
		{
			name:   "openai non-stream error",
			path:   "/v1/chat/completions",
			body:   `{"model":"echo-1","messages":[{"role":"user","content":"/error 503 down"}]}`,
			status: 503,
			ctype:  appJSON,
			want:   `{"error":{"message":"down","type":"server_error","param":null,"code":null}}` + "\n",
		},
		{
			name:   "openai invalid JSON",
			path:   "/v1/chat/completions",
			body:   `{"model":`,
			status: 400,
			ctype:  appJSON,
			want:   `{"error":{"message":"invalid JSON body: unexpected end of JSON input","type":"invalid_request_error","param":null,"code":null}}` + "\n",
		},
		{
			name:   "openai wrong type",
			path:   "/v1/chat/completions",
			body:   `{"model":5}`,
			status: 400,
			ctype:  appJSON,
			want:   `{"error":{"message":"invalid JSON body: json: cannot unmarshal number into Go struct field chatRequest.model of type string","type":"invalid_request_error","param":null,"code":null}}` + "\n",
		},
		{
			name:   "openai unknown role",
			path:   "/v1/chat/completions",
			body:   `{"model":"echo-1","messages":[{"role":"robot","content":"hi"}]}`,
			status: 400,
			ctype:  appJSON,
			want:   `{"error":{"message":"messages[0]: unknown role \"robot\"","type":"invalid_request_error","param":null,"code":null}}` + "\n",
		},
		{
			name:   "openai tool result without id",
			path:   "/v1/chat/completions",
			body:   `{"model":"echo-1","messages":[{"role":"tool","content":"x"}]}`,
			status: 400,
			ctype:  appJSON,
			want:   `{"error":{"message":"messages[0]: tool message without tool_call_id","type":"invalid_request_error","param":null,"code":null}}` + "\n",
		},
		{
			name:   "openai missing key",
			key:    testKey,
			path:   "/v1/chat/completions",
			body:   `{"model":"echo-1","messages":[]}`,
			status: 401,
			ctype:  appJSON,
			want:   `{"error":{"message":"You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}` + "\n",
		},
		{
			name:   "openai wrong key",
			key:    testKey,
			path:   "/v1/chat/completions",
			header: map[string]string{"Authorization": "Bearer nope"},
			body:   `{"model":"echo-1","messages":[]}`,
			status: 401,
			ctype:  appJSON,
			want:   `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}` + "\n",
		},
		{
			name:   "anthropic stream echo",
			path:   "/v1/messages",
			header: anthropicHdr,
			body:   `{"model":"echo-1","max_tokens":100,"messages":[{"role":"user","content":"hello"}],"stream":true}`,
			status: 200,
			ctype:  sse,
			want: event("message_start", `{"type":"message_start","message":{"id":"msg_fake_1","type":"message","role":"assistant","model":"echo-1","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}`) +
				event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
				event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"echo: "}}`) +
				event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hello"}}`) +
				event("content_block_stop", `{"type":"content_block_stop","index":0}`) +
				event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":2}}`) +
				event("message_stop", `{"type":"message_stop"}`),
		},
		{
			name:   "anthropic stream thinking and tool use",
			path:   "/v1/messages",
			body:   `{"model":"echo-1","max_tokens":100,"messages":[{"role":"user","content":"/think hm\n/reply ok\n/tool get_time\n/usage 5 6"}],"stream":true}`,
			status: 200,
			ctype:  sse,
			want: event("message_start", `{"type":"message_start","message":{"id":"msg_fake_1","type":"message","role":"assistant","model":"echo-1","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}`) +
				event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`) +
				event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}`) +
				event("content_block_stop", `{"type":"content_block_stop","index":0}`) +
				event("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`) +
				event("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"ok"}}`) +
				event("content_block_stop", `{"type":"content_block_stop","index":1}`) +
				event("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"call_1","name":"get_time","input":{}}}`) +
				event("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{"}}`) +
				event("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"}"}}`) +
				event("content_block_stop", `{"type":"content_block_stop","index":2}`) +
				event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":5,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":6}}`) +
				event("message_stop", `{"type":"message_stop"}`),
		},
		{
			name:   "anthropic stream error after content",
			path:   "/v1/messages",
			body:   `{"model":"echo-1","max_tokens":100,"messages":[{"role":"user","content":"/reply part\n/error 529 busy"}],"stream":true}`,
			status: 200,
			ctype:  sse,
			want: event("message_start", `{"type":"message_start","message":{"id":"msg_fake_1","type":"message","role":"assistant","model":"echo-1","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}`) +
				event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
				event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"part"}}`) +
				event("error", `{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`),
		},
		{
			name:   "anthropic non-stream thinking and tool use",
			path:   "/v1/messages",
			body:   `{"model":"echo-1","max_tokens":100,"messages":[{"role":"user","content":"/think why\n/tool get_time"}]}`,
			status: 200,
			ctype:  appJSON,
			want:   `{"id":"msg_fake_1","type":"message","role":"assistant","model":"echo-1","content":[{"type":"thinking","thinking":"why"},{"type":"tool_use","id":"call_1","name":"get_time","input":{}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":6,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":3}}`,
		},
		{
			name:   "anthropic non-stream text",
			path:   "/v1/messages",
			body:   `{"model":"echo-1","max_tokens":1,"messages":[{"role":"user","content":"a long message"}]}`,
			status: 200,
			ctype:  appJSON,
			want:   `{"id":"msg_fake_1","type":"message","role":"assistant","model":"echo-1","content":[{"type":"text","text":"echo"}],"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}`,
		},
		{
			name:   "anthropic error",
			path:   "/v1/messages",
			body:   `{"model":"echo-1","max_tokens":100,"messages":[{"role":"user","content":"/error 529 overloaded"}],"stream":true}`,
			status: 529,
			ctype:  appJSON,
			want:   `{"type":"error","error":{"type":"overloaded_error","message":"overloaded"}}`,
		},
		{
			name:   "anthropic invalid JSON",
			path:   "/v1/messages",
			body:   `{"messages":[}`,
			status: 400,
			ctype:  appJSON,
			want:   `{"type":"error","error":{"type":"invalid_request_error","message":"invalid JSON body: invalid character '}' looking for beginning of value"}}`,
		},
		{
			name:   "anthropic not an object",
			path:   "/v1/messages",
			body:   `[]`,
			status: 400,
			ctype:  appJSON,
			want:   `{"type":"error","error":{"type":"invalid_request_error","message":"invalid JSON body: json: cannot unmarshal array into Go value of type fakellm.messagesRequest"}}`,
		},
		{
			name:   "anthropic missing key",
			key:    testKey,
			path:   "/v1/messages",
			header: map[string]string{"Authorization": "Bearer " + testKey},
			body:   `{}`,
			status: 401,
			ctype:  appJSON,
			want:   `{"type":"error","error":{"type":"authentication_error","message":"x-api-key header is required"}}`,
		},
		{
			name:   "anthropic wrong key",
			key:    testKey,
			path:   "/v1/messages",
			header: map[string]string{"x-api-key": "nope"},
			body:   `{}`,
			status: 401,
			ctype:  appJSON,
			want:   `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`,
		},
		{
			name:   "openai models",
			key:    testKey,
			method: "GET",
			path:   "/v1/models",
			header: map[string]string{"Authorization": "Bearer " + testKey},
			status: 200,
			ctype:  appJSON,
			want:   `{"object":"list","data":[{"id":"echo-1","object":"model","created":1700000000,"owned_by":"fakellm"}]}`,
		},
		{
			name:   "anthropic models",
			key:    testKey,
			method: "GET",
			path:   "/v1/models",
			header: map[string]string{"x-api-key": testKey, "anthropic-version": "2023-06-01"},
			status: 200,
			ctype:  appJSON,
			want:   `{"data":[{"type":"model","id":"echo-1","display_name":"echo-1","created_at":"2023-11-14T22:13:20Z"}],"has_more":false,"first_id":"echo-1","last_id":"echo-1"}`,
		},
		{
			name:   "models without key",
			key:    testKey,
			method: "GET",
			path:   "/v1/models",
			status: 401,
			ctype:  appJSON,
			want:   `{"error":{"message":"You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}` + "\n",
		},
		{
			name:   "unknown path",
			path:   "/v1/audio/speech",
			body:   `{}`,
			status: 404,
			ctype:  appJSON,
			want:   `{"error":{"message":"unknown path /v1/audio/speech","type":"invalid_request_error","param":null,"code":"not_found"}}` + "\n",
		},
		{
			name:   "embeddings without model",
			path:   "/v1/embeddings",
			body:   `{"input":"x"}`,
			status: 400,
			ctype:  appJSON,
			want:   `{"error":{"message":"invalid embeddings request","type":"invalid_request_error","param":null,"code":null}}` + "\n",
		},
		{
			name:   "wrong method",
			method: "GET",
			path:   "/v1/messages",
			status: 405,
			ctype:  appJSON,
			want:   `{"type":"error","error":{"type":"invalid_request_error","message":"method GET not allowed on /v1/messages"}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakellm.Start(t, fakellm.Options{APIKey: tt.key, Now: fixedNow})
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			status, ctype, body := send(t, srv, method, tt.path, tt.body, tt.header)
			if status != tt.status || ctype != tt.ctype {
				t.Errorf("status %d, Content-Type %q; want %d, %q", status, ctype, tt.status, tt.ctype)
			}
			if diff := cmp.Diff(strings.SplitAfter(tt.want, "\n"), strings.SplitAfter(body, "\n")); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if tt.ctype == appJSON && !json.Valid([]byte(body)) {
				t.Errorf("body is not valid JSON: %s", body)
			}
			if tt.ctype == sse {
				for line := range strings.Lines(body) {
					if data, ok := strings.CutPrefix(line, "data: "); ok && data != "[DONE]\n" && !json.Valid([]byte(data)) {
						t.Errorf("data line is not valid JSON: %s", line)
					}
				}
			}
		})
	}
}

func TestDecodeRequest(t *testing.T) {
	call := func(id, name, args string) provider.ToolCall {
		return provider.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
	}
	tests := []struct {
		name string
		path string
		opts fakellm.Options
		body string
		want *provider.Request
	}{
		{
			name: "openai system, developer and content parts",
			path: "/v1/chat/completions",
			body: `{"model":"m","max_tokens":10,"reasoning_effort":"low","messages":[
				{"role":"system","content":"rule one"},
				{"role":"developer","content":[{"type":"text","text":"rule two"}]},
				{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:,"}},{"type":"text","text":"/reply seen"}]}]}`,
			want: &provider.Request{Model: "m", System: "rule one\nrule two", MaxTokens: 10, Thinking: "low",
				Messages: []provider.Message{user("look\n/reply seen")}},
		},
		{
			name: "openai tool loop and tools",
			path: "/v1/chat/completions",
			body: `{"model":"m","max_tokens":10,"max_completion_tokens":20,"messages":[
				{"role":"user","content":"go"},
				{"role":"assistant","content":null,"tool_calls":[
					{"id":"call_1","type":"function","function":{"name":"a","arguments":"{\"x\":1}"}},
					{"id":"call_2","type":"function","function":{"name":"b","arguments":""}}]},
				{"role":"tool","tool_call_id":"call_2","content":"B"},
				{"role":"tool","tool_call_id":"call_1","content":[{"type":"text","text":"A"}]},
				{"role":"tool","tool_call_id":"call_9","content":"?"}],
				"tools":[{"type":"function","function":{"name":"a","description":"does a","parameters":{"type":"object"}}}],
				"tool_choice":"auto"}`,
			want: &provider.Request{Model: "m", MaxTokens: 20,
				Messages: []provider.Message{
					user("go"),
					{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{call("call_1", "a", `{"x":1}`), call("call_2", "b", `{}`)}},
					{Role: provider.RoleTool, ToolCallID: "call_2", ToolName: "b", Text: "B"},
					{Role: provider.RoleTool, ToolCallID: "call_1", ToolName: "a", Text: "A"},
					{Role: provider.RoleTool, ToolCallID: "call_9", Text: "?"},
				},
				Tools: []provider.ToolDef{{Name: "a", Description: "does a", Parameters: json.RawMessage(`{"type":"object"}`)}}},
		},
		{
			name: "openai internal context left out",
			path: "/v1/chat/completions",
			body: `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c","content":"r"},
				{"role":"user","content":"<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nsecret\n<<<END_OPENCLAW_INTERNAL_CONTEXT>>>"}]}`,
			want: &provider.Request{Model: "m", Messages: []provider.Message{user("hi"), {Role: provider.RoleTool, ToolCallID: "c", Text: "r"}}},
		},
		{
			name: "openai internal context kept",
			path: "/v1/chat/completions",
			opts: fakellm.Options{KeepInternalContext: true},
			body: `{"model":"m","messages":[{"role":"user","content":"<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"}]}`,
			want: &provider.Request{Model: "m", Messages: []provider.Message{user("<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>")}},
		},
		{
			name: "anthropic blocks",
			path: "/v1/messages",
			body: `{"model":"m","max_tokens":64,"thinking":{"type":"enabled","budget_tokens":4096},
				"system":[{"type":"text","text":"sys one"},{"type":"text","text":"sys two"}],
				"messages":[
					{"role":"user","content":"go"},
					{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"calling"},
						{"type":"tool_use","id":"toolu_1","name":"a","input":{"x":1}},{"type":"tool_use","id":"toolu_2","name":"b","input":{}}]},
					{"role":"user","content":[
						{"type":"tool_result","tool_use_id":"toolu_1","content":"A"},
						{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"B1"},{"type":"text","text":"B2"}],"is_error":true},
						{"type":"text","text":"more"},
						{"type":"text","text":"<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"}]}],
				"tools":[{"name":"a","description":"does a","input_schema":{"type":"object","properties":{}}}]}`,
			want: &provider.Request{Model: "m", System: "sys one\nsys two", MaxTokens: 64, Thinking: "medium",
				Messages: []provider.Message{
					user("go"),
					{Role: provider.RoleAssistant, Text: "calling", ToolCalls: []provider.ToolCall{call("toolu_1", "a", `{"x":1}`), call("toolu_2", "b", `{}`)}},
					{Role: provider.RoleTool, ToolCallID: "toolu_1", ToolName: "a", Text: "A"},
					{Role: provider.RoleTool, ToolCallID: "toolu_2", ToolName: "b", Text: "B1\nB2", IsError: true},
					user("more"),
				},
				Tools: []provider.ToolDef{{Name: "a", Description: "does a", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}}},
		},
		{
			name: "anthropic string system",
			path: "/v1/messages",
			body: `{"model":"m","max_tokens":1,"system":"s","thinking":{"type":"enabled","budget_tokens":20000},"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`,
			want: &provider.Request{Model: "m", System: "s", MaxTokens: 1, Thinking: "high", Messages: []provider.Message{user("x")}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakellm.Start(t, tt.opts)
			if status, _, body := send(t, srv, http.MethodPost, tt.path, tt.body, nil); status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			recs := srv.Requests()
			if len(recs) != 1 {
				t.Fatalf("%d requests recorded", len(recs))
			}
			if diff := cmp.Diff(tt.want, recs[0].Request, jsonEqual); diff != "" {
				t.Errorf("decoded request (-want +got):\n%s", diff)
			}
			if recs[0].Path != tt.path || string(recs[0].Body) != tt.body {
				t.Errorf("recorded path %q, body %q", recs[0].Path, recs[0].Body)
			}
		})
	}

	for _, tt := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":42}]}`},
		{"/v1/messages", `{"messages":[{"role":"system","content":"x"}]}`},
		{"/v1/messages", `{"messages":[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]}`},
		{"/v1/messages", `{"messages":[{"role":"user","content":7}]}`},
	} {
		srv := fakellm.Start(t, fakellm.Options{})
		if status, _, body := send(t, srv, http.MethodPost, tt.path, tt.body, nil); status != 400 {
			t.Errorf("%s %s: status %d (%s), want 400", tt.path, tt.body, status, body)
		}
		if recs := srv.Requests(); len(recs) != 1 || recs[0].Request != nil {
			t.Errorf("%s %s: recorded %+v, want one request without Request", tt.path, tt.body, recs)
		}
	}
}

// openStream posts a streaming echo request and returns the response once
// the first content chunk has arrived.
func openStream(t *testing.T, ctx context.Context, srv *fakellm.Server, text string) (*http.Response, *bufio.Reader) {
	t.Helper()
	body := `{"model":"echo-1","stream":true,"messages":[{"role":"user","content":` + jsonString(text) + `}]}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	rd := bufio.NewReader(res.Body)
	for range 2 { // the role chunk and the first delta
		line, err := rd.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "data: {") {
			t.Fatalf("read %q, %v", line, err)
		}
		if _, err := rd.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	return res, rd
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestStallAfterFirstChunk(t *testing.T) {
	t.Run("client cancels", func(t *testing.T) {
		srv := fakellm.Start(t, fakellm.Options{StallAfterFirstChunk: true})
		ctx, cancel := context.WithCancel(context.Background())
		_, rd := openStream(t, ctx, srv, "one two three")
		got := make(chan error, 1)
		go func() {
			_, err := rd.ReadString('\n')
			got <- err
		}()
		select {
		case err := <-got:
			t.Fatalf("read after the first chunk returned %v, want a stall", err)
		case <-time.After(50 * time.Millisecond):
		}
		cancel()
		if err := <-got; err == nil {
			t.Fatal("read after cancel succeeded")
		}
	})
	t.Run("server closes", func(t *testing.T) {
		srv := fakellm.Start(t, fakellm.Options{StallAfterFirstChunk: true})
		_, rd := openStream(t, context.Background(), srv, "one two three")
		closed := make(chan error, 1)
		go func() { closed <- srv.Close() }()
		select {
		case err := <-closed:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close hangs on a stalled reply")
		}
		rest, _ := io.ReadAll(rd)
		if strings.Contains(string(rest), "[DONE]") {
			t.Errorf("stalled stream finished: %q", rest)
		}
		if err := srv.Close(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("second Close = %v, want net.ErrClosed", err)
		}
	})
	t.Run("stall directive", func(t *testing.T) {
		srv := fakellm.Start(t, fakellm.Options{})
		openStream(t, context.Background(), srv, "/reply partial text\n/stall")
		// Cleanup closes the server with the reply still stalled.
	})
}

func TestDelay(t *testing.T) {
	const delay = 20 * time.Millisecond
	srv := fakellm.Start(t, fakellm.Options{Delay: delay})
	start := time.Now()
	status, _, body := send(t, srv, http.MethodPost, "/v1/chat/completions",
		`{"model":"echo-1","stream":true,"messages":[{"role":"user","content":"a b c"}]}`, nil)
	// "echo: ", "a ", "b ", "c": four content chunks.
	if elapsed := time.Since(start); elapsed < 4*delay {
		t.Errorf("streamed in %v, want at least %v", elapsed, 4*delay)
	}
	if status != 200 || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Errorf("status %d, body %q", status, body)
	}
}

func TestOnRequest(t *testing.T) {
	var seen []string
	srv := fakellm.Start(t, fakellm.Options{OnRequest: func(r *http.Request, req *provider.Request) {
		seen = append(seen, r.Header.Get("X-Test")+" "+req.Messages[0].Text)
		req.Messages[0].Text = "/reply hooked"
	}})
	p := adapters(t, srv, "")[0].p
	got, _ := collect(t, p, &provider.Request{Model: "echo-1", Messages: []provider.Message{user("original")}})
	if got.Text != "hooked" {
		t.Errorf("text = %q, want the hook's reply", got.Text)
	}
	if len(seen) != 1 || seen[0] != " original" {
		t.Errorf("hook saw %q", seen)
	}
	if rec := srv.Requests()[0]; rec.Request.Messages[0].Text != "/reply hooked" {
		t.Errorf("recorded %q, want the request after the hook", rec.Request.Messages[0].Text)
	}
}

func TestListen(t *testing.T) {
	srv, err := fakellm.Listen("127.0.0.1:0", fakellm.Options{ModelID: "fake-1"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(srv.URL(), "http://127.0.0.1:") || !strings.HasSuffix(srv.URL(), "/v1") ||
		srv.AnthropicURL()+"/v1" != srv.URL() {
		t.Errorf("URL %q, AnthropicURL %q", srv.URL(), srv.AnthropicURL())
	}
	status, _, body := send(t, srv, http.MethodGet, "/v1/models", "", nil)
	if status != 200 || !strings.Contains(body, `"id":"fake-1"`) {
		t.Errorf("models: %d %s", status, body)
	}
	got, _ := collect(t, adapters(t, srv, "")[1].p, &provider.Request{Model: "fake-1", Messages: []provider.Message{user("over tcp")}})
	if got.Text != "echo: over tcp" {
		t.Errorf("text = %q", got.Text)
	}
	// A stalled reply must not hold Close up.
	openStream(t, context.Background(), srv, "/reply wait\n/stall")
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second Close = %v, want net.ErrClosed", err)
	}
	if _, err := fakellm.Listen(strings.TrimPrefix(srv.AnthropicURL(), "http://")+"x", fakellm.Options{}); err == nil {
		t.Error("Listen on a bad address succeeded")
	}
}

func TestHandler(t *testing.T) {
	srv := fakellm.New(fakellm.Options{})
	if srv.URL() != "" || srv.AnthropicURL() != "" {
		t.Errorf("unstarted server has URL %q", srv.URL())
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", srv)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	res, err := hs.Client().Post(hs.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"/reply x\n/stall"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	rd := bufio.NewReader(res.Body)
	if _, err := rd.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	// Close ends the stalled reply although srv does not own the listener.
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if rest, _ := io.ReadAll(rd); strings.Contains(string(rest), "[DONE]") {
		t.Errorf("stalled stream finished: %q", rest)
	}
}
