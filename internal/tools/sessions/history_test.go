package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/sanitize"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

func TestHistoryRequiredKey(t *testing.T) {
	e := newEnv(t, "")
	for _, args := range []any{nil, map[string]any{}, map[string]any{"sessionKey": "   "}, map[string]any{"sessionKey": 42}} {
		_, err := e.call(mainCaller, HistoryToolName, args)
		if err == nil || err.Error() != "sessionKey required" {
			t.Errorf("%v: err = %v, want sessionKey required", args, err)
		}
		// The runtime's envelope for a thrown error.
		if err != nil {
			d := detailsOf(t, tools.ErrorResult(HistoryToolName, err))
			want := map[string]any{"status": "error", "tool": "sessions_history", "error": "sessionKey required"}
			if diff := cmp.Diff(want, d); diff != "" {
				t.Errorf("envelope (-want +got):\n%s", diff)
			}
		}
	}
	// The snake_case alias is read too, trimmed.
	e.keys("agent:main:main")
	d := e.mustCall(mainCaller, HistoryToolName, map[string]any{"session_key": "  main "})
	if d["sessionKey"] != "main" {
		t.Errorf("sessionKey = %v, want main", d["sessionKey"])
	}
}

func TestHistoryResult(t *testing.T) {
	e := newEnv(t, "")
	s := e.sess(store.Session{Key: "agent:main:main", SessionID: idMain})
	e.msgs(s.SessionID, userMsg("hi"), assistantMsg("hello"), toolResultMsg("ran"), legacyToolMsg("old"),
		assistantMsg(" NO_REPLY "), userMsg("bye"))

	for _, ref := range []string{"main", "agent:main:main", idMain} {
		d := e.mustCall(mainCaller, HistoryToolName, map[string]any{"sessionKey": ref})
		wantKey := ref
		if ref == idMain {
			wantKey = "agent:main:main"
		}
		if d["sessionKey"] != wantKey {
			t.Errorf("%s: sessionKey = %v, want %s", ref, d["sessionKey"], wantKey)
		}
		if diff := cmp.Diff([]string{"hi", "hello", "bye"}, texts(d["messages"])); diff != "" {
			t.Errorf("%s: messages (-want +got):\n%s", ref, diff)
		}
		for _, k := range []string{"truncated", "droppedMessages", "contentTruncated", "contentRedacted"} {
			if d[k] != false {
				t.Errorf("%s: %s = %v, want false", ref, k, d[k])
			}
		}
		b, _ := json.Marshal(d["messages"])
		if d["bytes"] != float64(len(b)) {
			t.Errorf("%s: bytes = %v, want %d", ref, d["bytes"], len(b))
		}
	}

	// Exact payload, field order included.
	res, err := e.tool(HistoryToolName).Call(tools.WithCaller(t.Context(), mainCaller), []byte(`{"sessionKey":"main","limit":1}`))
	if err != nil {
		t.Fatal(err)
	}
	hist, _ := e.st.History(t.Context(), idMain, store.HistoryOptions{})
	last := hist[len(hist)-1]
	wantText := fmt.Sprintf(`{
  "sessionKey": "main",
  "messages": [
    {
      "__openclaw": {
        "id": %q,
        "seq": 6
      },
      "content": [
        {
          "text": "bye",
          "type": "text"
        }
      ],
      "role": "user",
      "timestamp": %d
    }
  ],
  "truncated": false,
  "droppedMessages": false,
  "contentTruncated": false,
  "contentRedacted": false,
  "bytes": %d
}`, last.Entry.ID, testNow.UnixMilli(), 2+len(fmt.Sprintf(`{"__openclaw":{"id":%q,"seq":6},"content":[{"text":"bye","type":"text"}],"role":"user","timestamp":%d}`, last.Entry.ID, testNow.UnixMilli())))
	if res.Text != wantText {
		t.Errorf("text:\n%s\nwant:\n%s", res.Text, wantText)
	}
}

