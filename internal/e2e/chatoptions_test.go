package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// TestModelAndThinkCommands: /model and /think show and change the
// session's model and thinking level without a model call; the next turns
// go to the model and level chosen (an Anthropic-wire provider, whose
// requests carry the level); "/think <level>" before a message is that
// message's level only; "/model <ref>" before a message chooses the model
// and runs the message; a model that does not resolve changes nothing; and
// "default" goes back to the agent's.
func TestModelAndThinkCommands(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	cfg := fmt.Sprintf(`{
  gateway: { auth: { mode: "token", token: %q } },
  models: { mode: "replace", providers: {
    fake: { baseUrl: %q, apiKey: "llm-key", api: "openai-completions", models: [{ id: "fake-1" }, { id: "fake-2", name: "Fake Two" }] },
    claude: { baseUrl: %q, apiKey: "llm-key", api: "anthropic-messages", models: [{ id: "c-1" }] },
  } },
  agents: { defaults: { model: { primary: "fake/fake-1" } } },
}`, token, llm.URL(), llm.AnthropicURL())
	g := startConfig(t, 0, t.TempDir(), cfg, llm)
	c := g.dial(t)
	last := func() string {
		t.Helper()
		msgs := texts(history(t, c, "main"))
		return msgs[len(msgs)-1]
	}
	send := func(id, msg string) {
		t.Helper()
		if w := runTurn(t, c, "main", id, msg); w["status"] != "ok" {
			t.Fatalf("agent.wait on %q = %v", msg, w)
		}
	}
	command := func(id, msg string, want ...string) {
		t.Helper()
		n := llm.Count()
		send(id, msg)
		if llm.Count() != n {
			t.Errorf("%q reached the model", msg)
		}
		got := last()
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%q answered %q, want %q in it", msg, got, w)
			}
		}
	}
	// turn sends msg, which must make one model request, and returns it:
	// its path, model and thinking level.
	turn := func(id, msg string) (path, model, thinking string) {
		t.Helper()
		n := llm.Count()
		send(id, msg)
		if llm.Count() != n+1 {
			t.Fatalf("%q made %d model requests, want 1", msg, llm.Count()-n)
		}
		reqs := llm.Requests()
		r := reqs[len(reqs)-1]
		return r.Path, r.Request.Model, r.Request.Thinking
	}
	sessionThinking := func() any { t.Helper(); return mainSessionField(t, c, "thinkingLevel") }

	command("m-1", "/model", "Current: fake/fake-1", "Default: fake/fake-1", "Think: default")
	command("m-2", "/models", "Providers:\n- claude (1)\n- fake (2)")
	command("m-3", "/models fake", "Models (fake) — 2\n- fake/fake-1 · default\n- fake/fake-2 (Fake Two)")
	command("m-4", "/model nope/x", `Unrecognized model "nope/x". Use /models`)
	command("m-5", "/model claude/c-1 -g", "Only this session's model can be chosen from chat")
	command("t-1", "/think sideways", `Unrecognized thinking level "sideways". Valid levels: default, off, minimal`)
	if _, m, th := turn("turn-1", "hello"); m != "fake-1" || th != "" || sessionThinking() != nil {
		t.Errorf("refused choices changed the session: model %q, thinking %q, session level %v", m, th, sessionThinking())
	}

	command("m-6", "/model claude/c-1 -s", "Model set to claude/c-1 for this session only; configured default unchanged.")
	command("t-2", "/thinking: max", "Thinking level set to high.")
	command("m-7", "/model status", "Current: claude/c-1", "Default: fake/fake-1", "Think: high")
	if p, m, th := turn("turn-2", "hello again"); p != "/v1/messages" || m != "c-1" || th != "high" {
		t.Errorf("after /model and /think: %s model %q thinking %q; want /v1/messages, c-1, high", p, m, th)
	}
	if _, m, th := turn("turn-3", "/t low\nkeep it short"); m != "c-1" || th != "low" {
		t.Errorf("an inline /t low: model %q thinking %q", m, th)
	}
	if sessionThinking() != "high" {
		t.Errorf("an inline /think changed the session's level to %v", sessionThinking())
	}
	if got := last(); !strings.Contains(got, "keep it short") || strings.Contains(got, "/t low") {
		t.Errorf("the inline /think's message reached the model as %q", got)
	}

	if _, m, _ := turn("turn-4", "/model fake/fake-2\nand now?"); m != "fake-2" {
		t.Errorf("/model with a message ran on %q", m)
	}
	msgs := texts(history(t, c, "main"))
	if len(msgs) < 3 || !strings.Contains(msgs[len(msgs)-3], "Model set to fake/fake-2") || msgs[len(msgs)-2] != "user: and now?" {
		t.Errorf("/model with a message: history ends %q", msgs[max(len(msgs)-3, 0):])
	}

	command("m-8", "/model default", "Session model reset to configured default (fake/fake-1).")
	command("t-3", "/think reset", "Thinking level reset to default.")
	command("t-4", "/think", "Current thinking level: default.")
	if _, m, th := turn("turn-5", "and again"); m != "fake-1" || th != "" || sessionThinking() != nil {
		t.Errorf("after /model default and /think reset: model %q, thinking %q, session level %v", m, th, sessionThinking())
	}
	// Not a level: the whole message is for the model (the fake reads it
	// as its own /think directive).
	turn("turn-6", "/think about this")
	if msgs := texts(history(t, c, "main")); msgs[len(msgs)-2] != "user: /think about this" {
		t.Errorf("\"/think about this\" did not reach the model as it is: %q", msgs[len(msgs)-2:])
	}
}

