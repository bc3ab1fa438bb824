package sessions

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// seedTree seeds, most recent first: the main session, its child, a
// grandchild, an unrelated group, another agent's main session, a cron run,
// and the reserved sessions.
func seedTree(e *testEnv) {
	e.keys("agent:main:main")
	e.sess(store.Session{Key: "agent:main:subagent:c1", SpawnedBy: "agent:main:main", UpdatedAt: testNow.Add(-2 * time.Second)})
	e.sess(store.Session{Key: "agent:main:subagent:c2", SpawnedBy: "agent:main:subagent:c1", UpdatedAt: testNow.Add(-3 * time.Second)})
	e.sess(store.Session{Key: "agent:main:discord:group:dev", UpdatedAt: testNow.Add(-4 * time.Second)})
	e.sess(store.Session{Key: "agent:ops:main", UpdatedAt: testNow.Add(-5 * time.Second)})
	e.sess(store.Session{Key: "agent:main:cron:job-1:run:r1", UpdatedAt: testNow.Add(-6 * time.Second)})
	e.sess(store.Session{Key: "global", UpdatedAt: testNow.Add(-7 * time.Second)})
	e.sess(store.Session{Key: "unknown", UpdatedAt: testNow.Add(-8 * time.Second)})
}

func TestListVisibility(t *testing.T) {
	tests := []struct {
		name   string
		cfg    string
		caller tools.Caller
		want   []string
	}{
		{"tree (default): self and direct children", "", mainCaller,
			[]string{"agent:main:main", "agent:main:subagent:c1"}},
		{"tree from a child", "", tools.Caller{SessionKey: "agent:main:subagent:c1"},
			[]string{"agent:main:subagent:c1", "agent:main:subagent:c2"}},
		{"self", `{tools: {sessions: {visibility: "self"}}}`, mainCaller,
			[]string{"agent:main:main"}},
		{"agent", `{tools: {sessions: {visibility: "agent"}}}`, mainCaller,
			[]string{"agent:main:main", "agent:main:subagent:c1", "agent:main:subagent:c2", "agent:main:discord:group:dev"}},
		{"all without agent-to-agent", `{tools: {sessions: {visibility: "ALL"}}}`, mainCaller,
			[]string{"agent:main:main", "agent:main:subagent:c1", "agent:main:subagent:c2", "agent:main:discord:group:dev"}},
		{"all with agent-to-agent", `{tools: {sessions: {visibility: "all"}, agentToAgent: {enabled: true}}}`, mainCaller,
			[]string{"agent:main:main", "agent:main:subagent:c1", "agent:main:subagent:c2", "agent:main:discord:group:dev", "agent:ops:main"}},
		{"all with agent-to-agent allowing both", `{tools: {sessions: {visibility: "all"}, agentToAgent: {enabled: true, allow: ["ma*", "ops"]}}}`, mainCaller,
			[]string{"agent:main:main", "agent:main:subagent:c1", "agent:main:subagent:c2", "agent:main:discord:group:dev", "agent:ops:main"}},
		{"all with agent-to-agent denying the target", `{tools: {sessions: {visibility: "all"}, agentToAgent: {enabled: true, allow: ["main"]}}}`, mainCaller,
			[]string{"agent:main:main", "agent:main:subagent:c1", "agent:main:subagent:c2", "agent:main:discord:group:dev"}},
		{"other agent's view, tree", "", tools.Caller{SessionKey: "agent:ops:main"},
			[]string{"agent:ops:main"}},
		{"no session: tree around the main alias", "", noSession, nil},
		{"no session: agent", `{tools: {sessions: {visibility: "agent"}}}`, noSession,
			[]string{"agent:main:main", "agent:main:subagent:c1", "agent:main:subagent:c2", "agent:main:discord:group:dev"}},
		{"sandboxed main with clamp spawned lists its children only", `{tools: {sessions: {visibility: "all"}, agentToAgent: {enabled: true}}}`,
			sandboxed("agent:main:main"), []string{"agent:main:subagent:c1"}},
		{"sandboxed self is widened to tree", `{tools: {sessions: {visibility: "self"}}}`,
			sandboxed("agent:main:main"), []string{"agent:main:subagent:c1"}},
		{"sandboxed with clamp all keeps the configured visibility", `{tools: {sessions: {visibility: "agent"}}, agents: {defaults: {sandbox: {sessionToolsVisibility: "all"}}}}`,
			sandboxed("agent:main:main"), []string{"agent:main:main", "agent:main:subagent:c1", "agent:main:subagent:c2", "agent:main:discord:group:dev"}},
		{"sandboxed sub-agent: not restricted, clamped to tree", `{tools: {sessions: {visibility: "all"}}}`,
			sandboxed("agent:main:subagent:c1"), []string{"agent:main:subagent:c1", "agent:main:subagent:c2"}},
		{"sandbox mode all sandboxes the caller", `{tools: {sessions: {visibility: "agent"}}, agents: {defaults: {sandbox: {mode: "all"}}}}`,
			mainCaller, []string{"agent:main:subagent:c1"}},
		{"sandbox mode non-main leaves the main session alone", `{tools: {sessions: {visibility: "agent"}}, agents: {defaults: {sandbox: {mode: "non-main"}}}}`,
			mainCaller, []string{"agent:main:main", "agent:main:subagent:c1", "agent:main:subagent:c2", "agent:main:discord:group:dev"}},
		{"sandbox mode non-main restricts a group session", `{tools: {sessions: {visibility: "agent"}}, agents: {defaults: {sandbox: {mode: "non-main"}}}}`,
			tools.Caller{SessionKey: "agent:main:discord:group:dev"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.cfg)
			seedTree(e)
			d := e.mustCall(tt.caller, ListToolName, map[string]any{})
			if diff := cmp.Diff(tt.want, rowKeys(d)); diff != "" {
				t.Errorf("keys (-want +got):\n%s", diff)
			}
			if got := d["count"]; got != float64(len(tt.want)) {
				t.Errorf("count = %v, want %d", got, len(tt.want))
			}
		})
	}
}

