package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// toolTurn is a chat.send whose message makes the requester's model call
// one tool with args and then answer "done".
func toolTurn(tool string, args any) string {
	b, _ := json.Marshal(args)
	return "/tool " + tool + " " + string(b) + "\n/then done"
}

// toolResult runs one chat.send on key making the model call tool, and
// returns the tool result's details from the transcript.
func toolResult(t *testing.T, c *client.Client, key, runID, tool string, args any) map[string]any {
	t.Helper()
	call(t, c, "chat.send", map[string]any{"sessionKey": key, "message": toolTurn(tool, args), "idempotencyKey": runID})
	if w := call(t, c, "agent.wait", map[string]any{"runId": runID, "timeoutMs": 30000}); w["status"] != "ok" {
		t.Fatalf("requester run %s = %v", runID, w)
	}
	hist := call(t, c, "chat.history", map[string]any{"sessionKey": key, "limit": 1000})
	msgs, _ := hist["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["role"] == "toolResult" && m["toolName"] == tool {
			d, _ := m["details"].(map[string]any)
			return d
		}
	}
	t.Fatalf("no %s result in %s history", tool, key)
	return nil
}

// history returns the messages of a session.
func history(t *testing.T, c *client.Client, key string) []map[string]any {
	t.Helper()
	hist := call(t, c, "chat.history", map[string]any{"sessionKey": key, "limit": 1000})
	var out []map[string]any
	for _, m := range hist["messages"].([]any) {
		out = append(out, m.(map[string]any))
	}
	return out
}

func texts(msgs []map[string]any) []string {
	var out []string
	for _, m := range msgs {
		b, _ := json.Marshal(m["content"])
		var blocks []struct{ Type, Text string }
		if json.Unmarshal(b, &blocks) == nil {
			var s strings.Builder
			for _, bl := range blocks {
				s.WriteString(bl.Text)
			}
			out = append(out, fmt.Sprint(m["role"], ": ", s.String()))
		} else {
			out = append(out, fmt.Sprint(m["role"], ": ", m["content"]))
		}
	}
	return out
}

// interSession counts user messages that came from another session.
func interSession(msgs []map[string]any) int {
	n := 0
	for _, m := range msgs {
		if p, _ := m["provenance"].(map[string]any); m["role"] == "user" && p["kind"] == "inter_session" {
			n++
		}
	}
	return n
}

// eventually polls cond for up to 20 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventuallyWithin(t, 20*time.Second, what, cond)
}

