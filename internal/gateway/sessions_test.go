package gateway

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/store"
)

func keysOf(rows []wire.SessionRow) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Key)
	}
	return out
}

func TestSessionsMethods(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()

	// Sessions made by runs and by sessions.create.
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "hi", "idempotencyKey": "m-1"}, nil)
	c.runEvents("m-1")
	var created wire.SessionsEntryResult
	c.ok(wire.MethodSessionsCreate, map[string]any{"key": "discord:group:dev", "label": "Dev room"}, &created)
	if created.Key != "agent:main:discord:group:dev" || created.Entry.Kind != "group" || created.Entry.Label != "Dev room" ||
		created.Entry.SessionID == "" || created.Entry.Channel != "discord" || created.Entry.UpdatedAt == 0 {
		t.Errorf("sessions.create = %+v", created)
	}
	var gen wire.SessionsEntryResult
	c.ok(wire.MethodSessionsCreate, nil, &gen)
	if !strings.HasPrefix(gen.Key, "agent:main:chat:") {
		t.Errorf("generated key %q", gen.Key)
	}
	if err := c.fail(wire.MethodSessionsCreate, map[string]any{"key": "discord:group:dev"}); err.Message != "session already exists: agent:main:discord:group:dev" {
		t.Errorf("duplicate create: %+v", err)
	}
	if err := c.fail(wire.MethodSessionsCreate, map[string]any{"agentId": "ghost"}); err.Message != "agent not found: ghost" {
		t.Errorf("unknown agent: %+v", err)
	}
	ctx := context.Background()
	for _, s := range []*store.Session{
		{Key: "global", SessionID: "g"},
		{Key: "agent:main:cron:job:run:1", SessionID: "cr"},
		{Key: "agent:main:subagent:abc", SessionID: "sub", SpawnedBy: "agent:main:main"},
	} {
		if err := e.store.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}

	// sessions.list
	var list wire.SessionsListResult
	c.ok(wire.MethodSessionsList, nil, &list)
	got := keysOf(list.Sessions)
	for _, want := range []string{"agent:main:main", "agent:main:discord:group:dev", "agent:main:subagent:abc", gen.Key} {
		if !contains(got, want) {
			t.Errorf("sessions.list lacks %q: %v", want, got)
		}
	}
	if contains(got, "global") || contains(got, "agent:main:cron:job:run:1") {
		t.Errorf("sessions.list shows reserved or cron-run keys: %v", got)
	}
	if list.Count != len(list.Sessions) || list.Path == "" || list.TS == 0 || list.Defaults.Model != "echo-1" || list.Defaults.ModelProvider != "scripted" {
		t.Errorf("sessions.list header = %+v", list)
	}
	c.ok(wire.MethodSessionsList, map[string]any{"includeGlobal": true}, &list)
	if !contains(keysOf(list.Sessions), "global") {
		t.Errorf("includeGlobal: %v", keysOf(list.Sessions))
	}
	c.ok(wire.MethodSessionsList, map[string]any{"spawnedBy": "main"}, &list)
	if diff := cmp.Diff([]string{"agent:main:subagent:abc"}, keysOf(list.Sessions)); diff != "" {
		t.Errorf("spawnedBy (-want +got):\n%s", diff)
	}
	c.ok(wire.MethodSessionsList, map[string]any{"label": "Dev room"}, &list)
	if diff := cmp.Diff([]string{"agent:main:discord:group:dev"}, keysOf(list.Sessions)); diff != "" {
		t.Errorf("label (-want +got):\n%s", diff)
	}
	c.ok(wire.MethodSessionsList, map[string]any{"search": "DISCORD"}, &list)
	if diff := cmp.Diff([]string{"agent:main:discord:group:dev"}, keysOf(list.Sessions)); diff != "" {
		t.Errorf("search (-want +got):\n%s", diff)
	}
	c.ok(wire.MethodSessionsList, map[string]any{"limit": 1}, &list)
	if list.Count != 1 || !list.HasMore || list.NextOffset == nil || *list.NextOffset != 1 {
		t.Errorf("limit 1 = %+v", list)
	}
	var page2 wire.SessionsListResult
	c.ok(wire.MethodSessionsList, map[string]any{"limit": 1, "offset": 1}, &page2)
	if page2.Count != 1 || page2.Sessions[0].Key == list.Sessions[0].Key {
		t.Errorf("offset 1 = %v after %v", keysOf(page2.Sessions), keysOf(list.Sessions))
	}
	c.ok(wire.MethodSessionsList, map[string]any{"agentId": "other"}, &list)
	if list.Count != 0 {
		t.Errorf("agentId other: %v", keysOf(list.Sessions))
	}
	c.ok(wire.MethodSessionsList, map[string]any{"activeMinutes": 5}, &list)
	if list.Count == 0 {
		t.Error("activeMinutes 5 shows nothing")
	}

	// sessions.resolve
	mainRow := rowByKey(t, c, "agent:main:main")
	resolveTests := []struct {
		params  map[string]any
		wantKey string
		wantErr string
	}{
		{map[string]any{"key": "main"}, "agent:main:main", ""},
		{map[string]any{"key": "discord:group:dev"}, "agent:main:discord:group:dev", ""},
		{map[string]any{"sessionId": mainRow.SessionID}, "agent:main:main", ""},
		{map[string]any{"label": "Dev room"}, "agent:main:discord:group:dev", ""},
		{map[string]any{"key": "nope"}, "", "No session found: nope"},
		{map[string]any{"sessionId": "00000000-0000-0000-0000-000000000000"}, "", "No session found: 00000000-0000-0000-0000-000000000000"},
		{map[string]any{"label": "ghost"}, "", "No session found with label: ghost"},
		{map[string]any{"label": "  "}, "", "invalid label: empty"},
		{map[string]any{"label": strings.Repeat("x", 65)}, "", "invalid label: too long (max 64)"},
		{map[string]any{"key": "main", "label": "x"}, "", "Provide either key, sessionId, or label (not multiple)"},
		{map[string]any{}, "", "Either key, sessionId, or label is required"},
	}
	for _, tt := range resolveTests {
		f := c.call(wire.MethodSessionsResolve, tt.params)
		if tt.wantErr != "" {
			if f.OK || f.Error.Code != "INVALID_REQUEST" || f.Error.Message != tt.wantErr {
				t.Errorf("resolve %v = ok:%v %+v, want %q", tt.params, f.OK, f.Error, tt.wantErr)
			}
			continue
		}
		res := decodeAs[wire.SessionsResolveResult](t, f)
		if !f.OK || res.Key != tt.wantKey || !res.OK {
			t.Errorf("resolve %v = %s, want %q", tt.params, f.Payload, tt.wantKey)
		}
	}
	// A label is unique within an agent's sessions: another session of
	// the agent cannot take it, through sessions.patch or
	// sessions.create, and nothing is written.
	for _, tt := range []struct {
		method string
		params map[string]any
	}{
		{wire.MethodSessionsPatch, map[string]any{"key": "twin", "label": "Dev room"}},
		{wire.MethodSessionsPatch, map[string]any{"key": "twin", "label": " Dev room ", "thinkingLevel": "high"}},
		{wire.MethodSessionsCreate, map[string]any{"key": "twin", "label": "Dev room"}},
	} {
		if err := c.fail(tt.method, tt.params); err.Code != "INVALID_REQUEST" || err.Message != "label already in use: Dev room" {
			t.Errorf("%s %v: %+v", tt.method, tt.params, err)
		}
	}
	if _, err := e.store.GetSession(ctx, "agent:main:twin"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused label left a session: %v", err)
	}
	// The owner may set it again; another agent's session may have it; a
	// label its owner gave up is free.
	c.ok(wire.MethodSessionsPatch, map[string]any{"key": "discord:group:dev", "label": "Dev room"}, nil)
	c.ok(wire.MethodSessionsPatch, map[string]any{"key": "agent:other:dev", "label": "Dev room"}, nil)
	c.ok(wire.MethodSessionsPatch, map[string]any{"key": "discord:group:dev", "label": nil}, nil)
	c.ok(wire.MethodSessionsCreate, map[string]any{"key": "twin", "label": "Dev room"}, nil)
	c.ok(wire.MethodSessionsPatch, map[string]any{"key": "twin", "label": nil}, nil)
	c.ok(wire.MethodSessionsPatch, map[string]any{"key": "discord:group:dev", "label": "Dev room"}, nil)
	if err := e.store.DeleteSession(ctx, "agent:other:dev", true); err != nil {
		t.Fatal(err)
	}
	// Duplicate labels (written before labels were checked) and shared
	// session ids are ambiguous.
	if err := e.store.CreateSession(ctx, &store.Session{Key: "agent:main:twin2", SessionID: "s-twin2", AgentID: "main", Label: "Dev room"}); err != nil {
		t.Fatal(err)
	}
	if err := c.fail(wire.MethodSessionsResolve, map[string]any{"label": "Dev room"}); !strings.HasPrefix(err.Message, "Multiple sessions found with label: Dev room (") {
		t.Errorf("ambiguous label: %+v", err)
	}
	if err := e.store.CreateSession(ctx, &store.Session{Key: "agent:main:clone", SessionID: mainRow.SessionID}); err != nil {
		t.Fatal(err)
	}
	err := c.fail(wire.MethodSessionsResolve, map[string]any{"sessionId": mainRow.SessionID})
	if want := "Multiple sessions found for sessionId: " + mainRow.SessionID + " (agent:main:clone, agent:main:main)"; err.Message != want {
		t.Errorf("shared session id: %q, want %q", err.Message, want)
	}

	// sessions.patch
	var patched wire.SessionsPatchResult
	c.ok(wire.MethodSessionsPatch, map[string]any{"key": "main", "label": " Main ", "thinkingLevel": "low", "model": "scripted/echo-1",
		"verboseLevel": "on", "sendPolicy": "allow", "spawnDepth": 0}, &patched)
	if !patched.OK || patched.Key != "agent:main:main" || patched.Path == "" || patched.Entry.Label != "Main" || patched.Entry.ThinkingLevel != "low" ||
		patched.Entry.Model != "scripted/echo-1" || patched.Entry.VerboseLevel != "on" || patched.Entry.SendPolicy != "allow" {
		t.Errorf("sessions.patch = %+v", patched)
	}
	patched = wire.SessionsPatchResult{}
	c.ok(wire.MethodSessionsPatch, map[string]any{"key": "main", "label": nil, "sendPolicy": nil, "model": nil}, &patched)
	if patched.Entry.Label != "" || patched.Entry.SendPolicy != "" || patched.Entry.Model != "" || patched.Entry.ThinkingLevel != "low" {
		t.Errorf("clearing patch = %+v", patched.Entry)
	}
	patchErrors := []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"key": "main", "sendPolicy": "maybe"}, `invalid sendPolicy (use "allow"|"deny")`},
		{map[string]any{"key": "main", "sendPolicy": 1}, `invalid sendPolicy (use "allow"|"deny")`},
		{map[string]any{"key": "main", "label": strings.Repeat("é", 65)}, "invalid label: too long (max 64)"},
		{map[string]any{"key": "main", "label": ""}, "invalid label: empty"},
		{map[string]any{"key": "main", "model": "bad-model"}, "invalid model: bad-model"},
		{map[string]any{"key": "main", "expectedSessionId": "stale", "label": "x"}, "session changed"},
		{map[string]any{"key": "main", "bogusField": true}, "invalid sessions.patch params: at root: unexpected property 'bogusField'"},
	}
	for _, tt := range patchErrors {
		if err := c.fail(wire.MethodSessionsPatch, tt.params); err.Code != "INVALID_REQUEST" || err.Message != tt.want {
			t.Errorf("patch %v: %+v, want %q", tt.params, err, tt.want)
		}
	}
	// Patching a missing key creates it (sessions_spawn does this).
	patched = wire.SessionsPatchResult{}
	c.ok(wire.MethodSessionsPatch, map[string]any{"key": "agent:main:subagent:new", "spawnDepth": 1, "spawnedBy": "main"}, &patched)
	if patched.Entry.SessionID == "" || patched.Entry.SpawnDepth != 1 || patched.Entry.SpawnedBy != "agent:main:main" || patched.Entry.AgentID != "main" {
		t.Errorf("patch-created entry = %+v", patched.Entry)
	}

	// sessions.reset: a new transcript; the old one stays.
	oldID := rowByKey(t, c, "agent:main:main").SessionID
	var reset wire.SessionsEntryResult
	c.ok(wire.MethodSessionsReset, map[string]any{"key": "main"}, &reset)
	if reset.Key != "agent:main:main" || reset.Entry.SessionID == oldID || reset.Entry.SessionID == "" || reset.Entry.ThinkingLevel != "low" {
		t.Errorf("sessions.reset = %+v (old id %s)", reset, oldID)
	}
	old, err2 := e.store.History(ctx, oldID, store.HistoryOptions{})
	if err2 != nil || len(old) != 2 {
		t.Errorf("old transcript: %d entries, %v", len(old), err2)
	}
	var hist wire.ChatHistoryResult
	c.ok(wire.MethodChatHistory, map[string]any{"sessionKey": "main"}, &hist)
	// Only the synthetic Reset row: nothing from before the reset.
	if hist.SessionID != reset.Entry.SessionID || len(hist.Messages) != 1 ||
		!strings.Contains(string(hist.Messages[0]), `"kind":"reset"`) || !strings.Contains(string(hist.Messages[0]), `"text":"Reset"`) {
		t.Errorf("history after reset = %+v", hist)
	}

	// sessions.delete
	if err := c.fail(wire.MethodSessionsDelete, map[string]any{"key": "main"}); err.Message != "Cannot delete the main session (agent:main:main)" {
		t.Errorf("delete main: %+v", err)
	}
	var del wire.SessionsDeleteResult
	c.ok(wire.MethodSessionsDelete, map[string]any{"key": "discord:group:dev", "deleteTranscript": true}, &del)
	if !del.OK || !del.Deleted || del.Key != "agent:main:discord:group:dev" {
		t.Errorf("sessions.delete = %+v", del)
	}
	del = wire.SessionsDeleteResult{}
	c.ok(wire.MethodSessionsDelete, map[string]any{"key": "discord:group:dev"}, &del)
	if del.Deleted {
		t.Errorf("second delete = %+v", del)
	}
	if _, err := e.store.GetSession(ctx, "agent:main:discord:group:dev"); err == nil {
		t.Error("session still stored after delete")
	}
}