func TestHistoryIncludeTools(t *testing.T) {
	e := newEnv(t, "")
	s := e.sess(store.Session{Key: "agent:main:main"})
	e.msgs(s.SessionID, userMsg("q"), toolResultMsg("ran"), legacyToolMsg("old"), assistantMsg("a"))
	tests := []struct {
		args map[string]any
		want []string
	}{
		{map[string]any{}, []string{"q", "a"}},
		{map[string]any{"includeTools": false}, []string{"q", "a"}},
		{map[string]any{"includeTools": true}, []string{"q", "ran", "old", "a"}},
		{map[string]any{"include_tools": true}, []string{"q", "a"}},               // no snake_case alias
		{map[string]any{"includeTools": "yes"}, []string{"q", "ran", "old", "a"}}, // truthy
		{map[string]any{"includeTools": ""}, []string{"q", "a"}},
		{map[string]any{"includeTools": 0}, []string{"q", "a"}},
	}
	for _, tt := range tests {
		tt.args["sessionKey"] = "main"
		d := e.mustCall(mainCaller, HistoryToolName, tt.args)
		if diff := cmp.Diff(tt.want, texts(d["messages"])); diff != "" {
			t.Errorf("%v (-want +got):\n%s", tt.args, diff)
		}
	}
	// A tool result keeps its fields except details.
	d := e.mustCall(mainCaller, HistoryToolName, map[string]any{"sessionKey": "main", "includeTools": true})
	tr := d["messages"].([]any)[1].(map[string]any)
	if tr["role"] != "toolResult" || tr["toolCallId"] != "call-1" || tr["toolName"] != "exec" || tr["isError"] != false {
		t.Errorf("tool result = %v", tr)
	}
}

func TestHistoryLimit(t *testing.T) {
	rec := &recordingStore{}
	e := newEnv(t, "", withStore(func(s Store) Store { rec.Store = s; return rec }))
	s := e.sess(store.Session{Key: "agent:main:main"})
	var ms []*transcript.Message
	for i := range 1005 {
		ms = append(ms, userMsg(fmt.Sprintf("m%d", i)))
	}
	e.msgs(s.SessionID, ms...)

	tests := []struct {
		limit any
		want  int // the transcript window read
	}{
		{nil, 200},
		{2, 2},
		{2.9, 2},
		{0, 1},
		{-3, 1},
		{"5", 200},
		{1000, 1000},
		{1000.9, 1000},
	}
	for _, tt := range tests {
		args := map[string]any{"sessionKey": "main"}
		if tt.limit != nil {
			args["limit"] = tt.limit
		}
		d, err := e.call(mainCaller, HistoryToolName, args)
		if err != nil {
			t.Errorf("limit %v: %v", tt.limit, err)
			continue
		}
		if got := rec.lastLimit(); got != tt.want {
			t.Errorf("limit %v: read %d entries, want %d", tt.limit, got, tt.want)
		}
		got := texts(d["messages"])
		if got[len(got)-1] != "m1004" {
			t.Errorf("limit %v: last message %s", tt.limit, got[len(got)-1])
		}
		// Small windows fit the byte cap whole.
		if tt.want <= 200 && (len(got) != tt.want || got[0] != fmt.Sprintf("m%d", 1005-tt.want)) {
			t.Errorf("limit %v: %d messages from %s", tt.limit, len(got), got[0])
		}
	}
	for _, limit := range []any{1001, 5000, 1e12} {
		_, err := e.call(mainCaller, HistoryToolName, map[string]any{"sessionKey": "main", "limit": limit})
		if err == nil || err.Error() != "invalid chat.history params: at /limit: must be <= 1000" {
			t.Errorf("limit %v: err = %v", limit, err)
		}
	}
	// Resolution and visibility are decided before the limit.
	e.keys("agent:main:other")
	d, err := e.call(mainCaller, HistoryToolName, map[string]any{"sessionKey": "agent:main:other", "limit": 5000})
	if err != nil || d["status"] != "forbidden" {
		t.Errorf("forbidden target with a bad limit: %v, %v", d, err)
	}
	d, err = e.call(mainCaller, HistoryToolName, map[string]any{"sessionKey": idNone, "limit": 5000})
	if err != nil || d["status"] != "error" {
		t.Errorf("unresolved target with a bad limit: %v, %v", d, err)
	}
}

