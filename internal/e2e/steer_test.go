package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/provider"
)

// slowToolTurn is a message that makes the model call sessions_send to
// other with a sleeping message (the tool waits for it), then answer
// "done": a run that stays busy in a tool for about d.
func slowToolTurn(other string, d time.Duration, extra ...string) string {
	args, _ := json.Marshal(map[string]any{"sessionKey": other, "message": "/sleep " + d.String() + "\nslow", "timeoutSeconds": 30})
	return strings.Join(append(extra, "/tool sessions_send "+string(args), "/then done"), "\n")
}

// requestsWith returns the model requests whose messages contain text.
func requestsWith(llm *fakellm.Server, text string) []*provider.Request {
	var out []*provider.Request
	for _, r := range llm.Requests() {
		if r.Request != nil && strings.Contains(requestText(r.Request), text) {
			out = append(out, r.Request)
		}
	}
	return out
}

// TestSessionsSendSteersIntoBusyTarget: a sessions_send to a session whose
// run is in a tool joins that run (the default steer mode): the running
// tool finishes, the message goes into the very next model request of the
// same run, and the sender gets the answer the active run gave it.
func TestSessionsSendSteersIntoBusyTarget(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := startWith(t, "", llm, "", `tools: { sessions: { visibility: "all" } }, session: { agentToAgent: { maxPingPongTurns: 0 } },`)
	c := g.dial(t)
	call(t, c, "chat.send", map[string]any{"sessionKey": "agent:main:busy", "message": slowToolTurn("agent:main:other", 2*time.Second), "idempotencyKey": "slow"})
	eventually(t, "the busy session's tool to be running", func() bool {
		return len(history(t, c, "agent:main:other")) > 0
	})
	d := toolResult(t, c, "agent:main:main", "send-steer", "sessions_send",
		map[string]any{"sessionKey": "agent:main:busy", "message": "are you there?", "timeoutSeconds": 30})
	if d["status"] != "ok" || d["reply"] != "echo: are you there?" {
		t.Fatalf("sessions_send to a busy target = %v", d)
	}
	if w := call(t, c, "agent.wait", map[string]any{"runId": "slow", "timeoutMs": 30000}); w["status"] != "ok" {
		t.Fatalf("the busy run = %v", w)
	}
	// One run answered it: the steered message sits between the tool's
	// result and the reply (what follows is the announce step of the
	// agent-to-agent flow).
	got := texts(history(t, c, "agent:main:busy"))
	at := slices.Index(got, "user: are you there?")
	if at < 1 || !strings.HasPrefix(got[at-1], "toolResult: ") || at+1 >= len(got) || got[at+1] != "assistant: echo: are you there?" {
		t.Fatalf("busy history = %q", got)
	}
	reqs := requestsWith(llm, "are you there?")
	var busy []*provider.Request
	for _, r := range reqs {
		// The busy session's request that answers it (not main's own, nor
		// the later announce step's).
		if strings.Contains(requestText(r), "slow") && lastUser(r) == "are you there?" {
			busy = append(busy, r)
		}
	}
	if len(busy) != 1 {
		t.Fatalf("busy-session requests carrying the message = %d, want 1", len(busy))
	}
	// That request continues the run: it carries the tool call's result
	// before the steered message.
	var sawResult bool
	for _, m := range busy[0].Messages {
		if m.Role == provider.RoleTool {
			sawResult = true
		}
		if m.Role == provider.RoleUser && m.Text == "are you there?" && !sawResult {
			t.Fatalf("the steered message came before the tool result: %+v", busy[0].Messages)
		}
	}
	if !sawResult {
		t.Fatal("the steered request has no tool result: a new turn ran instead of the active one")
	}
}

// TestAnnounceSteersIntoBusyRequester: a child's result announced to a
// requester that is still in a tool joins the requester's run before its
// next model call, instead of waiting for a later turn.
func TestAnnounceSteersIntoBusyRequester(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := startWith(t, "", llm, "", `tools: { sessions: { visibility: "all" } }, session: { agentToAgent: { maxPingPongTurns: 0 } },`)
	c := g.dial(t)
	spawn, _ := json.Marshal(map[string]any{"task": "/reply the child's finding 42"})
	call(t, c, "chat.send", map[string]any{"sessionKey": "agent:main:boss", "idempotencyKey": "boss",
		"message": slowToolTurn("agent:main:other", 3*time.Second, "/tool sessions_spawn "+string(spawn))})
	if w := call(t, c, "agent.wait", map[string]any{"runId": "boss", "timeoutMs": 30000}); w["status"] != "ok" {
		t.Fatalf("requester run = %v", w)
	}
	got := texts(history(t, c, "agent:main:boss"))
	last := got[len(got)-1]
	if !strings.HasPrefix(last, "assistant: echo: ") || !strings.Contains(last, "the child's finding 42") {
		t.Fatalf("the requester's run did not answer the announce: %q", got)
	}
	// Nothing ran after the requester's run: the announce was its input.
	time.Sleep(300 * time.Millisecond)
	if again := texts(history(t, c, "agent:main:boss")); len(again) != len(got) {
		t.Fatalf("a later turn ran: %q", again[len(got):])
	}
	counts, _ := announcesBySource(t, c, "agent:main:boss")
	if len(counts) != 1 {
		t.Fatalf("announces = %v", counts)
	}
	for k, n := range counts {
		if n != 1 {
			t.Fatalf("announce of %s delivered %d times", k, n)
		}
	}
}
