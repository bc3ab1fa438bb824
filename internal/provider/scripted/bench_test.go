package scripted

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// drain ranges over one step the way the runner does.
func drain(b *testing.B, p *Provider, ctx context.Context, r *provider.Request) {
	n := 0
	for ev, err := range p.Stream(ctx, r) {
		if err != nil {
			b.Fatal(err)
		}
		if ev.Type == provider.EventDone {
			n++
		}
	}
	if n != 1 {
		b.Fatal("no done event")
	}
}

// BenchmarkEchoTurn is the instant model's cost for one chat turn: a short
// system prompt, one user message, an echoed reply of 7 deltas.
func BenchmarkEchoTurn(b *testing.B) {
	p := New(Options{})
	r := &provider.Request{
		Model:    ModelID,
		System:   "You are a helpful assistant running on Switchboard.",
		Messages: []provider.Message{user("hello there, how are you today?")},
		Tools:    []provider.ToolDef{{Name: "sessions_list", Parameters: json.RawMessage(`{"type":"object"}`)}},
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		drain(b, p, ctx, r)
	}
}

// BenchmarkEchoTurnLongHistory is an echo turn at the end of a 100-message
// conversation with a 4 KB system prompt.
func BenchmarkEchoTurnLongHistory(b *testing.B) {
	p := New(Options{})
	r := &provider.Request{Model: ModelID, System: strings.Repeat("You are helpful. ", 240)}
	for i := range 50 {
		r.Messages = append(r.Messages, user("message number "+strings.Repeat("x", i)),
			provider.Message{Role: provider.RoleAssistant, Text: "echo: message number " + strings.Repeat("x", i)})
	}
	r.Messages = append(r.Messages, user("hello there, how are you today?"))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		drain(b, p, ctx, r)
	}
}

// BenchmarkToolTurn is a two-call tool step followed by its summary step.
func BenchmarkToolTurn(b *testing.B) {
	p := New(Options{})
	msg := user(ToolDirective("sessions_list", map[string]any{"limit": 5}) + "\n" + ToolDirective("agents_list", nil))
	step1 := &provider.Request{Model: ModelID, Messages: []provider.Message{msg}}
	step2 := &provider.Request{Model: ModelID, Messages: []provider.Message{
		msg,
		{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{
			{ID: "call_1", Name: "sessions_list", Arguments: json.RawMessage(`{"limit":5}`)},
			{ID: "call_2", Name: "agents_list", Arguments: json.RawMessage(`{}`)},
		}},
		{Role: provider.RoleTool, ToolCallID: "call_1", ToolName: "sessions_list", Text: "{\n  \"count\": 0,\n  \"sessions\": []\n}"},
		{Role: provider.RoleTool, ToolCallID: "call_2", ToolName: "agents_list", Text: "{\n  \"agents\": [\n    {\"id\": \"main\"}\n  ]\n}"},
	}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		drain(b, p, ctx, step1)
		drain(b, p, ctx, step2)
	}
}

// BenchmarkEchoTurnWarmSession is an echo turn as bench/gateway's warm
// session sends it: 400 messages of history, a few words each, and 15
// tools with 11 KB of descriptions and schemas.
func BenchmarkEchoTurnWarmSession(b *testing.B) {
	p := New(Options{})
	r := &provider.Request{Model: ModelID}
	for range 199 {
		r.Messages = append(r.Messages, user("warm turn"), provider.Message{Role: provider.RoleAssistant, Text: "echo: warm turn"})
	}
	r.Messages = append(r.Messages, user("warm turn"), user("warm turn"))
	for i := range 15 {
		r.Tools = append(r.Tools, provider.ToolDef{
			Name:        "tool_" + strings.Repeat("x", i),
			Description: strings.Repeat("Does one thing to the session. ", 15),
			Parameters:  json.RawMessage(`{"type":"object","properties":{"sessionKey":{"type":"string","description":"` + strings.Repeat("k", 200) + `"}}}`),
		})
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		drain(b, p, ctx, r)
	}
}

