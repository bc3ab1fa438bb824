package fakellm_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/provider/scripted"
)

// echoRequest is one chat turn as the gateway sends it: a system prompt of
// systemBytes, tools, one user message; the echo streams in 7 deltas.
func echoRequest(systemBytes int) *provider.Request {
	req := &provider.Request{
		Model:     scripted.ModelID,
		System:    strings.Repeat("You are a helpful assistant. ", systemBytes/29+1)[:systemBytes],
		Messages:  []provider.Message{user("hello there, how are you today?")},
		MaxTokens: 4096,
	}
	for _, name := range []string{"sessions_list", "sessions_history", "sessions_send", "sessions_spawn", "agents_list"} {
		req.Tools = append(req.Tools, provider.ToolDef{
			Name:        name,
			Description: "Session tool " + name + ".",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"sessionKey":{"type":"string"},"limit":{"type":"integer"}}}`),
		})
	}
	return req
}

// chatBody is echoRequest as a Chat Completions body.
func chatBody(systemBytes int) string {
	req := echoRequest(systemBytes)
	tools := make([]map[string]any, 0, len(req.Tools))
	for _, t := range req.Tools {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{
			"name": t.Name, "description": t.Description, "parameters": t.Parameters}})
	}
	b, _ := json.Marshal(map[string]any{
		"model": req.Model,
		"messages": []map[string]any{
			{"role": "system", "content": req.System},
			{"role": "user", "content": req.Messages[0].Text},
		},
		"tools":                 tools,
		"tool_choice":           "auto",
		"stream":                true,
		"stream_options":        map[string]any{"include_usage": true},
		"max_completion_tokens": req.MaxTokens,
	})
	return string(b)
}

// benchAdapter streams one echo turn per iteration through a real adapter
// and a real HTTP connection.
func benchAdapter(b *testing.B, which int) {
	srv := fakellm.Start(b, fakellm.Options{DiscardRequests: true})
	p := adapters(b, srv, testKey)[which].p
	req := echoRequest(2000)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		text, _, _, done, err := provider.Collect(p.Stream(ctx, req))
		if err != nil || done == nil || text == "" {
			b.Fatalf("text %q, done %v, err %v", text, done, err)
		}
	}
}

// BenchmarkOpenAIStreamEcho is one streamed echo turn through the openai
// adapter (SDK decoding included) over loopback HTTP.
func BenchmarkOpenAIStreamEcho(b *testing.B) { benchAdapter(b, 0) }

// BenchmarkAnthropicStreamEcho is the same through the anthropic adapter.
func BenchmarkAnthropicStreamEcho(b *testing.B) { benchAdapter(b, 1) }

// benchRaw posts body with net/http and reads the whole stream, so the
// figure is the server's cost plus the HTTP round trip, without an SDK.
func benchRaw(b *testing.B, body string) {
	srv := fakellm.Start(b, fakellm.Options{DiscardRequests: true})
	client := srv.Client()
	url := srv.URL() + "/chat/completions"
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		res, err := client.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != 200 || n == 0 {
			b.Fatalf("status %d, %d bytes, err %v", res.StatusCode, n, err)
		}
	}
}

// BenchmarkRawStreamEcho is one streamed echo turn with a 2 KB system
// prompt over loopback HTTP, read with net/http.
func BenchmarkRawStreamEcho(b *testing.B) { benchRaw(b, chatBody(2000)) }

// BenchmarkRawStreamEchoLargePrompt is the same with a 48 KB system prompt,
// the size the reference gateway sends.
func BenchmarkRawStreamEchoLargePrompt(b *testing.B) { benchRaw(b, chatBody(48000)) }

// BenchmarkServeHTTPEcho is the handler alone: decode, model, encode, with
// no network.
func BenchmarkServeHTTPEcho(b *testing.B) {
	srv := fakellm.New(fakellm.Options{DiscardRequests: true})
	defer srv.Close()
	body := chatBody(2000)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		srv.ServeHTTP(w, r)
		if w.Code != 200 || !strings.HasSuffix(w.Body.String(), "data: [DONE]\n\n") {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}
