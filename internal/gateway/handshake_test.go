package gateway

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

func TestHandshakeOK(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.dial()
	ch := c.nextEvent(5 * time.Second)
	if ch.Event != wire.EventConnectChallenge || ch.Seq != nil {
		t.Fatalf("first frame = %+v, want connect.challenge without seq", ch)
	}
	var chal wire.Challenge
	if err := json.Unmarshal(ch.Payload, &chal); err != nil || len(chal.Nonce) != 36 || chal.TS == 0 ||
		!slices.Equal(chal.Capabilities, []string{wire.CapModelCatalogSnapshot}) {
		t.Errorf("challenge = %s", ch.Payload)
	}
	params := connectParams(testToken, wire.ScopeRead, wire.ScopeWrite)
	params["device"] = map[string]any{"id": "dev", "publicKey": "pk", "signature": "sig", "signedAt": chal.TS, "nonce": chal.Nonce}
	res := c.call(wire.MethodConnect, params)
	if !res.OK {
		t.Fatalf("connect: %v", res.Error)
	}
	var hello wire.HelloOK
	if err := json.Unmarshal(res.Payload, &hello); err != nil {
		t.Fatal(err)
	}
	if hello.Type != "hello-ok" || hello.Protocol != 4 || hello.Server.Version != "test" || len(hello.Server.ConnID) != 36 {
		t.Errorf("hello = %+v", hello)
	}
	wantMethods := []string{"health", "logs.tail", "status", "system-presence", "last-heartbeat", "usage.status",
		"usage.cost", "sessions.usage", "models.list", "config.get", "sessions.messages.subscribe", "sessions.messages.unsubscribe", "sessions.list", "sessions.resolve", "sessions.patch", "sessions.reset", "sessions.compact",
		"sessions.delete", "sessions.create", "chat.send", "chat.history", "chat.abort", "sessions.abort", "chat.inject",
		"agent", "agent.wait", "agents.list", "tools.invoke", "sessions.export", "sessions.search", "sessions.send", "sessions.steer",
		"subagents.list", "subagents.kill", "announces.list", "announces.redeliver", "mcp.list", "channels.status", "runs.active", "runs.watch", "sessions.watch", "sessions.edges", "nodes.list",
		"exec.approval.list", "exec.approval.get", "exec.approval.resolve", "exec.approval.waitDecision", "exec.approvals.get", "exec.approvals.set",
		"chat.startup", "sessions.describe", "sessions.subscribe", "sessions.unsubscribe", "agent.identity.get", "models.authStatus",
		"chat.metadata", "system.info", "environments.list", "node.list", "skills.status", "update.status", "tasks.list",
		"wake", "memory.status", "memory.index", "memory.search", "doctor.memory.status", "skills.search", "skills.library.list", "skills.curator.status", "skills.proposals.list",
		"node.pair.list", "plugins.list", "channels.pairing.list", "device.pair.list", "plugin.approval.list", "openclaw.approval.list", "exec.approval.grants.list",
		"question.list", "artifacts.list", "talk.catalog", "progressCard.get", "sessions.branches.list",
		"sessions.companion.state", "sessions.observer.visibility", "approval.history", "themes.list", "hooks.status",
		"diagnostics.stability", "config.schema", "config.schema.lookup",
		"cron.list", "cron.status", "cron.get", "cron.add", "cron.update", "cron.remove", "cron.run", "cron.runs", "cron.enable", "cron.disable"}
	if diff := cmp.Diff(wantMethods, hello.Features.Methods); diff != "" {
		t.Errorf("features.methods (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"connect.challenge", "agent", "chat", "presence", "tick", "shutdown",
		"exec.approval.requested", "exec.approval.resolved", "sessions.changed", "session.message", "health", "models.snapshot", "chat.send_timing", "runs.watch", "sessions.watch"}, hello.Features.Events); diff != "" {
		t.Errorf("features.events (-want +got):\n%s", diff)
	}
	wantDefaults := &wire.SessionDefaults{DefaultAgentID: "main", ModelConfigured: true, Ownership: "sole",
		MainKey: "main", MainSessionKey: "agent:main:main", Scope: "per-sender"}
	if diff := cmp.Diff(wantDefaults, hello.Snapshot.SessionDefaults); diff != "" {
		t.Errorf("sessionDefaults (-want +got):\n%s", diff)
	}
	if !hello.Snapshot.Health.OK || hello.Snapshot.Health.TS == 0 || hello.Snapshot.Presence == nil {
		t.Errorf("snapshot = %+v", hello.Snapshot)
	}
	if diff := cmp.Diff(wire.HelloAuth{Method: "token", Role: "operator", Scopes: []string{wire.ScopeRead, wire.ScopeWrite}}, hello.Auth); diff != "" {
		t.Errorf("auth (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wire.HelloPolicy{MaxPayload: 26214400, MaxBufferedBytes: 52428800, TickIntervalMs: 30000,
		Attachments: &wire.AttachmentPolicy{MaxBytes: 20 << 20, MaxImageBytes: 6 << 20}}, hello.Policy); diff != "" {
		t.Errorf("policy (-want +got):\n%s", diff)
	}
	// Raw field presence that clients check.
	raw := payload(t, res)
	snap := raw["snapshot"].(map[string]any)
	for _, k := range []string{"presence", "health", "stateVersion", "uptimeMs", "sessionDefaults"} {
		if _, ok := snap[k]; !ok {
			t.Errorf("snapshot lacks %q", k)
		}
	}
	// The socket works after hello.
	c.ok(wire.MethodHealth, nil, nil)
}

