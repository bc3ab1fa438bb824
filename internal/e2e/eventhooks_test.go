package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// TestEventHooksOnCompactAndNew: hooks.internal commands run on
// session:compact:before and :after around a /compact (the after one with
// the token counts), and on command:new; each gets the event as JSON.
func TestEventHooksOnCompactAndNew(t *testing.T) {
	dir := t.TempDir()
	events := filepath.Join(dir, "events.jsonl")
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := startModel(t, dir, llm, windowModel(100000), "", fmt.Sprintf(`hooks: { internal: { entries: {
    log: { events: ["session:compact", "command:new"], command: "cat >> %s; echo >> %s" },
    off: { enabled: false, events: ["command"], command: "exit 1" },
  } } },`, events, events))
	c := g.dial(t)
	for i := 1; i <= 6; i++ {
		if w := runTurn(t, c, "main", fmt.Sprintf("ev-%d", i), bigTurn(i, 24)); w["status"] != "ok" {
			t.Fatalf("turn %d: %v", i, w)
		}
	}
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "/compact", "idempotencyKey": "cmd-1"})
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "/new", "idempotencyKey": "cmd-2"})
	raw, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("hook input %q: %v", line, err)
		}
		got = append(got, ev)
	}
	var names []string
	for _, ev := range got {
		names = append(names, ev["event"].(string))
	}
	if strings.Join(names, ",") != "session:compact:before,session:compact:after,command:new" {
		t.Fatalf("events = %v", names)
	}
	if got[0]["sessionKey"] != "agent:main:main" || got[0]["type"] != "session" || got[0]["action"] != "compact:before" {
		t.Errorf("before = %v", got[0])
	}
	if b, _ := got[1]["tokensBefore"].(float64); b <= 0 || got[1]["tokensAfter"].(float64) >= b {
		t.Errorf("after = %v", got[1])
	}
}
