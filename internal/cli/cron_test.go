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
	if !strings.HasPrefix(out, "ID ") || !strings.Contains(out, "cron 0 7 * * * Europe/Berlin") {
		t.Fatalf("add = %q, want a cron list table", out)
	}
	if out := g.mustRun("--json", "cron", "add", "--name", "daily2", "--message", "digest", "--every", "1h", "--disabled"); !strings.Contains(out, `"name": "daily2"`) || !strings.Contains(out, `"anchorMs"`) {
		t.Fatalf("add --json = %q, want an every schedule anchored at its creation", out)
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
	if out := g.mustRun("cron", "add", "--name", "daily3", "--message", "digest", "--every", "24h"); !strings.Contains(out, "every 24h ") {
		t.Fatalf("add --every 24h = %q, want the interval as written", out)
	}
}

func TestCronRunAndRunsPrintTables(t *testing.T) {
	g := startGateway(t, "")
	add := g.mustRun("cron", "add", "--name", "hourly", "--message", "hi", "--every", "1h")
	id := strings.Fields(strings.Split(add, "\n")[1])[0]
	if out := g.mustRun("cron", "runs", id); out != "No runs.\n" {
		t.Fatalf("runs before any run = %q", out)
	}
	run := g.mustRun("cron", "run", id)
	lines := strings.Split(strings.TrimSpace(run), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "RAN") || strings.Fields(lines[1])[0] != "true" {
		t.Fatalf("run = %q, want a table saying it ran", run)
	}
	runID := strings.Fields(lines[1])[1]
	runs := g.mustRun("cron", "runs", id)
	if !strings.HasPrefix(runs, "RUN ID") || !strings.Contains(runs, runID) {
		t.Fatalf("runs = %q, want a table with run %s", runs, runID)
	}
	if out := g.mustRun("--json", "cron", "runs", id); !strings.Contains(out, `"runId": "`+runID+`"`) {
		t.Fatalf("runs --json = %q", out)
	}
	if out := g.mustRun("--json", "cron", "run", id, "--force=false"); !strings.Contains(out, `"ran": false`) {
		t.Fatalf("run --json not due = %q", out)
	}
}

func TestUnknownSubcommandFails(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sessions", "lst"}, "Did you mean this?\n\tlist"},
		{[]string{"cron", "remove", "ID"}, "Did you mean this?\n\trm"},
		{[]string{"sessions", "frobnicate"}, `unknown command "frobnicate" for "switchboard sessions"`},
	} {
		r := runCLI(t, nil, tc.args...)
		if r.err == nil || !strings.Contains(r.errText(), tc.want) {
			t.Errorf("switchboard %s: err %q, want one containing %q", strings.Join(tc.args, " "), r.errText(), tc.want)
		}
	}
	if r := runCLI(t, nil, "cron"); r.err != nil || !strings.Contains(r.stdout, "Available Commands") {
		t.Errorf("switchboard cron: err %v, stdout %q; want its help", r.err, r.stdout)
	}
}