func TestHistoryRefusals(t *testing.T) {
	const req = "agent:main:discord:group:req"
	tree := "Session history visibility is restricted to the current session tree (tools.sessions.visibility=tree)."
	tests := []struct {
		name   string
		cfg    string
		caller tools.Caller
		key    string
		status string
		err    string
	}{
		{"tree: unrelated session", "", mainCaller, "agent:main:discord:group:other", "forbidden", tree},
		{"tree: grandchild", "", mainCaller, "agent:main:subagent:grandchild", "forbidden", tree},
		{"self", `{tools: {sessions: {visibility: "self"}}}`, mainCaller, "agent:main:subagent:child", "forbidden",
			"Session history visibility is restricted to the current session (tools.sessions.visibility=self)."},
		{"cross-agent below all", `{tools: {sessions: {visibility: "agent"}}}`, mainCaller, "agent:ops:main", "forbidden",
			"Session history visibility is restricted. Set tools.sessions.visibility=all to allow cross-agent access."},
		{"cross-agent a2a disabled", `{tools: {sessions: {visibility: "all"}}}`, mainCaller, "agent:ops:main", "forbidden",
			"Agent-to-agent history is disabled. Set tools.agentToAgent.enabled=true to allow cross-agent access."},
		{"cross-agent a2a denied", `{tools: {sessions: {visibility: "all"}, agentToAgent: {enabled: true, allow: ["ops-*"]}}}`,
			mainCaller, "agent:ops:main", "forbidden", "Agent-to-agent history denied by tools.agentToAgent.allow."},
		{"cross-agent by sessionId", `{tools: {sessions: {visibility: "agent"}}}`, mainCaller, idOther, "forbidden",
			"Session history visibility is restricted. Set tools.sessions.visibility=all to allow cross-agent access."},
		{"unknown sessionId", "", mainCaller, idNone, "error", "No session found: " + idNone},
		{"ambiguous sessionId", "", mainCaller, idDup, "error",
			"Multiple sessions found for sessionId: " + idDup + " (agent:main:dup-b, agent:main:dup-a)"},
		{"sandbox: unrelated key", "", sandboxed(req), "agent:main:main", "forbidden",
			"Session not visible from this sandboxed agent session: agent:main:main"},
		{"sandbox: unrelated sessionId", "", sandboxed(req), idOther, "forbidden",
			"Session not visible from this sandboxed agent session: " + idOther},
		{"sandbox: other agent", `{tools: {sessions: {visibility: "all"}, agentToAgent: {enabled: true}}}`, sandboxed(req),
			"agent:ops:main", "forbidden", "Session not visible from this sandboxed agent session: agent:ops:main"},
		{"sandboxed sub-agent: guard still applies", `{tools: {sessions: {visibility: "all"}}}`,
			sandboxed("agent:main:subagent:child"), "agent:main:main", "forbidden", tree},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.cfg)
			e.sess(store.Session{Key: "agent:main:main"})
			e.sess(store.Session{Key: req})
			e.sess(store.Session{Key: "agent:main:subagent:child", SpawnedBy: "agent:main:main"})
			e.sess(store.Session{Key: "agent:main:subagent:grandchild", SpawnedBy: "agent:main:subagent:child"})
			e.sess(store.Session{Key: "agent:main:discord:group:other"})
			e.sess(store.Session{Key: "agent:ops:main", SessionID: idOther})
			e.sess(store.Session{Key: "agent:main:dup-a", SessionID: idDup, UpdatedAt: testNow.Add(-3 * time.Minute)})
			e.sess(store.Session{Key: "agent:main:dup-b", SessionID: idDup, UpdatedAt: testNow.Add(-2 * time.Minute)})
			d := e.mustCall(tt.caller, HistoryToolName, map[string]any{"sessionKey": tt.key})
			want := map[string]any{"status": tt.status, "error": tt.err}
			if diff := cmp.Diff(want, d); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestHistoryAllowed(t *testing.T) {
	const req = "agent:main:discord:group:req"
	tests := []struct {
		name    string
		cfg     string
		caller  tools.Caller
		key     string
		display string
	}{
		{"tree: own session", "", mainCaller, "main", "main"},
		{"tree: direct child", "", mainCaller, "agent:main:subagent:child", "agent:main:subagent:child"},
		{"tree: child by sessionId", "", mainCaller, idChild, "agent:main:subagent:child"},
		{"agent: any same-agent session", `{tools: {sessions: {visibility: "agent"}}}`, mainCaller, "agent:main:discord:group:other", "agent:main:discord:group:other"},
		{"all with a2a", `{tools: {sessions: {visibility: "all"}, agentToAgent: {enabled: true}}}`, mainCaller, "agent:ops:main", "agent:ops:main"},
		{"all with a2a allow globs", `{tools: {sessions: {visibility: "all"}, agentToAgent: {enabled: true, allow: ["MA*", "o*s"]}}}`, mainCaller, "agent:ops:main", "agent:ops:main"},
		{"sandbox: spawned child", "", sandboxed(req), "agent:main:subagent:sandkid", "agent:main:subagent:sandkid"},
		{"sandbox: own session", "", sandboxed(req), req, req},
		{"sandbox clamp all", `{tools: {sessions: {visibility: "agent"}}, agents: {defaults: {sandbox: {sessionToolsVisibility: "all"}}}}`,
			sandboxed(req), "agent:main:discord:group:other", "agent:main:discord:group:other"},
		{"missing session is empty", `{tools: {sessions: {visibility: "agent"}}}`, mainCaller, "agent:main:ghost", "agent:main:ghost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.cfg)
			for _, s := range []store.Session{
				{Key: "agent:main:main"}, {Key: req},
				{Key: "agent:main:subagent:child", SessionID: idChild, SpawnedBy: "agent:main:main"},
				{Key: "agent:main:subagent:sandkid", SpawnedBy: req},
				{Key: "agent:main:discord:group:other"}, {Key: "agent:ops:main"},
			} {
				got := e.sess(s)
				e.msgs(got.SessionID, userMsg("in "+s.Key))
			}
			d := e.mustCall(tt.caller, HistoryToolName, map[string]any{"sessionKey": tt.key})
			if d["sessionKey"] != tt.display {
				t.Errorf("sessionKey = %v, want %s (payload %v)", d["sessionKey"], tt.display, d)
			}
			want := []string{}
			if tt.key != "agent:main:ghost" {
				key := tt.display
				if key == "main" {
					key = "agent:main:main"
				}
				want = []string{"in " + key}
			}
			if diff := cmp.Diff(want, texts(d["messages"])); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
			if len(want) == 0 && d["bytes"] != float64(2) {
				t.Errorf("bytes = %v, want 2", d["bytes"])
			}
		})
	}
}

