package wire

import (
	"encoding/json"
	"testing"
)

func mustMarshal(t testing.TB, v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkEventJSON compares the hand-written encoders with json.Marshal on
// events whose strings are s and whose raw members json.Marshal made.
func checkEventJSON(t *testing.T, s string) {
	t.Helper()
	raw := mustMarshal(t, map[string]any{"text": s, "n": 1, "nested": []any{s, nil, true}})
	agents := []AgentEvent{
		{},
		{RunID: s, Seq: 7, Stream: s, TS: 1700000000000, Data: raw, SessionKey: s, AgentID: s, SessionID: s, Lane: s, SpawnedBy: s, IsHeartbeat: true},
		{RunID: "r", Seq: -1, Stream: StreamAssistant, Data: json.RawMessage(`{}`), AgentID: "main"},
	}
	for _, e := range agents {
		if got, want := string(e.AppendJSON(nil)), string(mustMarshal(t, e)); got != want {
			t.Errorf("AgentEvent.AppendJSON(%q):\n got %s\nwant %s", s, got, want)
		}
	}
	chats := []ChatEvent{
		{},
		{RunID: s, SessionKey: s, AgentID: s, Seq: 3, State: ChatStateFinal, SpawnedBy: s, DeltaText: s, Message: raw, Usage: raw,
			StopReason: s, ErrorMessage: s, ErrorKind: s},
		{RunID: "r", SessionKey: "agent:main:main", State: ChatStateDelta, DeltaText: s, Message: raw},
	}
	for _, e := range chats {
		if got, want := string(e.AppendJSON([]byte("prefix"))), "prefix"+string(mustMarshal(t, e)); got != want {
			t.Errorf("ChatEvent.AppendJSON(%q):\n got %s\nwant %s", s, got, want)
		}
	}
	checkLifecycleJSON(t, s)
}

// checkLifecycleJSON compares the lifecycle data encoders with json.Marshal
// of the maps the gateway built for them.
func checkLifecycleJSON(t *testing.T, s string) {
	t.Helper()
	same := func(what string, got []byte, want map[string]any) {
		t.Helper()
		if w := string(mustMarshal(t, want)); string(got) != w {
			t.Errorf("%s(%q):\n got %s\nwant %s", what, s, got, w)
		}
	}
	same("AppendStartData", AppendStartData(nil, 1700000000123), map[string]any{"phase": "start", "startedAt": int64(1700000000123)})
	same("AppendModelData", AppendModelData(nil, s, s+"-model"), map[string]any{"phase": "model", "provider": s, "model": s + "-model"})
	for _, d := range []EndData{
		{Phase: "end", StopReason: s},
		{Phase: "end", StopReason: "stop", Aborted: true, StartedAt: 1, EndedAt: 2, HasStartedAt: true, HasEndedAt: true},
		{Phase: "error", StopReason: "error", StartedAt: 5, HasStartedAt: true, Error: s, HasError: true},
		{Phase: "error", EndedAt: -3, HasEndedAt: true, HasError: true},
	} {
		want := map[string]any{"phase": d.Phase, "stopReason": d.StopReason, "aborted": d.Aborted}
		if d.HasStartedAt {
			want["startedAt"] = d.StartedAt
		}
		if d.HasEndedAt {
			want["endedAt"] = d.EndedAt
		}
		if d.HasError {
			want["error"] = d.Error
		}
		same("EndData.AppendJSON", d.AppendJSON(nil), want)
	}
}

func TestEventJSONMatchesMarshal(t *testing.T) {
	for _, s := range []string{"", "plain", `<b>&"quoted"\</b>`, "tab\tnew\nline\x01\x7f", "ünïcödé ✓ 😀", "\u2028\u2029", "bad \xff\xfe utf8", "a<b"} {
		checkEventJSON(t, s)
	}
}

func FuzzEventJSON(f *testing.F) {
	for _, s := range []string{"", "<&>", "\xff", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(checkEventJSON)
}

// BenchmarkChatEventJSON compares json.Marshal with AppendJSON on a chat
// delta as a turn sends it.
func BenchmarkChatEventJSON(b *testing.B) {
	msg := mustMarshal(b, map[string]any{"role": "assistant", "timestamp": 1700000000000,
		"content": []any{map[string]any{"type": "text", "text": "Hello! How can I help you today? <ok>"}}})
	e := ChatEvent{RunID: "c12-345", SessionKey: "agent:main:load-12", AgentID: "main", Seq: 4, State: ChatStateDelta,
		DeltaText: "Hello! How can I help you today? <ok>", Message: msg}
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			mustMarshal(b, e)
		}
	})
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			e.AppendJSON(make([]byte, 0, len(msg)+256))
		}
	})
}

// TestAgentEventSizeHint: an agent event whose strings need no escaping
// fits the size its hint gives, which is at most its two numbers' unused
// digits over (a buffer of len(Data)+256 was 60 bytes over for a warm
// turn's events: a size class up).
func TestAgentEventSizeHint(t *testing.T) {
	id := "0b7c1e4a-5d2f-4c3b-9a8e-1f2d3c4b5a69"
	for _, e := range []AgentEvent{
		{},
		{RunID: id, Seq: 1, Stream: StreamLifecycle, TS: 1764000000123, Data: json.RawMessage(`{"phase":"start","startedAt":1764000000123}`),
			SessionKey: "agent:main:load-0", AgentID: "main", SessionID: id, Lane: "agent:main:load-0"},
		{RunID: id, Seq: -9223372036854775808, Stream: StreamAssistant, TS: 9223372036854775807, Data: json.RawMessage(`{}`),
			SessionKey: "k", AgentID: "a", SessionID: "s", Lane: "l", SpawnedBy: "p", IsHeartbeat: true},
	} {
		n, hint := len(e.AppendJSON(nil)), e.SizeHint()
		if n > hint || hint-n > 40 {
			t.Errorf("%+v: %d bytes, hint %d", e, n, hint)
		}
	}
}
