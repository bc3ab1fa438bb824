package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// TestHelpAndStatusCommands: /help and /status answer in the session
// without a model call, also as a session's first message (the session
// starts for them), and agent.wait on the command's run id ends ok.
func TestHelpAndStatusCommands(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := startModel(t, "", llm, windowModel(100000), "", "")
	c := g.dial(t)

	if w := runTurn(t, c, "fresh", "help-1", "/help"); w["status"] != "ok" {
		t.Fatalf("agent.wait on /help = %v", w)
	}
	if n := llm.Count(); n != 0 {
		t.Fatalf("/help reached the model (%d requests)", n)
	}
	got := strings.Join(texts(history(t, c, "fresh")), "\n")
	for _, want := range []string{"ℹ️ Help", "Session\n  /new — ", "/compact — ", "/status — ", "/help — ", "/queue — "} {
		if !strings.Contains(got, want) {
			t.Errorf("/help lacks %q:\n%s", want, got)
		}
	}

	if w := runTurn(t, c, "main", "turn-1", "/reply hello there\nhi"); w["status"] != "ok" {
		t.Fatalf("turn: %v", w)
	}
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "/queue collect debounce:250ms cap:7", "idempotencyKey": "q-1"})
	n := llm.Count()
	if w := runTurn(t, c, "main", "status-1", "/STATUS"); w["status"] != "ok" {
		t.Fatalf("agent.wait on /status = %v", w)
	}
	if llm.Count() != n {
		t.Errorf("/status reached the model")
	}
	msgs := texts(history(t, c, "main"))
	st := msgs[len(msgs)-1]
	for _, want := range []string{"🔀 Switchboard ", " · up ", "🧠 Model: fake/fake-1", "🧮 Tokens: ", "📚 Context ", "/100k (",
		"🧵 Session: agent:main:main (agent main, transcript ", "🪢 Queue: collect · debounce 250ms · cap 7", "📨 Send policy: inherit"} {
		if !strings.Contains(st, want) {
			t.Errorf("/status lacks %q:\n%s", want, st)
		}
	}
}

// TestCommandsAsFirstMessage: /compact and /context as a session's first
// message answer in the new session instead of vanishing.
func TestCommandsAsFirstMessage(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := startModel(t, "", llm, windowModel(100000), "", "")
	c := g.dial(t)
	for i, tt := range []struct{ key, msg, want string }{
		{"first-compact", "/compact", "⚙️ Compaction skipped: "},
		{"first-context", "/context", "🧠 Context breakdown"},
	} {
		if w := runTurn(t, c, tt.key, "cmd-"+strconv.Itoa(i), tt.msg); w["status"] != "ok" {
			t.Fatalf("%s: agent.wait = %v", tt.msg, w)
		}
		if got := strings.Join(texts(history(t, c, tt.key)), "\n"); !strings.Contains(got, tt.want) {
			t.Errorf("%s as the first message: history %q, want %q", tt.msg, got, tt.want)
		}
	}
	if n := llm.Count(); n != 0 {
		t.Errorf("the commands reached the model (%d requests)", n)
	}
}
