package gateway

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// TestHealthEvents: a UI connection gets the health snapshot right after
// hello-ok and then every HealthInterval, the same as the health method
// answers, so that it follows the gateway without polling.
func TestHealthEvents(t *testing.T) {
	e := newEnv(t, envOptions{gateway: func(c *Config) { c.HealthInterval = 50 * time.Millisecond }})
	c := e.dial()
	c.expectEvent(wire.EventConnectChallenge)
	params := connectParams(testToken, wire.ScopeRead, wire.ScopeWrite)
	params["client"] = map[string]any{"id": "openclaw-control-ui", "version": "test", "platform": "linux", "mode": "webchat"}
	if res := c.call(wire.MethodConnect, params); !res.OK {
		t.Fatalf("connect: %+v", res.Error)
	}

	type health struct {
		OK             bool
		DefaultAgentID string
		Sessions       struct{ Count int }
	}
	next := func() health {
		t.Helper()
		var h health
		if err := json.Unmarshal(c.expectEvent(wire.EventHealth).Payload, &h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	if h := next(); !h.OK || h.DefaultAgentID != "main" || h.Sessions.Count != 0 {
		t.Errorf("first health event = %+v", h)
	}
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "hi", "idempotencyKey": "he-1"}, nil)
	c.ok(wire.MethodAgentWait, map[string]any{"runId": "he-1", "timeoutMs": 10000}, nil)
	// A later snapshot counts the new session.
	deadline := time.Now().Add(10 * time.Second)
	for next().Sessions.Count != 1 {
		if time.Now().After(deadline) {
			t.Fatal("no health event counted the session")
		}
	}
	var direct health
	c.ok(wire.MethodHealth, map[string]any{}, &direct)
	if direct.Sessions.Count != 1 || direct.DefaultAgentID != "main" {
		t.Errorf("health method = %+v", direct)
	}
}
