package sanitize

import (
	"strings"
	"testing"
)

// assistant builds an assistant message with text blocks.
func assistant(texts ...string) map[string]any {
	blocks := make([]any, len(texts))
	for i, t := range texts {
		blocks[i] = map[string]any{"type": "text", "text": t}
	}
	return map[string]any{"role": "assistant", "content": blocks}
}

func TestSpecExamples(t *testing.T) {
	// docs/spec/reference-behaviour.md §6.6, literally.
	if got := AssistantText(assistant("Hi ", "<think>secret</think>there")); got != "Hi there" {
		t.Errorf(`blocks "Hi " + "<think>secret</think>there" = %q, want "Hi there"`, got)
	}
	in := `Hello <invoke name="tool">payload</invoke></minimax:tool_call> [Tool Call: foo (ID: 1)] world`
	if got := jsTrim(sanitizeTextContent(in)); got != "Hello  world" {
		t.Errorf("sanitizeTextContent(%q).trim() = %q, want %q", in, got, "Hello  world")
	}
	if got := jsTrim(sanitizeTextContent("Before <think>secret</think> after")); got != "Before  after" {
		t.Errorf("thinking example = %q, want %q", got, "Before  after")
	}
	billing := "Your billing dashboard shows the invoice; insufficient credits are not a problem here."
	if got := AssistantText(assistant(billing)); got != billing {
		t.Errorf("billing prose rewritten: %q", got)
	}
	if got := AssistantText(map[string]any{"role": "assistant", "stopReason": "error", "content": []any{
		map[string]any{"type": "text", "text": "500 Internal Server Error"}}}); got != "HTTP 500: Internal Server Error" {
		t.Errorf("error rewriting = %q", got)
	}
}

func TestAssistantTextShape(t *testing.T) {
	tests := []struct {
		name string
		msg  map[string]any
		want string
	}{
		{"nil", nil, ""},
		{"user", map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hi"}}}, ""},
		{"no role", map[string]any{"content": []any{map[string]any{"type": "text", "text": "hi"}}}, ""},
		{"string content", map[string]any{"role": "assistant", "content": "hi"}, ""},
		{"no content", map[string]any{"role": "assistant"}, ""},
		{"only text blocks", map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "thinking", "thinking": "hmm", "text": "no"},
			map[string]any{"type": "toolCall", "name": "x"},
			"loose string", nil, 5.0,
			map[string]any{"type": "text", "text": 7.0},
			map[string]any{"type": "text", "text": "yes"},
		}}, "yes"},
		{"typed blocks", map[string]any{"role": "assistant", "content": []map[string]any{{"type": "text", "text": "a"}, {"type": "text", "text": "b"}}}, "ab"},
		{"joined without separator and trimmed", assistant("  one ", "two  "), "one two"},
		{"blank blocks dropped", assistant("a", "  \n ", "b"), "ab"},
		{"block trimmed only when tags are present", assistant("Hi ", " <think>x</think> there"), "Hi there"},
		{"untagged blocks keep their spaces", assistant("Hi ", " there"), "Hi  there"},
		{"block that is only reasoning is dropped", assistant("<thinking>plan</thinking>", "Done."), "Done."},
		{"empty result", assistant("<think>only</think>"), ""},
		{"leading blank lines dropped", assistant("\n  \n", "  indented"), "indented"},
		{"repeated paragraph collapsed", assistant("Hello\n\nHello\n\n  Hello  \n\nworld"), "Hello\n\nworld"},
		{"non-consecutive repeats kept", assistant("a\n\nb\n\na"), "a\n\nb\n\na"},
		{"final tags in code still removed at the end", assistant("use `<final>`"), "use ``"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AssistantText(tt.msg); got != tt.want {
				t.Errorf("AssistantText = %q, want %q", got, tt.want)
			}
		})
	}
}