// TestNameCommand: /name shows the session's name, sets it from the
// title (sessions.list shows it as the label), refuses a title
// sessions.patch would refuse (one too long, or another session's
// label), and answers without a model turn.
func TestNameCommand(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := startModel(t, "", llm, `{ id: "fake-1" }`, "", "")
	c := g.dial(t)
	label := func() any { t.Helper(); return mainSessionField(t, c, "label") }
	call(t, c, "sessions.patch", map[string]any{"key": "other", "label": "Taken"})
	for i, tt := range []struct{ msg, want string }{
		{"/name", "This session has no custom name yet.\nUse /name <title> to set a name (mirrors the session manager)."},
		{"/name   Release notes ", "✅ Session renamed to “Release notes”."},
		{"/NAME", "Current session name: Release notes\nUse /name <title> to set a name (mirrors the session manager)."},
		{"/name " + strings.Repeat("x", 65), "Couldn't rename the session: invalid label: too long (max 64)"},
		{"/name Taken", "Couldn't rename the session: label already in use: Taken"},
	} {
		if w := runTurn(t, c, "main", fmt.Sprint("name-", i), tt.msg); w["status"] != "ok" {
			t.Fatalf("%q: agent.wait = %v", tt.msg, w)
		}
		msgs := texts(history(t, c, "main"))
		if got := msgs[len(msgs)-1]; got != "assistant: "+tt.want {
			t.Errorf("%q answered %q, want %q", tt.msg, got, tt.want)
		}
	}
	if l := label(); l != "Release notes" {
		t.Errorf("label after /name = %v", l)
	}
	if n := llm.Count(); n != 0 {
		t.Errorf("/name reached the model (%d requests)", n)
	}
}

// mainSessionField is field of agent:main:main's row in sessions.list (nil
// when the row leaves it out).
func mainSessionField(t *testing.T, c *client.Client, field string) any {
	t.Helper()
	for _, r := range call(t, c, "sessions.list", map[string]any{})["sessions"].([]any) {
		if row := r.(map[string]any); row["key"] == "agent:main:main" {
			return row[field]
		}
	}
	t.Fatal("sessions.list has no agent:main:main")
	return nil
}
