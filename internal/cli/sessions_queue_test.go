package cli

import (
	"strings"
	"testing"
	"time"
)

func TestSessionsQueue(t *testing.T) {
	g := startGateway(t, "")
	// followup, not the default steer: a steered message that arrives
	// before the stalled run's first model call joins that run instead of
	// waiting, which made this test depend on timing.
	g.mustRun("sessions", "send", "main", "/queue followup")
	g.mustRun("sessions", "send", "main", "/reply partial\n/stall")
	g.mustRun("sessions", "send", "main", "waiting  for\nyou")
	// The stalled run holds the lane; the second message waits.
	var out string
	deadline := time.Now().Add(10 * time.Second)
	for {
		out = g.mustRun("sessions", "queue", "main")
		if strings.HasPrefix(out, "agent:main:main: 1 queued (1 pending inputs)\n") || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 || lines[0] != "agent:main:main: 1 queued (1 pending inputs)" || !strings.HasPrefix(strings.TrimSpace(lines[1]), "queued ") ||
		!strings.HasSuffix(lines[1], "waiting for you") {
		t.Errorf("sessions queue =\n%s", out)
	}
	m := decodeJSON(t, g.mustRun("sessions", "queue", "main", "--json"))
	if m["total"] != float64(1) {
		t.Errorf("--json = %v", m)
	}
	g.mustRun("call", "sessions.abort", `{"key":"main","clearQueued":true}`)
	out = g.mustRun("sessions", "queue", "main")
	if !strings.HasPrefix(out, "agent:main:main: 0 queued (1 pending inputs)\n  cancelled ") {
		t.Errorf("after sessions.abort =\n%s", out)
	}
}
