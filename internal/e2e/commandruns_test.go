package e2e

import (
	"testing"

	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// TestCommandRunIDsEnd: every chat command the gateway answers itself
// acknowledges the send's run id, and agent.wait on that id reports it
// final, as the reference's does (measured with openclaw-peer.sh: /context,
// /new, /reset, /queue, /send, /elevated all end "ok"). The reply, when
// there is one, is in the history by then, filed under the run id. No
// command reaches the model.
func TestCommandRunIDsEnd(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := start(t, "", llm)
	c := g.dial(t)
	if w := runTurn(t, c, "main", "first", "/reply hello\nhi"); w["status"] != "ok" {
		t.Fatalf("first turn: %v", w)
	}
	n := llm.Count()
	for _, tc := range []struct {
		key, message string
		reply        bool // whether the command answers in the session
	}{
		{"main", "/context", true},
		{"main", "/context json", true},
		{"main", "/queue", true},
		{"main", "/queue collect", true},
		{"main", "/send on", true},
		{"main", "/elevated off", true},
		{"main", "/new", true},
		{"main", "/reset", true},
		{"main", "/compact", true},
		{"nowhere", "/context", false}, // no session: nowhere to reply
		{"nowhere", "/compact", false},
	} {
		id := "cmd-" + tc.key + "-" + tc.message
		res := call(t, c, "chat.send", map[string]any{"sessionKey": tc.key, "message": tc.message, "idempotencyKey": id})
		if res["runId"] != id {
			t.Errorf("%s in %s: chat.send = %v", tc.message, tc.key, res)
			continue
		}
		w := call(t, c, "agent.wait", map[string]any{"runId": id, "timeoutMs": 10000})
		if w["status"] != "ok" || w["endedAt"] == nil {
			t.Errorf("%s in %s: agent.wait = %v", tc.message, tc.key, w)
		}
		if !tc.reply {
			continue
		}
		found := false
		for _, m := range history(t, c, tc.key) {
			if meta, _ := m["__openclaw"].(map[string]any); m["role"] == "assistant" && meta["runId"] == id {
				found = true
			}
		}
		if !found {
			t.Errorf("%s in %s: no reply filed under run id %s", tc.message, tc.key, id)
		}
	}
	if llm.Count() != n {
		t.Errorf("the commands made %d model requests", llm.Count()-n)
	}
}
