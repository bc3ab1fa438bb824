package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// collect ranges over one step and returns copies of the events and the
// error that ended it.
func collect(t testing.TB, ctx context.Context, p *Provider, req *provider.Request) ([]provider.Event, error) {
	t.Helper()
	var evs []provider.Event
	for ev, err := range p.Stream(ctx, req) {
		if err != nil {
			if ev != nil {
				t.Errorf("error %v came with a non-nil event", err)
			}
			return evs, err
		}
		evs = append(evs, *ev)
	}
	return evs, nil
}

func user(text string) provider.Message { return provider.Message{Role: provider.RoleUser, Text: text} }

func req(msgs ...provider.Message) *provider.Request {
	return &provider.Request{Model: ModelID, Messages: msgs}
}

func text(s string) provider.Event { return provider.Event{Type: provider.EventTextDelta, Text: s} }

func think(s string) provider.Event {
	return provider.Event{Type: provider.EventThinkingDelta, Text: s}
}

func call(id, name, args string) provider.Event {
	return provider.Event{Type: provider.EventToolCall, ToolCall: &provider.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}}
}

func usage(in, out int64) provider.Event {
	return provider.Event{Type: provider.EventUsage, Usage: &provider.Usage{Input: in, Output: out}}
}

func done(stop string) provider.Event {
	return provider.Event{Type: provider.EventDone, StopReason: stop}
}

// ignoreIDs compares events without response ids, which have their own test.
var ignoreIDs = cmpopts.IgnoreFields(provider.Event{}, "ResponseID")

// ignoreUsage compares events without usage figures.
var ignoreUsage = cmp.FilterPath(func(p cmp.Path) bool {
	sf, ok := p.Last().(cmp.StructField)
	return ok && sf.Name() == "Usage"
}, cmp.Ignore())

