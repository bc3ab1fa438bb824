package e2e

import (
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// TestModelAndThinkCommands: /model and /think show and change the
// session's model and thinking level without a model call, the next turn
// goes to the model chosen (the OpenAI wire the fake speaks carries no
// thinking level: the session row shows it), a model that does not
// resolve changes nothing, and "default" goes back to the agent's.
func TestModelAndThinkCommands(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := startModel(t, "", llm, `{ id: "fake-1" }, { id: "fake-2", name: "Fake Two" }`, "", "")
	c := g.dial(t)
	last := func(key string) string {
		t.Helper()
		msgs := texts(history(t, c, key))
		return msgs[len(msgs)-1]
	}
	command := func(id, msg string, want ...string) {
		t.Helper()
		if w := runTurn(t, c, "main", id, msg); w["status"] != "ok" {
			t.Fatalf("agent.wait on %s = %v", msg, w)
		}
		got := last("main")
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s answered %q, want %q in it", msg, got, w)
			}
		}
	}
	lastModel := func() string {
		t.Helper()
		reqs := llm.Requests()
		return reqs[len(reqs)-1].Request.Model
	}
	thinking := func() any {
		t.Helper()
		for _, r := range call(t, c, "sessions.list", map[string]any{})["sessions"].([]any) {
			if row := r.(map[string]any); row["key"] == "agent:main:main" {
				return row["thinkingLevel"]
			}
		}
		t.Fatal("sessions.list has no agent:main:main")
		return nil
	}

	command("m-1", "/model", "Current: fake/fake-1", "Default: fake/fake-1", "Think: default")
	command("m-2", "/models", "Providers:\n- fake (2)")
	command("m-3", "/models fake", "Models (fake) — 2\n- fake/fake-1 · default\n- fake/fake-2 (Fake Two)")
	command("m-4", "/model nope/x", `Unrecognized model "nope/x". Use /models`)
	command("m-5", "/model fake/fake-2 -g", "Only this session's model can be chosen from chat")
	command("t-1", "/think sideways", `Unrecognized thinking level "sideways". Valid levels: default, off, minimal`)
	if n := llm.Count(); n != 0 {
		t.Fatalf("the commands reached the model (%d requests)", n)
	}
	if w := runTurn(t, c, "main", "turn-1", "hello"); w["status"] != "ok" {
		t.Fatalf("turn: %v", w)
	}
	if m, th := lastModel(), thinking(); m != "fake-1" || th != nil {
		t.Errorf("refused choices changed the session: model %q, thinking %v", m, th)
	}

	command("m-6", "/model fake/fake-2 -s", "Model set to fake/fake-2 for this session only; configured default unchanged.")
	command("t-2", "/thinking: max", "Thinking level set to high.")
	command("m-7", "/model status", "Current: fake/fake-2", "Default: fake/fake-1", "Think: high")
	n := llm.Count()
	if w := runTurn(t, c, "main", "turn-2", "hello again"); w["status"] != "ok" {
		t.Fatalf("turn: %v", w)
	}
	if llm.Count() != n+1 {
		t.Fatalf("one turn made %d model requests", llm.Count()-n)
	}
	if m, th := lastModel(), thinking(); m != "fake-2" || th != "high" {
		t.Errorf("after /model and /think: the turn went to model %q, thinking level %v; want fake-2, high", m, th)
	}

	command("m-8", "/model default", "Session model reset to configured default (fake/fake-1).")
	command("t-3", "/t off", "Thinking disabled.")
	if w := runTurn(t, c, "main", "turn-3", "and again"); w["status"] != "ok" {
		t.Fatalf("turn: %v", w)
	}
	if m, th := lastModel(), thinking(); m != "fake-1" || th != "off" {
		t.Errorf("after /model default and /t off: model %q, thinking level %v", m, th)
	}
	command("t-4", "/think reset", "Thinking level reset to default.")
	command("t-5", "/think", "Current thinking level: default.")
	if th := thinking(); th != nil {
		t.Errorf("after /think reset: thinking level %v", th)
	}
}