func TestHistorySanitize(t *testing.T) {
	secret := "sk-abcdefghijklmnopqrstuvwxyz0123456789"
	long := strings.Repeat("x", 5000)

	t.Run("redaction", func(t *testing.T) {
		e := newEnv(t, "")
		s := e.sess(store.Session{Key: "agent:main:main"})
		e.msgs(s.SessionID, userMsg("my key is "+secret))
		d := e.mustCall(mainCaller, HistoryToolName, map[string]any{"sessionKey": "main"})
		got := texts(d["messages"])[0]
		want, _ := sanitize.DefaultRedactor().Redact("my key is " + secret)
		if got != want || strings.Contains(got, secret) {
			t.Errorf("text = %q, want %q", got, want)
		}
		if d["contentRedacted"] != true || d["truncated"] != false {
			t.Errorf("flags: %v", d)
		}
	})
	t.Run("redaction off", func(t *testing.T) {
		e := newEnv(t, `{logging: {redactSensitive: "off"}}`)
		s := e.sess(store.Session{Key: "agent:main:main"})
		e.msgs(s.SessionID, userMsg("my key is "+secret))
		d := e.mustCall(mainCaller, HistoryToolName, map[string]any{"sessionKey": "main"})
		if got := texts(d["messages"])[0]; got != "my key is "+secret || d["contentRedacted"] != false {
			t.Errorf("text = %q, contentRedacted = %v", got, d["contentRedacted"])
		}
	})
	t.Run("custom patterns", func(t *testing.T) {
		e := newEnv(t, `{logging: {redactPatterns: ["hunter[0-9]+"]}}`)
		s := e.sess(store.Session{Key: "agent:main:main"})
		e.msgs(s.SessionID, userMsg("password hunter22 and "+secret))
		d := e.mustCall(mainCaller, HistoryToolName, map[string]any{"sessionKey": "main"})
		got := texts(d["messages"])[0]
		if strings.Contains(got, "hunter22") || d["contentRedacted"] != true {
			t.Errorf("text = %q", got)
		}
	})
	t.Run("truncation", func(t *testing.T) {
		e := newEnv(t, "")
		s := e.sess(store.Session{Key: "agent:main:main"})
		e.msgs(s.SessionID, userMsg(long))
		d := e.mustCall(mainCaller, HistoryToolName, map[string]any{"sessionKey": "main"})
		got := texts(d["messages"])[0]
		if got != strings.Repeat("x", 4000)+"\n…(truncated)…" {
			t.Errorf("text of length %d ends %q", len(got), got[len(got)-20:])
		}
		if d["contentTruncated"] != true || d["truncated"] != true || d["droppedMessages"] != false {
			t.Errorf("flags: %v", d)
		}
	})
	t.Run("fields removed", func(t *testing.T) {
		e := newEnv(t, "")
		s := e.sess(store.Session{Key: "agent:main:main"})
		sig := "sig"
		a := transcript.NewAssistantMessage([]transcript.Block{
			{Type: transcript.BlockThinking, Thinking: &sig, ThinkingSignature: "opaque"},
			{Type: transcript.BlockImage, Data: "aGVsbG8=", MimeType: "image/png"},
			transcript.TextBlock("done"),
		}, testNow)
		a.Usage = &transcript.Usage{Input: 1, Output: 2, TotalTokens: 3}
		e.msgs(s.SessionID, a, transcript.NewToolResult("c", "exec", "out", json.RawMessage(`{"k":1}`), false, testNow))
		d := e.mustCall(mainCaller, HistoryToolName, map[string]any{"sessionKey": "main", "includeTools": true})
		msgs := d["messages"].([]any)
		am := msgs[0].(map[string]any)
		if _, ok := am["usage"]; ok {
			t.Errorf("usage kept: %v", am)
		}
		blocks := am["content"].([]any)
		wantBlocks := []any{
			map[string]any{"type": "thinking", "thinking": "sig"},
			map[string]any{"type": "image", "mimeType": "image/png", "omitted": true, "bytes": float64(8)},
			map[string]any{"type": "text", "text": "done"},
		}
		if diff := cmp.Diff(wantBlocks, blocks); diff != "" {
			t.Errorf("blocks (-want +got):\n%s", diff)
		}
		if _, ok := msgs[1].(map[string]any)["details"]; ok {
			t.Errorf("details kept: %v", msgs[1])
		}
		if d["contentTruncated"] != true || d["truncated"] != true {
			t.Errorf("flags: %v", d)
		}
	})
	t.Run("byte cap drops the oldest", func(t *testing.T) {
		e := newEnv(t, "")
		s := e.sess(store.Session{Key: "agent:main:main"})
		var ms []*transcript.Message
		for i := range 30 {
			ms = append(ms, userMsg(fmt.Sprintf("%02d", i)+strings.Repeat("y", 3900)))
		}
		e.msgs(s.SessionID, ms...)
		d := e.mustCall(mainCaller, HistoryToolName, map[string]any{"sessionKey": "main"})
		got := texts(d["messages"])
		if len(got) >= 30 || len(got) < 15 || !strings.HasPrefix(got[len(got)-1], "29") {
			t.Fatalf("kept %d messages, last %.4q", len(got), got[len(got)-1])
		}
		b := d["bytes"].(float64)
		if b > sanitize.DefaultMaxBytes {
			t.Errorf("bytes = %v over the cap", b)
		}
		if d["droppedMessages"] != true || d["truncated"] != true || d["contentTruncated"] != false {
			t.Errorf("flags: %v", d)
		}
		// bytes is the size of the returned messages.
		if int(b) != sanitize.JSONSize(toAnySlice(d["messages"])) {
			t.Errorf("bytes = %v, JSONSize = %d", b, sanitize.JSONSize(toAnySlice(d["messages"])))
		}
	})
	t.Run("hard cap placeholder", func(t *testing.T) {
		e := newEnv(t, "")
		s := e.sess(store.Session{Key: "agent:main:main"})
		var blocks []transcript.Block
		for range 30 {
			blocks = append(blocks, transcript.TextBlock(strings.Repeat("z", 3500)))
		}
		e.msgs(s.SessionID, userMsg("small"), transcript.NewAssistantMessage(blocks, testNow))
		d := e.mustCall(mainCaller, HistoryToolName, map[string]any{"sessionKey": "main"})
		want := []any{map[string]any{"role": "assistant", "content": "[sessions_history omitted: message too large]"}}
		if diff := cmp.Diff(want, d["messages"]); diff != "" {
			t.Errorf("messages (-want +got):\n%s", diff)
		}
		if d["droppedMessages"] != true || d["truncated"] != true {
			t.Errorf("flags: %v", d)
		}
	})
}

