package transcript

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Realistic transcript lines, written after docs/spec/gateway-protocol.md §7c and the
// pi session format. Member order follows the reference (JavaScript
// insertion order), not ours.
const (
	lineHeader = `{"type":"session","version":4,"id":"b021fe47-3306-4c27-a716-95a392d331b6","timestamp":"2026-09-06T10:15:30.123Z","cwd":"/home/op/.openclaw/workspace"}`

	lineHeaderOld = `{"type":"session","version":2,"id":"9d1c0f5e-0000-4000-8000-000000000001","timestamp":"2025-12-03T14:00:00.000Z","cwd":"/srv/ws","parentSession":"/srv/sessions/old.jsonl","branchedFrom":{"id":"a1b2c3d4"}}`

	lineUserString = `{"type":"message","id":"5f1c2a9e","parentId":null,"timestamp":"2026-09-06T10:15:31.004Z","message":{"role":"user","content":"ping <b>&</b> café \u2028 \"quoted\"\nnext","timestamp":1788689731004,"idempotencyKey":"raw-1-14626:user","__openclaw":{"senderIsOwner":true,"transport":{"clients":[{"id":"cli","mode":"cli","version":"0.0.1"}]}}}}`

	lineUserBlocks = `{"type":"message","id":"6a0b3c4d","parentId":"5f1c2a9e","timestamp":"2026-09-06T10:16:02.517Z","message":{"role":"user","content":[{"type":"text","text":"What is in this picture?"},{"type":"image","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==","mimeType":"image/png"}],"timestamp":1788689762517,"provenance":{"kind":"inter_session","sourceSessionKey":"agent:main:subagent:7c9e","sourceChannel":"internal","sourceTool":"sessions_send"}}}`

	lineAssistant = `{"type":"message","id":"7e8f9a0b","parentId":"6a0b3c4d","timestamp":"2026-09-06T10:16:04.880Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"The user wants the session list; call the tool.","thinkingSignature":"EqQBCkYIBxgCKkB3c2lnbmF0dXJlLWJ5dGVz"},{"type":"text","text":""},{"type":"text","text":"Let me check the sessions."},{"type":"toolCall","id":"call_4562e4b354","name":"sessions_list","arguments":{"limit":5,"kinds":["main","group"],"messageLimit":0}}],"api":"openai-completions","provider":"fake","model":"fake-1","usage":{"input":1234,"output":56,"cacheRead":1024,"cacheWrite":0,"totalTokens":2314,"cost":{"input":0.003702,"output":0.00084,"cacheRead":0.0003072,"cacheWrite":0,"total":0.0048492}},"stopReason":"toolUse","timestamp":1788689764880,"responseId":"chatcmpl-9xYzAbC","__openclaw":{"runId":"raw-1-14626","seq":3,"transport":null}}}`

	lineToolResult = `{"type":"message","id":"8c9d0e1f","parentId":"7e8f9a0b","timestamp":"2026-09-06T10:16:05.102Z","message":{"role":"toolResult","toolCallId":"call_4562e4b354","toolName":"sessions_list","content":[{"type":"text","text":"{\n  \"count\": 1,\n  \"sessions\": [\n    {\n      \"key\": \"agent:main:main\"\n    }\n  ]\n}"}],"details":{"count":1,"sessions":[{"key":"agent:main:main","kind":"main","updatedAt":1795301440569}]},"isError":false,"timestamp":1788689765102}}`

	lineToolError = `{"type":"message","id":"8c9d0e20","parentId":"8c9d0e1f","timestamp":"2026-09-06T10:16:05.300Z","message":{"role":"toolResult","toolCallId":"call_2","toolName":"sessions_send","content":[{"type":"text","text":"{\"status\":\"forbidden\",\"error\":\"denied by policy\"}"}],"details":{"status":"forbidden","error":"denied by policy"},"isError":true,"timestamp":1788689765300}}`

	lineAssistantError = `{"type":"message","id":"9a0b1c2d","parentId":"8c9d0e20","timestamp":"2026-09-06T10:16:09.000Z","message":{"role":"assistant","content":[],"api":"openai-completions","provider":"fake","model":"fake-1","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"error","errorMessage":"500 Internal Server Error","timestamp":1788689769000}}`

	lineModelChange = `{"type":"model_change","id":"0a1b2c3d","parentId":"9a0b1c2d","timestamp":"2026-09-06T10:17:00.000Z","provider":"openai","modelId":"gpt-4o"}`

	lineThinkingLevel = `{"type":"thinking_level_change","id":"0a1b2c3e","parentId":"0a1b2c3d","timestamp":"2026-09-06T10:17:01.000Z","thinkingLevel":"high"}`

	lineCustom = `{"type":"custom","id":"1b2c3d4e","parentId":"0a1b2c3e","timestamp":"2026-09-06T10:17:02.000Z","customType":"model-snapshot","data":{"provider":"fake","model":"fake-1","contextTokens":128000,"flags":[true,false,null],"ratio":1.5e-7}}`

	lineCompaction = `{"type":"compaction","id":"2c3d4e5f","parentId":"1b2c3d4e","timestamp":"2026-09-06T10:20:00.000Z","summary":"User asked for the session list; it had one session.","firstKeptEntryId":"8c9d0e1f","tokensBefore":50000,"details":{"readFiles":[],"modifiedFiles":[]},"fromHook":false}`

	lineUnknownType = `{"type":"x_future_entry","id":"3d4e5f6a","parentId":"2c3d4e5f","timestamp":"2026-09-06T10:21:00.000Z","message":"not a message object","payload":{"nested":[1,2,{"deep":null}],"empty":{}},"count":-0.5}`

	lineReset = `{"type":"reset","id":"4e5f6a7b","parentId":"3d4e5f6a","timestamp":"2026-09-06T10:22:00.000Z","reason":"new"}`
)

