package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/fakellm"
)

func TestToolsInvokeHTTP(t *testing.T) {
	g := startGateway(t, "", fakellm.Options{})
	// A session with one turn, for sessions_list and sessions_history.
	ctx := context.Background()
	if _, _, err := g.d.Runner.Submit(ctx, agent.Input{RunID: "seed", SessionKey: "agent:main:main", AgentID: "main", Message: "hello"}); err != nil {
		t.Fatal(err)
	}
	if _, done, err := g.d.Runner.Wait(ctx, "seed", 20*time.Second); err != nil || !done {
		t.Fatalf("seed run: done=%v err=%v", done, err)
	}

	t.Run("sessions_list", func(t *testing.T) {
		status, h, b := g.do("POST", "/tools/invoke", `{"tool":"sessions_list","action":"json","args":{}}`)
		if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
			t.Fatalf("status %d %s: %s", status, h.Get("Content-Type"), b)
		}
		v := decode(t, b)
		res, _ := v["result"].(map[string]any)
		details, _ := res["details"].(map[string]any)
		content, _ := res["content"].([]any)
		if v["ok"] != true || details == nil || len(content) != 1 || !strings.Contains(string(b), "agent:main:main") {
			t.Fatalf("body = %s", b)
		}
	})
	t.Run("sessions_history by name", func(t *testing.T) {
		status, _, b := g.do("POST", "/tools/invoke", `{"name":"sessions_history","tool":"ignored","args":{"sessionKey":"main"}}`)
		if status != 200 || !strings.Contains(string(b), "echo: hello") {
			t.Fatalf("status %d: %s", status, b)
		}
	})
	t.Run("agents_list", func(t *testing.T) {
		status, _, b := g.do("POST", "/tools/invoke", `{"tool":"agents_list"}`)
		if status != 200 || !strings.Contains(string(b), `"ok":true`) {
			t.Fatalf("status %d: %s", status, b)
		}
	})

	tests := []struct {
		name, method, body string
		headers            []string
		status             int
		want               string // exact body, or "" to skip
		wantSub            string
	}{
		{name: "denied by default HTTP list", method: "POST", body: `{"tool":"sessions_send","args":{"sessionKey":"main","message":"x"}}`,
			status: 404, want: `{"ok":false,"error":{"type":"not_found","message":"Tool not available: sessions_send"}}`},
		{name: "spawn denied", method: "POST", body: `{"tool":"sessions_spawn","args":{"task":"x"}}`,
			status: 404, want: `{"ok":false,"error":{"type":"not_found","message":"Tool not available: sessions_spawn"}}`},
		{name: "unknown tool", method: "POST", body: `{"tool":"nope"}`,
			status: 404, want: `{"ok":false,"error":{"type":"not_found","message":"Tool not available: nope"}}`},
		{name: "no name", method: "POST", body: `{"args":{}}`,
			status: 400, want: `{"ok":false,"error":{"type":"invalid_request","message":"tools.invoke requires name"}}`},
		{name: "wrong name type", method: "POST", body: `{"tool":42}`,
			status: 400, want: `{"ok":false,"error":{"type":"invalid_request","message":"tools.invoke requires name"}}`},
		{name: "array body", method: "POST", body: `[1,2]`,
			status: 400, want: `{"ok":false,"error":{"type":"invalid_request","message":"tools.invoke requires name"}}`},
		{name: "empty body", method: "POST", body: ``,
			status: 400, want: `{"ok":false,"error":{"type":"invalid_request","message":"tools.invoke requires name"}}`},
		{name: "unknown agent", method: "POST", body: `{"tool":"sessions_list","agentId":"ghost"}`,
			status: 400, want: `{"ok":false,"error":{"type":"invalid_request","message":"Unknown agent id \"ghost\""}}`},
		{name: "agent conflict", method: "POST", body: `{"tool":"sessions_list","agentId":"ops","sessionKey":"agent:main:main"}`,
			status: 400, want: `{"ok":false,"error":{"type":"invalid_request","message":"agent \"ops\" does not match session key agent \"main\""}}`},
		{name: "invalid JSON", method: "POST", body: `{"tool":`, status: 400, wantSub: `"type":"invalid_request_error"`},
		{name: "wrong token", method: "POST", body: `{"tool":"sessions_list"}`, headers: []string{"Authorization", "Bearer nope"},
			status: 401, want: `{"error":{"message":"Unauthorized","type":"unauthorized"}}`},
		{name: "no token", method: "POST", body: `{"tool":"sessions_list"}`, headers: []string{"Authorization", ""},
			status: 401, want: `{"error":{"message":"Unauthorized","type":"unauthorized"}}`},
		{name: "GET", method: "GET", status: 405, want: "Method Not Allowed"},
		{name: "oversize", method: "POST", body: `{"tool":"sessions_list","args":{"pad":"` + strings.Repeat("x", 2<<20) + `"}}`,
			status: 413, want: `{"error":{"message":"Payload too large","type":"invalid_request_error"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, h, b := g.do(tt.method, "/tools/invoke", tt.body, tt.headers...)
			if status != tt.status {
				t.Fatalf("status = %d, want %d: %s", status, tt.status, b)
			}
			got := string(b)
			if strings.HasPrefix(got, "{") {
				got = compactJSON(t, b)
			}
			if tt.want != "" && got != tt.want {
				t.Errorf("body = %s\nwant   %s", got, tt.want)
			}
			if tt.wantSub != "" && !strings.Contains(got, tt.wantSub) {
				t.Errorf("body = %s, want it to contain %s", got, tt.wantSub)
			}
			if tt.status == 405 && h.Get("Allow") != "POST" {
				t.Errorf("Allow = %q", h.Get("Allow"))
			}
		})
	}
	// The gateway stays up and nothing was sent for the refused calls.
	if status, _, _ := g.do("GET", "/healthz", ""); status != 200 {
		t.Errorf("healthz = %d", status)
	}
}

func TestToolsInvokeGatewayToolsConfig(t *testing.T) {
	g := startGateway(t, `tools: { allow: ["sessions_send"], deny: ["agents_list"] },`, fakellm.Options{})
	status, _, b := g.do("POST", "/tools/invoke", `{"tool":"agents_list"}`)
	if status != 404 || !strings.Contains(string(b), "Tool not available: agents_list") {
		t.Errorf("denied by gateway.tools.deny: %d %s", status, b)
	}
	// sessions_send is re-enabled: it runs (a session-to-session send).
	status, _, b = g.do("POST", "/tools/invoke", `{"tool":"sessions_send","sessionKey":"agent:main:main","args":{"sessionKey":"agent:ops:main","message":"hi","timeoutSeconds":0}}`)
	if status != 200 || !strings.Contains(string(b), `"ok":true`) {
		t.Errorf("re-enabled by gateway.tools.allow: %d %s", status, b)
	}
}

func TestToolsInvokeRateLimited(t *testing.T) {
	g := startGateway(t, `auth: { mode: "token", token: "`+token+`", rateLimit: { maxAttempts: 2, exemptLoopback: false } },`, fakellm.Options{})
	for i := range 2 {
		if status, _, _ := g.do("POST", "/tools/invoke", `{}`, "Authorization", "Bearer wrong"); status != 401 && !(i == 1 && status == 429) {
			t.Fatalf("attempt %d: %d", i, status)
		}
	}
	status, h, b := g.do("POST", "/tools/invoke", `{"tool":"sessions_list"}`)
	if status != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Fatalf("locked out client = %d Retry-After %q: %s", status, h.Get("Retry-After"), b)
	}
	if typ, msg := errorOf(t, b); typ != "rate_limited" || msg != "Too many failed authentication attempts. Please try again later." {
		t.Errorf("error = %s %q", typ, msg)
	}
}

// TestToolsInvokeWebSocket: the WebSocket method shares the resolution and
// policy of the HTTP door but not its HTTP deny list, and answers failures
// as the reference does (ok false with an error code).
func TestToolsInvokeWebSocket(t *testing.T) {
	g := startGateway(t, "", fakellm.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{URL: "ws://" + g.d.Addrs[0].String(), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tests := []struct {
		name   string
		params map[string]any
		want   string // a substring of the compact result
	}{
		{"by name", map[string]any{"name": "agents_list"}, `"ok":true,"toolName":"agents_list"`},
		{"legacy tool field", map[string]any{"tool": "sessions_list"}, `"ok":true,"toolName":"sessions_list"`},
		{"no HTTP deny list", map[string]any{"tool": "sessions_send", "args": map[string]any{"sessionKey": "agent:ops:main", "message": "hi", "timeoutSeconds": 0}}, `"ok":true`},
		{"unknown tool", map[string]any{"name": "nope"}, `"ok":false,"toolName":"nope","tool":"nope","isError":false,"error":{"code":"not_found","message":"Tool not available: nope"}}`},
		{"unknown agent", map[string]any{"name": "agents_list", "agentId": "ghost"}, `"error":{"code":"validation_error","message":"Unknown agent id \"ghost\""}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := c.CallRaw(ctx, "tools.invoke", tt.params)
			if err != nil {
				t.Fatal(err)
			}
			if got := compactJSON(t, raw); !strings.Contains(got, tt.want) {
				t.Errorf("result = %s, want %s", got, tt.want)
			}
		})
	}
	if _, err := c.CallRaw(ctx, "tools.invoke", map[string]any{"args": map[string]any{}}); err == nil || !strings.Contains(err.Error(), "name required") {
		t.Errorf("no name: %v", err)
	}
}
