package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// TestSpawnBurstIsNeverCut: a model that calls sessions_spawn 20 times in
// one message gets 20 children, although the first children finish and
// announce (steering into the requester's run, the default queue mode)
// while the later calls have not started: the calls of one assistant
// message run as one batch, and the announces join after it.
func TestSpawnBurstIsNeverCut(t *testing.T) {
	const children = 20
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := startWith(t, "", llm, "", "")
	c := g.dial(t)
	var msg strings.Builder
	for i := range children {
		b, _ := json.Marshal(map[string]any{"task": fmt.Sprintf("child %d\n/reply result %d", i, i)})
		fmt.Fprintf(&msg, "/tool sessions_spawn %s\n", b)
	}
	msg.WriteString("/then spawned\n")
	w := runTurn(t, c, "agent:main:burst", "burst-1", msg.String())
	if w["status"] != "ok" {
		t.Fatalf("burst run = %v", w)
	}
	accepted, skipped := 0, 0
	for _, m := range history(t, c, "agent:main:burst") {
		if m["role"] != "toolResult" || m["toolName"] != "sessions_spawn" {
			continue
		}
		b, _ := json.Marshal(m["content"])
		switch {
		case strings.Contains(string(b), "Skipped to process an incoming message."):
			skipped++
		case strings.Contains(string(b), `\"status\": \"accepted\"`):
			accepted++
		}
	}
	if accepted != children || skipped != 0 {
		t.Fatalf("spawns accepted %d, skipped %d; want %d and 0", accepted, skipped, children)
	}
	eventually(t, "every child's announce", func() bool {
		counts, _ := announcesBySource(t, c, "agent:main:burst")
		return len(counts) == children
	})
}
