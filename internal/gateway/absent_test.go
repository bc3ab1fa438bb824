package gateway

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/store"
)

// waitChatFinal skips events until the chat event of a run of key ends.
func waitChatFinal(t *testing.T, c *client, key string) wire.ChatEvent {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		f := c.expectEvent(wire.EventChat)
		var ev wire.ChatEvent
		if err := json.Unmarshal(f.Payload, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.SessionKey == key && ev.State == "final" {
			return ev
		}
	}
	t.Fatalf("no final chat event for %s", key)
	return wire.ChatEvent{}
}

// TestWakeAndLastHeartbeat: wake runs the system event as a turn of the
// main session; when it ends, last-heartbeat returns it (null before).
func TestWakeAndLastHeartbeat(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	if r := c.call(wire.MethodLastHeartbeat, nil); !r.OK || string(r.Payload) != "null" {
		t.Fatalf("last-heartbeat before any wake = %+v %s", r.Error, r.Payload)
	}
	var ok wire.OKResult
	c.ok(wire.MethodWake, map[string]any{"mode": "now", "text": "deploy finished"}, &ok)
	if !ok.OK {
		t.Fatalf("wake = %+v", ok)
	}
	waitChatFinal(t, c, "agent:main:main")
	var hb heartbeatEvent
	c.ok(wire.MethodLastHeartbeat, nil, &hb)
	if hb.Status != "sent" || hb.SessionKey != "agent:main:main" || hb.Preview != "echo: System: deploy finished" || hb.TS == 0 {
		t.Errorf("last-heartbeat = %+v", hb)
	}
	// Bad input is refused with the reference's checks and runs nothing.
	for _, params := range []map[string]any{
		{"mode": "now"},
		{"mode": "later", "text": "x"},
		{"mode": "now", "text": "x", "agentId": "nobody"},
		{"mode": "now", "text": "x", "sessionKey": "agent:main:subagent:abc"},
		{"mode": "now", "text": "x", "agentId": "main", "sessionKey": "agent:ops:main"},
	} {
		if r := c.call(wire.MethodWake, params); r.OK || r.Error.Code != wire.CodeInvalidRequest {
			t.Errorf("wake %v = %+v, want INVALID_REQUEST", params, r)
		}
	}
	if r := e.connect(wire.ScopeRead).call(wire.MethodWake, map[string]any{"mode": "now", "text": "x"}); r.OK || r.Error.Code != wire.CodeForbidden {
		t.Errorf("wake with operator.read = %+v, want FORBIDDEN", r)
	}
}

// TestSessionsArchive: sessions.patch archived (operator.write, as the
// reference allows) archives a session: sessions.list leaves it out
// unless asked, its row says archived; the main session cannot be.
func TestSessionsArchive(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.connect(wire.ScopeRead, wire.ScopeWrite)
	const key = "agent:main:scratch"
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": key, "message": "hi", "idempotencyKey": "a1"}, nil)
	waitChatFinal(t, c, key)

	var list wire.SessionsListResult
	c.ok(wire.MethodSessionsList, map[string]any{}, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].Status != "done" || list.Sessions[0].Archived {
		t.Fatalf("sessions.list before archiving = %+v", list.Sessions)
	}
	var desc wire.SessionsDescribeResult
	c.ok(wire.MethodSessionsDescribe, map[string]any{"key": key}, &desc)
	if desc.Session == nil || desc.Session.Status != "done" {
		t.Errorf("sessions.describe = %+v", desc.Session)
	}
	var patched struct {
		OK    bool
		Entry map[string]any
	}
	c.ok(wire.MethodSessionsPatch, map[string]any{"key": key, "expectedSessionId": list.Sessions[0].SessionID, "archived": true}, &patched)
	if !patched.OK || patched.Entry["archived"] != true || patched.Entry["archivedAt"] == nil {
		t.Fatalf("sessions.patch archived = %+v", patched)
	}
	for _, tc := range []struct {
		archived any
		want     int
	}{{nil, 0}, {false, 0}, {true, 1}, {"all", 1}} {
		params := map[string]any{}
		if tc.archived != nil {
			params["archived"] = tc.archived
		}
		var l wire.SessionsListResult
		c.ok(wire.MethodSessionsList, params, &l)
		if len(l.Sessions) != tc.want {
			t.Errorf("sessions.list archived=%v: %d rows, want %d", tc.archived, len(l.Sessions), tc.want)
		}
	}
	var boards wire.SessionsListResult
	c.ok(wire.MethodSessionsList, map[string]any{"hasBoard": true, "archived": "all"}, &boards)
	if len(boards.Sessions) != 0 || boards.HasMore {
		t.Errorf("sessions.list hasBoard = %+v", boards)
	}
	if r := c.call(wire.MethodSessionsList, map[string]any{"archived": "some"}); r.OK {
		t.Errorf("sessions.list archived=some = %s", r.Payload)
	}
	var restored struct{ Entry map[string]any }
	c.ok(wire.MethodSessionsPatch, map[string]any{"key": key, "archived": false}, &restored)
	if restored.Entry["archived"] != nil || restored.Entry["archivedAt"] != nil {
		t.Errorf("sessions.patch archived=false = %+v", restored.Entry)
	}
	if r := c.call(wire.MethodSessionsPatch, map[string]any{"key": "main", "archived": true}); r.OK || r.Error.Message != "Cannot archive an agent's main session." {
		t.Errorf("archiving main = %+v", r)
	}
}

