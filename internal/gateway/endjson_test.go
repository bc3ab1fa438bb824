package gateway

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/transcript"
)

// endMessages are final messages a run's end may carry: plain ones (the
// fast path) and ones with raw JSON members, HTML characters or a cost
// (json.Marshal).
func endMessages() []*transcript.Message {
	now := time.UnixMilli(1_764_000_000_123)
	var out []*transcript.Message
	for _, text := range deltaTexts {
		m := transcript.NewAssistantMessage([]transcript.Block{transcript.TextBlock(text)}, now)
		m.Usage = &transcript.Usage{Input: 10, Output: 2, TotalTokens: 12}
		m.StopReason, m.Provider, m.Model = "stop", "offline", "echo"
		out = append(out, m)
	}
	str := transcript.NewAssistantMessage(nil, now)
	str.Content = transcript.StringContent("plain string content")
	out = append(out, str)
	withCost := transcript.NewAssistantMessage([]transcript.Block{transcript.TextBlock("paid")}, now)
	withCost.Usage = &transcript.Usage{Input: 1, Cost: &transcript.Cost{Input: 0.1, Total: 1e-7}}
	out = append(out, withCost)
	tool := transcript.NewAssistantMessage([]transcript.Block{
		transcript.ToolCallBlock("call-1", "exec", json.RawMessage(`{ "cmd" : "ls <dir>" }`)),
	}, now)
	out = append(out, tool)
	extra := transcript.NewAssistantMessage([]transcript.Block{transcript.TextBlock("x")}, now)
	extra.Extra = map[string]json.RawMessage{"custom": json.RawMessage(`[ 1, 2 ]`)}
	out = append(out, extra)
	blockExtra := transcript.NewAssistantMessage([]transcript.Block{transcript.TextBlock("x")}, now)
	blockExtra.Content.Blocks[0].Extra = map[string]json.RawMessage{"cache": json.RawMessage(` true`)}
	out = append(out, blockExtra)
	details := transcript.NewAssistantMessage([]transcript.Block{transcript.TextBlock("x")}, now)
	details.Details = json.RawMessage(`{"a": "<b>"}`)
	out = append(out, details)
	meta := transcript.NewAssistantMessage([]transcript.Block{transcript.TextBlock("x")}, now)
	meta.Meta = &transcript.Meta{RunID: "run-1", Extra: map[string]json.RawMessage{"k": json.RawMessage(`{ }`)}}
	out = append(out, meta)
	runMeta := transcript.NewAssistantMessage([]transcript.Block{transcript.TextBlock("ok")}, now)
	runMeta.Meta = &transcript.Meta{RunID: "run-2"}
	out = append(out, runMeta)
	return out
}

// TestEndJSONMatchesMarshal checks that a run's end message and usage and
// an assistant event's data have the bytes json.Marshal gives them.
func TestEndJSONMatchesMarshal(t *testing.T) {
	for _, m := range endMessages() {
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendMessageJSON([]byte("x"), m)
		if err != nil || string(got) != "x"+string(want) {
			t.Errorf("appendMessageJSON = %s, %v; json.Marshal: %s", got, err, want)
		}
	}
	for _, u := range []transcript.Usage{{}, {Input: 10, Output: 2, CacheRead: 3, CacheWrite: 4, TotalTokens: 19},
		{Input: -1, TotalTokens: 1 << 62}, {Output: 5, Cost: &transcript.Cost{Output: 0.25, Total: 0.25}}} {
		want, _ := json.Marshal(u)
		if got := appendUsageJSON([]byte("x"), u); string(got) != "x"+string(want) {
			t.Errorf("appendUsageJSON(%+v) = %s, json.Marshal: %s", u, got[1:], want)
		}
	}
	for _, text := range deltaTexts {
		for _, delta := range []string{"", text, "&"} {
			checkAgentText(t, text, delta)
		}
	}
}

func checkAgentText(t *testing.T, text, delta string) {
	t.Helper()
	want, err := json.Marshal(agentTextData{Text: text, Delta: delta})
	if err != nil {
		t.Fatal(err)
	}
	if got := appendAgentText([]byte("x"), text, delta); string(got) != "x"+string(want) {
		t.Errorf("appendAgentText(%q, %q) = %s, json.Marshal: %s", text, delta, got[1:], want)
	}
}

