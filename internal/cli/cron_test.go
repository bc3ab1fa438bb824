package cli

import (
	"strings"
	"testing"
)

func TestCronCommands(t *testing.T) {
	g := startGateway(t, "")
	if r := g.run("cron", "add", "--name", "x", "--message", "hi"); !strings.Contains(r.errText(), "exactly one of") {
		t.Fatalf("add without schedule = %q", r.errText())
	}
	if r := g.run("cron", "add", "--name", "x", "--message", "hi", "--cron", "0 7 * * *", "--tz", "Nowhere/Town"); !strings.Contains(r.errText(), "schedule.tz") {
		t.Fatalf("add with bad tz = %q", r.errText())
	}
	out := g.mustRun("cron", "add", "--name", "daily", "--message", "digest", "--cron", "0 7 * * *", "--tz", "Europe/Berlin")
	if !strings.Contains(out, `"name": "daily"`) && !strings.Contains(out, `"name":"daily"`) {
		t.Fatalf("add = %q", out)
	}
	list := g.mustRun("cron", "list")
	if !strings.Contains(list, "daily") || !strings.Contains(list, "cron 0 7 * * * Europe/Berlin") {
		t.Fatalf("list = %q", list)
	}
	id := strings.Fields(strings.Split(list, "\n")[1])[0]
	g.mustRun("cron", "disable", id)
	if list := g.mustRun("cron", "list"); !strings.Contains(list, "No cron jobs.") {
		t.Fatalf("list without disabled = %q", list)
	}
	g.mustRun("cron", "rm", id)
	if r := g.run("cron", "get", id); !strings.Contains(r.errText(), "cron job not found: "+id) {
		t.Fatalf("get removed = %q", r.errText())
	}
}
