package sanitize

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// typicalHistory returns n messages shaped like a coding-agent transcript
// decoded from JSON: user prompts, assistant turns with thinking (and its
// signature), text, tool calls, usage and cost, and tool results with
// details; a few carry secrets and some texts exceed the 4000-unit limit.
func typicalHistory(tb testing.TB, n int) []map[string]any {
	tb.Helper()
	prose := strings.Repeat("The quick brown fox jumps over the lazy dog; <b>bold</b> & more. ", 8)
	var msgs []any
	for i := 0; len(msgs) < n; i++ {
		user := map[string]any{
			"role":      "user",
			"content":   []any{map[string]any{"type": "text", "text": fmt.Sprintf("Step %d: please fix the build. %s", i, prose[:200])}},
			"timestamp": 1700000000000 + i,
		}
		text := prose + prose
		if i%10 == 3 {
			text += " export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
		}
		asst := map[string]any{
			"role": "assistant",
			"content": []any{
				map[string]any{"type": "thinking", "thinking": strings.Repeat(prose, 3), "thinkingSignature": strings.Repeat("EqQBCkYIBxgCKkB", 60)},
				map[string]any{"type": "text", "text": text},
				map[string]any{"type": "toolCall", "id": fmt.Sprintf("call_%d", i), "name": "bash", "arguments": map[string]any{"command": "go test ./..."}},
			},
			"api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4",
			"usage":      map[string]any{"input": 1200, "output": 340, "cacheRead": 0, "totalTokens": 1540},
			"cost":       map[string]any{"total": 0.0123},
			"stopReason": "toolUse",
			"timestamp":  1700000000001 + i,
		}
		output := strings.Repeat("ok  \tgithub.com/example/pkg\t0.012s\n", 40)
		if i%7 == 0 {
			output = strings.Repeat(output, 4) // over 4000 units
		}
		result := map[string]any{
			"role":       "toolResult",
			"toolCallId": fmt.Sprintf("call_%d", i),
			"toolName":   "bash",
			"content":    []any{map[string]any{"type": "text", "text": output}},
			"details":    map[string]any{"exitCode": 0, "stdout": output},
			"isError":    false,
			"timestamp":  1700000000002 + i,
		}
		msgs = append(msgs, user, asst, result)
	}
	data, err := json.Marshal(msgs[:n])
	if err != nil {
		tb.Fatal(err)
	}
	var out []map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		tb.Fatal(err)
	}
	return out
}

func BenchmarkSanitizeHistory(b *testing.B) {
	msgs := typicalHistory(b, 200)
	for _, bc := range []struct {
		name string
		opts HistoryOptions
	}{
		{"default", HistoryOptions{}},
		{"includeTools", HistoryOptions{IncludeTools: true}},
		{"noRedaction", HistoryOptions{Redactor: NewRedactor(RedactOptions{Mode: RedactOff})}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				SanitizeHistory(msgs, bc.opts)
			}
		})
	}
}

func BenchmarkRedact(b *testing.B) {
	text := strings.Repeat("Plain prose without secrets, about 64 bytes of ordinary text.. ", 64)
	withSecret := text + " Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123"
	for _, bc := range []struct{ name, text string }{{"clean", text}, {"secret", withSecret}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.text)))
			b.ReportAllocs()
			for b.Loop() {
				DefaultRedactor().Redact(bc.text)
			}
		})
	}
}

func BenchmarkAssistantText(b *testing.B) {
	msg := assistant(strings.Repeat("Some reply text with `code` and <b>tags</b>. ", 40),
		"<think>private</think>[Tool Call: bash (ID: 1)]\nArguments: {\"command\": \"ls\"}\nDone.")
	b.ReportAllocs()
	for b.Loop() {
		AssistantText(msg)
	}
}

func TestTypicalHistory(t *testing.T) {
	msgs := typicalHistory(t, 200)
	res := SanitizeHistory(msgs, HistoryOptions{})
	if !res.ContentTruncated || !res.ContentRedacted || !res.DroppedMessages {
		t.Errorf("flags: %+v", res)
	}
	if res.Bytes > DefaultMaxBytes || res.Bytes != JSONSize(res.Messages) {
		t.Errorf("Bytes = %d", res.Bytes)
	}
	// The newest messages are kept, oldest dropped.
	if last := res.Messages[len(res.Messages)-1]; last["timestamp"] != msgs[len(msgs)-1]["timestamp"] && last["timestamp"] != msgs[len(msgs)-2]["timestamp"] {
		t.Errorf("newest message not kept: %v", last["timestamp"])
	}
}