func rowByKey(t testing.TB, c *client, key string) wire.SessionRow {
	t.Helper()
	var list wire.SessionsListResult
	c.ok(wire.MethodSessionsList, map[string]any{"includeGlobal": true, "includeUnknown": true}, &list)
	for _, r := range list.Sessions {
		if r.Key == key {
			return r
		}
	}
	t.Fatalf("no row %q in %v", key, keysOf(list.Sessions))
	return wire.SessionRow{}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestAgentsListAndHealth(t *testing.T) {
	e := newEnv(t, envOptions{config: `{
		gateway: {auth: {mode: "token", token: "` + testToken + `"}},
		session: {mainKey: "Primary"},
		agents: {list: [{id: "ops", name: " Ops ", default: true, model: "scripted/echo-1"}, {id: "research"}]},
	}`})
	c := e.operator()
	var agents wire.AgentsListResult
	c.ok(wire.MethodAgentsList, nil, &agents)
	// Each agent's workspace, as the reference lists it: the default
	// agent's is the state dir's workspace, another's is named after it.
	for i, suffix := range []string{"/workspace", "/workspace-research"} {
		if i < len(agents.Agents) {
			if w := agents.Agents[i].Workspace; !strings.HasSuffix(w, suffix) || !filepath.IsAbs(w) {
				t.Errorf("agents[%d].workspace = %q, want an absolute path ending %s", i, w, suffix)
			}
			agents.Agents[i].Workspace = ""
		}
	}
	want := wire.AgentsListResult{DefaultID: "ops", MainKey: "primary", Scope: "per-sender", Ownership: "sole",
		Agents: []wire.AgentSummary{{ID: "ops", Name: "Ops", Model: &wire.ModelRef{Primary: "scripted/echo-1"}},
			// An agent without a model of its own lists the one it runs
			// with (the offline model here).
			{ID: "research", Model: &wire.ModelRef{Primary: "scripted/echo-1"}}}}
	if diff := cmp.Diff(want, agents); diff != "" {
		t.Errorf("agents.list (-want +got):\n%s", diff)
	}
	var h wire.Health
	c.ok(wire.MethodHealth, nil, &h)
	if !h.OK || h.TS == 0 || h.DefaultAgentID != "ops" {
		t.Errorf("health = %+v", h)
	}
	// "main" and the configured main key map to the default agent's main
	// session.
	var res wire.SessionsPatchResult
	c.ok(wire.MethodSessionsPatch, map[string]any{"key": "main", "label": "x"}, &res)
	if res.Key != "agent:ops:primary" {
		t.Errorf("main → %q", res.Key)
	}
	c.ok(wire.MethodSessionsPatch, map[string]any{"key": "primary", "label": "x"}, &res)
	if res.Key != "agent:ops:primary" {
		t.Errorf("primary → %q", res.Key)
	}
	c.ok(wire.MethodSessionsPatch, map[string]any{"key": "main", "agentId": "research", "label": "y"}, &res)
	if res.Key != "agent:research:primary" {
		t.Errorf("main of research → %q", res.Key)
	}
	if err := c.fail(wire.MethodAgentsList, map[string]any{"x": 1}); err.Message != "invalid agents.list params: at root: unexpected property 'x'" {
		t.Errorf("agents.list params: %+v", err)
	}
}

func TestGlobalScopeMainAlias(t *testing.T) {
	e := newEnv(t, envOptions{config: `{gateway: {auth: {mode: "token", token: "` + testToken + `"}}, session: {scope: "global"}}`})
	c := e.operator()
	var res wire.SessionsPatchResult
	c.ok(wire.MethodSessionsPatch, map[string]any{"key": "main", "label": "shared"}, &res)
	if res.Key != "global" || res.Entry.Kind != "global" {
		t.Errorf("main under global scope → %+v", res)
	}
}

// A turn for an agent that is not configured is refused: as "unknown" when
// it never had a session, with the reference's "no longer exists" when a
// session of it is still stored (it was configured once).
func TestTurnForUnconfiguredAgent(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	if err := e.store.CreateSession(context.Background(), &store.Session{Key: "agent:gone:main", SessionID: "g"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ key, want string }{
		{"agent:ghost:main", "unknown agent id: ghost"},
		{"agent:gone:main", `Agent "gone" no longer exists in configuration`},
	} {
		for _, method := range []string{wire.MethodChatSend, wire.MethodAgent} {
			err := c.fail(method, map[string]any{"sessionKey": tc.key, "message": "hi", "idempotencyKey": "k-" + tc.key})
			if err.Message != tc.want {
				t.Errorf("%s in %s: %q, want %q", method, tc.key, err.Message, tc.want)
			}
		}
	}
}