// eventuallyWithin is eventually for a wait whose work takes a good part
// of eventually's 20 s on a loaded machine; limit only bounds a failing
// wait.
func eventuallyWithin(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// writeAgents writes AGENTS.md into an agent's workspace: its lines become
// the base system prompt (the scripted model reads /when rules there).
func writeAgents(t *testing.T, dir, workspace, content string) {
	t.Helper()
	ws := filepath.Join(dir, workspace)
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "AGENTS.md"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

const sessionsConfig = `tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true } },
  session: { agentToAgent: { maxPingPongTurns: 2 } },`

func TestSessionsSendFlows(t *testing.T) {
	dir := t.TempDir()
	// Agent main stays silent in announce steps; agent ops announces.
	writeAgents(t, dir, "workspace", `/when "Agent-to-agent announce step." /reply ANNOUNCE_SKIP`)
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := startWith(t, dir, llm, `{ id: "main", default: true }, { id: "ops" }`, sessionsConfig)
	c := g.dial(t)
	call(t, c, "sessions.create", map[string]any{"key": "agent:main:tgt"})
	call(t, c, "sessions.create", map[string]any{"key": "agent:ops:desk"})

	t.Run("wait ok with reply, loop stopped by REPLY_SKIP, announce skipped", func(t *testing.T) {
		// The target answers "/reply /reply REPLY_SKIP"; turn 1 (the
		// requester) answers "/reply REPLY_SKIP"; turn 2 (the target)
		// answers REPLY_SKIP; the announce step answers ANNOUNCE_SKIP.
		res := toolResult(t, c, "agent:main:req1", "s1", "sessions_send", map[string]any{
			"sessionKey": "agent:main:tgt", "message": "/reply /reply /reply REPLY_SKIP", "timeoutSeconds": 20,
		})
		if res["status"] != "ok" || res["reply"] != "/reply /reply REPLY_SKIP" || res["sessionKey"] != "agent:main:tgt" {
			t.Fatalf("sessions_send = %v", res)
		}
		if d, _ := res["delivery"].(map[string]any); d["status"] != "replied" || d["mode"] != "announce" {
			t.Errorf("delivery = %v", res["delivery"])
		}
		// docs/spec/reference-behaviour.md §6.4's call-count consequence: 4 agent runs from the flow —
		// primary, turn 1 (requester), turn 2 (target), announce.
		eventually(t, "the announce step", func() bool {
			return interSession(history(t, c, "agent:main:tgt")) == 3 && interSession(history(t, c, "agent:main:req1")) == 1
		})
		time.Sleep(300 * time.Millisecond) // nothing more may follow
		tgt := history(t, c, "agent:main:tgt")
		want := []string{
			"user: /reply /reply /reply REPLY_SKIP", "assistant: /reply /reply REPLY_SKIP",
			"user: /reply REPLY_SKIP", "assistant: REPLY_SKIP",
			"user: Agent-to-agent announce step.", "assistant: ANNOUNCE_SKIP",
		}
		if got := texts(tgt); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("target transcript:\n got %q\nwant %q", got, want)
		}
		if p := tgt[0]["provenance"].(map[string]any); p["sourceSessionKey"] != "agent:main:req1" || p["sourceTool"] != "sessions_send" {
			t.Errorf("provenance = %v", p)
		}
	})

	t.Run("turn limit then announce delivered", func(t *testing.T) {
		// ops echoes every turn, so only maxPingPongTurns=2 stops the loop;
		// its announce is delivered into its session.
		res := toolResult(t, c, "agent:main:req2", "s2", "sessions_send", map[string]any{
			"sessionKey": "agent:ops:desk", "message": "/reply ping", "timeoutSeconds": 20,
		})
		if res["status"] != "ok" || res["reply"] != "ping" {
			t.Fatalf("sessions_send = %v", res)
		}
		eventually(t, "the announce delivery", func() bool {
			for _, m := range history(t, c, "agent:ops:desk") {
				if p, _ := m["provenance"].(map[string]any); m["role"] == "assistant" && p["sourceTool"] == "sessions_send" {
					return true
				}
			}
			return false
		})
		desk := texts(history(t, c, "agent:ops:desk"))
		want := []string{
			"user: /reply ping", "assistant: ping",
			"user: echo: ping", "assistant: echo: echo: ping", // turn 2 (turn 1 ran on the requester)
			"user: Agent-to-agent announce step.", "assistant: echo: Agent-to-agent announce step.",
			"assistant: echo: Agent-to-agent announce step.", // the delivered announce
		}
		if strings.Join(desk, "|") != strings.Join(want, "|") {
			t.Errorf("ops transcript:\n got %q\nwant %q", desk, want)
		}
	})

	t.Run("fire and forget", func(t *testing.T) {
		res := toolResult(t, c, "agent:main:req3", "s3", "sessions_send", map[string]any{
			"sessionKey": "agent:main:tgt", "message": "/reply /reply REPLY_SKIP", "timeoutSeconds": 0,
		})
		if res["status"] != "accepted" || res["runId"] == "" {
			t.Fatalf("sessions_send = %v", res)
		}
		if d, _ := res["delivery"].(map[string]any); d["status"] != "pending" || d["mode"] != "announce" {
			t.Errorf("delivery = %v", res["delivery"])
		}
		if w := call(t, c, "agent.wait", map[string]any{"runId": res["runId"], "timeoutMs": 20000}); w["status"] != "ok" {
			t.Errorf("agent.wait on the sent run = %v", w)
		}
	})

	t.Run("short wait times out, the late reply is fetched by runId", func(t *testing.T) {
		res := toolResult(t, c, "agent:main:req4", "s4", "sessions_send", map[string]any{
			"sessionKey": "agent:main:slow", "message": "/sleep 2500ms\n/reply late but here", "timeoutSeconds": 1,
		})
		if res["status"] != "timeout" || !strings.Contains(fmt.Sprint(res["error"]), "agent.wait") {
			t.Fatalf("sessions_send = %v", res)
		}
		if d, _ := res["delivery"].(map[string]any); d["status"] != "delivered" {
			t.Errorf("delivery = %v", res["delivery"])
		}
		w := call(t, c, "agent.wait", map[string]any{"runId": res["runId"], "timeoutMs": 20000})
		if w["status"] != "ok" {
			t.Fatalf("agent.wait = %v", w)
		}
		if got := texts(history(t, c, "agent:main:slow")); len(got) < 2 || got[1] != "assistant: late but here" {
			t.Errorf("slow transcript = %q", got)
		}
	})

	t.Run("send blocked by /send off and by a deny rule", func(t *testing.T) {
		call(t, c, "chat.send", map[string]any{"sessionKey": "agent:main:tgt", "message": "/send off", "idempotencyKey": "off-1"})
		res := toolResult(t, c, "agent:main:req5", "s5", "sessions_send", map[string]any{
			"sessionKey": "agent:main:tgt", "message": "hello?", "timeoutSeconds": 5,
		})
		if res["status"] != "error" || res["error"] != "send blocked by session policy" {
			t.Errorf("sessions_send to a /send off session = %v", res)
		}
		call(t, c, "chat.send", map[string]any{"sessionKey": "agent:main:tgt", "message": "/send inherit", "idempotencyKey": "off-2"})
	})
}

func TestSessionsSendPolicyAndVisibility(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := startWith(t, "", llm, `{ id: "main", default: true }, { id: "ops" }`,
		`session: { sendPolicy: { rules: [{ action: "deny", match: { keyPrefix: "locked" } }] } },`)
	c := g.dial(t)
	call(t, c, "sessions.create", map[string]any{"key": "agent:main:other"})
	call(t, c, "sessions.create", map[string]any{"key": "agent:ops:desk"})

	// Default visibility is tree: a sibling session is out of reach.
	res := toolResult(t, c, "agent:main:req", "v1", "sessions_send", map[string]any{"sessionKey": "agent:main:other", "message": "hi"})
	if res["status"] != "forbidden" || res["error"] != "Session send visibility is restricted to the current session tree (tools.sessions.visibility=tree)." {
		t.Errorf("tree visibility = %v", res)
	}
	// Cross-agent is refused under tree visibility too.
	res = toolResult(t, c, "agent:main:req", "v2", "sessions_send", map[string]any{"sessionKey": "agent:ops:desk", "message": "hi"})
	if res["status"] != "forbidden" || res["error"] != "Session send visibility is restricted. Set tools.sessions.visibility=all to allow cross-agent access." {
		t.Errorf("cross-agent = %v", res)
	}
	// A child in the requester's tree is visible; the config rule denies
	// keys starting "locked".
	call(t, c, "sessions.create", map[string]any{"key": "agent:main:locked-room"})
	call(t, c, "sessions.patch", map[string]any{"key": "agent:main:locked-room", "spawnedBy": "agent:main:req"})
	res = toolResult(t, c, "agent:main:req", "v3", "sessions_send", map[string]any{"sessionKey": "agent:main:locked-room", "message": "hi", "timeoutSeconds": 0})
	if res["status"] != "error" || res["error"] != "send blocked by session policy" {
		t.Errorf("deny rule = %v", res)
	}
	// sessions_history follows the same visibility.
	res = toolResult(t, c, "agent:main:req", "v4", "sessions_history", map[string]any{"sessionKey": "agent:main:other"})
	if res["status"] != "forbidden" {
		t.Errorf("history of a sibling = %v", res)
	}
}

func TestSessionsSendCrossAgent(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	for _, tc := range []struct {
		name, tools, status, errText string
	}{
		{"a2a off", `tools: { sessions: { visibility: "all" } },`, "forbidden",
			"Agent-to-agent messaging is disabled. Set tools.agentToAgent.enabled=true to allow cross-agent sends."},
		{"a2a denied", `tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true, allow: ["main"] } },`, "forbidden",
			"Agent-to-agent messaging denied by tools.agentToAgent.allow."},
		{"a2a on", `tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true, allow: ["main", "ops*"] } }, session: { agentToAgent: { maxPingPongTurns: 0 } },`, "ok", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startWith(t, "", llm, `{ id: "main", default: true }, { id: "ops" }`, tc.tools)
			c := g.dial(t)
			call(t, c, "sessions.create", map[string]any{"key": "agent:ops:desk"})
			res := toolResult(t, c, "agent:main:req", "x1", "sessions_send", map[string]any{
				"sessionKey": "agent:ops:desk", "message": "/reply from ops", "timeoutSeconds": 20,
			})
			if res["status"] != tc.status || (tc.errText != "" && res["error"] != tc.errText) {
				t.Fatalf("sessions_send = %v", res)
			}
			if tc.status == "ok" && res["reply"] != "from ops" {
				t.Errorf("reply = %v", res["reply"])
			}
		})
	}
}