func FuzzAppendAgentText(f *testing.F) {
	for _, text := range deltaTexts {
		f.Add(text, text)
	}
	f.Fuzz(checkAgentText)
}

func FuzzMessageJSON(f *testing.F) {
	for _, text := range deltaTexts {
		f.Add(text, "stop", int64(12))
	}
	f.Fuzz(func(t *testing.T, text, stop string, tokens int64) {
		m := transcript.NewAssistantMessage([]transcript.Block{transcript.TextBlock(text)}, time.UnixMilli(tokens))
		m.StopReason, m.Usage = stop, &transcript.Usage{Output: tokens}
		want, err := json.Marshal(m)
		if err != nil {
			t.Skip(err)
		}
		if got, err := appendMessageJSON([]byte("x"), m); err != nil || string(got) != "x"+string(want) {
			t.Errorf("appendMessageJSON = %s, %v; json.Marshal: %s", got, err, want)
		}
	})
}

// BenchmarkEndJSON is the JSON of a warm turn's end: its final message and
// usage, and the assistant event's data.
func BenchmarkEndJSON(b *testing.B) {
	m := transcript.NewAssistantMessage([]transcript.Block{transcript.TextBlock("echo: warm turn")}, time.Now())
	m.Usage = &transcript.Usage{Input: 10, Output: 2, TotalTokens: 12}
	m.StopReason, m.Provider, m.Model = "stop", "offline", "echo"
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = appendMessageJSON(buf[:0], m)
		buf = appendUsageJSON(buf, *m.Usage)
		buf = appendAgentText(buf, "echo: warm turn", "echo: warm turn")
	}
}

// TestEventHeadShared: the chat and agent heads are shared between frames
// yet read as built, and appending to one does not write into the next.
func TestEventHeadShared(t *testing.T) {
	for _, c := range []struct {
		event   string
		payload bool
		want    string
	}{
		{"chat", true, `{"type":"event","event":"chat","payload":`},
		{"agent", true, `{"type":"event","event":"agent","payload":`},
		{"chat", false, `{"type":"event","event":"chat"`},
		{"tick", true, `{"type":"event","event":"tick","payload":`},
		{`a"b`, false, `{"type":"event","event":"a\"b"`},
	} {
		first := eventHead(c.event, c.payload)
		_ = append(first, "garbage"...)
		if got := eventHead(c.event, c.payload); string(got) != c.want || string(first) != c.want {
			t.Errorf("eventHead(%q, %v) = %s then %s, want %s", c.event, c.payload, first, got, c.want)
		}
	}
}

// BenchmarkEventHead is the head of a run's chat event.
func BenchmarkEventHead(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = eventHead("chat", true)
	}
}

// TestUsageDataMatchesMarshal: a usage event's data has the bytes
// json.Marshal gives usageData's map.
func TestUsageDataMatchesMarshal(t *testing.T) {
	for _, u := range []transcript.Usage{{}, {Input: 10, Output: 2, TotalTokens: 12}, {CacheRead: 5}, {CacheWrite: -3, Input: 1},
		{Input: 1 << 62, Output: -1, CacheRead: 7, CacheWrite: 9, TotalTokens: 3, Cost: &transcript.Cost{Total: 1}}} {
		want, err := json.Marshal(usageData(&u))
		if err != nil {
			t.Fatal(err)
		}
		if got := appendUsageData([]byte("x"), &u); string(got) != "x"+string(want) {
			t.Errorf("appendUsageData(%+v) = %s, json.Marshal: %s", u, got[1:], want)
		}
	}
}

// BenchmarkUsageData is a warm turn's usage event data.
func BenchmarkUsageData(b *testing.B) {
	u := &transcript.Usage{Input: 10, Output: 2, TotalTokens: 12}
	b.ReportAllocs()
	for b.Loop() {
		_ = appendUsageData(make([]byte, 0, 128), u)
	}
}