func toAnySlice(v any) []any { return v.([]any) }

func TestHistoryReadError(t *testing.T) {
	e := newEnv(t, "", withStore(func(s Store) Store { return &failingStore{Store: s, failHistory: true} }))
	e.keys("agent:main:main")
	if _, err := e.call(mainCaller, HistoryToolName, map[string]any{"sessionKey": "main"}); err == nil || err.Error() != errInjected.Error() {
		t.Errorf("err = %v, want %v", err, errInjected)
	}
}

// The gateway's token and password pasted into a message do not come back
// out of sessions_history.
func TestHistoryRedactsGatewaySecrets(t *testing.T) {
	const tok, pw = "tok-0123456789abcdefghijklmnop", "correct horse battery staple"
	e := newEnv(t, `{gateway: {auth: {mode: "token", token: "`+tok+`", password: "`+pw+`"}}}`)
	s := e.sess(store.Session{Key: "agent:main:main", SessionID: idMain})
	e.msgs(s.SessionID, userMsg("my token is "+tok+" and the password "+pw))
	d := e.mustCall(mainCaller, HistoryToolName, map[string]any{"sessionKey": "main"})
	b, _ := json.Marshal(d["messages"])
	if strings.Contains(string(b), tok) || strings.Contains(string(b), pw) {
		t.Errorf("a gateway secret came back: %s", b)
	}
	if d["contentRedacted"] != true {
		t.Errorf("contentRedacted = %v", d["contentRedacted"])
	}
}