// Expected values were checked against the reference's sanitizeTextContent
// under Node.
func TestSanitizeTextContent(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"plain text untouched, not trimmed", "  plain  ", "  plain  "},

		// MiniMax tool-call XML.
		{"minimax", "Sure <minimax:tool_call><invoke name=\"bash\"><parameter name=\"c\">ls</parameter></invoke></minimax:tool_call> done", "Sure  done"},
		{"minimax invokes removed, bare marker text kept", "a<invoke name=\"x\">\n1\n</invoke>b<INVOKE>2</INVOKE>c minimax:tool_call", "abc minimax:tool_call"},
		{"invoke without the marker kept", "<invoke name=\"x\">1</invoke> hi", "<invoke name=\"x\">1</invoke> hi"},
		{"stray closing tag only", "text</minimax:tool_call>", "text"},

		// Downgraded tool calls.
		{"tool call marker", "[Tool Call: read (ID: t1)]\nThe file says hi.", "The file says hi."},
		{"tool call with arguments", "Let me check.\n[Tool Call: read (ID: t1)]\nArguments: {\"path\": \"a]}\"}\nDone.", "Let me check.\nDone."},
		{"arguments as a string", "[Tool Call: x (ID: 1)] arguments: \"a\\\"b\" rest", "rest"},
		{"arguments to end of line", "[tool call: x]\narguments: whatever here\nnext", "next"},
		{"unterminated arguments: only the label goes", "[Tool Call: x]\nArguments: {\"a\": 1\nnext", "{\"a\": 1\nnext"},
		{"tool result block up to the next marker", "Before\n[Tool Result for ID t1]\nfile contents\n\n[Tool Result for ID t2]\nx\n[tool note] After", "Before\n\n\n\n[tool note] After"},
		// Tool calls go first, so the result block then runs to the end.
		{"tool result block after a tool call", "Before\n[Tool Result for ID t1]\nfile contents\nmore\n\n[Tool Call: y (ID: 2)]\nAfter", "Before"},
		{"tool result to the end", "Answer.\n[Tool Result for ID t1]\nstuff\n\n", "Answer."},
		{"historical context", "[Historical context: earlier turn]\nNow.", "Now."},
		{"markers trimmed", "  [Tool Call: x]  text  ", "text"},
		{"no marker, no trim", " [Tool Box] ", " [Tool Box] "},
		{"marker prefix is enough to trim", " [Tool Calls are fun] ", "[Tool Calls are fun]"},

		// Reasoning tags.
		{"think", "Before <think>secret</think> after", "Before  after"},
		{"thinking thought antthinking", "<thinking>a</thinking>1<thought>b</thought>2<antthinking>c</antthinking>3", "123"},
		{"case and spaces", "< THINK >a</ Think >b", "b"},
		{"attributes", "<think reason=\"x\">a</think>b", "b"},
		{"unclosed drops the rest", "Answer <think>never closed", "Answer"},
		{"stray close", "a</think>b", "ab"},
		{"self-closing", "a<think/>b", "ab"},
		{"not a tag name", "a <thinker>b</thinker>", "a <thinker>b</thinker>"},
		{"final tags removed, content kept", "<final>The answer</final>", "The answer"},
		{"final with attributes", "<final lang=\"en\">x</final >", "x"},
		{"inline code kept", "Use `<think>` tags", "Use `<think>` tags"},
		{"fenced code kept", "```\n<think>x</think>\n```\nok", "```\n<think>x</think>\n```\nok"},
		{"tilde fence kept", "~~~md\n<final>\n~~~", "~~~md\n<final>\n~~~"},
		{"unclosed fence runs to the end", "a <think>x</think>\n```\n<think>y</think>", "a \n```\n<think>y</think>"},
		{"tag after code still stripped", "`x` <think>y</think> z", "`x`  z"},
		{"whole text trimmed when a tag is present", "\n <think>x</think> a \n", "a"},

		// Order: MiniMax, then tool calls, then reasoning.
		{"all three", "<think>plan</think>[Tool Call: a (ID: 1)]\nArguments: {}\n<invoke>x</invoke>minimax:tool_call Result", "minimax:tool_call Result"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sanitizeTextContent(tt.in); got != tt.want {
				t.Errorf("sanitizeTextContent(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestFindCodeRegions(t *testing.T) {
	tests := []struct {
		text           string
		fenced, inline []codeRegion
	}{
		{"no code", nil, nil},
		{"```\na\n```\nb", []codeRegion{{0, 9}}, nil},
		{"x\n```js\na\n```", []codeRegion{{2, 13}}, nil},
		{"```\nopen", []codeRegion{{0, 8}}, nil},
		{"```no newline", nil, nil},
		{"a ``` b", nil, nil},
		{"a `b` c ``d``", nil, []codeRegion{{2, 5}, {8, 13}}},
		{"```\n`x`\n```", []codeRegion{{0, 11}}, nil},
		{"~~~\n```\n~~~", []codeRegion{{0, 11}}, nil},
		// An inline span reaching out of a fence is kept.
		{"```\n`x\n```\n`", []codeRegion{{0, 10}}, []codeRegion{{7, 12}}},
	}
	for _, tt := range tests {
		got := findCodeRegions(tt.text)
		if !equalRegions(got.fenced, tt.fenced) || !equalRegions(got.inline, tt.inline) {
			t.Errorf("findCodeRegions(%q) = %v, want %v %v", tt.text, got, tt.fenced, tt.inline)
		}
	}
	c := findCodeRegions("a `b` c\n```\nd\n```")
	for pos, want := range map[int]bool{0: false, 2: true, 4: true, 5: false, 8: true, 16: true, 17: false} {
		if got := c.contains(pos); got != want {
			t.Errorf("contains(%d) = %v, want %v", pos, got, want)
		}
	}
}

func equalRegions(a, b []codeRegion) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestAssistantTextErrors(t *testing.T) {
	failed := func(text string) map[string]any {
		m := assistant(text)
		m["stopReason"] = "error"
		return m
	}
	withErrorMessage := func(text, em string) map[string]any {
		m := assistant(text)
		m["errorMessage"] = em
		return m
	}
	tests := []struct {
		name string
		msg  map[string]any
		want string
	}{
		{"http status line", failed("500 Internal Server Error"), "HTTP 500: Internal Server Error"},
		{"errorMessage also marks failure", withErrorMessage("500 Internal Server Error", "boom"), "HTTP 500: Internal Server Error"},
		{"blank errorMessage does not", withErrorMessage("500 Internal Server Error", "  "), "500 Internal Server Error"},
		{"success is never rewritten", assistant("500 Internal Server Error"), "500 Internal Server Error"},
		{"other stopReason", func() map[string]any { m := assistant("500 Internal Server Error"); m["stopReason"] = "stop"; return m }(), "500 Internal Server Error"},
		{"http prefix", failed("HTTP 404: not found"), "HTTP 404: not found"},
		{"status without a hint", failed("404 teapot"), "404 teapot"},
		{"role ordering", failed(`400 {"error":{"message":"roles must alternate"}}`), msgOrderingConflict},
		{"context overflow payload", failed(`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`), msgContextOverflow},
		{"context overflow head", failed("Context overflow: too much"), msgContextOverflow},
		{"overflow phrase in prose stays", failed("I think the prompt is too long for this"), "I think the prompt is too long for this"},
		{"billing", failed("402 Payment Required"), msgBilling},
		{"billing phrase", failed("Your credit balance is too low to access the API"), msgBilling},
		{"billing head", failed("Billing error: please upgrade your plan"), msgBilling},
		{"payload with type", failed(`{"type":"error","error":{"type":"api_error","message":"Internal server error"},"request_id":"req_1"}`), "LLM error api_error: Internal server error"},
		{"payload with status", failed(`529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), "HTTP 529 overloaded_error: Overloaded"},
		{"flat payload", failed(`{"error":"insufficient_scope","message":"nope"}`), "LLM error insufficient_scope: nope"},
		{"prefixed payload", failed(`Error: {"error":{"message":"bad thing"}}`), "LLM error: bad thing"},
		{"cloudflare", failed("522 <html>timeout</html>"), "The AI service is temporarily unavailable (HTTP 522). Please try again in a moment."},
		{"html 503", failed("503 <!DOCTYPE html><html><body>down</body></html>"), "The AI service is temporarily unavailable (HTTP 503). Please try again in a moment."},
		{"rate limit", failed("Error: 429 Too Many Requests"), msgRateLimit},
		{"overloaded", failed("Anthropic API error: overloaded"), msgOverloaded},
		{"connection refused", failed("Error: connect ECONNREFUSED 127.0.0.1:443"), msgConnRefused},
		{"connection reset", failed("request failed: socket hang up"), msgConnReset},
		{"dns", failed("Error: getaddrinfo ENOTFOUND api.example.com"), msgDNS},
		{"unreachable", failed("Error: connect EHOSTUNREACH"), msgUnreachable},
		{"network", failed("failed: fetch failed"), msgNetwork},
		{"timeout", failed("Error: request timed out"), msgTimedOut},
		{"other prefixed error kept", failed("Error: something odd"), "Error: something odd"},
		{"long prefixed error cut", failed("Error: " + strings.Repeat("x", 700)), "Error: " + strings.Repeat("x", 593) + "…"},
		{"unprefixed text kept", failed("The model stopped."), "The model stopped."},
		{"final tags removed first", failed("<final>500 Internal Server Error</final>"), "HTTP 500: Internal Server Error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AssistantText(tt.msg); got != tt.want {
				t.Errorf("AssistantText = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLatestReply(t *testing.T) {
	user := map[string]any{"role": "user", "content": "q"}
	tool := map[string]any{"role": "toolResult", "content": []any{map[string]any{"type": "text", "text": "tool output"}}}
	legacyTool := map[string]any{"role": "tool", "content": "x"}
	// A tool message is never a reply even if it claims the assistant role
	// through its content; only role matters.
	tests := []struct {
		name string
		msgs []map[string]any
		want string
	}{
		{"empty", nil, ""},
		{"newest assistant", []map[string]any{assistant("old"), user, assistant("new")}, "new"},
		{"skips tool messages", []map[string]any{assistant("answer"), tool, legacyTool}, "answer"},
		{"skips user messages", []map[string]any{assistant("answer"), user}, "answer"},
		{"skips blank assistant messages", []map[string]any{assistant("answer"), assistant("<think>x</think>"), assistant("  ")}, "answer"},
		{"skips string content", []map[string]any{assistant("answer"), {"role": "assistant", "content": "string"}}, "answer"},
		{"none", []map[string]any{user, tool}, ""},
		{"nil entries", []map[string]any{assistant("a"), nil}, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LatestReply(tt.msgs); got != tt.want {
				t.Errorf("LatestReply = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLastMessageReply(t *testing.T) {
	user := map[string]any{"role": "user", "content": "q"}
	tool := map[string]any{"role": "toolResult", "content": "r"}
	tests := []struct {
		name string
		msgs []map[string]any
		want string
	}{
		{"empty", nil, ""},
		{"last is assistant", []map[string]any{user, assistant("done")}, "done"},
		{"tool messages after it are skipped", []map[string]any{assistant("done"), tool, {"role": "tool"}}, "done"},
		// docs/spec/reference-behaviour.md §14.2: only the last non-tool message counts.
		{"last is user: no reply", []map[string]any{assistant("earlier"), user}, ""},
		{"last assistant is blank: no reply", []map[string]any{assistant("earlier"), assistant("<think>x</think>")}, ""},
		{"only tools", []map[string]any{tool}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LastMessageReply(tt.msgs); got != tt.want {
				t.Errorf("LastMessageReply = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestIsSkip(t *testing.T) {
	tests := []struct {
		reply, token string
		want         bool
	}{
		{"ANNOUNCE_SKIP", AnnounceSkip, true},
		{"  ANNOUNCE_SKIP  ", AnnounceSkip, true},
		{"\n\tREPLY_SKIP\u00a0\ufeff", ReplySkip, true},
		{"NO_REPLY", NoReply, true},
		{"announce_skip", AnnounceSkip, false},
		{"ANNOUNCE_SKIP.", AnnounceSkip, false},
		{"ANNOUNCE_SKIP please", AnnounceSkip, false},
		{"REPLY_SKIP", AnnounceSkip, false},
		{"", AnnounceSkip, false},
		{"\u0085REPLY_SKIP", ReplySkip, false}, // U+0085 is not JavaScript whitespace
	}
	for _, tt := range tests {
		if got := IsSkip(tt.reply, tt.token); got != tt.want {
			t.Errorf("IsSkip(%q, %q) = %v, want %v", tt.reply, tt.token, got, tt.want)
		}
	}
	if AnnounceSkip != "ANNOUNCE_SKIP" || ReplySkip != "REPLY_SKIP" || NoReply != "NO_REPLY" {
		t.Error("skip token literals changed")
	}
}