// Reserved keys: unknown is never listed; global only under scope global,
// shown as "main".
func TestListReserved(t *testing.T) {
	all := `tools: {sessions: {visibility: "all"}}`
	for _, tc := range []struct {
		cfg  string
		want []string
	}{
		{`{` + all + `}`, []string{"agent:main:main"}},
		{`{` + all + `, session: {scope: "global"}}`, []string{"agent:main:main", "main"}},
	} {
		e := newEnv(t, tc.cfg)
		e.keys("agent:main:main", "global", "unknown", "agent:main:cron:j:run:r")
		d := e.mustCall(mainCaller, ListToolName, nil)
		if diff := cmp.Diff(tc.want, rowKeys(d)); diff != "" {
			t.Errorf("%s: keys (-want +got):\n%s", tc.cfg, diff)
		}
		if len(tc.want) == 2 {
			if r := rowByKey(t, d, "main"); r["kind"] != "main" {
				t.Errorf("global row kind = %v, want main", r["kind"])
			}
		}
	}
}

func TestListKinds(t *testing.T) {
	// Legacy (unprefixed) keys as an imported store may hold them, and the
	// canonical forms the quirk classifies as "other".
	keys := []string{
		"main", "cron:job-1", "hook:abc", "node-1", "node:2", "discord:group:dev", "slack:channel:c1",
		"agent:main:main", "agent:main:cron:job-2", "agent:main:discord:group:x", "agent:main:telegram:direct:p",
		"agent:main:node-test",
	}
	wantKind := map[string]string{
		"main": "main", "cron:job-1": "cron", "hook:abc": "hook", "node-1": "node", "node:2": "node",
		"discord:group:dev": "group", "slack:channel:c1": "group",
		"agent:main:main": "other", "agent:main:cron:job-2": "other", "agent:main:discord:group:x": "group",
		"agent:main:telegram:direct:p": "other", "agent:main:node-test": "other",
	}
	e := newEnv(t, `{tools: {sessions: {visibility: "agent"}}}`)
	e.keys(keys...)

	d := e.mustCall(mainCaller, ListToolName, nil)
	if diff := cmp.Diff(keys, rowKeys(d)); diff != "" {
		t.Fatalf("keys (-want +got):\n%s", diff)
	}
	for _, k := range keys {
		if got := rowByKey(t, d, k)["kind"]; got != wantKind[k] {
			t.Errorf("kind of %q = %v, want %s", k, got, wantKind[k])
		}
	}

	tests := []struct {
		kinds any
		want  []string
	}{
		{[]string{"main"}, []string{"main"}},
		{[]string{" CRON ", "hook"}, []string{"cron:job-1", "hook:abc"}},
		{"node", []string{"node-1", "node:2"}},
		{[]string{"group", "bogus"}, []string{"discord:group:dev", "slack:channel:c1", "agent:main:discord:group:x"}},
		{[]string{"other"}, []string{"agent:main:main", "agent:main:cron:job-2", "agent:main:telegram:direct:p", "agent:main:node-test"}},
		{[]string{"bogus", ""}, keys}, // nothing valid: no filter
		{[]any{7, true}, keys},
	}
	for _, tt := range tests {
		d := e.mustCall(mainCaller, ListToolName, map[string]any{"kinds": tt.kinds})
		if diff := cmp.Diff(tt.want, rowKeys(d)); diff != "" {
			t.Errorf("kinds %v (-want +got):\n%s", tt.kinds, diff)
		}
	}
}