// TestReferenceViewsOfSwitchboard: the hooks, diagnostics, themes and
// config schema answers.
func TestReferenceViewsOfSwitchboard(t *testing.T) {
	e := newEnv(t, envOptions{config: `{
		gateway: {auth: {mode: "token", token: "` + testToken + `"}},
		hooks: {internal: {entries: {
			audit: {command: "logger compacted", events: ["session:compact:after"]},
			idle: {enabled: false, command: "true", events: ["command:new"]},
		}}},
	}`})
	c := e.operator()
	var hooks wire.HooksStatusResult
	c.ok(wire.MethodHooksStatus, map[string]any{}, &hooks)
	if len(hooks.Hooks) != 2 || hooks.WorkspaceDir == "" {
		t.Fatalf("hooks.status = %+v", hooks)
	}
	if a, i := hooks.Hooks[0], hooks.Hooks[1]; a.Name != "audit" || !a.Loadable || a.Events[0] != "session:compact:after" ||
		i.Name != "idle" || i.Loadable || i.BlockedReason != "disabled" {
		t.Errorf("hooks.status hooks = %+v", hooks.Hooks)
	}
	if r := c.call(wire.MethodHooksStatus, map[string]any{"agentId": "nobody"}); r.OK {
		t.Errorf("hooks.status of an unknown agent = %s", r.Payload)
	}
	var stab wire.DiagnosticsStabilityResult
	c.ok(wire.MethodDiagnosticsStability, map[string]any{"limit": 10}, &stab)
	if stab.Capacity != wire.MaxDiagnosticsLimit || stab.Events == nil || stab.GeneratedAt == "" {
		t.Errorf("diagnostics.stability = %+v", stab)
	}
	if r := c.call(wire.MethodDiagnosticsStability, map[string]any{"limit": 0}); r.OK {
		t.Errorf("diagnostics.stability limit 0 = %s", r.Payload)
	}
	var themes wire.ThemesListResult
	c.ok(wire.MethodThemesList, nil, &themes)
	if themes.Current.ID != "claw" || themes.Theme.ID != "claw" || len(themes.Themes) != len(controlUIThemes) {
		t.Errorf("themes.list = %+v", themes)
	}
	// sessions.usage's aggregates have every member the Control UI's
	// Usage view reads.
	var usage struct{ Aggregates map[string]json.RawMessage }
	c.ok(wire.MethodSessionsUsage, map[string]any{}, &usage)
	for _, k := range []string{"messages", "tools", "byAgent", "byModel", "byProvider", "byChannel", "byCreator", "costDaily", "daily"} {
		if v, ok := usage.Aggregates[k]; !ok || string(v) == "null" {
			t.Errorf("sessions.usage aggregates.%s = %s", k, v)
		}
	}
	var schema wire.ConfigSchemaResult
	c.ok(wire.MethodConfigSchema, nil, &schema)
	props, _ := schema.Schema["properties"].(map[string]any)
	gw, _ := props["gateway"].(map[string]any)
	if schema.Version == "" || gw["type"] != "object" || props["hooks"] == nil {
		t.Errorf("config.schema: version %q, gateway %v", schema.Version, gw)
	}
	var look struct {
		Path     string
		Schema   map[string]any
		Children []struct {
			Key, Path   string
			HasChildren bool
		}
	}
	c.ok(wire.MethodConfigSchemaLookup, map[string]any{"path": "hooks.internal"}, &look)
	if look.Path != "hooks.internal" || look.Schema["type"] != "object" || look.Schema["properties"] != nil ||
		len(look.Children) != 2 || look.Children[0].Path != "hooks.internal.enabled" || !look.Children[1].HasChildren {
		t.Errorf("config.schema.lookup hooks.internal = %+v", look)
	}
	if r := c.call(wire.MethodConfigSchemaLookup, map[string]any{"path": "hooks.nothing"}); r.OK || r.Error.Message != "config schema path not found" {
		t.Errorf("config.schema.lookup of a missing path = %+v", r)
	}
	// A plugin's config (the Control UI's memory view asks for memory-core's)
	// is an opaque object: Switchboard has no plugins.
	c.ok(wire.MethodConfigSchemaLookup, map[string]any{"path": "plugins.entries.memory-core.config"}, &look)
	if look.Path != "plugins.entries.memory-core.config" || look.Schema["type"] != "object" || len(look.Children) != 0 {
		t.Errorf("config.schema.lookup of a plugin's config = %+v", look)
	}
	if r := c.call(wire.MethodConfigSchemaLookup, map[string]any{"path": "plugins.nothing"}); r.OK {
		t.Errorf("config.schema.lookup plugins.nothing = %+v", r)
	}
}

// TestRowChatTypeAndArchived: a row never carries chatType "unknown" (not
// in the reference's schema), and archived follows the entry's
// archivedAt.
func TestRowChatTypeAndArchived(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	for _, tc := range []struct {
		chatType, want string
		archived       bool
	}{{"unknown", "", false}, {"direct", "direct", true}, {"", "", false}} {
		sess := &store.Session{Key: "agent:main:x", ChatType: tc.chatType, Extra: json.RawMessage(`{"origin":"irc"}`)}
		if err := setArchived(sess, tc.archived, now); err != nil {
			t.Fatal(err)
		}
		r := row(sess)
		if r.ChatType != tc.want || r.Archived != tc.archived || string(r.Extra["origin"]) != `"irc"` {
			t.Errorf("row(chatType %q, archived %v) = chatType %q archived %v extra %s", tc.chatType, tc.archived, r.ChatType, r.Archived, r.Extra)
		}
		if tc.archived && string(r.Extra[archivedAtField]) != "1800000000000" {
			t.Errorf("archivedAt = %s", r.Extra[archivedAtField])
		}
	}
}
