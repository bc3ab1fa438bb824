package fakellm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/provider/anthropic"
	"github.com/switchboardhq/switchboard/internal/provider/openai"
	"github.com/switchboardhq/switchboard/internal/provider/scripted"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testKey = "sk-fake-key"

// adapter is one of the project's real provider adapters pointed at a
// fake server.
type adapter struct {
	name string
	p    provider.Provider
	// responseID is the ResponseID of the done event of request n.
	responseID func(n int) string
}

// adapters returns the OpenAI and Anthropic adapters for srv, sending key.
func adapters(t testing.TB, srv *fakellm.Server, key string) []adapter {
	t.Helper()
	oa, err := openai.New(openai.Config{BaseURL: srv.URL(), APIKey: key, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	an, err := anthropic.New(anthropic.Config{BaseURL: srv.AnthropicURL(), APIKey: key, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return []adapter{
		{"openai", oa, func(n int) string { return "chatcmpl-fake-" + itoa(n) }},
		{"anthropic", an, func(n int) string { return "msg_fake_" + itoa(n) }},
	}
}

var itoa = strconv.Itoa

// result is a collected model turn.
type result struct {
	Text  string
	Calls []provider.ToolCall
	Usage provider.Usage
	Stop  string
}

func collect(t testing.TB, p provider.Provider, req *provider.Request) (result, string) {
	t.Helper()
	text, calls, usage, done, err := provider.Collect(p.Stream(context.Background(), req))
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if done == nil {
		t.Fatal("no done event")
	}
	return result{Text: text, Calls: calls, Usage: usage, Stop: done.StopReason}, done.ResponseID
}

// direct is the scripted model's own answer to req, without HTTP.
func direct(t testing.TB, req *provider.Request) result {
	t.Helper()
	r, _ := collect(t, scripted.New(scripted.Options{}), req)
	return r
}

// jsonEqual compares raw JSON by value, so that key order and spacing
// changed by the adapters do not matter.
var jsonEqual = cmp.Transformer("json", func(raw json.RawMessage) any {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	return v
})

func user(text string) provider.Message { return provider.Message{Role: provider.RoleUser, Text: text} }

var weatherTool = provider.ToolDef{
	Name:        "get_weather",
	Description: "Current weather for a city.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
}

var timeTool = provider.ToolDef{
	Name:       "get_time",
	Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
}

func TestTextTurn(t *testing.T) {
	srv := fakellm.Start(t, fakellm.Options{APIKey: testKey})
	for i, a := range adapters(t, srv, testKey) {
		t.Run(a.name, func(t *testing.T) {
			req := &provider.Request{
				Model:     scripted.ModelID,
				System:    "You are terse.",
				Messages:  []provider.Message{user("hello there, fake model")},
				Tools:     []provider.ToolDef{weatherTool},
				MaxTokens: 256,
			}
			got, id := collect(t, a.p, req)
			if diff := cmp.Diff(direct(t, req), got); diff != "" {
				t.Errorf("turn through HTTP differs from the scripted model (-direct +http):\n%s", diff)
			}
			if got.Text != "echo: hello there, fake model" {
				t.Errorf("text = %q", got.Text)
			}
			if want := a.responseID(i + 1); id != want {
				t.Errorf("ResponseID = %q, want %q", id, want)
			}
			recs := srv.Requests()
			if len(recs) != i+1 {
				t.Fatalf("%d requests recorded, want %d", len(recs), i+1)
			}
			if diff := cmp.Diff(req, recs[i].Request, jsonEqual); diff != "" {
				t.Errorf("decoded request (-sent +recorded):\n%s", diff)
			}
		})
	}
	if n := srv.Count(); n != 2 {
		t.Errorf("Count = %d, want 2", n)
	}
}

func TestToolTurns(t *testing.T) {
	srv := fakellm.Start(t, fakellm.Options{})
	for _, a := range adapters(t, srv, "") {
		t.Run(a.name, func(t *testing.T) {
			trigger := user(scripted.ToolDirective("get_weather", map[string]any{"city": "Paris"}) + "\n" +
				scripted.ToolDirective("get_time", nil) + "\n" +
				scripted.ThenDirective("It is sunny in Paris."))
			step1 := &provider.Request{
				Model:     scripted.ModelID,
				Messages:  []provider.Message{user("earlier"), {Role: provider.RoleAssistant, Text: "echo: earlier"}, trigger},
				Tools:     []provider.ToolDef{weatherTool, timeTool},
				MaxTokens: 1000,
			}
			got, _ := collect(t, a.p, step1)
			wantCalls := []provider.ToolCall{
				{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
				{ID: "call_2", Name: "get_time", Arguments: json.RawMessage(`{}`)},
			}
			if diff := cmp.Diff(result{Calls: wantCalls, Usage: got.Usage, Stop: provider.StopToolUse}, got, jsonEqual); diff != "" {
				t.Fatalf("tool step (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(direct(t, step1), got, jsonEqual); diff != "" {
				t.Errorf("tool step differs from the scripted model (-direct +http):\n%s", diff)
			}

			step2 := &provider.Request{
				Model: scripted.ModelID,
				Messages: append(step1.Messages[:len(step1.Messages):len(step1.Messages)],
					provider.Message{Role: provider.RoleAssistant, ToolCalls: got.Calls},
					provider.Message{Role: provider.RoleTool, ToolCallID: "call_1", ToolName: "get_weather", Text: "sunny, 21C"},
					provider.Message{Role: provider.RoleTool, ToolCallID: "call_2", ToolName: "get_time", Text: "12:00"},
				),
				Tools:     step1.Tools,
				MaxTokens: step1.MaxTokens,
			}
			got, _ = collect(t, a.p, step2)
			if got.Text != "It is sunny in Paris." || got.Stop != provider.StopEnd || len(got.Calls) != 0 {
				t.Errorf("result step = %+v, want the /then text and stop", got)
			}
			recs := srv.Requests()
			if diff := cmp.Diff(step2, recs[len(recs)-1].Request, jsonEqual); diff != "" {
				t.Errorf("decoded tool-result request (-sent +recorded):\n%s", diff)
			}
		})
	}
}

func TestErrorTurn(t *testing.T) {
	srv := fakellm.Start(t, fakellm.Options{})
	tests := []struct {
		name      string
		prompt    string
		text      string // streamed before the error
		status    int
		message   string
		retryable bool
	}{
		{"server", "/error 503 overloaded, try later", "", 503, "overloaded, try later", true},
		{"client", "/error 400 bad input", "", 400, "bad input", false},
		{"default", "/error", "", 500, "injected error", true},
		{"rate limit", "/error 429 slow down", "", 429, "slow down", true},
		{"malformed directive", "/tool", "", 400, "line 1: /tool: missing tool name", false},
		// 529 is a status both APIs can carry inside a stream.
		{"mid-stream", "/reply partial answer\n/error 529 overloaded", "partial answer", 529, "overloaded", true},
	}
	for _, a := range adapters(t, srv, "") {
		for _, tt := range tests {
			t.Run(a.name+"/"+tt.name, func(t *testing.T) {
				req := &provider.Request{Model: scripted.ModelID, Messages: []provider.Message{user(tt.prompt)}}
				text, _, _, done, err := provider.Collect(a.p.Stream(context.Background(), req))
				perr, ok := errors.AsType[*provider.Error](err)
				if !ok {
					t.Fatalf("err = %v (done %v), want a *provider.Error", err, done)
				}
				if text != tt.text {
					t.Errorf("text before the error = %q, want %q", text, tt.text)
				}
				if perr.StatusCode != tt.status || perr.Retryable != tt.retryable {
					t.Errorf("error = %+v, want status %d, retryable %v", perr, tt.status, tt.retryable)
				}
				if tt.name != "malformed directive" && perr.Message != tt.message {
					t.Errorf("message = %q, want %q", perr.Message, tt.message)
				}
			})
		}
	}
}

func TestAuth(t *testing.T) {
	srv := fakellm.Start(t, fakellm.Options{APIKey: testKey})
	req := &provider.Request{Model: scripted.ModelID, Messages: []provider.Message{user("hi")}}
	wantMsg := map[string]string{"openai": "Incorrect API key provided.", "anthropic": "invalid x-api-key"}
	for _, a := range adapters(t, srv, "sk-wrong") {
		t.Run(a.name, func(t *testing.T) {
			_, _, _, _, err := provider.Collect(a.p.Stream(context.Background(), req))
			perr, ok := errors.AsType[*provider.Error](err)
			if !ok || perr.StatusCode != 401 || perr.Retryable || perr.Message != wantMsg[a.name] {
				t.Fatalf("err = %#v, want a 401 %q", err, wantMsg[a.name])
			}
		})
	}
	recs := srv.Requests()
	if len(recs) != 2 || recs[0].Request != nil || recs[1].Request != nil {
		t.Fatalf("recorded %+v, want two rejected requests without a decoded Request", recs)
	}
	if got := recs[0].Header.Get("Authorization"); got != "Bearer sk-wrong" {
		t.Errorf("recorded Authorization = %q", got)
	}
	if got := recs[1].Header.Get("X-Api-Key"); got != "sk-wrong" {
		t.Errorf("recorded x-api-key = %q", got)
	}
	for _, a := range adapters(t, srv, testKey) {
		if got, _ := collect(t, a.p, req); got.Text != "echo: hi" {
			t.Errorf("%s with the right key: text = %q", a.name, got.Text)
		}
	}
}

func TestThinking(t *testing.T) {
	srv := fakellm.Start(t, fakellm.Options{})
	req := &provider.Request{Model: scripted.ModelID, Messages: []provider.Message{user("/think step one\n/think step two\n/reply done")}}
	for _, a := range adapters(t, srv, "") {
		t.Run(a.name, func(t *testing.T) {
			var thinking, text string
			for ev, err := range a.p.Stream(context.Background(), req) {
				if err != nil {
					t.Fatal(err)
				}
				switch ev.Type {
				case provider.EventThinkingDelta:
					thinking += ev.Text
				case provider.EventTextDelta:
					text += ev.Text
				}
			}
			if thinking != "step one\nstep two" || text != "done" {
				t.Errorf("thinking %q, text %q", thinking, text)
			}
		})
	}
}

func TestConcurrentRequests(t *testing.T) {
	for _, discard := range []bool{false, true} {
		srv := fakellm.Start(t, fakellm.Options{DiscardRequests: discard})
		as := adapters(t, srv, "")
		const n = 8
		var wg sync.WaitGroup
		for i := range n {
			a := as[i%len(as)]
			wg.Go(func() {
				req := &provider.Request{Model: scripted.ModelID, Messages: []provider.Message{user("hi " + itoa(i))}}
				text, _, _, _, err := provider.Collect(a.p.Stream(context.Background(), req))
				if err != nil || text != "echo: hi "+itoa(i) {
					t.Errorf("%s: text %q, err %v", a.name, text, err)
				}
				_ = srv.Requests()
				_ = srv.Count()
			})
		}
		wg.Wait()
		if srv.Count() != n {
			t.Errorf("discard=%v: Count = %d, want %d", discard, srv.Count(), n)
		}
		if got := len(srv.Requests()); (discard && got != 0) || (!discard && got != n) {
			t.Errorf("discard=%v: %d requests kept", discard, got)
		}
	}
}
