package scripted_test

import (
	"context"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/provider/scripted"
)

func Example() {
	p := scripted.New(scripted.Options{})
	req := &provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "hello world"}}}
	for ev, err := range p.Stream(context.Background(), req) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		switch ev.Type {
		case provider.EventTextDelta:
			fmt.Printf("text %q\n", ev.Text)
		case provider.EventUsage:
			fmt.Printf("usage in=%d out=%d\n", ev.Usage.Input, ev.Usage.Output)
		case provider.EventDone:
			fmt.Println("done", ev.StopReason)
		}
	}
	// Output:
	// text "echo: "
	// text "hello "
	// text "world"
	// usage in=2 out=4
	// done stop
}

// A turn in two steps: the model calls a tool, the runner sends the result
// back, and the model answers with the /then text.
func Example_toolTurn() {
	p := scripted.New(scripted.Options{})
	ctx := context.Background()
	msgs := []provider.Message{{
		Role: provider.RoleUser,
		Text: scripted.ToolDirective("sessions_list", map[string]any{"limit": 5}) + "\n" + scripted.ThenDirective("listed"),
	}}

	_, calls, _, done, _ := provider.Collect(p.Stream(ctx, &provider.Request{Messages: msgs}))
	fmt.Println(done.StopReason, calls[0].ID, calls[0].Name, string(calls[0].Arguments))

	msgs = append(msgs,
		provider.Message{Role: provider.RoleAssistant, ToolCalls: calls},
		provider.Message{Role: provider.RoleTool, ToolCallID: calls[0].ID, ToolName: calls[0].Name, Text: `{"count": 0}`},
	)
	text, _, _, done, _ := provider.Collect(p.Stream(ctx, &provider.Request{Messages: msgs}))
	fmt.Println(done.StopReason, text)
	// Output:
	// toolUse call_1 sessions_list {"limit":5}
	// stop listed
}

// Without /then, the answer after tool results summarises them.
func Example_summary() {
	p := scripted.New(scripted.Options{})
	msgs := []provider.Message{
		{Role: provider.RoleUser, Text: "/tool agents_list"},
		{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "call_1", Name: "agents_list"}}},
		{Role: provider.RoleTool, ToolCallID: "call_1", ToolName: "agents_list", Text: "{\n  \"agents\": []\n}"},
	}
	text, _, _, _, _ := provider.Collect(p.Stream(context.Background(), &provider.Request{Messages: msgs}))
	fmt.Println(text)
	// Output:
	// tool agents_list returned: { "agents": [] }
}

// Rules in the System prompt script the answers of an agent to messages it
// does not author, such as the agent-to-agent announce step.
func ExampleWhenRule() {
	system := "You are the target agent.\n" + scripted.WhenRule("announce step", scripted.ReplyDirective("ANNOUNCE_SKIP"))
	fmt.Println(system)

	p := scripted.New(scripted.Options{})
	req := &provider.Request{
		System:   system,
		Messages: []provider.Message{{Role: provider.RoleUser, Text: "Agent-to-agent announce step."}},
	}
	text, _, _, _, _ := provider.Collect(p.Stream(context.Background(), req))
	fmt.Println(text)
	// Output:
	// You are the target agent.
	// /when "announce step" /reply ANNOUNCE_SKIP
	// ANNOUNCE_SKIP
}

func ExampleToolDirective() {
	fmt.Println(scripted.ToolDirective("sessions_send", map[string]any{"sessionKey": "main", "message": "/reply pong"}))
	// Output:
	// /tool sessions_send {"message":"/reply pong","sessionKey":"main"}
}
