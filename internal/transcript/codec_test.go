package transcript

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ptr[T any](v T) *T { return &v }

func TestEntryRoundTrip(t *testing.T) {
	for _, name := range slices.Sorted(maps.Keys(entryLines)) {
		line := entryLines[name]
		t.Run(name, func(t *testing.T) {
			e, err := ParseLine([]byte(line))
			if err != nil {
				t.Fatalf("ParseLine: %v", err)
			}
			out, err := e.MarshalJSON()
			if err != nil {
				t.Fatalf("MarshalJSON: %v", err)
			}
			if d := jsonDiff(t, []byte(line), out); d != "" {
				t.Errorf("marshal(parse(line)) differs from line (-line +out):\n%s\nout: %s", d, out)
			}
			if bytes.ContainsAny(out, "\n\r") {
				t.Errorf("output spans lines: %q", out)
			}
			checkNoDuplicateMembers(t, out)

			// encoding/json goes through the same methods.
			var viaStd Entry
			if err := json.Unmarshal([]byte(line), &viaStd); err != nil {
				t.Fatalf("json.Unmarshal: %v", err)
			}
			if d := cmp.Diff(e, viaStd); d != "" {
				t.Errorf("json.Unmarshal differs from ParseLine (-parse +std):\n%s", d)
			}
			std, err := json.Marshal(e)
			if err != nil {
				t.Fatalf("json.Marshal: %v", err)
			}
			if d := jsonDiff(t, out, std); d != "" {
				t.Errorf("json.Marshal differs from MarshalJSON:\n%s", d)
			}

			// Stable: the output parses back to the same entry and bytes.
			e2, err := ParseLine(out)
			if err != nil {
				t.Fatalf("ParseLine(out): %v", err)
			}
			if d := cmp.Diff(e, e2); d != "" {
				t.Errorf("parse(marshal(e)) != e (-e +e2):\n%s", d)
			}
			out2, _ := e2.MarshalJSON()
			if !bytes.Equal(out, out2) {
				t.Errorf("second marshal differs:\n%s\n%s", out, out2)
			}
		})
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	tests := []struct {
		line string
		want Header
	}{
		{lineHeader, Header{Type: "session", Version: 4, ID: "b021fe47-3306-4c27-a716-95a392d331b6", Timestamp: "2026-09-06T10:15:30.123Z", Cwd: "/home/op/.openclaw/workspace"}},
		{lineHeaderOld, Header{Type: "session", Version: 2, ID: "9d1c0f5e-0000-4000-8000-000000000001", Timestamp: "2025-12-03T14:00:00.000Z", Cwd: "/srv/ws", ParentSession: "/srv/sessions/old.jsonl",
			Extra: map[string]json.RawMessage{"branchedFrom": json.RawMessage(`{"id":"a1b2c3d4"}`)}}},
		{`{"type":"session","id":"v1","timestamp":"t"}`, Header{Type: "session", ID: "v1", Timestamp: "t"}},
		{`{"type":"session","version":0,"id":"v0","timestamp":"t","cwd":""}`, Header{Type: "session", ID: "v0", Timestamp: "t",
			Extra: map[string]json.RawMessage{"version": json.RawMessage(`0`), "cwd": json.RawMessage(`""`)}}},
	}
	for _, tt := range tests {
		h, err := ParseHeader([]byte(tt.line))
		if err != nil {
			t.Fatalf("ParseHeader(%s): %v", tt.line, err)
		}
		if d := cmp.Diff(tt.want, h); d != "" {
			t.Errorf("ParseHeader(%s) (-want +got):\n%s", tt.line, d)
		}
		out, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		if d := jsonDiff(t, []byte(tt.line), out); d != "" {
			t.Errorf("round trip of %s:\n%s", tt.line, d)
		}
	}
}

func TestDecodeAssistant(t *testing.T) {
	e, err := ParseLine([]byte(lineAssistant))
	if err != nil {
		t.Fatal(err)
	}
	want := Entry{
		Type:      TypeMessage,
		ID:        "7e8f9a0b",
		ParentID:  ptr("6a0b3c4d"),
		Timestamp: "2026-09-06T10:16:04.880Z",
		Message: &Message{
			Role: RoleAssistant,
			Content: BlockContent(
				Block{Type: BlockThinking, Thinking: ptr("The user wants the session list; call the tool."), ThinkingSignature: "EqQBCkYIBxgCKkB3c2lnbmF0dXJlLWJ5dGVz"},
				TextBlock(""),
				TextBlock("Let me check the sessions."),
				ToolCallBlock("call_4562e4b354", "sessions_list", json.RawMessage(`{"limit":5,"kinds":["main","group"],"messageLimit":0}`)),
			),
			Timestamp: 1788689764880,
			API:       "openai-completions",
			Provider:  "fake",
			Model:     "fake-1",
			Usage: &Usage{Input: 1234, Output: 56, CacheRead: 1024, TotalTokens: 2314,
				Cost: &Cost{Input: 0.003702, Output: 0.00084, CacheRead: 0.0003072, Total: 0.0048492}},
			StopReason: "toolUse",
			ResponseID: "chatcmpl-9xYzAbC",
			Meta: &Meta{RunID: "raw-1-14626", Extra: map[string]json.RawMessage{
				"seq":       json.RawMessage(`3`),
				"transport": json.RawMessage(`null`),
			}},
		},
	}
	if d := cmp.Diff(want, e); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if got := AssistantText(e.Message); got != "Let me check the sessions." {
		t.Errorf("AssistantText = %q", got)
	}
}

func TestDecodeOtherEntries(t *testing.T) {
	tests := []struct {
		line string
		want Entry
	}{
		{lineModelChange, Entry{Type: TypeModelChange, ID: "0a1b2c3d", ParentID: ptr("9a0b1c2d"), Timestamp: "2026-09-06T10:17:00.000Z",
			Extra: map[string]json.RawMessage{"provider": json.RawMessage(`"openai"`), "modelId": json.RawMessage(`"gpt-4o"`)}}},
		{lineUnknownType, Entry{Type: "x_future_entry", ID: "3d4e5f6a", ParentID: ptr("2c3d4e5f"), Timestamp: "2026-09-06T10:21:00.000Z",
			Extra: map[string]json.RawMessage{
				"message": json.RawMessage(`"not a message object"`),
				"payload": json.RawMessage(`{"nested":[1,2,{"deep":null}],"empty":{}}`),
				"count":   json.RawMessage(`-0.5`),
			}}},
		{linePretty, Entry{Type: TypeCustom, ID: "e5", Timestamp: "2026-09-06T10:34:00.000Z",
			Extra: map[string]json.RawMessage{"data": json.RawMessage(`{"a":[1,2]}`)}}},
		{lineToolResult, Entry{Type: TypeMessage, ID: "8c9d0e1f", ParentID: ptr("7e8f9a0b"), Timestamp: "2026-09-06T10:16:05.102Z",
			Message: &Message{
				Role:       RoleToolResult,
				ToolCallID: "call_4562e4b354",
				ToolName:   "sessions_list",
				Content:    BlockContent(TextBlock("{\n  \"count\": 1,\n  \"sessions\": [\n    {\n      \"key\": \"agent:main:main\"\n    }\n  ]\n}")),
				Details:    json.RawMessage(`{"count":1,"sessions":[{"key":"agent:main:main","kind":"main","updatedAt":1795301440569}]}`),
				IsError:    ptr(false),
				Timestamp:  1788689765102,
			}}},
	}
	for _, tt := range tests {
		e, err := ParseLine([]byte(tt.line))
		if err != nil {
			t.Fatalf("ParseLine(%s): %v", tt.line, err)
		}
		if d := cmp.Diff(tt.want, e); d != "" {
			t.Errorf("ParseLine(%s) (-want +got):\n%s", tt.line, d)
		}
	}
}

func TestMarshalOrder(t *testing.T) {
	e := Entry{
		Type:      TypeMessage,
		ID:        "a1",
		Timestamp: "2026-01-02T03:04:05.006Z",
		Message: &Message{
			Role:       RoleAssistant,
			Content:    BlockContent(TextBlock("<hi> & \"bye\"\n"), Block{Type: BlockToolCall, ID: "c", Name: "n", Arguments: json.RawMessage("{ \"a\" :\n 1 }"), Extra: map[string]json.RawMessage{"z": json.RawMessage(`true`), "b": json.RawMessage(`[ ]`)}}),
			Timestamp:  1,
			Model:      "m",
			Usage:      &Usage{Input: 1, TotalTokens: 1, Cost: &Cost{Total: 1e-7}},
			StopReason: "stop",
			Meta:       &Meta{RunID: "r", Extra: map[string]json.RawMessage{"z": json.RawMessage(`1`), "a": json.RawMessage(`2`)}},
			Extra:      map[string]json.RawMessage{"zz": json.RawMessage(`{}`), "aa": json.RawMessage(`"x"`)},
		},
		Extra: map[string]json.RawMessage{"later": json.RawMessage(`null`)},
	}
	const want = `{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-02T03:04:05.006Z",` +
		`"message":{"role":"assistant","content":[{"type":"text","text":"<hi> & \"bye\"\n"},{"type":"toolCall","id":"c","name":"n","arguments":{"a":1},"b":[],"z":true}],` +
		`"timestamp":1,"model":"m","usage":{"input":1,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":1,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":1e-7}},` +
		`"stopReason":"stop","__openclaw":{"runId":"r","a":2,"z":1},"aa":"x","zz":{}},"later":null}`
	got, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestShadows checks that known members kept in Extra to round-trip give way
// to the typed field once it changes.
func TestShadows(t *testing.T) {
	parse := func(line string) Entry {
		t.Helper()
		e, err := ParseLine([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	marshal := func(e Entry) map[string]any {
		t.Helper()
		b, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		checkNoDuplicateMembers(t, b)
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		return v["message"].(map[string]any)
	}

	e := parse(lineNullsAndEmpties)
	m := marshal(e)
	if v, ok := m["api"]; !ok || v != nil {
		t.Errorf("api = %v, %v; want kept null", v, ok)
	}
	if v, ok := m["errorMessage"]; !ok || v != "" {
		t.Errorf("errorMessage = %v, %v; want kept \"\"", v, ok)
	}
	e.Message.API = "openai-responses"
	e.Message.ErrorMessage = "boom"
	e.Message.Usage = &Usage{Input: 3}
	e.Message.Content.Blocks[1].Text = ptr("now set")
	m = marshal(e)
	if m["api"] != "openai-responses" || m["errorMessage"] != "boom" || m["usage"] == nil {
		t.Errorf("typed fields did not win: %v", m)
	}
	if got := m["content"].([]any)[1].(map[string]any)["text"]; got != "now set" {
		t.Errorf("block text = %v", got)
	}

	e = parse(lineOddUsage)
	m = marshal(e)
	u := m["usage"].(map[string]any)
	if u["reasoning"] != 1.0 || u["cost"] != nil {
		t.Errorf("usage not kept verbatim: %v", u)
	}
	if _, ok := u["cost"]; !ok {
		t.Errorf("usage.cost null dropped: %v", u)
	}
	if p := m["provenance"].(map[string]any); p["hops"] != 2.0 {
		t.Errorf("provenance not kept verbatim: %v", p)
	}
	e.Message.Usage.Add(Usage{Input: 1, TotalTokens: 1})
	e.Message.Provenance = nil
	m = marshal(e)
	u = m["usage"].(map[string]any)
	if _, ok := u["reasoning"]; ok || u["input"] != 11.0 {
		t.Errorf("changed usage not written from the field: %v", u)
	}
	if _, ok := m["provenance"]; ok {
		t.Errorf("cleared provenance still written: %v", m["provenance"])
	}

	e = parse(lineCustomRole)
	e.Message.Role = RoleUser
	if got := marshal(e)["content"]; got == nil {
		t.Errorf("content = %v, want []", got)
	}
	e = parse(lineBashExecution)
	if _, ok := marshal(e)["content"]; ok {
		t.Error("content added to a bashExecution message")
	}
}

// TestNormalisations pins the few ways output may differ from input.
func TestNormalisations(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"type":"message","id":"a","timestamp":"t","message":{"role":"user","content":null}}`,
			`{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":[],"timestamp":0}}`},
		{`{"id":"a","type":"custom","parentId":null}`,
			`{"type":"custom","id":"a","parentId":null,"timestamp":""}`},
		{`{"type":"custom","id":"a","parentId":null,"timestamp":"t","b":1,"a":{ "y" : 2 }}`,
			`{"type":"custom","id":"a","parentId":null,"timestamp":"t","a":{"y":2},"b":1}`},
	}
	for _, tt := range tests {
		e, err := ParseLine([]byte(tt.in))
		if err != nil {
			t.Fatalf("ParseLine(%s): %v", tt.in, err)
		}
		got, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("%s\n got %s\nwant %s", tt.in, got, tt.want)
		}
	}
}

func TestParseLineErrors(t *testing.T) {
	const pre = `{"type":"message","id":"a","parentId":null,"timestamp":"t","message":`
	tests := []struct{ line, want string }{
		{``, "transcript: empty line"},
		{"  \t", "transcript: empty line"},
		{`{"type":"custom",`, "transcript: invalid JSON: unexpected end of JSON input"},
		{`{"type":"custom"} x`, "transcript: invalid JSON: invalid character 'x' after top-level value"},
		{`[1]`, "transcript: want object, got array"},
		{`null`, "transcript: want object, got null"},
		{`{"id":"a"}`, "transcript: entry without type"},
		{`{"type":null,"id":"a"}`, "transcript: entry without type"},
		{`{"type":5,"id":"a"}`, "transcript: type: want string, got number"},
		{`{"type":"custom"}`, "transcript: custom entry without id"},
		{`{"type":"session","id":"s"}`, "transcript: unexpected session header"},
		{`{"type":"message","id":"a"}`, `transcript: message entry "a" without message`},
		{`{"type":"custom","id":"a","parentId":5}`, "transcript: parentId: want string, got number"},
		{`{"type":"custom","id":["a"]}`, "transcript: id: want string, got array"},
		{pre + `"hi"}`, "transcript: message: want object, got string"},
		{pre + `{"role":5}}`, "transcript: message.role: want string, got number"},
		{pre + `{"role":"user","content":5}}`, "transcript: message.content: want string or array, got number"},
		{pre + `{"role":"user","content":{}}}`, "transcript: message.content: want string or array, got object"},
		{pre + `{"role":"user","content":[1]}}`, "transcript: message.content[0]: want object, got number"},
		{pre + `{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":true}]}}`, "transcript: message.content[1].text: want string, got boolean"},
		{pre + `{"role":"user","content":[{"type":7}]}}`, "transcript: message.content[0].type: want string, got number"},
		{pre + `{"role":"assistant","content":[{"type":"toolCall","id":1}]}}`, "transcript: message.content[0].id: want string, got number"},
		{pre + `{"role":"user","timestamp":"1"}}`, "transcript: message.timestamp: want integer, got string"},
		{pre + `{"role":"user","timestamp":1.5}}`, "transcript: message.timestamp: want integer, got 1.5"},
		{pre + `{"role":"user","timestamp":1e300}}`, "transcript: message.timestamp: want integer, got 1e300"},
		{pre + `{"role":"assistant","usage":{"input":"1"}}}`, "transcript: message.usage.input: want integer, got string"},
		{pre + `{"role":"assistant","usage":{"cost":{"total":"0"}}}}`, "transcript: message.usage.cost.total: want number, got string"},
		{pre + `{"role":"assistant","usage":{"cost":{"total":1e999}}}}`, "transcript: message.usage.cost.total: number 1e999 out of range"},
		{pre + `{"role":"assistant","usage":[]}}`, "transcript: message.usage: want object, got array"},
		{pre + `{"role":"toolResult","isError":"no"}}`, "transcript: message.isError: want boolean, got string"},
		{pre + `{"role":"user","provenance":{"kind":1}}}`, "transcript: message.provenance.kind: want string, got number"},
		{pre + `{"role":"user","__openclaw":[]}}`, "transcript: message.__openclaw: want object, got array"},
		{pre + `{"role":"user","__openclaw":{"runId":{}}}}`, "transcript: message.__openclaw.runId: want string, got object"},
	}
	for _, tt := range tests {
		_, err := ParseLine([]byte(tt.line))
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseLine(%s)\n got error %v\nwant %s", tt.line, err, tt.want)
		}
	}
}

// TestTolerance checks that members are only checked where they are known.
func TestTolerance(t *testing.T) {
	lines := []string{
		// Unknown block type: its text is not a known member.
		`{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"x","text":5,"id":{}}],"timestamp":1}}`,
		// A text block's id and arguments are not known members either.
		`{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"a","id":5,"arguments":"{"}],"timestamp":1}}`,
		// Non-message entries may carry anything under "message".
		`{"type":"custom_message","id":"a","parentId":null,"timestamp":"t","message":5,"content":{"any":1}}`,
		// Tool call arguments and details may be any JSON.
		`{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"n","arguments":"{\"raw\":1}"}],"details":[null],"timestamp":1}}`,
	}
	for _, line := range lines {
		e, err := ParseLine([]byte(line))
		if err != nil {
			t.Errorf("ParseLine(%s): %v", line, err)
			continue
		}
		out, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if d := jsonDiff(t, []byte(line), out); d != "" {
			t.Errorf("round trip of %s:\n%s", line, d)
		}
	}
}

func TestHeaderErrors(t *testing.T) {
	tests := []struct{ line, want string }{
		{`{"type":"message","id":"a"}`, `transcript: want a header of type "session", got type "message"`},
		{`{"id":"a"}`, `transcript: want a header of type "session", got type ""`},
		{`{"type":"session"}`, "transcript: header without id"},
		{`{"type":"session","id":"a","version":"4"}`, "transcript: version: want integer, got string"},
		{`{"type":"session","id":"a","cwd":1}`, "transcript: cwd: want string, got number"},
		{`"session"`, "transcript: want object, got string"},
	}
	for _, tt := range tests {
		_, err := ParseHeader([]byte(tt.line))
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseHeader(%s)\n got error %v\nwant %s", tt.line, err, tt.want)
		}
	}
}

func TestContentJSON(t *testing.T) {
	tests := []struct {
		in   string
		want Content
		out  string
	}{
		{`"hi"`, StringContent("hi"), `"hi"`},
		{`""`, StringContent(""), `""`},
		{`null`, Content{}, `[]`},
		{`[]`, Content{}, `[]`},
		{` [ {"type":"text","text":"a"} ] `, BlockContent(TextBlock("a")), `[{"type":"text","text":"a"}]`},
	}
	for _, tt := range tests {
		var c Content
		if err := json.Unmarshal([]byte(tt.in), &c); err != nil {
			t.Fatalf("Unmarshal(%s): %v", tt.in, err)
		}
		if d := cmp.Diff(tt.want, c); d != "" {
			t.Errorf("Unmarshal(%s) (-want +got):\n%s", tt.in, d)
		}
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != tt.out {
			t.Errorf("Marshal(%s) = %s, want %s", tt.in, out, tt.out)
		}
	}
	var c Content
	if err := c.UnmarshalJSON([]byte(`5`)); err == nil || err.Error() != "transcript: content: want string or array, got number" {
		t.Errorf("Unmarshal(5) error = %v", err)
	}
	if err := c.UnmarshalJSON([]byte(`[{"type":1}]`)); err == nil || err.Error() != "transcript: content[0].type: want string, got number" {
		t.Errorf("Unmarshal([{type:1}]) error = %v", err)
	}
}

// TestStdlibEmbedding checks the methods work for values nested in other
// types, as the store and gateway use them.
func TestStdlibEmbedding(t *testing.T) {
	type row struct {
		Entry   Entry    `json:"entry"`
		Entries []Entry  `json:"entries"`
		Msg     *Message `json:"msg"`
		Block   Block    `json:"block"`
		Meta    Meta     `json:"meta"`
	}
	in := `{"entry":` + lineToolResult + `,"entries":[` + lineModelChange + `,` + lineAssistant + `],"msg":null,"block":{"type":"text","text":"","x":1},"meta":{"runId":"r","k":[]}}`
	var r row
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if d := jsonDiff(t, []byte(in), out); d != "" {
		t.Errorf("(-in +out):\n%s", d)
	}
	err = json.Unmarshal([]byte(`{"entry":{"type":"message","id":"a","message":{"role":1}}}`), &r)
	if err == nil || !strings.Contains(err.Error(), "message.role: want string, got number") {
		t.Errorf("nested type error = %v", err)
	}
}

func TestMarshalErrors(t *testing.T) {
	tests := []struct {
		name string
		e    Entry
		want string
	}{
		{"bad extra", Entry{Type: "custom", ID: "a", Extra: map[string]json.RawMessage{"x": json.RawMessage(`{`)}}, "transcript: x: unexpected end of JSON input"},
		{"empty extra", Entry{Type: "custom", ID: "a", Extra: map[string]json.RawMessage{"x": {}}}, "transcript: x: empty raw JSON value"},
		{"bad arguments", Entry{Type: "message", ID: "a", Message: NewAssistantMessage([]Block{{Type: BlockToolCall, Arguments: json.RawMessage(`{a}`)}}, testTime)},
			"transcript: message.content[0].arguments: invalid character 'a' looking for beginning of object key string"},
		{"NaN cost", Entry{Type: "message", ID: "a", Message: &Message{Role: RoleAssistant, Usage: &Usage{Cost: &Cost{Total: nan()}}}},
			"transcript: message.usage.cost.total: unsupported number NaN"},
	}
	for _, tt := range tests {
		_, err := tt.e.MarshalJSON()
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: error = %v, want %s", tt.name, err, tt.want)
		}
	}
}