func TestStream(t *testing.T) {
	// assistantCall is an assistant message calling tools.
	assistantCall := func(calls ...provider.ToolCall) provider.Message {
		return provider.Message{Role: provider.RoleAssistant, ToolCalls: calls}
	}
	tc := func(id, name string) provider.ToolCall {
		return provider.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(`{}`)}
	}
	result := func(id, name, text string) provider.Message {
		return provider.Message{Role: provider.RoleTool, ToolCallID: id, ToolName: name, Text: text}
	}
	long := strings.Repeat("ab ", 150) // 450 bytes, 299 runes after trimming

	tests := []struct {
		name string
		req  *provider.Request
		want []provider.Event
	}{
		{
			name: "echo",
			req:  req(user("hello  big world")),
			want: []provider.Event{text("echo: "), text("hello  "), text("big "), text("world"), usage(1, 5), done("stop")},
		},
		{
			name: "echo trims and keeps inner lines",
			req:  req(user("\n  first line\nsecond line \n\n")),
			want: []provider.Event{text("echo: "), text("first "), text("line\n"), text("second "), text("line"), usage(6, 7), done("stop")},
		},
		{
			name: "echo of the last user message only",
			req: req(user("old"), provider.Message{Role: provider.RoleAssistant, Text: "echo: old"},
				user("new")),
			want: []provider.Event{text("echo: "), text("new"), usage(3, 2), done("stop")},
		},
		{
			name: "empty message",
			req:  req(user("")),
			want: []provider.Event{text("echo: "), text("(empty)"), usage(1, 3), done("stop")},
		},
		{
			name: "no messages",
			req:  req(),
			want: []provider.Event{text("echo: "), text("(empty)"), usage(1, 3), done("stop")},
		},
		{
			name: "directives only",
			req:  req(user("/think hmm")),
			want: []provider.Event{think("hmm"), text("echo: "), text("(empty)"), usage(2, 3), done("stop")},
		},
		{
			name: "unknown directives are plain text",
			req:  req(user("/help me\n/replying x\n/\n/Reply no")),
			want: []provider.Event{text("echo: "), text("/help "), text("me\n"), text("/replying "), text("x\n"), text("/\n"), text("/Reply "), text("no"), usage(9, 10), done("stop")},
		},
		{
			name: "reply",
			req:  req(user("please skip\n/reply REPLY_SKIP")),
			want: []provider.Event{text("REPLY_SKIP"), usage(6, 2), done("stop")},
		},
		{
			name: "reply is verbatim after one space, CRLF and indentation allowed",
			req:  req(user("  /reply  two spaces \r\n\t/reply\tsecond")),
			want: []provider.Event{text(" two "), text("spaces \n"), text("second"), usage(9, 5), done("stop")},
		},
		{
			name: "empty reply has no text",
			req:  req(user("/reply")),
			want: []provider.Event{usage(1, 1), done("stop")},
		},
		{
			name: "multi-line reply",
			req:  req(user("/reply one\n/reply\n/reply three")),
			want: []provider.Event{text("one\n\n"), text("three"), usage(6, 2), done("stop")},
		},
		{
			name: "think then reply",
			req:  req(user("/think let me see\n/reply ok")),
			want: []provider.Event{think("let "), think("me "), think("see"), text("ok"), usage(6, 2), done("stop")},
		},
		{
			name: "tool call",
			req:  req(user(`/tool sessions_list {"limit": 5, "kinds": ["main"]}`)),
			want: []provider.Event{call("call_1", "sessions_list", `{"limit":5,"kinds":["main"]}`), usage(12, 9), done("toolUse")},
		},
		{
			name: "several tool calls, default arguments, tab separator, unknown tool",
			req: &provider.Request{
				Messages: []provider.Message{user("/tool a\n/tool\tb\t{}\n/tool not_offered {\"x\":1}")},
				Tools:    []provider.ToolDef{{Name: "a"}, {Name: "b"}},
			},
			want: []provider.Event{
				call("call_1", "a", `{}`), call("call_2", "b", `{}`), call("call_3", "not_offered", `{"x":1}`),
				usage(11, 6), done("toolUse"),
			},
		},
		{
			name: "tool call with reply text",
			req:  req(user("/reply Let me look.\n/tool a")),
			want: []provider.Event{text("Let "), text("me "), text("look."), call("call_1", "a", `{}`), usage(5, 3), done("toolUse")},
		},
		{
			name: "tool ids continue after earlier calls",
			req: req(user("/tool a"), assistantCall(tc("call_1", "a"), tc("call_2", "a")),
				result("call_1", "a", "x"), result("call_2", "a", "y"),
				provider.Message{Role: provider.RoleAssistant, Text: "done"},
				user("/tool b")),
			want: []provider.Event{call("call_3", "b", `{}`), usage(7, 1), done("toolUse")},
		},
		{
			name: "summary after tool results",
			req:  req(user("/tool a\n/tool b"), assistantCall(tc("call_1", "a"), tc("call_2", "b")), result("call_1", "a", "{\n  \"ok\": true\n}"), result("call_2", "b", "")),
			want: []provider.Event{
				text("tool "), text("a "), text("returned: "), text(`{ `), text(`"ok": `), text("true "), text("}\n"),
				text("tool "), text("b "), text("returned: "), text("(empty)"),
				usage(9, 15), done("stop"),
			},
		},
		{
			name: "summary of an error result, name found by id, long result cut",
			req: req(user("/tool a\n/tool b"), assistantCall(tc("call_1", "a"), tc("call_2", "b")),
				provider.Message{Role: provider.RoleTool, ToolCallID: "call_1", Text: "boom", IsError: true},
				result("call_2", "b", long)),
			want: []provider.Event{
				text("tool "), text("a "), text("failed: "), text("boom\n"),
				text("tool "), text("b "), text("returned: "),
			},
		},
		{
			name: "then after tool results",
			req:  req(user("/then all done\n/tool a"), assistantCall(tc("call_1", "a")), result("call_1", "a", "x")),
			want: []provider.Event{text("all "), text("done"), usage(7, 2), done("stop")},
		},
		{
			name: "then only after tool results",
			req:  req(user("hi\n/then all done")),
			want: []provider.Event{text("echo: "), text("hi"), usage(4, 2), done("stop")},
		},
		{
			name: "step 2 runs the second script",
			req: req(user("/tool a\n/step\n/think next\n/tool b {\"k\": \"v\"}\n/step\n/then fin"),
				assistantCall(tc("call_1", "a")), result("call_1", "a", "x")),
			want: []provider.Event{think("next"), call("call_2", "b", `{"k":"v"}`), usage(15, 3), done("toolUse")},
		},
		{
			name: "step 3 past the scripts uses then",
			req: req(user("/tool a\n/step\n/tool b\n/then fin"),
				assistantCall(tc("call_1", "a")), result("call_1", "a", "x"),
				assistantCall(tc("call_2", "b")), result("call_2", "b", "y")),
			want: []provider.Event{text("fin"), usage(9, 1), done("stop")},
		},
		{
			name: "max tokens cuts the reply and drops tool calls",
			req: &provider.Request{
				Messages:  []provider.Message{user("/reply abcdefghijklmnop\n/tool a")},
				MaxTokens: 2,
			},
			want: []provider.Event{text("abcdefgh"), usage(8, 2), done("length")},
		},
		{
			name: "max tokens cuts at a character boundary",
			req: &provider.Request{
				Messages:  []provider.Message{user("/reply aaaaaaaéé")},
				MaxTokens: 2,
			},
			want: []provider.Event{text("aaaaaaa"), usage(4, 1), done("length")},
		},
		{
			name: "max tokens large enough changes nothing",
			req: &provider.Request{
				Messages:  []provider.Message{user("hi")},
				MaxTokens: 3,
			},
			want: []provider.Event{text("echo: "), text("hi"), usage(1, 2), done("stop")},
		},
	}
	p := New(Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := collect(t, t.Context(), p, tt.req)
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if tt.name == "summary of an error result, name found by id, long result cut" {
				checkLongSummary(t, got, tt.want, long)
				return
			}
			if diff := cmp.Diff(tt.want, got, ignoreIDs, ignoreUsage); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUsage(t *testing.T) {
	tests := []struct {
		name string
		req  *provider.Request
		want provider.Usage
	}{
		{"minimum 1", req(user("")), provider.Usage{Input: 1, Output: 3}},                                   // "echo: (empty)" = 13 bytes
		{"echo", req(user("hello  big world")), provider.Usage{Input: 4, Output: 5}},                        // 16 and 22 bytes
		{"empty reply", req(user("/reply")), provider.Usage{Input: 1, Output: 1}},                           // 6 and 0 bytes
		{"thinking counts", req(user("/think 12345678\n/reply abcd")), provider.Usage{Input: 6, Output: 3}}, // 27 and 12 bytes
		{
			"system, all messages and tool calls count", &provider.Request{
				System: strings.Repeat("s", 40),
				Messages: []provider.Message{
					user("12345678"),
					{Role: provider.RoleAssistant, Text: "1234", ToolCalls: []provider.ToolCall{{ID: "call_1", Name: "abcd", Arguments: json.RawMessage(`{"k":1}`)}}},
					{Role: provider.RoleTool, ToolCallID: "call_1", ToolName: "abcd", Text: "12345678"},
					user("/tool abcd {\"k\": 1}"),
				},
			},
			provider.Usage{Input: 22, Output: 2}, // 40+8+4+4+7+8+19 = 90 and 4+7 = 11 bytes
		},
		{"override", req(user("/usage 1 2\n/usage 10 20 30 40")), provider.Usage{Input: 10, Output: 20, CacheRead: 30, CacheWrite: 40}},
		{"override of step 2 only", req(user("/tool a\n/usage 5 5\n/step\n/usage 7 8"), provider.Message{Role: provider.RoleAssistant, Text: "x"}), provider.Usage{Input: 7, Output: 8}},
	}
	p := New(Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, got, _, err := provider.Collect(p.Stream(t.Context(), tt.req))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}

// checkLongSummary checks a summary whose last line holds a cut excerpt.
func checkLongSummary(t *testing.T, got, wantPrefix []provider.Event, long string) {
	t.Helper()
	if len(got) < len(wantPrefix) {
		t.Fatalf("got %d events, want more than %d", len(got), len(wantPrefix))
	}
	if diff := cmp.Diff(wantPrefix, got[:len(wantPrefix)], ignoreIDs); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	txt, _, _, _, err := provider.Collect(func(yield func(*provider.Event, error) bool) {
		for i := range got {
			if !yield(&got[i], nil) {
				return
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "tool a failed: boom\ntool b returned: " + strings.TrimSpace(long)[:200] + "…"
	if txt != want {
		t.Errorf("summary = %q, want %q", txt, want)
	}
}

func TestExcerpt(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "(empty)"},
		{" \n\t ", "(empty)"},
		{"  a \n\n b\u00a0c  ", "a b c"},
		{strings.Repeat("é", 200), strings.Repeat("é", 200)},
		{strings.Repeat("é", 201), strings.Repeat("é", 200) + "…"},
		{strings.Repeat("x", 199) + " y", strings.Repeat("x", 199) + " …"},
		{strings.Repeat("x", 200) + "   ", strings.Repeat("x", 200)},
		{strings.Repeat("x", 200) + " y", strings.Repeat("x", 200) + "…"},
	}
	for _, tt := range tests {
		if got := string(appendExcerpt(nil, tt.in)); got != tt.want {
			t.Errorf("excerpt(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWhenRules(t *testing.T) {
	system := strings.Join([]string{
		"You are agent B. Paths like /when/else and /tmp are not rules.",
		`/when "announce step" /reply ANNOUNCE_SKIP`,
		"  /when `pong` /reply REPLY_SKIP",
		`/when "tool please" /tool sessions_list {"limit":1}`,
		`/when "tool please" /then listed`,
		`/when "" /think always`,
	}, "\n")
	tests := []struct {
		name, msg string
		want      []provider.Event
	}{
		{"announce", "Agent-to-agent announce step.", []provider.Event{think("always"), text("ANNOUNCE_SKIP"), usage(0, 0), done("stop")}},
		{"ping-pong", "pong", []provider.Event{think("always"), text("REPLY_SKIP"), usage(0, 0), done("stop")}},
		{"tool", "a tool please", []provider.Event{call("call_1", "sessions_list", `{"limit":1}`), think("always"), usage(0, 0), done("toolUse")}},
		{"only the empty rule", "hello", []provider.Event{think("always"), text("echo: "), text("hello"), usage(0, 0), done("stop")}},
		{"own directives disable the rules", "pong\n/reply mine", []provider.Event{text("mine"), usage(0, 0), done("stop")}},
	}
	p := New(Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := collect(t, t.Context(), p, &provider.Request{System: system, Messages: []provider.Message{user(tt.msg)}})
			if err != nil {
				t.Fatal(err)
			}
			sortEvents := cmpopts.SortSlices(func(a, b provider.Event) bool { return a.Type < b.Type })
			if diff := cmp.Diff(tt.want, got, ignoreIDs, ignoreUsage, sortEvents); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("then after the rule's tool call", func(t *testing.T) {
		got, err := collect(t, t.Context(), p, &provider.Request{System: system, Messages: []provider.Message{
			user("tool please"),
			{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "call_1", Name: "sessions_list", Arguments: json.RawMessage(`{}`)}}},
			{Role: provider.RoleTool, ToolCallID: "call_1", ToolName: "sessions_list", Text: "[]"},
		}})
		if err != nil {
			t.Fatal(err)
		}
		// The rules' lines have no /step, so /think belongs to step 1 only.
		want := []provider.Event{text("listed"), usage(0, 0), done("stop")}
		if diff := cmp.Diff(want, got, ignoreIDs, ignoreUsage); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
}

func TestMalformed(t *testing.T) {
	tests := []struct {
		name, system, msg, want string
	}{
		{"tool without name", "", "/tool", "line 1: /tool: missing tool name"},
		{"tool with blank name", "", "/tool   ", "line 1: /tool: missing tool name"},
		{"tool args not an object", "", "hi\n/tool x [1]", "line 2: /tool: arguments are not a JSON object"},
		{"tool args invalid", "", `/tool x {"a":}`, "line 1: /tool: arguments are not a JSON object"},
		{"tool args trailing data", "", `/tool x {} {}`, "line 1: /tool: arguments are not a JSON object"},
		{"sleep without duration", "", "/sleep", "line 1: /sleep: want a non-negative duration such as 500ms or 2s"},
		{"sleep invalid", "", "/sleep soon", "line 1: /sleep: want a non-negative duration such as 500ms or 2s"},
		{"sleep negative", "", "/sleep -1s", "line 1: /sleep: want a non-negative duration such as 500ms or 2s"},
		{"usage one number", "", "/usage 1", "line 1: /usage: want <in> <out> [<cache read> [<cache write>]]"},
		{"usage five numbers", "", "/usage 1 2 3 4 5", "line 1: /usage: want <in> <out> [<cache read> [<cache write>]]"},
		{"usage not numbers", "", "/usage a b", "line 1: /usage: token counts must be non-negative integers"},
		{"usage negative", "", "/usage 1 -2", "line 1: /usage: token counts must be non-negative integers"},
		{"error status out of range", "", "/error 999 x", "line 1: /error: status must be between 100 and 599"},
		{"malformed line of a later step", "", "/reply ok\n/step\n/tool", "line 3: /tool: missing tool name"},
		{"when without quote", "/when pong /reply x", "pong", "system line 1: /when: want a quoted string"},
		{"when without directive", "x\n/when \"pong\" hello", "pong", "system line 2: /when: want a directive after the string"},
		{"malformed directive of a rule", `/when "" /sleep forever`, "pong", "system line 1: /sleep: want a non-negative duration such as 500ms or 2s"},
	}
	p := New(Options{Name: "offline"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := collect(t, t.Context(), p, &provider.Request{System: tt.system, Messages: []provider.Message{user(tt.msg)}})
			if len(got) != 0 {
				t.Errorf("got events %v before the error", got)
			}
			want := &provider.Error{Provider: "offline", StatusCode: 400, Message: tt.want}
			perr, ok := errors.AsType[*provider.Error](err)
			if !ok {
				t.Fatalf("err = %v, want a *provider.Error", err)
			}
			if diff := cmp.Diff(want, perr); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestError(t *testing.T) {
	tests := []struct {
		msg       string
		want      *provider.Error
		wantEvent []provider.Event
	}{
		{"/error", &provider.Error{Provider: ProviderName, StatusCode: 500, Message: "injected error"}, nil},
		{"/error boom now", &provider.Error{Provider: ProviderName, StatusCode: 500, Message: "boom now"}, nil},
		{"/error 429 slow down", &provider.Error{Provider: ProviderName, StatusCode: 429, Message: "slow down", Retryable: true}, nil},
		{"/error 503", &provider.Error{Provider: ProviderName, StatusCode: 503, Message: "injected error", Retryable: true}, nil},
		{"/error 401 bad key", &provider.Error{Provider: ProviderName, StatusCode: 401, Message: "bad key"}, nil},
		{"/error 42nd street", &provider.Error{Provider: ProviderName, StatusCode: 500, Message: "42nd street"}, nil},
		{
			"hello\n/think hmm\n/reply partial answer\n/tool a\n/error 502 upstream",
			&provider.Error{Provider: ProviderName, StatusCode: 502, Message: "upstream", Retryable: true},
			[]provider.Event{think("hmm"), text("partial "), text("answer")},
		},
	}
	p := New(Options{})
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			got, err := collect(t, t.Context(), p, req(user(tt.msg)))
			perr, ok := errors.AsType[*provider.Error](err)
			if !ok {
				t.Fatalf("err = %v, want a *provider.Error", err)
			}
			if diff := cmp.Diff(tt.want, perr); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantEvent, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("events before the error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSleep(t *testing.T) {
	p := New(Options{})
	t.Run("waits", func(t *testing.T) {
		start := time.Now()
		got, err := collect(t, t.Context(), p, req(user("/sleep 20ms\n/sleep 10ms\n/reply late")))
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 30*time.Millisecond {
			t.Errorf("took %v, want at least 30ms", d)
		}
		if diff := cmp.Diff([]provider.Event{text("late"), usage(0, 0), done("stop")}, got, ignoreIDs, ignoreUsage); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(20*time.Millisecond, cancel)
		start := time.Now()
		got, err := collect(t, ctx, p, req(user("/sleep 1h\n/reply never")))
		if !errors.Is(err, context.Canceled) || err != ctx.Err() {
			t.Errorf("err = %v, want ctx.Err()", err)
		}
		if len(got) != 0 {
			t.Errorf("got events %v", got)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("cancel took %v", d)
		}
	})
	t.Run("only the current step sleeps", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		_, err := collect(t, ctx, p, req(user("/tool a\n/step\n/sleep 1h"),
			provider.Message{Role: provider.RoleAssistant, Text: "x"}, user("/tool a\n/step\n/sleep 1h")))
		if err != nil {
			t.Fatalf("step 1 slept: %v", err)
		}
	})
	t.Run("capped", func(t *testing.T) {
		sc, err := p.parse("/sleep 9m\n/sleep 9m\n/sleep 100000h", "", 1)
		if err != nil {
			t.Fatal(err)
		}
		if sc.sleep != MaxSleep {
			t.Errorf("sleep = %v, want %v", sc.sleep, MaxSleep)
		}
	})
}

func TestStall(t *testing.T) {
	p := New(Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	got, err := collect(t, ctx, p, req(user("/reply partial\n/stall\n/error never")))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want context.DeadlineExceeded", err)
	}
	if diff := cmp.Diff([]provider.Event{text("partial")}, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	got, err := collect(t, ctx, New(Options{}), req(user("hi")))
	if err != context.Canceled || len(got) != 0 {
		t.Errorf("got %v, %v; want no events and context.Canceled", got, err)
	}
}

func TestNilRequest(t *testing.T) {
	_, err := collect(t, t.Context(), New(Options{}), nil)
	if perr, ok := errors.AsType[*provider.Error](err); !ok || perr.StatusCode != 400 {
		t.Errorf("err = %v, want a 400 *provider.Error", err)
	}
}

func TestDelay(t *testing.T) {
	p := New(Options{Delay: 10 * time.Millisecond})
	t.Run("per delta", func(t *testing.T) {
		start := time.Now()
		got, err := collect(t, t.Context(), p, req(user("/think a\n/reply b c\n/tool x")))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 6 {
			t.Fatalf("got %d events, want 6", len(got))
		}
		if d := time.Since(start); d < 40*time.Millisecond {
			t.Errorf("took %v, want at least 4 delays", d)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var evs []provider.Event
		var err error
		for ev, e := range p.Stream(ctx, req(user("/reply a b c d e f"))) {
			if e != nil {
				err = e
				break
			}
			evs = append(evs, *ev)
			cancel()
		}
		if err != context.Canceled || len(evs) != 1 {
			t.Errorf("got %d events and %v, want 1 event then context.Canceled", len(evs), err)
		}
	})
	if p := New(Options{Delay: -time.Second}); p.delay != 0 {
		t.Errorf("negative delay kept: %v", p.delay)
	}
}

func TestBreakEarly(t *testing.T) {
	p := New(Options{})
	for _, msg := range []string{"one two three", "/reply a b\n/stall", "/tool a\n/tool b"} {
		t.Run(msg, func(t *testing.T) {
			// A stalled step would block forever if the producer ran on
			// after the break; the context is never cancelled.
			n := 0
			for ev, err := range p.Stream(context.Background(), req(user(msg))) {
				if err != nil || ev == nil {
					t.Fatalf("event %v, err %v", ev, err)
				}
				n++
				break
			}
			if n != 1 {
				t.Errorf("got %d events", n)
			}
		})
	}
}

func TestDeterminism(t *testing.T) {
	p := New(Options{})
	mk := func() *provider.Request {
		return &provider.Request{
			Model:  ModelID,
			System: "be brief",
			Messages: []provider.Message{
				user("/think ok\n/tool a {\"x\": 1}\n/tool b\n/then fin"),
				{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{
					{ID: "call_1", Name: "a", Arguments: json.RawMessage(`{"x":1}`)},
					{ID: "call_2", Name: "b", Arguments: json.RawMessage(`{}`)},
				}},
				{Role: provider.RoleTool, ToolCallID: "call_1", ToolName: "a", Text: "1"},
				{Role: provider.RoleTool, ToolCallID: "call_2", ToolName: "b", Text: "2", IsError: true},
			},
			Tools:     []provider.ToolDef{{Name: "a", Parameters: json.RawMessage(`{"type":"object"}`)}},
			MaxTokens: 100,
			Thinking:  "low",
		}
	}
	first, err := collect(t, t.Context(), p, mk())
	if err != nil {
		t.Fatal(err)
	}
	id := first[len(first)-1].ResponseID
	if !regexp.MustCompile(`^scripted-[0-9a-f]{16}$`).MatchString(id) {
		t.Errorf("ResponseID = %q, want scripted-<16 hex digits>", id)
	}
	again, err := collect(t, t.Context(), New(Options{}), mk())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("second run differs (-first +second):\n%s", diff)
	}

	// Every field of the request feeds the response id.
	changes := map[string]func(r *provider.Request){
		"model":       func(r *provider.Request) { r.Model = "other" },
		"system":      func(r *provider.Request) { r.System += "!" },
		"role":        func(r *provider.Request) { r.Messages[3].Role = provider.RoleUser },
		"text":        func(r *provider.Request) { r.Messages[2].Text = "3" },
		"call id":     func(r *provider.Request) { r.Messages[1].ToolCalls[0].ID = "call_9" },
		"call name":   func(r *provider.Request) { r.Messages[1].ToolCalls[1].Name = "c" },
		"call args":   func(r *provider.Request) { r.Messages[1].ToolCalls[1].Arguments = json.RawMessage(`{"y":2}`) },
		"result id":   func(r *provider.Request) { r.Messages[2].ToolCallID = "x" },
		"result name": func(r *provider.Request) { r.Messages[2].ToolName = "c" },
		"is error":    func(r *provider.Request) { r.Messages[3].IsError = false },
		"tool":        func(r *provider.Request) { r.Tools[0].Description = "d" },
		"schema":      func(r *provider.Request) { r.Tools[0].Parameters = json.RawMessage(`{}`) },
		"max tokens":  func(r *provider.Request) { r.MaxTokens++ },
		"thinking":    func(r *provider.Request) { r.Thinking = "high" },
		"messages":    func(r *provider.Request) { r.Messages = append(r.Messages, user("")) },
		"image": func(r *provider.Request) {
			r.Messages[0].Images = []provider.Image{{MimeType: "image/png", Data: "AAAA"}}
		},
		"order": func(r *provider.Request) { r.Messages[2], r.Messages[3] = r.Messages[3], r.Messages[2] },
	}
	seen := map[string]string{id: "original"}
	for name, change := range changes {
		r := mk()
		change(r)
		evs, err := collect(t, t.Context(), p, r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := evs[len(evs)-1].ResponseID
		if prev, dup := seen[got]; dup {
			t.Errorf("changing %s gives the same ResponseID as %s", name, prev)
		}
		seen[got] = name
	}

	if got, _ := collect(t, t.Context(), New(Options{Name: "offline"}), mk()); !strings.HasPrefix(got[len(got)-1].ResponseID, "offline-") {
		t.Errorf("ResponseID %q does not use Options.Name", got[len(got)-1].ResponseID)
	}
}

func TestConcurrent(t *testing.T) {
	p := New(Options{})
	r := req(user("/think a\n/reply b c\n/tool x {\"k\":1}"))
	want, err := collect(t, t.Context(), p, r)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				got, err := collect(t, t.Context(), p, r)
				if err != nil {
					t.Error(err)
					return
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("concurrent run differs (-want +got):\n%s", diff)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestDirectiveHelpers(t *testing.T) {
	p := New(Options{})
	replyText := "line one\n\n  indented REPLY_SKIP "
	tests := []struct {
		name      string
		system    string
		msg       string
		wantText  string
		wantCalls []provider.ToolCall
	}{
		{"reply", "", "ignored\n" + ReplyDirective(replyText), replyText, nil},
		{"empty reply", "", ReplyDirective(""), "", nil},
		{"think does not reply", "", ThinkDirective("a\nb") + "\n" + ReplyDirective("x"), "x", nil},
		{
			"tool", "", ToolDirective("sessions_send", map[string]any{"sessionKey": "main", "message": "/reply hi"}), "",
			[]provider.ToolCall{{ID: "call_1", Name: "sessions_send", Arguments: json.RawMessage(`{"message":"/reply hi","sessionKey":"main"}`)}},
		},
		{
			"tool without args", "", ToolDirective("agents_list", nil), "",
			[]provider.ToolCall{{ID: "call_1", Name: "agents_list", Arguments: json.RawMessage(`{}`)}},
		},
		{"when", "Intro\n" + WhenRule(`say "hi"`, ReplyDirective("a\nb")), `please say "hi"`, "a\nb", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			txt, calls, _, _, err := provider.Collect(p.Stream(t.Context(), &provider.Request{System: tt.system, Messages: []provider.Message{user(tt.msg)}}))
			if err != nil {
				t.Fatal(err)
			}
			if txt != tt.wantText {
				t.Errorf("text = %q, want %q", txt, tt.wantText)
			}
			if diff := cmp.Diff(tt.wantCalls, calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("then", func(t *testing.T) {
		txt, _, _, _, err := provider.Collect(p.Stream(t.Context(), req(
			user(ToolDirective("a", struct{}{})+"\n"+ThenDirective("x\ny")),
			provider.Message{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "call_1", Name: "a"}}},
			provider.Message{Role: provider.RoleTool, ToolCallID: "call_1", Text: "r"},
		)))
		if err != nil || txt != "x\ny" {
			t.Errorf("got %q, %v; want \"x\\ny\"", txt, err)
		}
	})

	for _, args := range []any{"string", []int{1}, func() {}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("ToolDirective(%T) did not panic", args)
				}
			}()
			ToolDirective("x", args)
		}()
	}
}

// TestDeltas checks that deltas are word-sized and concatenate to the reply.
func TestDeltas(t *testing.T) {
	word := regexp.MustCompile(`^[ \t\r\n]*[^ \t\r\n]+[ \t\r\n]*$|^[ \t\r\n]+$`)
	for _, s := range []string{"", " ", "a", " a", "a ", "  lead and trail  ", "tabs\tand\nnew\r\nlines", "ünï cödé"} {
		evs := appendDeltas(nil, provider.EventTextDelta, s)
		if len(evs) != countDeltas(s) {
			t.Errorf("%q: countDeltas = %d, appendDeltas made %d", s, countDeltas(s), len(evs))
		}
		var b strings.Builder
		for _, ev := range evs {
			if !word.MatchString(ev.Text) {
				t.Errorf("%q: delta %q is not one word", s, ev.Text)
			}
			b.WriteString(ev.Text)
		}
		if b.String() != s {
			t.Errorf("deltas of %q concatenate to %q", s, b.String())
		}
	}
}

// FuzzStream checks that any message yields a well-formed step: deltas that
// concatenate to the reply, then usage and done, or a 400 error first.
func FuzzStream(f *testing.F) {
	for _, s := range []string{"hello", "/reply x", "/tool a {}\n/then y", "/error 500 x", "/usage 1 2", "/step\n/step", "/sleep 0s\n/reply ok"} {
		f.Add(s, "")
	}
	f.Add("pong", `/when "pong" /reply REPLY_SKIP`)
	p := New(Options{})
	f.Fuzz(func(t *testing.T, msg, system string) {
		if strings.Contains(msg, "/stall") || strings.Contains(system, "/stall") || strings.Contains(msg, "/sleep") || strings.Contains(system, "/sleep") {
			t.Skip()
		}
		r := &provider.Request{System: system, Messages: []provider.Message{user(msg)}}
		evs, err := collect(t, t.Context(), p, r)
		if err != nil {
			if _, ok := errors.AsType[*provider.Error](err); !ok {
				t.Fatalf("err = %v, want a *provider.Error", err)
			}
			return
		}
		if n := len(evs); n < 2 || evs[n-2].Type != provider.EventUsage || evs[n-1].Type != provider.EventDone {
			t.Fatalf("step does not end with usage and done: %v", evs)
		}
		again, _ := collect(t, t.Context(), p, r)
		if diff := cmp.Diff(evs, again); diff != "" {
			t.Fatalf("not deterministic (-first +second):\n%s", diff)
		}
	})
}

// TestResponseIDFieldsOfBothForms checks that each field of a message feeds
// the response id, in the packed form (short fields) and in the long one (a
// field too long to pack), and that moving bytes between neighbouring
// fields changes it too.
func TestResponseIDFieldsOfBothForms(t *testing.T) {
	long := strings.Repeat("n", 300)
	for _, base := range []provider.Message{
		{Role: provider.RoleTool, ToolCallID: "call_1", ToolName: "ab", Text: "cd"},
		{Role: provider.RoleTool, ToolCallID: "call_1", ToolName: long, Text: "cd"},
	} {
		mk := func(change func(m *provider.Message)) string {
			m := base
			if change != nil {
				change(&m)
			}
			r := &provider.Request{Model: ModelID, Messages: []provider.Message{user("/reply ok"), m}}
			return New(Options{}).responseID(r)
		}
		seen := map[string]string{mk(nil): "original"}
		for name, change := range map[string]func(m *provider.Message){
			"role":        func(m *provider.Message) { m.Role = provider.RoleUser },
			"text":        func(m *provider.Message) { m.Text = "ce" },
			"result id":   func(m *provider.Message) { m.ToolCallID = "call_2" },
			"result name": func(m *provider.Message) { m.ToolName += "x" },
			"is error":    func(m *provider.Message) { m.IsError = true },
			"calls":       func(m *provider.Message) { m.ToolCalls = []provider.ToolCall{{ID: "call_3"}} },
			"image":       func(m *provider.Message) { m.Images = []provider.Image{{MimeType: "image/png", Data: "AAAA"}} },
			"image data":  func(m *provider.Message) { m.Images = []provider.Image{{MimeType: "image/png", Data: "AAAB"}} },
			"name→text":   func(m *provider.Message) { m.ToolName, m.Text = m.ToolName[:1], m.ToolName[1:]+m.Text },
		} {
			id := mk(change)
			if prev, dup := seen[id]; dup {
				t.Errorf("ToolName of %d bytes: changing %s gives the same ResponseID as %s", len(base.ToolName), name, prev)
			}
			seen[id] = name
		}
	}
}
