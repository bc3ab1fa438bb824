package gateway

import (
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// TestSessionsCreateWithMessage: sessions.create as the reference's
// Control UI calls it from its "New conversation" page, with the first
// message, makes the session and starts its first run.
func TestSessionsCreateWithMessage(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()

	var res wire.SessionsEntryResult
	c.ok(wire.MethodSessionsCreate, map[string]any{"agentId": "main", "message": "first words", "idempotencyKey": "sc-1",
		"displayName": "A new chat", "thinkingLevel": "low", "parentSessionKey": "agent:main:main", "emitCommandHooks": true}, &res)
	if !res.OK || !strings.HasPrefix(res.Key, "agent:main:chat:") || res.SessionID == "" || res.SessionID != res.Entry.SessionID ||
		!res.RunStarted || res.RunID != "sc-1" || res.Status != "started" || res.RunError != nil ||
		res.Entry.DisplayName != "A new chat" || res.Entry.ThinkingLevel != "low" {
		t.Fatalf("sessions.create with a message = %+v", res)
	}
	c.ok(wire.MethodAgentWait, map[string]any{"runId": "sc-1", "timeoutMs": 10000}, nil)
	var hist wire.ChatHistoryResult
	c.ok(wire.MethodChatHistory, map[string]any{"sessionKey": res.Key}, &hist)
	if len(hist.Messages) != 2 || !strings.Contains(string(hist.Messages[0]), "first words") {
		t.Errorf("the new session's transcript: %s", hist.Messages)
	}

	// Without a message nothing runs; without an idempotency key the run
	// gets a generated id.
	var quiet wire.SessionsEntryResult
	c.ok(wire.MethodSessionsCreate, map[string]any{"agentId": "main"}, &quiet)
	if quiet.RunStarted || quiet.RunID != "" || quiet.SessionID == "" {
		t.Errorf("sessions.create without a message = %+v", quiet)
	}
	var gen wire.SessionsEntryResult
	c.ok(wire.MethodSessionsCreate, map[string]any{"message": "hello"}, &gen)
	if !gen.RunStarted || gen.RunID == "" {
		t.Errorf("sessions.create with a message and no idempotencyKey = %+v", gen)
	}

	for _, tc := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"model": "bad-model"}, "invalid model: bad-model"},
		{map[string]any{"thinkingLevel": "loud"}, "invalid thinkingLevel"},
		{map[string]any{"bogusField": 1}, "unexpected property 'bogusField'"},
	} {
		if err := c.fail(wire.MethodSessionsCreate, tc.params); !strings.Contains(err.Message, tc.want) {
			t.Errorf("sessions.create %v: %+v, want %q", tc.params, err, tc.want)
		}
	}
}

// TestSessionsCreateRunRefused: a first message the send policy refuses
// leaves the session made and says why no run started.
func TestSessionsCreateRunRefused(t *testing.T) {
	e := newEnv(t, envOptions{config: `{
		gateway: {auth: {mode: "token", token: "` + testToken + `"}},
		session: {sendPolicy: {default: "deny"}},
	}`})
	c := e.operator()
	var res wire.SessionsEntryResult
	c.ok(wire.MethodSessionsCreate, map[string]any{"message": "hello"}, &res)
	if !res.OK || res.Key == "" || res.RunStarted || res.RunError == nil || res.RunError.Code != wire.CodeInvalidRequest {
		t.Fatalf("sessions.create with a refused message = %+v", res)
	}
	var desc wire.SessionsDescribeResult
	c.ok(wire.MethodSessionsDescribe, map[string]any{"key": res.Key}, &desc)
	if desc.Session == nil {
		t.Error("the session was not kept")
	}
}
