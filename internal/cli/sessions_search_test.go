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
	g.mustRun("sessions", "send", "agent:main:other", "another heron", "--wait")

	out := g.mustRun("sessions", "search", "HERON", "--key", "main")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "agent:main:main  assistant") || !strings.Contains(lines[0], "[before reset, ") ||
		!strings.Contains(lines[1], "user") || !strings.HasSuffix(lines[1], "the blue heron") {
		t.Errorf("search heron --key main =\n%s", out)
	}
	if out := g.mustRun("sessions", "search", "heron"); strings.Count(out, "\n") != 4 || !strings.Contains(out, "agent:main:other") {
		t.Errorf("search heron in all sessions =\n%s", out)
	}
	if out := g.mustRun("sessions", "search", "fox", "--limit", "1"); strings.Count(out, "\n") != 1 || strings.Contains(out, "before reset") {
		t.Errorf("search fox =\n%s", out)
	}
	if out := g.mustRun("sessions", "search", "zebra"); out != "no message contains \"zebra\"\n" {
		t.Errorf("search zebra = %q", out)
	}
	m := decodeJSON(t, g.mustRun("sessions", "search", "heron", "--key", "main", "--json"))
	if rs, _ := m["results"].([]any); len(rs) != 2 {
		t.Errorf("--json = %v", m)
	}
}