func TestListLimitAndActiveMinutes(t *testing.T) {
	e := newEnv(t, `{tools: {sessions: {visibility: "agent"}}}`)
	e.sess(store.Session{Key: "agent:main:a", UpdatedAt: testNow.Add(-30 * time.Second)})
	e.sess(store.Session{Key: "agent:main:b", UpdatedAt: testNow.Add(-50 * time.Second)})
	e.sess(store.Session{Key: "agent:main:c", UpdatedAt: testNow.Add(-90 * time.Minute)})
	e.sess(store.Session{Key: "agent:main:d", UpdatedAt: testNow.Add(-60 * time.Second)})
	e.sess(store.Session{Key: "agent:main:cron:j:run:r", UpdatedAt: testNow.Add(-10 * time.Second)})

	tests := []struct {
		args map[string]any
		want []string
	}{
		{map[string]any{}, []string{"agent:main:a", "agent:main:b", "agent:main:d", "agent:main:c"}},
		{map[string]any{"limit": 2}, []string{"agent:main:a", "agent:main:b"}},
		{map[string]any{"limit": 2.9}, []string{"agent:main:a", "agent:main:b"}},
		{map[string]any{"limit": 0}, []string{"agent:main:a"}},
		{map[string]any{"limit": -5}, []string{"agent:main:a"}},
		{map[string]any{"limit": "2"}, []string{"agent:main:a", "agent:main:b", "agent:main:d", "agent:main:c"}},
		{map[string]any{"activeMinutes": 60}, []string{"agent:main:a", "agent:main:b", "agent:main:d"}},
		{map[string]any{"activeMinutes": 0.5}, []string{"agent:main:a", "agent:main:b", "agent:main:d"}}, // floor 0, min 1
		{map[string]any{"activeMinutes": 120, "limit": 3}, []string{"agent:main:a", "agent:main:b", "agent:main:d"}},
		{map[string]any{"active_minutes": 1}, []string{"agent:main:a", "agent:main:b", "agent:main:d", "agent:main:c"}}, // numbers have no snake_case alias
	}
	for _, tt := range tests {
		d := e.mustCall(mainCaller, ListToolName, tt.args)
		if diff := cmp.Diff(tt.want, rowKeys(d)); diff != "" {
			t.Errorf("%v (-want +got):\n%s", tt.args, diff)
		}
	}

	// The limit applies before the visibility guard, as the gateway's
	// limit does: the main session's tree view of the two most recent.
	e2 := newEnv(t, "")
	e2.sess(store.Session{Key: "agent:main:other", UpdatedAt: testNow.Add(-time.Second)})
	e2.sess(store.Session{Key: "agent:main:main", UpdatedAt: testNow.Add(-2 * time.Second)})
	e2.sess(store.Session{Key: "agent:main:subagent:x", SpawnedBy: "agent:main:main", UpdatedAt: testNow.Add(-3 * time.Second)})
	d := e2.mustCall(mainCaller, ListToolName, map[string]any{"limit": 2})
	if diff := cmp.Diff([]string{"agent:main:main"}, rowKeys(d)); diff != "" {
		t.Errorf("limit before guard (-want +got):\n%s", diff)
	}
}

