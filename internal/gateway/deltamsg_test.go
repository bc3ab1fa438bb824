package gateway

import (
	"encoding/json"
	"testing"
	"time"
)

// deltaTexts are texts a chat delta's message may carry.
var deltaTexts = []string{"", "echo: warm turn", "a \"quoted\" \\ line\nnext\ttab", "é ü 日本", "\u2028\u2029", "\x01\x1f", "bad \xff utf-8", "<b>&amp;</b>", "a > b"}

// TestAppendAssistantSoFarMatchesMarshal checks that a delta's message
// has the bytes json.Marshal gives the map it stands for.
func TestAppendAssistantSoFarMatchesMarshal(t *testing.T) {
	now := time.UnixMilli(1_764_000_000_123)
	for _, text := range deltaTexts {
		checkAssistantSoFar(t, text, now)
	}
}

func checkAssistantSoFar(t *testing.T, text string, now time.Time) {
	t.Helper()
	want, err := json.Marshal(assistantSoFar(text, now))
	if err != nil {
		t.Fatal(err)
	}
	if got := appendAssistantSoFar([]byte("x"), text, now); string(got) != "x"+string(want) {
		t.Errorf("appendAssistantSoFar(%q) = %s, json.Marshal: %s", text, got[1:], want)
	}
}

func FuzzAppendAssistantSoFar(f *testing.F) {
	for _, text := range deltaTexts {
		f.Add(text, int64(1_764_000_000_123))
	}
	f.Fuzz(func(t *testing.T, text string, ms int64) { checkAssistantSoFar(t, text, time.UnixMilli(ms)) })
}

// BenchmarkDeltaMessage is the message of one chat delta.
func BenchmarkDeltaMessage(b *testing.B) {
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		_ = appendAssistantSoFar(nil, "echo: warm turn", now)
	}
}
