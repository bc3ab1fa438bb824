package httpapi

import (
	"encoding/json"
	"testing"
	"time"
)

func msgs(t *testing.T, s string) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestChatPrompt(t *testing.T) {
	tests := []struct {
		name, messages, message, system string
		images                          int
	}{
		{"single user", `[{"role":"user","content":"hi"}]`, "hi", "", 0},
		{"system joins prompt", `[{"role":"system","content":"a"},{"role":"developer","content":"b"},{"role":"user","content":"hi"}]`, "hi", "a\n\nb", 0},
		{"history folded", `[{"role":"user","content":"one"},{"role":"assistant","content":"two"},{"role":"user","content":"three"}]`,
			historyMarker + "\nUser: one\nAssistant: two\n\n" + currentMarker + "\nUser: three", "", 0},
		{"text parts", `[{"role":"user","content":[{"type":"text","text":"a"},{"type":"input_text","text":"b"}]}]`, "a\nb", "", 0},
		{"tool result current", `[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"42"}]`,
			historyMarker + "\nUser: q\nAssistant: tool_call id=c1 name=f arguments={}\n\n" + currentMarker + "\nTool:c1: 42", "", 0},
		{"empty tool result still counts", `[{"role":"user","content":"q"},{"role":"tool","tool_call_id":"c1","content":""}]`,
			historyMarker + "\nUser: q\n\n" + currentMarker + "\nTool:c1: ", "", 0},
		{"legacy function", `[{"role":"function","name":"f","content":null}]`, "Tool:f: ", "", 0},
		{"image only", `[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:x"}}]}]`, "User sent image(s) with no text.", "", 1},
		{"unknown roles dropped", `[{"role":"robot","content":"x"},{"role":"user","content":"hi"}]`, "hi", "", 0},
		{"junk entries skipped", `[5,"x",null,{"content":"no role"},{"role":"user","content":"hi"}]`, "hi", "", 0},
		{"no user", `[{"role":"system","content":"x"}]`, "", "x", 0},
		{"assistant last", `[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]`, "a", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := chatPrompt(msgs(t, tt.messages))
			if p.Message != tt.message || p.ExtraSystem != tt.system || p.Images != tt.images {
				t.Errorf("prompt = %q / %q / %d\nwant     %q / %q / %d", p.Message, p.ExtraSystem, p.Images, tt.message, tt.system, tt.images)
			}
		})
	}
}

func TestResponsesPrompt(t *testing.T) {
	tests := []struct {
		name, input, message, system, err string
	}{
		{"string", `"hi"`, "hi", "", ""},
		{"items", `[{"type":"message","role":"system","content":"s"},{"type":"message","role":"user","content":[{"type":"input_text","text":"a"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"b"}]},{"type":"message","role":"user","content":"c"}]`,
			historyMarker + "\nUser: a\nAssistant: b\n\n" + currentMarker + "\nUser: c", "s", ""},
		{"function output", `[{"type":"function_call","call_id":"k","name":"f","arguments":"{\"x\":1}"},{"type":"function_call_output","call_id":"k","output":"done"}]`,
			historyMarker + "\nAssistant: tool_call id=k name=f arguments={\"x\":1}\n\n" + currentMarker + "\nTool:k: done", "", ""},
		{"ignored items", `[{"type":"reasoning"},{"type":"item_reference","id":"x"},{"type":"message","role":"user","content":"hi"}]`, "hi", "", ""},
		{"bad role", `[{"type":"message","role":"robot","content":"x"}]`, "", "", `input.0.role: Invalid option: expected one of "system"|"developer"|"user"|"assistant"`},
		{"bad type", `[{"type":"video"}]`, "", "", "input.0.type: Invalid input"},
		{"bad output", `[{"type":"function_call_output","call_id":"k","output":5}]`, "", "", "input.0.output: Invalid input: expected string, received number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := responsesPrompt(json.RawMessage(tt.input))
			if err != tt.err || p.Message != tt.message || p.ExtraSystem != tt.system {
				t.Errorf("got %q / %q / %q\nwant %q / %q / %q", p.Message, p.ExtraSystem, err, tt.message, tt.system, tt.err)
			}
		})
	}
}

