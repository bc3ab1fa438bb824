package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/store"
)

type chatEv struct {
	RunID      string          `json:"runId"`
	SessionKey string          `json:"sessionKey"`
	AgentID    string          `json:"agentId"`
	Seq        int64           `json:"seq"`
	State      string          `json:"state"`
	DeltaText  string          `json:"deltaText"`
	Message    json.RawMessage `json:"message"`
	StopReason string          `json:"stopReason"`
	Usage      json.RawMessage `json:"usage"`
	Error      string          `json:"errorMessage"`
	ErrorKind  string          `json:"errorKind"`
}

type agentEv struct {
	RunID      string         `json:"runId"`
	Seq        int64          `json:"seq"`
	Stream     string         `json:"stream"`
	TS         int64          `json:"ts"`
	Data       map[string]any `json:"data"`
	SessionKey string         `json:"sessionKey"`
	AgentID    string         `json:"agentId"`
	SessionID  string         `json:"sessionId"`
}

func decodeAs[T any](t testing.TB, f *wire.Frame) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(f.Payload, &v); err != nil {
		t.Fatalf("payload %s: %v", f.Payload, err)
	}
	return v
}

func messageText(t testing.TB, raw json.RawMessage) string {
	t.Helper()
	var m struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("message %s: %v", raw, err)
	}
	var sb strings.Builder
	for _, b := range m.Content {
		if b.Type == "text" {
			sb.WriteString(b.Text)
		}
	}
	return sb.String()
}

