package gateway

import (
	"testing"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// TestControlUIFieldsAccepted: what the reference's Control UI (2026.9.6)
// sends beyond Switchboard's own fields is accepted and ignored, not
// refused by the strict schemas.
func TestControlUIFieldsAccepted(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.dial()
	c.expectEvent(wire.EventConnectChallenge)
	params := connectParams(testToken, wire.ScopeRead, wire.ScopeWrite, wire.ScopeAdmin)
	params["client"] = map[string]any{"id": "openclaw-control-ui", "version": "2026.9.6", "platform": "web", "mode": "webchat",
		"buildId": "eb377ac", "timeZone": "Europe/Berlin"}
	params["modelCatalog"] = map[string]any{"version": 1}
	if res := c.call(wire.MethodConnect, params); !res.OK {
		t.Fatalf("connect with the Control UI's fields: %+v", res.Error)
	}
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "hi", "idempotencyKey": "cu-1",
		"expectedLeafEntryId": nil, "fastMode": "auto", "intent": "chat"}, nil)
	var w map[string]any
	c.ok(wire.MethodAgentWait, map[string]any{"runId": "cu-1", "timeoutMs": 10000}, &w)
	c.ok(wire.MethodSessionsPatch, map[string]any{"key": "main", "label": "pinned one", "expectedMarkedUnreadAt": 0, "pinned": true}, nil)
	var list wire.SessionsListResult
	c.ok(wire.MethodSessionsList, map[string]any{"includePeople": true, "ownerFirst": true, "limit": 5}, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].Label != "pinned one" {
		t.Errorf("sessions.list = %+v", list)
	}
}