func TestListRowFields(t *testing.T) {
	e := newEnv(t, `{tools: {sessions: {visibility: "agent"}, agentToAgent: {enabled: true}}}`)
	full := e.sess(store.Session{
		Key: "agent:main:telegram:direct:peer", SessionID: "0f0e0d0c-0b0a-4908-8706-050403020100",
		Channel: "telegram", DisplayName: "Peer", Label: "peer chat", Model: "openai/gpt-5",
		ThinkingLevel: "high", VerboseLevel: "on", ContextTokens: 200000, InputTokens: 10, OutputTokens: 20,
		TotalTokens: 1234, SystemSent: true, AbortedLastRun: true, SendPolicy: "deny",
		LastChannel: "sms", LastTo: "+100", LastAccountID: "acct-old",
		DeliveryContext: &store.DeliveryContext{Channel: "telegram", To: "12345", AccountID: "bot-1", ThreadID: "9"},
		UpdatedAt:       time.UnixMilli(1772971200123),
	})
	d := e.mustCall(mainCaller, ListToolName, nil)
	got := rowByKey(t, d, full.Key)
	want := map[string]any{
		"key":             "agent:main:telegram:direct:peer",
		"kind":            "other",
		"channel":         "telegram",
		"label":           "peer chat",
		"displayName":     "Peer",
		"deliveryContext": map[string]any{"channel": "telegram", "to": "12345", "accountId": "bot-1"},
		"updatedAt":       float64(1772971200123),
		"sessionId":       "0f0e0d0c-0b0a-4908-8706-050403020100",
		"model":           "openai/gpt-5",
		"contextTokens":   float64(200000),
		"totalTokens":     float64(1234),
		"thinkingLevel":   "high",
		"verboseLevel":    "on",
		"systemSent":      true,
		"abortedLastRun":  true,
		"sendPolicy":      "deny",
		"lastChannel":     "telegram",
		"lastTo":          "12345",
		"lastAccountId":   "bot-1",
		"transcriptPath":  filepath.Join(e.stateDir, "agents", "main", "sessions", "0f0e0d0c-0b0a-4908-8706-050403020100.jsonl"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("row (-want +got):\n%s", diff)
	}

	// Field order follows the reference.
	res, err := e.tool(ListToolName).Call(tools.WithCaller(t.Context(), mainCaller), nil)
	if err != nil {
		t.Fatal(err)
	}
	order := []string{`"key"`, `"kind"`, `"channel"`, `"label"`, `"displayName"`, `"deliveryContext"`, `"updatedAt"`,
		`"sessionId"`, `"model"`, `"contextTokens"`, `"totalTokens"`, `"thinkingLevel"`, `"verboseLevel"`,
		`"systemSent"`, `"abortedLastRun"`, `"sendPolicy"`, `"lastChannel"`, `"lastTo"`, `"lastAccountId"`, `"transcriptPath"`}
	last := -1
	for _, k := range order {
		i := strings.Index(res.Text, k)
		if i <= last {
			t.Errorf("%s out of order in\n%s", k, res.Text)
		}
		last = i
	}
	if !strings.HasPrefix(res.Text, "{\n  \"count\": 1,\n  \"sessions\": [\n    {\n") {
		t.Errorf("text is not the two-space-indented payload:\n%s", res.Text)
	}
}

func TestListMinimalRow(t *testing.T) {
	e := newEnv(t, `{tools: {sessions: {visibility: "agent"}}}`)
	e.sess(store.Session{Key: "agent:main:bare", SessionID: "", UpdatedAt: time.UnixMilli(1000)})
	// sess() fills a SessionID; clear it.
	if _, err := e.st.UpdateSession(t.Context(), "agent:main:bare", false, func(s *store.Session) error {
		s.SessionID = ""
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	d := e.mustCall(mainCaller, ListToolName, nil)
	want := map[string]any{
		"key": "agent:main:bare", "kind": "other", "channel": "unknown", "updatedAt": float64(1000),
		"totalTokens": float64(0), "systemSent": false, "abortedLastRun": false,
	}
	if diff := cmp.Diff(want, rowByKey(t, d, "agent:main:bare")); diff != "" {
		t.Errorf("row (-want +got):\n%s", diff)
	}
}

func TestListChannelAndDelivery(t *testing.T) {
	e := newEnv(t, `{tools: {sessions: {visibility: "agent"}}}`)
	type want struct{ channel, lastChannel, lastTo, lastAccountID string }
	cases := []struct {
		s    store.Session
		want want
		dc   map[string]any
	}{
		{store.Session{Key: "agent:main:discord:group:g1", Channel: "discord"}, want{channel: "discord"}, nil},
		{store.Session{Key: "agent:main:discord:group:g2"}, want{channel: "unknown"}, nil}, // quirk: prefix not stripped
		{store.Session{Key: "discord:group:legacy"}, want{channel: "discord"}, nil},
		{store.Session{Key: "slack:channel:legacy"}, want{channel: "slack"}, nil},
		{store.Session{Key: "agent:main:d1", LastChannel: "whatsapp", LastTo: "+1", LastAccountID: "a1"},
			want{"whatsapp", "whatsapp", "+1", "a1"}, nil},
		{store.Session{Key: "agent:main:d2", LastChannel: "whatsapp", LastTo: "+1", LastAccountID: "a1",
			DeliveryContext: &store.DeliveryContext{Channel: "signal"}},
			want{"signal", "signal", "+1", "a1"}, map[string]any{"channel": "signal"}},
		{store.Session{Key: "agent:main:d3", LastChannel: "whatsapp", DeliveryContext: &store.DeliveryContext{To: "+2"}},
			want{"whatsapp", "whatsapp", "+2", ""}, map[string]any{"to": "+2"}},
		{store.Session{Key: "agent:main:d4", DeliveryContext: &store.DeliveryContext{AccountID: "acc"}},
			want{"unknown", "", "", "acc"}, map[string]any{"accountId": "acc"}},
		{store.Session{Key: "agent:main:d5", DeliveryContext: &store.DeliveryContext{ThreadID: "7"}},
			want{channel: "unknown"}, nil}, // a thread alone makes no deliveryContext
		{store.Session{Key: "agent:main:d6", Channel: "  ", LastChannel: "imessage"}, want{"imessage", "imessage", "", ""}, nil},
		{store.Session{Key: "cron:nightly", Channel: "discord"}, want{channel: "internal"}, nil},
		{store.Session{Key: "hook:h1", LastChannel: "discord"}, want{"internal", "discord", "", ""}, nil},
		{store.Session{Key: "node-n1"}, want{channel: "internal"}, nil},
	}
	for i := range cases {
		cases[i].s.UpdatedAt = testNow.Add(-time.Duration(i+1) * time.Second)
		e.sess(cases[i].s)
	}
	d := e.mustCall(mainCaller, ListToolName, nil)
	for _, c := range cases {
		row := rowByKey(t, d, c.s.Key)
		str := func(k string) string { s, _ := row[k].(string); return s }
		got := want{str("channel"), str("lastChannel"), str("lastTo"), str("lastAccountId")}
		if got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.s.Key, got, c.want)
		}
		gotDC, _ := row["deliveryContext"].(map[string]any)
		if diff := cmp.Diff(c.dc, gotDC); diff != "" {
			t.Errorf("%s: deliveryContext (-want +got):\n%s", c.s.Key, diff)
		}
	}
}

func TestListTranscriptPath(t *testing.T) {
	e := newEnv(t, `{tools: {sessions: {visibility: "all"}, agentToAgent: {enabled: true}}}`)
	e.sess(store.Session{Key: "agent:ops:main", SessionID: "abc.DEF_1-2"})
	e.sess(store.Session{Key: "agent:main:unsafe", SessionID: "../escape"})
	e.sess(store.Session{Key: "agent:main:dot", SessionID: ".hidden"})
	e.sess(store.Session{Key: "agent:main:long", SessionID: strings.Repeat("a", 129)})
	e.sess(store.Session{Key: "cron:legacy", SessionID: "legacy-id"})
	d := e.mustCall(mainCaller, ListToolName, nil)
	want := map[string]string{
		"agent:ops:main":    filepath.Join(e.stateDir, "agents", "ops", "sessions", "abc.DEF_1-2.jsonl"),
		"agent:main:unsafe": "",
		"agent:main:dot":    "",
		"agent:main:long":   "",
		"cron:legacy":       filepath.Join(e.stateDir, "agents", "main", "sessions", "legacy-id.jsonl"),
	}
	for k, w := range want {
		got, _ := rowByKey(t, d, k)["transcriptPath"].(string)
		if got != w {
			t.Errorf("%s: transcriptPath = %q, want %q", k, got, w)
		}
	}

	// The state directory falls back to the config's.
	e2 := newEnv(t, `{tools: {sessions: {visibility: "agent"}}}`, func(d *Deps) { d.StateDir = "" })
	e2.sess(store.Session{Key: "agent:main:x", SessionID: "sid"})
	got, _ := rowByKey(t, e2.mustCall(mainCaller, ListToolName, nil), "agent:main:x")["transcriptPath"].(string)
	if want := filepath.Join(e2.stateDir, "agents", "main", "sessions", "sid.jsonl"); got != want {
		t.Errorf("fallback transcriptPath = %q, want %q", got, want)
	}
}

func TestListMessages(t *testing.T) {
	e := newEnv(t, `{tools: {sessions: {visibility: "agent"}}}`)
	long := e.sess(store.Session{Key: "agent:main:long", UpdatedAt: testNow.Add(-time.Second)})
	var ms []*transcript.Message
	for i := range 30 {
		ms = append(ms, userMsg(fmt.Sprintf("u%d", i)))
	}
	e.msgs(long.SessionID, ms...)

	mixed := e.sess(store.Session{Key: "agent:main:mixed", UpdatedAt: testNow.Add(-2 * time.Second)})
	e.msgs(mixed.SessionID, userMsg("q1"), assistantMsg("a1"), userMsg("q2"), toolResultMsg("tool out"),
		legacyToolMsg("legacy tool"), assistantMsg("NO_REPLY"), assistantMsg("a2"))

	e.sess(store.Session{Key: "agent:main:empty", UpdatedAt: testNow.Add(-3 * time.Second)})

	t.Run("messageLimit 0 omits messages", func(t *testing.T) {
		d := e.mustCall(mainCaller, ListToolName, map[string]any{"messageLimit": 0})
		for _, k := range rowKeys(d) {
			if _, ok := rowByKey(t, d, k)["messages"]; ok {
				t.Errorf("%s has messages", k)
			}
		}
	})
	t.Run("capped at 20", func(t *testing.T) {
		d := e.mustCall(mainCaller, ListToolName, map[string]any{"messageLimit": 25})
		got := texts(rowByKey(t, d, "agent:main:long")["messages"])
		var want []string
		for i := 10; i < 30; i++ {
			want = append(want, fmt.Sprintf("u%d", i))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("tool messages dropped after the window", func(t *testing.T) {
		d := e.mustCall(mainCaller, ListToolName, map[string]any{"messageLimit": 5.8})
		// The window is the last 5 transcript entries (q2, tool out,
		// legacy tool, NO_REPLY, a2); the silent reply and the tool
		// messages are then dropped.
		if diff := cmp.Diff([]string{"q2", "a2"}, texts(rowByKey(t, d, "agent:main:mixed")["messages"])); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		d = e.mustCall(mainCaller, ListToolName, map[string]any{"messageLimit": 20})
		if diff := cmp.Diff([]string{"q1", "a1", "q2", "a2"}, texts(rowByKey(t, d, "agent:main:mixed")["messages"])); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("no transcript is an empty list", func(t *testing.T) {
		d := e.mustCall(mainCaller, ListToolName, map[string]any{"messageLimit": 3})
		msgs, ok := rowByKey(t, d, "agent:main:empty")["messages"].([]any)
		if !ok || len(msgs) != 0 {
			t.Errorf("messages = %#v, want []", rowByKey(t, d, "agent:main:empty")["messages"])
		}
	})
	t.Run("messages are raw transcript messages", func(t *testing.T) {
		d := e.mustCall(mainCaller, ListToolName, map[string]any{"messageLimit": 1})
		m := rowByKey(t, d, "agent:main:long")["messages"].([]any)[0].(map[string]any)
		if m["role"] != "user" || m["timestamp"] != float64(testNow.UnixMilli()) {
			t.Errorf("message = %v", m)
		}
		meta, _ := m["__openclaw"].(map[string]any)
		if meta["seq"] != float64(30) || meta["id"] == "" {
			t.Errorf("__openclaw = %v, want id and seq 30", meta)
		}
	})
	t.Run("not sanitized", func(t *testing.T) {
		// sessions_list returns what chat.history returns: no redaction.
		e := newEnv(t, `{tools: {sessions: {visibility: "agent"}}}`)
		s := e.sess(store.Session{Key: "agent:main:s"})
		secret := "OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz0123456789"
		e.msgs(s.SessionID, userMsg(secret))
		d := e.mustCall(mainCaller, ListToolName, map[string]any{"messageLimit": 1})
		if got := texts(rowByKey(t, d, "agent:main:s")["messages"]); !slices.Equal(got, []string{secret}) {
			t.Errorf("got %q", got)
		}
	})
}

// Many rows read their transcripts concurrently; each gets its own.
func TestListMessagesConcurrent(t *testing.T) {
	e := newEnv(t, `{tools: {sessions: {visibility: "agent"}}}`)
	var want []string
	for i := range 13 {
		s := e.sess(store.Session{Key: fmt.Sprintf("agent:main:s%02d", i), UpdatedAt: testNow.Add(-time.Duration(i+1) * time.Second)})
		e.msgs(s.SessionID, userMsg(fmt.Sprintf("hello %d", i)), assistantMsg(fmt.Sprintf("reply %d", i)))
		want = append(want, s.Key)
	}
	d := e.mustCall(mainCaller, ListToolName, map[string]any{"messageLimit": 2})
	if diff := cmp.Diff(want, rowKeys(d)); diff != "" {
		t.Fatalf("keys (-want +got):\n%s", diff)
	}
	for i, k := range want {
		got := texts(rowByKey(t, d, k)["messages"])
		if w := []string{fmt.Sprintf("hello %d", i), fmt.Sprintf("reply %d", i)}; !slices.Equal(got, w) {
			t.Errorf("%s: %q, want %q", k, got, w)
		}
	}
}

func TestListHistoryErrorFails(t *testing.T) {
	e := newEnv(t, `{tools: {sessions: {visibility: "agent"}}}`,
		withStore(func(s Store) Store { return &failingStore{Store: s, failHistory: true} }))
	e.keys("agent:main:a", "agent:main:b", "agent:main:c", "agent:main:d", "agent:main:e")
	if _, err := e.call(mainCaller, ListToolName, map[string]any{"messageLimit": 1}); err == nil || err.Error() != errInjected.Error() {
		t.Errorf("err = %v, want %v", err, errInjected)
	}
	// Without messages the transcripts are not read.
	if d := e.mustCall(mainCaller, ListToolName, nil); d["count"] != float64(5) {
		t.Errorf("count = %v", d["count"])
	}
}

func TestListEmpty(t *testing.T) {
	e := newEnv(t, "")
	res, err := e.tool(ListToolName).Call(tools.WithCaller(t.Context(), mainCaller), []byte(`"not an object"`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"count\": 0,\n  \"sessions\": []\n}"; res.Text != want {
		t.Errorf("text = %q, want %q", res.Text, want)
	}
}
