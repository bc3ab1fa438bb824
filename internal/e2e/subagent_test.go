package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/fakellm"
)

var announceKeyRE = regexp.MustCompile(`session_key: (agent:main:subagent:\S+)`)

// announcesBySource counts the completion announces a session received,
// by the child session they are about.
func announcesBySource(t *testing.T, c *client.Client, key string) (map[string]int, map[string]string) {
	t.Helper()
	counts := map[string]int{}
	status := map[string]string{}
	statusRE := regexp.MustCompile(`(?m)^status: (.*)$`)
	for _, m := range history(t, c, key) {
		p, _ := m["provenance"].(map[string]any)
		if m["role"] != "user" || p["sourceTool"] != "subagent_announce" {
			continue
		}
		// One requester turn may carry several announces.
		for _, text := range strings.Split(texts([]map[string]any{m})[0], "\n\n---\n\n") {
			if k := announceKeyRE.FindStringSubmatch(text); k != nil {
				counts[k[1]]++
				if s := statusRE.FindStringSubmatch(text); s != nil {
					status[k[1]] = s[1]
				}
			}
		}
	}
	return counts, status
}

// TestSubagentsSurviveKill9 spawns 100 children against a slow model, kills
// the gateway with SIGKILL while they run, restarts it, and checks every
// child's outcome reaches the requester exactly once.
func TestSubagentsSurviveKill9(t *testing.T) {
	const children = 100
	dir := t.TempDir()
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := startWith(t, dir, llm, "", "")
	c := g.dial(t)
	call(t, c, "sessions.create", map[string]any{"key": "agent:main:boss"})

	childKeys := map[string]bool{}
	for i := range children {
		task := fmt.Sprintf("child %d\n/reply quick result %d", i, i)
		if i%2 == 1 { // half are still running when the gateway dies
			task = fmt.Sprintf("child %d\n/sleep 30s\n/reply slow result %d", i, i)
		}
		res := call(t, c, "tools.invoke", map[string]any{"tool": "sessions_spawn", "sessionKey": "agent:main:boss", "args": map[string]any{"task": task}})
		d, _ := res["details"].(map[string]any)
		if d["status"] != "accepted" {
			t.Fatalf("spawn %d = %v", i, d)
		}
		childKeys[d["childSessionKey"].(string)] = true
	}
	time.Sleep(500 * time.Millisecond)
	g.kill() // SIGKILL mid-flight

	g2 := startWith(t, dir, llm, "", "")
	c2 := g2.dial(t)
	var counts map[string]int
	var status map[string]string
	eventually(t, "every child's announce", func() bool {
		counts, status = announcesBySource(t, c2, "agent:main:boss")
		return len(counts) >= children
	})
	time.Sleep(500 * time.Millisecond) // a late duplicate would show now
	counts, status = announcesBySource(t, c2, "agent:main:boss")
	delivered, duplicated, lost := 0, 0, 0
	ok, interrupted := 0, 0
	for k := range childKeys {
		n := counts[k]
		switch {
		case n == 0:
			lost++
		default:
			delivered++
			duplicated += n - 1
		}
		switch status[k] {
		case "completed successfully":
			ok++
		case "failed: run interrupted by gateway restart":
			interrupted++
		}
	}
	summary := fmt.Sprintf("children %d: delivered %d, duplicated %d, lost %d (completed %d, interrupted by the kill %d)",
		children, delivered, duplicated, lost, ok, interrupted)
	t.Log(summary)
	fmt.Println("kill -9 test:", summary)
	if delivered != children || duplicated != 0 || lost != 0 {
		t.Errorf("%s", summary)
	}
	if ok+interrupted != children || interrupted == 0 {
		t.Errorf("outcomes: %s; statuses %v", summary, status)
	}
}
