package store

import (
	"reflect"
	"testing"
)

func TestRunStatsCount(t *testing.T) {
	for _, tt := range []struct {
		name, role, line string
		want             RunStats
	}{
		{"user", "user", `{"type":"message","message":{"role":"user","content":"hi"}}`, RunStats{User: 1}},
		{"plain reply", "assistant", `{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"stopReason":"stop"}}`, RunStats{Assistant: 1}},
		{"tool calls", "assistant", `{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"1","name":"exec"},{"type":"toolCall","id":"2","name":"exec"}],"stopReason":"toolUse"}}`,
			RunStats{Assistant: 1, ToolCalls: 2, Tools: map[string]int64{"exec": 2}}},
		{"text naming a tool call", "assistant", `{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"a \"toolCall\" block"}],"stopReason":"stop"}}`, RunStats{Assistant: 1}},
		{"error stop", "assistant", `{"type":"message","message":{"role":"assistant","content":[],"stopReason":"aborted"}}`, RunStats{Assistant: 1, Errors: 1}},
		{"tool result", "toolResult", `{"type":"message","message":{"role":"toolResult","toolName":"exec","content":"x"}}`, RunStats{ToolResults: 1}},
		{"failed tool result", "toolResult", `{"type":"message","message":{"role":"toolResult","toolName":"exec","content":"x","isError":true}}`, RunStats{ToolResults: 1, Errors: 1}},
		{"isError in details only", "toolResult", `{"type":"message","message":{"role":"toolResult","content":"x","details":{"isError":true},"isError":false}}`, RunStats{ToolResults: 1}},
		{"legacy tool role", "tool", `{"type":"message","message":{"role":"tool","content":"x","isError":true}}`, RunStats{ToolResults: 1, Errors: 1}},
		{"other entry", "", `{"type":"compaction"}`, RunStats{}},
		{"unreadable assistant", "assistant", `{"toolCall"`, RunStats{Assistant: 1}},
	} {
		var got RunStats
		got.Count(tt.role, []byte(tt.line))
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
		var line RunStats
		line.CountLine(tt.role, tt.line)
		if !reflect.DeepEqual(line, tt.want) {
			t.Errorf("%s: CountLine %+v, want %+v", tt.name, line, tt.want)
		}
	}
}

// TestCountLineCopiesNothing: a user message, and a reply or tool result
// with no tool call and no error, are counted without copying the line.
func TestCountLineCopiesNothing(t *testing.T) {
	var s RunStats
	for _, e := range [][2]string{
		{"user", `{"type":"message","message":{"role":"user","content":"hi"}}`},
		{"assistant", `{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"stopReason":"stop"}}`},
		{"toolResult", `{"type":"message","message":{"role":"toolResult","toolName":"exec","content":"x"}}`},
	} {
		if n := testing.AllocsPerRun(10, func() { s.CountLine(e[0], e[1]) }); n != 0 {
			t.Errorf("%s: %v allocations, want 0", e[0], n)
		}
	}
}