// slidingHistory returns a session's history of n messages as the runner
// sends it turn after turn: turn i's window starts 2i messages later
// (the window of HistoryLimit entries slides by a user message and its
// answer), its messages share their strings with the earlier turns'
// (the runner keeps the transcript), and the windows repeat with a
// period of n+128 messages so that a benchmark can run any number of
// turns. Its texts name tag.
func slidingHistory(n int, tag string) func(i int) []provider.Message {
	period := n + 128
	ring := make([]provider.Message, period+n)
	for k := range ring {
		if k >= period {
			ring[k] = ring[k-period]
			continue
		}
		id := "call_" + strconv.Itoa(k-k%4+1)
		switch k % 4 {
		case 0:
			ring[k] = user("message " + strconv.Itoa(k) + " of a conversation about " + tag)
		case 1:
			ring[k] = provider.Message{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{
				{ID: id, Name: "sessions_list", Arguments: json.RawMessage(`{"limit":5}`)}}}
		case 2:
			ring[k] = provider.Message{Role: provider.RoleTool, ToolCallID: id, ToolName: "sessions_list", Text: `{"count":0,"about":"` + tag + `"}`}
		case 3:
			ring[k] = provider.Message{Role: provider.RoleAssistant, Text: "echo: message " + strconv.Itoa(k-3) + " about " + tag}
		}
	}
	return func(i int) []provider.Message {
		s := 2 * i % period
		return ring[s : s+n : s+n]
	}
}

// warmTools is bench/gateway's tool set: 15 tools with 11 KB of
// descriptions and schemas.
func warmTools() []provider.ToolDef {
	var tools []provider.ToolDef
	for i := range 15 {
		tools = append(tools, provider.ToolDef{
			Name:        "tool_" + strings.Repeat("x", i),
			Description: strings.Repeat("Does one thing to the session. ", 15),
			Parameters:  json.RawMessage(`{"type":"object","properties":{"sessionKey":{"type":"string","description":"` + strings.Repeat("k", 200) + `"}}}`),
		})
	}
	return tools
}

// BenchmarkResponseIDWarm is the response id of a warm turn of a session
// whose history window of 200 or 1,000 messages slid by two messages
// since the turn before, with bench/gateway's tools and a 4 KB system
// prompt, on one Provider ("memo"), and the same id computed from scratch
// ("scratch"), as every turn did before the memo.
func BenchmarkResponseIDWarm(b *testing.B) {
	for _, n := range []int{200, 1000} {
		for _, memo := range []bool{true, false} {
			name := strconv.Itoa(n) + "/scratch"
			if memo {
				name = strconv.Itoa(n) + "/memo"
			}
			b.Run(name, func(b *testing.B) {
				p := New(Options{})
				window := slidingHistory(n, "the weather")
				r := &provider.Request{Model: ModelID, System: strings.Repeat("You are helpful. ", 240), Tools: warmTools(), MaxTokens: 4096}
				i := 0
				b.ReportAllocs()
				for b.Loop() {
					r.Messages = window(i)
					i++
					if memo {
						_ = p.responseID(r)
					} else {
						_ = scratchID(p.name, r)
					}
				}
			})
		}
	}
}

// BenchmarkResponseIDManySessions is the response id of turns of 4 × the
// memo's windows sessions taken in turn, each a 200-message window that
// slid by two messages since its session's turn before: no window is
// still remembered when its session comes back, so each turn costs the
// whole hash and the memo's search and copy ("memo"), against the hash
// alone ("scratch").
func BenchmarkResponseIDManySessions(b *testing.B) {
	const sessions = 4 * memoChains
	windows := make([]func(int) []provider.Message, sessions)
	for i := range windows {
		windows[i] = slidingHistory(200, "topic "+strconv.Itoa(i))
	}
	for _, memo := range []bool{true, false} {
		name := "scratch"
		if memo {
			name = "memo"
		}
		b.Run(name, func(b *testing.B) {
			p := New(Options{})
			r := &provider.Request{Model: ModelID, System: strings.Repeat("You are helpful. ", 240), Tools: warmTools(), MaxTokens: 4096}
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				r.Messages = windows[i%sessions](i / sessions)
				i++
				if memo {
					_ = p.responseID(r)
				} else {
					_ = scratchID(p.name, r)
				}
			}
		})
	}
}
