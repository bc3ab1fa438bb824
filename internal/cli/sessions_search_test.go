package cli

import (
	"strings"
	"testing"
)

func TestSessionsSearch(t *testing.T) {
	g := startGateway(t, "")
	g.mustRun("sessions", "send", "main", "the blue heron", "--wait")
	g.mustRun("sessions", "reset", "main")
	g.mustRun("sessions", "send", "main", "a red fox", "--wait")

	out := g.mustRun("sessions", "search", "main", "HERON")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "assistant") || !strings.Contains(lines[0], "[before reset, ") ||
		!strings.Contains(lines[1], "user") || !strings.HasSuffix(lines[1], "the blue heron") {
		t.Errorf("search heron =\n%s", out)
	}
	if out := g.mustRun("sessions", "search", "main", "fox", "--limit", "1"); strings.Count(out, "\n") != 1 || strings.Contains(out, "before reset") {
		t.Errorf("search fox =\n%s", out)
	}
	if out := g.mustRun("sessions", "search", "main", "zebra"); out != "no message in agent:main:main contains \"zebra\"\n" {
		t.Errorf("search zebra = %q", out)
	}
	m := decodeJSON(t, g.mustRun("sessions", "search", "main", "heron", "--json"))
	if ms, _ := m["matches"].([]any); len(ms) != 2 {
		t.Errorf("--json = %v", m)
	}
	if r := g.run("sessions", "search", "nobody", "x"); r.err == nil || !strings.Contains(r.errText(), "No session found: nobody") {
		t.Errorf("missing session: %v %q", r.err, r.errText())
	}
}