func TestAgentModelIDs(t *testing.T) {
	tests := []struct {
		model, agent string
		valid        bool
	}{
		{"openclaw", "def", true},
		{"OpenClaw/Default", "def", true},
		{"openclaw/ops", "ops", true},
		{"openclaw:ops", "ops", true},
		{"agent:ops", "ops", true},
		{"switchboard/ops", "ops", true},
		{"switchboard", "def", true},
		{"gpt-4o", "", false},
		{"openclaw/", "", false},
		{"openclaw/a/b", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		if got := isAgentModelID(tt.model); got != tt.valid {
			t.Errorf("isAgentModelID(%q) = %v", tt.model, got)
		}
		if got := agentFromModel(tt.model, "def"); got != tt.agent {
			t.Errorf("agentFromModel(%q) = %q, want %q", tt.model, got, tt.agent)
		}
	}
}

func TestReservedOverride(t *testing.T) {
	for key, want := range map[string]bool{
		"subagent:x": true, "CRON:job": true, "acp:s": true, "agent:main:subagent:x": true,
		"agent:main:cron:j": true, "main": false, "agent:main:work": false, "my-app:thread-1": false,
	} {
		if got := reservedOverride(key); got != want {
			t.Errorf("reservedOverride(%q) = %v", key, got)
		}
	}
}

func TestResponseSessions(t *testing.T) {
	now := time.Unix(1000, 0)
	rs := newResponseSessions(func() time.Time { return now })
	scope := responseScope{authSubject: "bearer:x", agentID: "main"}
	rs.store("r1", "agent:main:k1", scope)
	if got := rs.lookup("r1", scope); got != "agent:main:k1" {
		t.Errorf("lookup = %q", got)
	}
	if got := rs.lookup("r1", responseScope{authSubject: "bearer:y", agentID: "main"}); got != "" {
		t.Errorf("other caller continued the response: %q", got)
	}
	if got := rs.lookup("r1", responseScope{authSubject: "bearer:x", agentID: "ops"}); got != "" {
		t.Errorf("other agent continued the response: %q", got)
	}
	now = now.Add(responseSessionTTL + time.Second)
	if got := rs.lookup("r1", scope); got != "" {
		t.Errorf("expired entry found: %q", got)
	}
	for i := range maxResponseEntries + 10 {
		rs.store(string(rune('a'+i%26))+itoa(int64(i)), "k", scope)
	}
	if n := rs.order.Len(); n != maxResponseEntries || len(rs.byID) != maxResponseEntries {
		t.Errorf("entries = %d/%d, want %d", n, len(rs.byID), maxResponseEntries)
	}
}

func TestCheckFields(t *testing.T) {
	obj := map[string]json.RawMessage{"a": json.RawMessage(`null`), "b": json.RawMessage(`2`)}
	if msg := checkFields(obj, []field{{name: "a", kinds: []string{"string"}, nullable: true}, {name: "b", kinds: []string{"integer"}, positive: true}}); msg != "" {
		t.Errorf("msg = %q", msg)
	}
	if msg := checkFields(obj, []field{{name: "a", kinds: []string{"string"}}}); msg != "a: Invalid input: expected string, received null" {
		t.Errorf("msg = %q", msg)
	}
}

func FuzzChatPrompt(f *testing.F) {
	f.Add(`[{"role":"user","content":"hi"}]`)
	f.Add(`[{"role":"assistant","tool_calls":[{"id":"1","function":{"name":"f","arguments":{"a":1}}}]},{"role":"tool","tool_call_id":"1","content":[{"type":"text","text":"x"}]}]`)
	f.Add(`[{"role":"function","name":"f","content":null}]`)
	f.Fuzz(func(t *testing.T, s string) {
		var m []json.RawMessage
		if json.Unmarshal([]byte(s), &m) != nil {
			return
		}
		_ = chatPrompt(m) // must not panic
	})
}

func FuzzResponsesPrompt(f *testing.F) {
	f.Add(`"hi"`)
	f.Add(`[{"type":"message","role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image"}]}]`)
	f.Add(`[{"type":"function_call_output","call_id":"k","output":"x"}]`)
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = responsesPrompt(json.RawMessage(s)) // must not panic
	})
}
