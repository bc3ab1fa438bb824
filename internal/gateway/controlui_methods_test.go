package gateway

import (
	"encoding/json"
	"testing"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// TestControlUIMethods: the methods the reference's Control UI calls when
// its chat view opens answer with what it reads.
func TestControlUIMethods(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.connect(wire.ScopeRead, wire.ScopeWrite)

	// sessions.subscribe with {} only acknowledges; with list params it
	// returns the list too.
	var sub map[string]any
	c.ok(wire.MethodSessionsSubscribe, map[string]any{}, &sub)
	if sub["subscribed"] != true || sub["list"] != nil {
		t.Errorf("sessions.subscribe {} = %v", sub)
	}

	// Before the session exists: describe says null, startup an empty page.
	var desc wire.SessionsDescribeResult
	c.ok(wire.MethodSessionsDescribe, map[string]any{"key": "agent:main:main"}, &desc)
	if desc.Session != nil {
		t.Errorf("sessions.describe of a missing session = %+v", desc.Session)
	}
	var hist wire.ChatHistoryResult
	c.ok(wire.MethodChatStartup, map[string]any{"sessionKey": "agent:main:main", "limit": 80, "maxBytes": 262144}, &hist)
	if len(hist.Messages) != 0 {
		t.Errorf("chat.startup of a missing session: %d messages", len(hist.Messages))
	}

	// A turn: subscribers see sessions.changed at its start and end.
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "hi", "idempotencyKey": "cu-m1"}, nil)
	for _, reason := range []string{"agent.run.started", "lifecycle"} {
		ev := c.expectEvent(wire.EventSessionsChanged)
		var p struct {
			SessionKey, Reason string
			Session            *wire.SessionRow
		}
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if p.SessionKey != "agent:main:main" || p.Reason != reason || p.Session == nil || p.Session.Key != p.SessionKey {
			t.Errorf("sessions.changed = %s, want %s of agent:main:main with its row", ev.Payload, reason)
		}
	}
	c.ok(wire.MethodSessionsDescribe, map[string]any{"key": "main"}, &desc)
	if desc.Session == nil || desc.Session.Key != "agent:main:main" || desc.Session.SessionID == "" {
		t.Errorf("sessions.describe main = %+v", desc.Session)
	}
	c.ok(wire.MethodSessionsDescribe, map[string]any{"key": "main", "includeLastMessage": true}, &desc)
	if desc.Session == nil || desc.Session.LastMessagePreview == "" {
		t.Errorf("sessions.describe includeLastMessage = %+v", desc.Session)
	}
	var list wire.SessionsListResult
	c.ok(wire.MethodSessionsList, map[string]any{"includeLastMessage": true}, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].LastMessagePreview != desc.Session.LastMessagePreview {
		t.Errorf("sessions.list includeLastMessage = %+v, want the preview %q", list.Sessions, desc.Session.LastMessagePreview)
	}
	c.ok(wire.MethodChatStartup, map[string]any{"sessionKey": "agent:main:main", "limit": 80}, &hist)
	if len(hist.Messages) != 2 || hist.SessionID != desc.Session.SessionID {
		t.Errorf("chat.startup: %d messages, sessionId %q (want 2, %q)", len(hist.Messages), hist.SessionID, desc.Session.SessionID)
	}
	c.ok(wire.MethodSessionsSubscribe, map[string]any{"limit": 5}, &sub)
	if list, _ := sub["list"].(map[string]any); list == nil || list["count"] != float64(1) {
		t.Errorf("sessions.subscribe with list params = %v", sub)
	}

	// Session edits are announced too.
	c.ok(wire.MethodSessionsPatch, map[string]any{"key": "main", "label": "renamed"}, nil)
	ev := c.expectEvent(wire.EventSessionsChanged)
	var changed struct {
		Reason  string
		Session *wire.SessionRow
	}
	if err := json.Unmarshal(ev.Payload, &changed); err != nil {
		t.Fatal(err)
	}
	if changed.Reason != "patch" || changed.Session == nil || changed.Session.Label != "renamed" {
		t.Errorf("sessions.changed after sessions.patch = %s", ev.Payload)
	}

	var id wire.AgentIdentityResult
	c.ok(wire.MethodAgentIdentityGet, map[string]any{"agentId": "main"}, &id)
	if id.AgentID != "main" || id.Name == "" {
		t.Errorf("agent.identity.get = %+v", id)
	}
	var auth wire.ModelsAuthStatusResult
	c.ok(wire.MethodModelsAuthStatus, map[string]any{"agentId": "main"}, &auth)
	if auth.Providers == nil || auth.TS == 0 {
		t.Errorf("models.authStatus = %+v", auth)
	}

	// What Switchboard lacks answers empty, in the reference's shape.
	var card wire.ProgressCardResult
	c.ok(wire.MethodProgressCardGet, map[string]any{"sessionKey": "agent:main:main"}, &card)
	if card.Card != nil {
		t.Errorf("progressCard.get = %+v", card)
	}
	c.ok(wire.MethodSessionsUnsubscribe, map[string]any{}, nil)
}