// Lines exercising the corners of the round-trip rules.
const (
	// Known members holding null or an empty optional string, plus blocks
	// with members unknown for their type.
	lineNullsAndEmpties = `{"type":"message","id":"e1","parentId":null,"timestamp":"2026-09-06T10:30:00.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"","thinkingSignature":"","redacted":true},{"type":"text","text":null,"textSignature":"sig"},{"type":"toolCall","id":"c1","name":"t","arguments":{},"partialJson":"{\"a\":"},{"type":"redacted_thinking","data":"opaque"},{"type":"image","data":"","mimeType":"image/jpeg","text":"alt"}],"api":null,"provider":"","model":"m","usage":null,"stopReason":"stop","errorMessage":"","responseId":null,"isError":null,"__openclaw":null,"timestamp":1788690600000}}`

	// A usage object with members the Go type lacks, and null cost.
	lineOddUsage = `{"type":"message","id":"e2","parentId":null,"timestamp":"2026-09-06T10:31:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input":10,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":12,"reasoning":1,"cost":null},"provenance":{"kind":"inter_session","hops":2},"timestamp":1788690660000}}`

	// Roles of the pi agent that carry no content, or other content.
	lineBashExecution = `{"type":"message","id":"e3","parentId":null,"timestamp":"2026-09-06T10:32:00.000Z","message":{"role":"bashExecution","command":"ls","output":"a\nb\n","exitCode":0,"cancelled":false,"truncated":false,"timestamp":1788690720000}}`
	lineCustomRole    = `{"type":"message","id":"e4","parentId":null,"timestamp":"2026-09-06T10:33:00.000Z","message":{"role":"custom","customType":"note","content":[],"display":true,"timestamp":1788690780000}}`

	// Pretty-printed JSON with space everywhere it may be.
	linePretty = "  {\n \"type\" : \"custom\" , \"id\":\"e5\", \"parentId\" : null,\n\t\"timestamp\":\"2026-09-06T10:34:00.000Z\", \"data\" : { \"a\" : [ 1 , 2 ] } }\r\n"
)

var entryLines = map[string]string{
	"user string":        lineUserString,
	"user blocks":        lineUserBlocks,
	"assistant":          lineAssistant,
	"tool result":        lineToolResult,
	"tool error":         lineToolError,
	"assistant error":    lineAssistantError,
	"model change":       lineModelChange,
	"thinking level":     lineThinkingLevel,
	"custom":             lineCustom,
	"compaction":         lineCompaction,
	"unknown type":       lineUnknownType,
	"reset":              lineReset,
	"nulls and empties":  lineNullsAndEmpties,
	"odd usage":          lineOddUsage,
	"bash execution":     lineBashExecution,
	"custom role":        lineCustomRole,
	"pretty":             linePretty,
	"unicode escapes":    `{"type":"custom","id":"e6","parentId":null,"timestamp":"t","data":"\ud83d\ude00\u0000\u001f","\u0074ext":"esc key"}`,
	"duplicate members":  `{"type":"custom","id":"e7","parentId":null,"timestamp":"t","x":1,"x":2,"id":"e7b"}`,
	"message role null":  `{"type":"message","id":"e9","parentId":null,"timestamp":"t","message":{"role":null,"content":"x","timestamp":null}}`,
	"legacy tool role":   `{"type":"message","id":"ea","parentId":"e9","timestamp":"t","message":{"role":"tool","toolCallId":"c","content":"plain","timestamp":1}}`,
	"exponent timestamp": `{"type":"message","id":"eb","parentId":null,"timestamp":"t","message":{"role":"user","content":"x","timestamp":1.78869078e12}}`,
}

// jsonEqual reports the difference between two JSON texts compared as
// values ("" when equal).
func jsonDiff(t testing.TB, want, got []byte) string {
	t.Helper()
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want is not JSON: %v\n%s", err, want)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got is not JSON: %v\n%s", err, got)
	}
	return cmp.Diff(w, g)
}

// checkNoDuplicateMembers fails if any object in the JSON text b repeats a
// member name (encoding/json would silently keep the last).
func checkNoDuplicateMembers(t testing.TB, b []byte) {
	t.Helper()
	if name, err := duplicateMember(b); err != nil {
		t.Fatalf("reading tokens: %v\n%s", err, b)
	} else if name != nil {
		t.Fatalf("duplicate member %q in\n%s", *name, b)
	}
}

// duplicateMember returns the first member name repeated within an object
// of the JSON text b, or nil.
func duplicateMember(b []byte) (*string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		object bool
		names  map[string]bool
		expect bool // the next token in an object is a name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if top != nil && top.object {
					top.expect = true
				}
				stack = append(stack, &frame{object: d == '{', names: map[string]bool{}, expect: d == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		}
		if top != nil && top.object {
			if top.expect {
				name := tok.(string)
				if top.names[name] {
					return &name, nil
				}
				top.names[name] = true
				top.expect = false
			} else {
				top.expect = true
			}
		}
	}
}