func TestProtocolNegotiation(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, tt := range []struct{ min, max, want int }{{3, 3, 3}, {4, 4, 4}, {3, 4, 4}, {1, 9, 4}} {
		c := e.dial()
		c.expectEvent(wire.EventConnectChallenge)
		p := connectParams(testToken)
		p["minProtocol"], p["maxProtocol"] = tt.min, tt.max
		var hello wire.HelloOK
		c.ok(wire.MethodConnect, p, &hello)
		if hello.Protocol != tt.want {
			t.Errorf("[%d,%d] → protocol %d, want %d", tt.min, tt.max, hello.Protocol, tt.want)
		}
		c.close()
	}
}

func TestHandshakeRejected(t *testing.T) {
	tokenMismatch := "unauthorized: gateway token mismatch (use this gateway's gateway.auth.token or pair the device)"
	tests := []struct {
		name        string
		first       func() string // the first frame, raw
		wantCode    string
		wantMessage string
		wantDetails map[string]any
		wantClose   websocket.StatusCode
		noResponse  bool
	}{
		{
			name:        "first request not connect",
			first:       func() string { return `{"type":"req","id":"r1","method":"health"}` },
			wantCode:    "INVALID_REQUEST",
			wantMessage: "invalid handshake: first request must be connect",
			wantClose:   websocket.StatusPolicyViolation,
		},
		{
			name:        "wrong token",
			first:       func() string { return reqJSON("r1", "connect", connectParams("wrong")) },
			wantCode:    "INVALID_REQUEST",
			wantMessage: tokenMismatch,
			wantDetails: map[string]any{"code": "AUTH_TOKEN_MISMATCH", "authReason": "token_mismatch",
				"canRetryWithDeviceToken": false, "recommendedNextStep": "update_auth_credentials"},
			wantClose: websocket.StatusPolicyViolation,
		},
		{
			name: "wrong secret in the password field",
			first: func() string {
				p := connectParams("")
				p["auth"] = map[string]any{"password": "nope"}
				return reqJSON("r1", "connect", p)
			},
			wantCode: "INVALID_REQUEST", wantMessage: tokenMismatch, wantClose: websocket.StatusPolicyViolation,
			wantDetails: map[string]any{"code": "AUTH_TOKEN_MISMATCH", "authReason": "token_mismatch",
				"canRetryWithDeviceToken": false, "recommendedNextStep": "update_auth_credentials"},
		},
		{
			name: "no auth and no device",
			first: func() string {
				p := connectParams("")
				delete(p, "auth")
				return reqJSON("r1", "connect", p)
			},
			wantCode: "NOT_PAIRED", wantMessage: "device identity required",
			wantDetails: map[string]any{"code": "DEVICE_IDENTITY_REQUIRED"},
			wantClose:   websocket.StatusPolicyViolation,
		},
		{
			name: "protocol mismatch",
			first: func() string {
				p := connectParams(testToken)
				p["minProtocol"], p["maxProtocol"] = 1, 2
				return reqJSON("r1", "connect", p)
			},
			wantCode: "INVALID_REQUEST", wantMessage: "protocol mismatch",
			wantDetails: map[string]any{"code": "PROTOCOL_MISMATCH", "clientMinProtocol": 1.0, "clientMaxProtocol": 2.0,
				"expectedProtocol": 4.0, "minimumProbeProtocol": 3.0},
			wantClose: websocket.StatusProtocolError,
		},
		{
			name: "bad client id",
			first: func() string {
				p := connectParams(testToken)
				p["client"].(map[string]any)["id"] = "nope"
				return reqJSON("r1", "connect", p)
			},
			wantCode:    "INVALID_REQUEST",
			wantMessage: "invalid connect params: at /client/id: must be equal to one of the allowed values",
			wantClose:   websocket.StatusPolicyViolation,
		},
		{
			name:        "not a frame",
			first:       func() string { return `hello` },
			wantMessage: "invalid request frame",
			wantClose:   websocket.StatusPolicyViolation,
			noResponse:  true,
		},
	}
	e := newEnv(t, envOptions{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := e.with(t).dial()
			c.expectEvent(wire.EventConnectChallenge)
			var ch <-chan *wire.Frame
			if !tt.noResponse {
				c.mu.Lock()
				w := make(chan *wire.Frame, 1)
				c.waiters["r1"] = w
				c.mu.Unlock()
				ch = w
			}
			c.sendRaw(tt.first())
			if !tt.noResponse {
				res := c.await(ch)
				if res.OK || res.Error.Code != tt.wantCode || res.Error.Message != tt.wantMessage {
					t.Errorf("response = ok:%v %+v, want %s %q", res.OK, res.Error, tt.wantCode, tt.wantMessage)
				}
				if tt.wantDetails != nil {
					if diff := cmp.Diff(tt.wantDetails, details(t, res.Error)); diff != "" {
						t.Errorf("details (-want +got):\n%s", diff)
					}
				}
			}
			code, reason := c.closed()
			if code != tt.wantClose || reason != truncateReason(tt.wantMessage) {
				t.Errorf("closed with %d %q, want %d %q", code, reason, tt.wantClose, tt.wantMessage)
			}
		})
	}
}