// TestHistoryQuery searches the current transcript and the one before a
// reset, oldest first, within the limit.
func TestHistoryQuery(t *testing.T) {
	e := newEnv(t, "")
	e.msgs("old-transcript", userMsg("the heron lands"), assistantMsg("a grey heron"), userMsg("unrelated"))
	s := e.sess(store.Session{Key: "agent:main:main"})
	reset := transcript.Entry{Type: transcript.TypeReset, Timestamp: transcript.FormatTime(testNow),
		Extra: map[string]json.RawMessage{"previousSessionId": json.RawMessage(`"old-transcript"`)}}
	if _, err := e.st.AppendMessages(t.Context(), s.SessionID, []store.Message{{Entry: reset}}); err != nil {
		t.Fatal(err)
	}
	e.msgs(s.SessionID, userMsg("HERON again"), assistantMsg("fine"))
	tests := []struct {
		args map[string]any
		want []string
	}{
		{map[string]any{"query": "heron"}, []string{"the heron lands", "a grey heron", "HERON again"}},
		{map[string]any{"query": "heron", "limit": 2}, []string{"a grey heron", "HERON again"}},
		{map[string]any{"query": "zebra"}, []string{}},
		{map[string]any{"query": "  "}, []string{"HERON again", "fine"}}, // blank: plain history
	}
	for _, tt := range tests {
		tt.args["sessionKey"] = "main"
		d := e.mustCall(mainCaller, HistoryToolName, tt.args)
		if diff := cmp.Diff(tt.want, texts(d["messages"])); diff != "" {
			t.Errorf("%v (-want +got):\n%s", tt.args, diff)
		}
	}
	d := e.mustCall(mainCaller, HistoryToolName, map[string]any{"sessionKey": "main", "query": "lands"})
	if meta := d["messages"].([]any)[0].(map[string]any)["__openclaw"].(map[string]any); meta["sessionId"] != "old-transcript" {
		t.Errorf("archived match meta = %v", meta)
	}
}

// TestHistoryOfItsOwnSessionAwaitsEarlierResults: sessions_history of the
// caller's own session waits for the results of the step's earlier calls
// to be stored (tools.AwaitWritten); of another session it does not.
func TestHistoryOfItsOwnSessionAwaitsEarlierResults(t *testing.T) {
	e := newEnv(t, "")
	e.sess(store.Session{Key: "agent:main:main", SessionID: idMain})
	e.keys("agent:main:other")
	for _, tc := range []struct {
		ref  string
		want bool
	}{{"main", true}, {"agent:main:other", false}} {
		waited := false
		ctx := tools.WithWritten(tools.WithCaller(t.Context(), mainCaller), func(context.Context) error {
			waited = true
			return nil
		})
		raw, _ := json.Marshal(map[string]any{"sessionKey": tc.ref})
		if _, err := e.tool(HistoryToolName).Call(ctx, raw); err != nil {
			t.Fatal(err)
		}
		if waited != tc.want {
			t.Errorf("%s: waited for earlier results = %v, want %v", tc.ref, waited, tc.want)
		}
	}
}
