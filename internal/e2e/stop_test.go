package e2e

import (
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// TestStopCommand: "/tasks" lists the running child; "/stop" aborts the
// session's running run, drops the
// message queued behind it and kills the sub-agents it spawned (whose ends
// are not announced), and answers with the reference's text; an abort word ("please stop!") does
// the same; "/stop" with more text is a message; and "/stop" on a session
// that does not exist starts none.
func TestStopCommand(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := startModel(t, "", llm, `{ id: "fake-1" }`, "", "")
	c := g.dial(t)
	// started says whether runID's run has started (and not ended).
	started := func(runID string) bool {
		t.Helper()
		w := call(t, c, "agent.wait", map[string]any{"runId": runID, "timeoutMs": 0})
		return w["status"] == "timeout" && w["startedAt"] != nil
	}
	// aborted waits for runID's end and says whether it was aborted.
	aborted := func(runID string) bool {
		t.Helper()
		w := call(t, c, "agent.wait", map[string]any{"runId": runID, "timeoutMs": 30000})
		return w["status"] == "error" && w["stopReason"] == "aborted"
	}
	last := func(key string) string {
		t.Helper()
		msgs := texts(history(t, c, key))
		return msgs[len(msgs)-1]
	}

	// A child that stalls, spawned by main, and main's own stalled run
	// with a message queued behind it.
	spawn := toolResult(t, c, "main", "spawn-1", "sessions_spawn", map[string]any{"task": "a long job\n/stall"})
	child, _ := spawn["runId"].(string)
	if child == "" {
		t.Fatalf("sessions_spawn = %v", spawn)
	}
	// asked says whether a model request's last message holds text: a
	// run that started has not always made its request yet.
	asked := func(text string) bool {
		for _, r := range llm.Requests() {
			if m := r.Request.Messages; len(m) > 0 && strings.Contains(m[len(m)-1].Text, text) {
				return true
			}
		}
		return false
	}
	eventually(t, "the child's run to start", func() bool { return started(child) && asked("a long job") })
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "hold on\n/stall", "idempotencyKey": "slow-1"})
	eventually(t, "main's stalled run to start", func() bool { return started("slow-1") && asked("hold on") })
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "queued behind", "idempotencyKey": "queued-1"})
	calls := llm.Count()
	if w := runTurn(t, c, "main", "tasks-1", "/tasks"); w["status"] != "ok" ||
		!strings.Contains(last("main"), "📋 Tasks\nCurrent session: 1 active · 1 total\n\n1. 🟢 a long job …\n   Subagent · running · elapsed ") {
		t.Errorf("/tasks while the child runs: %v, answered %q", w, last("main"))
	}
	if w := runTurn(t, c, "main", "status-1", "/status"); w["status"] != "ok" || !strings.Contains(last("main"), "🏃 Run: running for ") ||
		!strings.Contains(last("main"), " · 1 waiting (/stop ends it)") {
		t.Errorf("/status while a run runs: %v, answered %q", w, last("main"))
	}

	if w := runTurn(t, c, "main", "stop-1", "/stop"); w["status"] != "ok" {
		t.Fatalf("agent.wait on /stop = %v", w)
	}
	if got := last("main"); got != "assistant: ⚙️ Agent was aborted. Stopped 1 sub-agent." {
		t.Errorf("/stop answered %q", got)
	}
	for _, id := range []string{"slow-1", "queued-1", child} {
		if !aborted(id) {
			t.Errorf("run %s was not aborted by /stop", id)
		}
	}
	// The killed child's announce settles without a turn: nothing about
	// it is posted to main (the reference suppresses a killed run's).
	eventually(t, "the killed child's announce to settle", func() bool {
		for _, a := range call(t, c, "announces.list", map[string]any{})["announces"].([]any) {
			if a := a.(map[string]any); a["runId"] == child && a["status"] == "pending" {
				return false
			}
		}
		return true
	})
	if llm.Count() != calls {
		t.Errorf("/stop, the dropped message or the killed child's announce reached the model (%d calls more)", llm.Count()-calls)
	}
	for _, m := range texts(history(t, c, "main")) {
		if strings.Contains(m, "Internal task completion event") {
			t.Errorf("the killed child was announced: %q", m)
		}
	}

	if w := runTurn(t, c, "main", "tasks-2", "/tasks"); w["status"] != "ok" ||
		!strings.Contains(last("main"), "Current session: 0 active · 1 total\n\n1. ⚪️ a long job …\n   Subagent · cancelled · finished ") ||
		strings.Contains(last("main"), "   aborted") {
		t.Errorf("/tasks after /stop: %v, answered %q", w, last("main"))
	}
	if w := runTurn(t, c, "main", "stop-2", "Please stop!"); w["status"] != "ok" || last("main") != "assistant: ⚙️ Agent was aborted." {
		t.Errorf("\"Please stop!\" with nothing running: %v, answered %q", w, last("main"))
	}
	if w := runTurn(t, c, "main", "stop-3", "/stop it"); w["status"] != "ok" || llm.Count() != calls+1 {
		t.Errorf("\"/stop it\" is a message for the model: %v, %d calls", w, llm.Count()-calls)
	}

	if w := runTurn(t, c, "nowhere", "stop-4", "/stop"); w["status"] != "ok" {
		t.Errorf("/stop on a missing session: %v", w)
	}
	for _, r := range call(t, c, "sessions.list", map[string]any{})["sessions"].([]any) {
		if k := r.(map[string]any)["key"].(string); strings.Contains(k, "nowhere") {
			t.Errorf("/stop started session %s", k)
		}
	}
}