func reqJSON(id, method string, params any) string {
	b, _ := json.Marshal(params)
	f := &wire.Frame{Type: wire.FrameRequest, ID: id, Method: method, Params: b}
	out, _ := f.AppendJSON(nil)
	return string(out)
}

func TestAuthNoneOnLoopback(t *testing.T) {
	e := newEnv(t, envOptions{config: `{gateway: {auth: {mode: "none"}}}`})
	c := e.dial()
	c.expectEvent(wire.EventConnectChallenge)
	p := connectParams("")
	delete(p, "auth")
	var hello wire.HelloOK
	c.ok(wire.MethodConnect, p, &hello)
	if hello.Auth.Method != "none" {
		t.Errorf("auth = %+v", hello.Auth)
	}
}

func TestAuthPassword(t *testing.T) {
	e := newEnv(t, envOptions{config: `{gateway: {auth: {mode: "password", password: "s3cret"}}}`})
	c := e.dial()
	c.expectEvent(wire.EventConnectChallenge)
	p := connectParams("")
	p["auth"] = map[string]any{"password": "s3cret"}
	var hello wire.HelloOK
	c.ok(wire.MethodConnect, p, &hello)
	if hello.Auth.Method != "password" {
		t.Errorf("auth = %+v", hello.Auth)
	}

	c2 := e.dial()
	c2.expectEvent(wire.EventConnectChallenge)
	p["auth"] = map[string]any{"password": "wrong"}
	err := c2.fail(wire.MethodConnect, p)
	if !strings.HasPrefix(err.Message, "unauthorized: gateway password mismatch") {
		t.Errorf("error = %+v", err)
	}
}