func TestChatSendStreamsEvents(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	watcher := e.connect(wire.ScopeRead) // run events reach every operator connection

	var res wire.ChatSendResult
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "hello there world", "idempotencyKey": "run-1"}, &res)
	if res != (wire.ChatSendResult{RunID: "run-1", Status: "started"}) {
		t.Errorf("chat.send = %+v", res)
	}
	evs := c.runEvents("run-1")

	// The response precedes the run's events, and frame seqs count from 1
	// without gaps after hello-ok.
	var seqs []int64
	resAt, firstEvAt := -1, -1
	for i, f := range c.received() {
		if f.Type == wire.FrameResponse && strings.HasSuffix(f.ID, ":chat.send") {
			resAt = i
		}
		if f.Type == wire.FrameEvent && f.Seq != nil {
			seqs = append(seqs, *f.Seq)
			if firstEvAt < 0 && strings.Contains(string(f.Payload), `"run-1"`) {
				firstEvAt = i
			}
		}
	}
	if resAt < 0 || firstEvAt < resAt {
		t.Errorf("response at %d, first run event at %d", resAt, firstEvAt)
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("frame seqs = %v, want 1..n", seqs)
		}
	}

	var streams []string
	var deltas strings.Builder
	var lastAgentSeq int64
	agentSeqs := map[int64]bool{}
	var final chatEv
	for _, f := range evs {
		switch f.Event {
		case wire.EventAgent:
			a := decodeAs[agentEv](t, f)
			if a.Seq <= lastAgentSeq {
				t.Errorf("agent seq %d after %d", a.Seq, lastAgentSeq)
			}
			lastAgentSeq = a.Seq
			agentSeqs[a.Seq] = true
			if a.SessionKey != "agent:main:main" || a.AgentID != "main" || a.SessionID == "" || a.TS == 0 {
				t.Errorf("agent event = %+v", a)
			}
			s := a.Stream
			if a.Stream == "lifecycle" {
				s += ":" + a.Data["phase"].(string)
			}
			if len(streams) == 0 || streams[len(streams)-1] != s {
				streams = append(streams, s)
			}
		case wire.EventChat:
			ce := decodeAs[chatEv](t, f)
			if !agentSeqs[ce.Seq] {
				t.Errorf("chat seq %d matches no agent event", ce.Seq)
			}
			if ce.SessionKey != "agent:main:main" || ce.AgentID != "main" {
				t.Errorf("chat event = %+v", ce)
			}
			switch ce.State {
			case wire.ChatStateDelta:
				deltas.WriteString(ce.DeltaText)
				if got := messageText(t, ce.Message); got != deltas.String() {
					t.Errorf("delta message %q, want the text so far %q", got, deltas.String())
				}
			case wire.ChatStateFinal:
				final = ce
			}
		}
	}
	wantStreams := []string{"lifecycle:start", "lifecycle:model", "assistant", "usage", "lifecycle:end"}
	if diff := cmp.Diff(wantStreams, streams); diff != "" {
		t.Errorf("agent streams (-want +got):\n%s", diff)
	}
	const reply = "echo: hello there world"
	if deltas.String() != reply {
		t.Errorf("deltas = %q", deltas.String())
	}
	if final.State != "final" || final.StopReason != "stop" || messageText(t, final.Message) != reply || len(final.Usage) == 0 {
		t.Errorf("final = %+v", final)
	}

	// Another operator connection saw the same run.
	if got := watcher.runEvents("run-1"); len(got) != len(evs) {
		t.Errorf("watcher got %d run events, want %d", len(got), len(evs))
	}

	var hist struct {
		SessionKey string `json:"sessionKey"`
		SessionID  string `json:"sessionId"`
		Messages   []struct {
			Role           string `json:"role"`
			IdempotencyKey string `json:"idempotencyKey"`
			Meta           struct {
				ID    string `json:"id"`
				Seq   int64  `json:"seq"`
				RunID string `json:"runId"`
			} `json:"__openclaw"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	c.ok(wire.MethodChatHistory, map[string]any{"sessionKey": "main"}, &hist)
	if hist.SessionKey != "agent:main:main" || hist.SessionID == "" || len(hist.Messages) != 2 {
		t.Fatalf("history = %+v", hist)
	}
	u, a := hist.Messages[0], hist.Messages[1]
	if u.Role != "user" || u.IdempotencyKey != "run-1:user" || u.Meta.ID == "" || u.Meta.Seq != 1 || u.Meta.RunID != "run-1" {
		t.Errorf("user message = %+v", u)
	}
	if a.Role != "assistant" || a.Meta.RunID != "run-1" || a.Meta.Seq != 2 {
		t.Errorf("assistant message = %+v", a)
	}
	var limited wire.ChatHistoryResult
	c.ok(wire.MethodChatHistory, map[string]any{"sessionKey": "agent:main:main", "limit": 1}, &limited)
	if len(limited.Messages) != 1 {
		t.Errorf("limit 1 gave %d messages", len(limited.Messages))
	}
	var none wire.ChatHistoryResult
	c.ok(wire.MethodChatHistory, map[string]any{"sessionKey": "nobody-here"}, &none)
	if none.SessionKey != "agent:main:nobody-here" || len(none.Messages) != 0 || none.Messages == nil {
		t.Errorf("history of a missing session = %+v", none)
	}
	if err := c.fail(wire.MethodChatHistory, map[string]any{"sessionKey": "main", "limit": 1001}); err.Message != "invalid chat.history params: at /limit: must be <= 1000" {
		t.Errorf("limit 1001: %+v", err)
	}
}

func TestChatDeltaThrottle(t *testing.T) {
	e := newEnv(t, envOptions{gateway: func(c *Config) { c.ChatDeltaInterval = time.Hour }})
	c := e.operator()
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "one two three four five", "idempotencyKey": "thr"}, nil)
	var deltas []chatEv
	var final chatEv
	for _, f := range c.runEvents("thr") {
		if f.Event == wire.EventChat {
			ce := decodeAs[chatEv](t, f)
			if ce.State == "delta" {
				deltas = append(deltas, ce)
			} else {
				final = ce
			}
		}
	}
	// The first delta goes out at once, the rest is held and flushed
	// before the final event.
	if len(deltas) != 2 || deltas[0].DeltaText+deltas[1].DeltaText != "echo: one two three four five" {
		t.Errorf("deltas = %+v", deltas)
	}
	if messageText(t, final.Message) != "echo: one two three four five" {
		t.Errorf("final = %+v", final)
	}
}

func TestChatSendDedup(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	params := map[string]any{"sessionKey": "main", "message": "/reply once", "idempotencyKey": "dup-1"}
	var first, second, third wire.ChatSendResult
	release := e.gate.hold() // the run stays in flight until the repeat is answered
	c.ok(wire.MethodChatSend, params, &first)
	c.ok(wire.MethodChatSend, params, &second)
	release()
	if first.Status != "started" || second != (wire.ChatSendResult{RunID: "dup-1", Status: "in_flight"}) {
		t.Errorf("first %+v, second %+v", first, second)
	}
	c.runEvents("dup-1")
	c.ok(wire.MethodChatSend, params, &third)
	if third != (wire.ChatSendResult{RunID: "dup-1", Status: "ok"}) {
		t.Errorf("after the run: %+v", third)
	}
	var hist wire.ChatHistoryResult
	c.ok(wire.MethodChatHistory, map[string]any{"sessionKey": "main"}, &hist)
	if len(hist.Messages) != 2 {
		t.Errorf("history has %d messages, want one turn", len(hist.Messages))
	}
}

func TestChatAbortStalledRun(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "/reply partial\n/stall", "idempotencyKey": "stall-1"}, nil)
	// Wait until the model is streaming.
	for {
		f := c.expectEvent(wire.EventAgent)
		if a := decodeAs[agentEv](t, f); a.RunID == "stall-1" && a.Stream == "assistant" {
			break
		}
	}
	var res wire.ChatAbortResult
	c.ok(wire.MethodChatAbort, map[string]any{"sessionKey": "main"}, &res)
	if diff := cmp.Diff(wire.ChatAbortResult{OK: true, Aborted: true, RunIDs: []string{"stall-1"}}, res); diff != "" {
		t.Errorf("chat.abort (-want +got):\n%s", diff)
	}
	evs := c.runEvents("stall-1")
	last := decodeAs[chatEv](t, evs[len(evs)-1])
	if last.State != "aborted" || last.StopReason != "aborted" || messageText(t, last.Message) != "partial" {
		t.Errorf("last chat event = %+v", last)
	}
	var wait wire.AgentWaitResult
	c.ok(wire.MethodAgentWait, map[string]any{"runId": "stall-1"}, &wait)
	if wait.Status != "error" || wait.Error != "aborted" || wait.EndedAt == 0 {
		t.Errorf("agent.wait = %+v", wait)
	}
	// Nothing left to abort; a runId of another session is refused.
	c.ok(wire.MethodChatAbort, map[string]any{"sessionKey": "main"}, &res)
	if res.Aborted || len(res.RunIDs) != 0 {
		t.Errorf("second chat.abort = %+v", res)
	}
	if err := c.fail(wire.MethodChatAbort, map[string]any{"sessionKey": "other", "runId": "stall-1"}); err.Code != "INVALID_REQUEST" {
		t.Errorf("foreign runId: %+v", err)
	}
}

func TestChatInject(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	if err := c.fail(wire.MethodChatInject, map[string]any{"sessionKey": "main", "message": "x"}); err.Message != "session not found: agent:main:main" {
		t.Errorf("inject into a missing session: %+v", err)
	}
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "hi", "idempotencyKey": "i-1"}, nil)
	c.runEvents("i-1")
	var res wire.ChatInjectResult
	c.ok(wire.MethodChatInject, map[string]any{"sessionKey": "main", "message": "operator note", "label": "note"}, &res)
	if !res.OK || res.MessageID == "" {
		t.Errorf("chat.inject = %+v", res)
	}
	f := c.expectEvent(wire.EventChat)
	if ce := decodeAs[chatEv](t, f); ce.State != "final" || messageText(t, ce.Message) != "operator note" || !strings.HasPrefix(ce.RunID, "inject-") {
		t.Errorf("inject event = %+v", ce)
	}
	var hist wire.ChatHistoryResult
	c.ok(wire.MethodChatHistory, map[string]any{"sessionKey": "main"}, &hist)
	if len(hist.Messages) != 3 || messageText(t, hist.Messages[2]) != "operator note" {
		t.Errorf("history = %s", hist.Messages)
	}
}

func TestAgentAndWait(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()

	_, ch := c.start(wire.MethodAgent, map[string]any{"message": "/reply done", "idempotencyKey": "a-1", "sessionKey": "work"})
	first := c.await(ch)
	if !first.OK {
		t.Fatalf("agent: %v", first.Error)
	}
	acc := decodeAs[wire.AgentResult](t, first)
	if acc.RunID != "a-1" || acc.SessionKey != "agent:main:work" || acc.AgentID != "main" || acc.Status != "accepted" || acc.AcceptedAt == 0 {
		t.Errorf("agent = %+v", acc)
	}
	final := c.await(ch) // the second response to the same id
	fin := decodeAs[wire.AgentFinalResult](t, final)
	if !final.OK || fin.Status != "ok" || fin.Result == nil || len(fin.Result.Payloads) != 1 || fin.Result.Payloads[0].Text != "done" {
		t.Errorf("agent final = %s", final.Payload)
	}
	var wait wire.AgentWaitResult
	c.ok(wire.MethodAgentWait, map[string]any{"runId": "a-1", "timeoutMs": 5000}, &wait)
	if wait.Status != "ok" || wait.StartedAt == 0 || wait.EndedAt < wait.StartedAt || wait.StopReason != "stop" || wait.Error != "" {
		t.Errorf("agent.wait = %+v", wait)
	}

	// A run still going reports timeout when the wait runs out.
	c.ok(wire.MethodAgent, map[string]any{"message": "/stall", "idempotencyKey": "a-2"}, nil)
	wait = wire.AgentWaitResult{}
	c.ok(wire.MethodAgentWait, map[string]any{"runId": "a-2", "timeoutMs": 50}, &wait)
	if wait.Status != "timeout" || wait.EndedAt != 0 {
		t.Errorf("agent.wait on a stalled run = %+v", wait)
	}
	c.ok(wire.MethodChatAbort, map[string]any{"sessionKey": "main", "runId": "a-2"}, nil)

	// A failing run reports error, and the final response fails.
	_, ch = c.start(wire.MethodAgent, map[string]any{"message": "/error 400 boom", "idempotencyKey": "a-3"})
	c.await(ch)
	final = c.await(ch)
	if final.OK || final.Error.Code != "UNAVAILABLE" || decodeAs[wire.AgentFinalResult](t, final).Status != "error" {
		t.Errorf("failed agent final = %+v %s", final.Error, final.Payload)
	}
	wait = wire.AgentWaitResult{}
	c.ok(wire.MethodAgentWait, map[string]any{"runId": "a-3"}, &wait)
	if wait.Status != "error" || !strings.Contains(wait.Error, "boom") {
		t.Errorf("agent.wait on a failed run = %+v", wait)
	}

	// Errors.
	if err := c.fail(wire.MethodAgent, map[string]any{"message": "", "idempotencyKey": "x"}); err.Message != "invalid agent params: at /message: must NOT have fewer than 1 characters" {
		t.Errorf("empty message: %+v", err)
	}
	if err := c.fail(wire.MethodAgent, map[string]any{"message": "m", "idempotencyKey": "x", "agentId": "ghost"}); err.Message != "unknown agent id: ghost" {
		t.Errorf("unknown agent: %+v", err)
	}
}

func TestAgentWaitSurvivesReconnect(t *testing.T) {
	e := newEnv(t, envOptions{})
	c1 := e.operator()
	release := e.gate.hold() // the run ends only after the second client waits
	c1.ok(wire.MethodAgent, map[string]any{"message": "/reply late", "idempotencyKey": "r-1"}, nil)
	c1.start(wire.MethodAgentWait, map[string]any{"runId": "r-1", "timeoutMs": 10000})
	// Frames are dispatched in order: once health answers, the wait is
	// under way server-side.
	c1.ok(wire.MethodHealth, nil, nil)
	c1.close()

	c2 := e.operator()
	var wait wire.AgentWaitResult
	_, waited := c2.start(wire.MethodAgentWait, map[string]any{"runId": "r-1", "timeoutMs": 10000})
	c2.ok(wire.MethodHealth, nil, nil) // the wait is registered
	release()
	wait = decodeAs[wire.AgentWaitResult](t, c2.await(waited))
	if wait.Status != "ok" {
		t.Errorf("agent.wait after reconnect = %+v", wait)
	}

	// A wait may start before the run exists.
	_, ch := c2.start(wire.MethodAgentWait, map[string]any{"runId": "future-1", "timeoutMs": 10000})
	c2.ok(wire.MethodAgent, map[string]any{"message": "/reply later", "idempotencyKey": "future-1"}, nil)
	if w := decodeAs[wire.AgentWaitResult](t, c2.await(ch)); w.Status != "ok" {
		t.Errorf("early agent.wait = %+v", w)
	}
}

func TestCancelFrame(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	// The cancel frame follows the request's: the gateway reads frames in
	// order and registers a request before it reads the next frame.
	id, ch := c.start(wire.MethodAgentWait, map[string]any{"runId": "never", "timeoutMs": 60000})
	c.sendRaw(`{"type":"cancel","id":"` + id + `"}`)
	res := c.await(ch)
	if res.OK || res.Error.Code != "UNAVAILABLE" || res.Error.Message != "request cancelled" {
		t.Errorf("cancelled request = %+v", res.Error)
	}
	c.sendRaw(`{"type":"cancel","id":"no-such-request"}`) // ignored
	c.ok(wire.MethodHealth, nil, nil)
}

func TestSendPolicy(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	c.ok(wire.MethodSessionsPatch, map[string]any{"key": "locked", "sendPolicy": "deny"}, nil)
	for _, m := range []string{wire.MethodChatSend, wire.MethodAgent} {
		params := map[string]any{"sessionKey": "locked", "message": "hi", "idempotencyKey": m + "-1"}
		if err := c.fail(m, params); err.Code != "INVALID_REQUEST" || err.Message != "send blocked by session policy" {
			t.Errorf("%s: %+v", m, err)
		}
	}
	c.ok(wire.MethodSessionsPatch, map[string]any{"key": "locked", "sendPolicy": nil}, nil)
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "locked", "message": "hi", "idempotencyKey": "ok-1"}, nil)
	c.runEvents("ok-1")

	// Config-level policy.
	e2 := newEnv(t, envOptions{config: `{
		gateway: {auth: {mode: "token", token: "` + testToken + `"}},
		session: {sendPolicy: {default: "deny", rules: [{action: "allow", match: {keyPrefix: "ok"}}]}},
	}`})
	c2 := e2.operator()
	if err := c2.fail(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "hi", "idempotencyKey": "d-1"}); err.Message != "send blocked by session policy" {
		t.Errorf("config deny: %+v", err)
	}
	c2.ok(wire.MethodChatSend, map[string]any{"sessionKey": "ok-room", "message": "hi", "idempotencyKey": "d-2"}, nil)
	c2.runEvents("d-2")
}

func TestScopes(t *testing.T) {
	e := newEnv(t, envOptions{})
	reader := e.connect(wire.ScopeRead)
	err := reader.fail(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "hi", "idempotencyKey": "s-1"})
	if err.Code != "FORBIDDEN" || err.Message != "missing scope: operator.write" {
		t.Errorf("reader chat.send: %+v", err)
	}
	want := map[string]any{"code": "MISSING_SCOPE", "missingScope": "operator.write", "requiredScopes": []any{"operator.write"}}
	if diff := cmp.Diff(want, details(t, err)); diff != "" {
		t.Errorf("details (-want +got):\n%s", diff)
	}
	reader.ok(wire.MethodSessionsList, nil, nil)
	reader.ok(wire.MethodAgentsList, nil, nil)

	writer := e.connect(wire.ScopeWrite)
	writer.ok(wire.MethodSessionsList, nil, nil) // write implies read
	writer.ok(wire.MethodSessionsPatch, map[string]any{"key": "w", "label": "mine"}, nil)
	for _, tt := range []struct {
		method string
		params map[string]any
	}{
		{wire.MethodSessionsPatch, map[string]any{"key": "w", "sendPolicy": "deny"}},
		{wire.MethodSessionsPatch, map[string]any{"key": "w", "verboseLevel": "on"}},
		{wire.MethodSessionsDelete, map[string]any{"key": "w"}},
		{wire.MethodChatInject, map[string]any{"sessionKey": "w", "message": "x"}},
	} {
		if err := writer.fail(tt.method, tt.params); err.Code != "FORBIDDEN" || err.Message != "missing scope: operator.admin" {
			t.Errorf("writer %s %v: %+v", tt.method, tt.params, err)
		}
	}
	nobody := e.connect()
	if err := nobody.fail(wire.MethodHealth, nil); err.Code != "FORBIDDEN" {
		t.Errorf("no scopes health: %+v", err)
	}
}

func TestParamsErrors(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	if err := c.fail(wire.MethodSessionsPatch, map[string]any{"key": "main", "bogusField": 1}); err.Code != "INVALID_REQUEST" ||
		err.Message != "invalid sessions.patch params: at root: unexpected property 'bogusField'" {
		t.Errorf("bogusField: %+v", err)
	}
	if err := c.fail(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "hi"}); err.Code != "INVALID_REQUEST" ||
		err.Message != "invalid chat.send params: must have required property 'idempotencyKey'" {
		t.Errorf("missing idempotencyKey: %+v", err)
	}
}

// TestSendCommand covers the standalone "/send on|off|inherit" message: an
// admin sets the session's override and gets the reference's reply without
// a run; input is then blocked until "/send on".
func TestSendCommand(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	send := func(msg, key string) *wire.Frame {
		return c.call(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": msg, "idempotencyKey": key})
	}
	// A read/write operator's command is consumed without effect.
	rw := e.connect("operator.read", "operator.write")
	if f := rw.call(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "/send off", "idempotencyKey": "cmd-0"}); !f.OK {
		t.Fatalf("non-admin /send off: %+v", f.Error)
	}
	if _, err := e.store.GetSession(context.Background(), "agent:main:main"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("non-admin /send created or changed the session: %v", err)
	}
	if f := send("/send off", "cmd-1"); !f.OK {
		t.Fatalf("/send off: %+v", f.Error)
	}
	sess, err := e.store.GetSession(context.Background(), "agent:main:main")
	if err != nil || sess.SendPolicy != "deny" {
		t.Fatalf("after /send off: %+v, %v", sess, err)
	}
	if f := send("hello", "cmd-2"); f.OK || f.Error.Message != "send blocked by session policy" {
		t.Errorf("send while off = %+v", f)
	}
	if f := send("/SEND   inherit ", "cmd-3"); !f.OK {
		t.Fatalf("/send inherit: %+v", f.Error)
	}
	sess, _ = e.store.GetSession(context.Background(), "agent:main:main")
	if sess.SendPolicy != "" {
		t.Errorf("after /send inherit: sendPolicy %q", sess.SendPolicy)
	}
	send("/send bogus", "cmd-4")
	msgs, _ := e.store.History(context.Background(), sess.SessionID, store.HistoryOptions{})
	var replies []string
	for _, m := range msgs {
		if m.Role == "assistant" {
			replies = append(replies, m.Entry.Message.Content.Text())
		}
	}
	want := []string{"⚙️ Send policy set to off.", "⚙️ Send policy set to inherit.", "⚙️ Usage: /send on|off|inherit"}
	if diff := cmp.Diff(want, replies); diff != "" {
		t.Errorf("replies (-want +got):\n%s", diff)
	}
	for _, m := range msgs {
		if m.Role == "user" {
			t.Errorf("a /send command was stored as user input: %+v", m.Entry.Message)
		}
	}
}