// TestSendSurvivesKill: a fire-and-forget send whose target run is cut by
// kill -9 is reported to the sender after restart; agent.wait on its runId
// gives the final status, and the sent text stays in the target's history.
func TestSendSurvivesKill(t *testing.T) {
	dir := t.TempDir()
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := startWith(t, dir, llm, "", `tools: { sessions: { visibility: "agent" } },`)
	c := g.dial(t)
	call(t, c, "sessions.create", map[string]any{"key": "agent:main:worker"})
	res := toolResult(t, c, "agent:main:boss", "k1", "sessions_send", map[string]any{
		"sessionKey": "agent:main:worker", "message": "/stall", "timeoutSeconds": 0,
	})
	runID := res["runId"]
	if res["status"] != "accepted" {
		t.Fatalf("sessions_send = %v", res)
	}
	eventually(t, "the worker to start", func() bool {
		return len(history(t, c, "agent:main:worker")) >= 1
	})
	g.kill()

	g2 := startWith(t, dir, llm, "", `tools: { sessions: { visibility: "agent" } },`)
	c2 := g2.dial(t)
	w := call(t, c2, "agent.wait", map[string]any{"runId": runID, "timeoutMs": 5000})
	if w["status"] != "error" || w["error"] != "run interrupted by gateway restart" {
		t.Errorf("agent.wait after restart = %v", w)
	}
	if got := texts(history(t, c2, "agent:main:worker")); len(got) == 0 || got[0] != "user: /stall" {
		t.Errorf("worker history = %q", got)
	}
	eventually(t, "the interruption notice", func() bool {
		for _, s := range texts(history(t, c2, "agent:main:boss")) {
			if strings.Contains(s, "was interrupted: run interrupted by gateway restart") {
				return true
			}
		}
		return false
	})
}