func TestAuthNoneRefusedOffLoopback(t *testing.T) {
	if isLoopback(nil) {
		t.Fatal("nil address counted as loopback")
	}
	for addr, want := range map[string]bool{"127.0.0.1:80": true, "[::1]:80": true, "10.0.0.1:80": false, "0.0.0.0:1": false} {
		if got := isLoopback(fakeAddr(addr)); got != want {
			t.Errorf("isLoopback(%s) = %v", addr, got)
		}
	}
}

type fakeAddr string

func (a fakeAddr) Network() string { return "tcp" }
func (a fakeAddr) String() string  { return string(a) }

func TestHandshakeTimeout(t *testing.T) {
	e := newEnv(t, envOptions{gateway: func(c *Config) { c.HandshakeTimeout = 50 * time.Millisecond }})
	c := e.dial()
	code, reason := c.closed()
	if code != websocket.StatusPolicyViolation || reason != "handshake timeout" {
		t.Errorf("closed with %d %q", code, reason)
	}
}

func TestOversizedFrame(t *testing.T) {
	e := newEnv(t, envOptions{gateway: func(c *Config) { c.MaxPayload = 4096 }})

	// Before connect the limit is 64 KiB.
	c := e.dial()
	c.expectEvent(wire.EventConnectChallenge)
	c.write(`{"type":"req","id":"1","method":"connect","params":{"pad":"` + strings.Repeat("x", 70<<10) + `"}}`) // the server may reset mid-write
	if code, _ := c.closed(); code != websocket.StatusMessageTooBig {
		t.Errorf("pre-connect oversized frame closed with %d, want 1009", code)
	}

	// After hello-ok, policy.maxPayload applies.
	c = e.operator()
	c.ok(wire.MethodHealth, nil, nil) // 4 KiB is plenty for normal frames
	c.write(`{"type":"req","id":"big","method":"health","params":{"pad":"` + strings.Repeat("x", 5000) + `"}}`)
	if code, _ := c.closed(); code != websocket.StatusMessageTooBig {
		t.Errorf("oversized frame closed with %d, want 1009", code)
	}
}

func TestUnknownMethodKeepsSocketOpen(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	err := c.fail("unknown.method", nil)
	if err.Code != "INVALID_REQUEST" || err.Message != "unknown method: unknown.method" {
		t.Errorf("error = %+v", err)
	}
	c.ok(wire.MethodHealth, nil, nil)
	// Malformed request frames are answered by id; unknown frame types are
	// ignored.
	c.sendRaw(`{"type":"hello","id":"x"}`)
	c.mu.Lock()
	ch := make(chan *wire.Frame, 1)
	c.waiters["bad"] = ch
	c.mu.Unlock()
	c.sendRaw(`{"type":"req","id":"bad","method":"health","extra":1}`)
	res := c.await(ch)
	if res.OK || res.Error.Message != "invalid request frame: at root: unexpected property 'extra'" {
		t.Errorf("response = %+v", res.Error)
	}
	c.ok(wire.MethodHealth, nil, nil)
}

func TestTickEvents(t *testing.T) {
	e := newEnv(t, envOptions{gateway: func(c *Config) { c.TickInterval = 20 * time.Millisecond }})
	c := e.operator()
	var last int64
	for i := range 3 {
		f := c.expectEvent(wire.EventTick)
		var tick wire.Tick
		if err := json.Unmarshal(f.Payload, &tick); err != nil || tick.TS == 0 {
			t.Fatalf("tick payload %s", f.Payload)
		}
		if f.Seq == nil || *f.Seq <= last {
			t.Fatalf("tick %d seq = %v after %d", i, f.Seq, last)
		}
		last = *f.Seq
	}
}

func TestShutdown(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	if err := e.gw.Close(); err != nil {
		t.Fatal(err)
	}
	f := c.expectEvent(wire.EventShutdown)
	if p := payload(t, f); p["reason"] == "" || f.Seq == nil || *f.Seq != 1 {
		t.Errorf("shutdown event = %s seq %v", f.Payload, f.Seq)
	}
	if code, _ := c.closed(); code != websocket.StatusServiceRestart {
		t.Errorf("closed with %d, want 1012", code)
	}
	if err := e.gw.Close(); err == nil {
		t.Error("second Close returned nil")
	}
}
