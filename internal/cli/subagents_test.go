package cli

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

func TestPrintSubagents(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	var b bytes.Buffer
	err := printSubagents(&b, []wire.SubagentInfo{
		{ChildRunID: "run-2", ChildSessionKey: "agent:main:subagent:b", RunStatus: "running",
			Task: "a task that is much longer than the column allows, so it is cut", CreatedAt: now.UnixMilli() - 90_000},
		{ChildRunID: "run-1", ChildSessionKey: "agent:main:subagent:a", RunStatus: "ok", AnnounceStatus: "delivered",
			Label: "count", Task: "count\nthe files", CreatedAt: now.UnixMilli() - 3*3600_000},
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	want := `RUN ID  CHILD                  STATUS   ANNOUNCE   TASK                                               AGE
run-2   agent:main:subagent:b  running  -          a task that is much longer than the column allow…  1m ago
run-1   agent:main:subagent:a  ok       delivered  [count] count the files                            3h ago
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	b.Reset()
	printSubagents(&b, nil, now)
	if b.String() != "No sub-agents.\n" {
		t.Errorf("empty = %q", b.String())
	}
}

func TestWaitOutcome(t *testing.T) {
	for _, tt := range []struct {
		name     string
		res      wire.AgentWaitResult
		wantLine string
		wantErr  string
	}{
		{"ok", wire.AgentWaitResult{RunID: "r", Status: "ok", StartedAt: 1000, EndedAt: 2500}, "run r: ok (1.5s)", ""},
		{"failed", wire.AgentWaitResult{RunID: "r", Status: "error", Error: "provider\nexploded", StartedAt: 1, EndedAt: 2},
			"run r: error (1ms): provider exploded", "run r failed: provider exploded"},
		{"run timed out", wire.AgentWaitResult{RunID: "r", Status: "timeout", Error: "run timed out", EndedAt: 9},
			"run r: timeout: run timed out", "run r failed: run timed out"},
		{"aborted", wire.AgentWaitResult{RunID: "r", Status: "error", Error: "aborted", EndedAt: 9}, "run r: aborted", "run r was aborted"},
		{"wait timed out", wire.AgentWaitResult{RunID: "r", Status: "timeout"}, "",
			"run r did not finish within 2s; it keeps running on the gateway"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			line, err := waitOutcome(&tt.res, 2*time.Second)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if line != tt.wantLine || gotErr != tt.wantErr {
				t.Errorf("waitOutcome = %q, %q; want %q, %q", line, gotErr, tt.wantLine, tt.wantErr)
			}
		})
	}
}

// spawnNoWait spawns a child with --no-wait --json and returns its child
// session key and run id.
func (g *gateway) spawnNoWait(task string, flags ...string) (childKey, runID string) {
	g.t.Helper()
	out := g.mustRun(append([]string{"sessions", "spawn", task, "--no-wait", "--json"}, flags...)...)
	var res struct {
		Details spawnDetails `json:"details"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Details.Status != "accepted" {
		g.t.Fatalf("spawn --no-wait --json = %s (%v)", out, err)
	}
	return res.Details.ChildSessionKey, res.Details.RunID
}

// rowOf returns the table row that contains s, "" if none.
func rowOf(table, s string) string {
	for line := range strings.Lines(table) {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}

func TestSubagentsCommands(t *testing.T) {
	g := startGateway(t, "")
	childKey, runID := g.spawnNoWait("stall for a while\n/reply partial\n/stall", "--label", "staller")

	out := g.mustRun("subagents", "list")
	row := rowOf(out, runID)
	if !strings.HasPrefix(out, "RUN ID ") || !strings.Contains(row, childKey) || !strings.Contains(row, "[staller] stall for a while") {
		t.Errorf("subagents list:\n%s", out)
	}
	if !regexp.MustCompile(`\s(queued|running)\s+-\s`).MatchString(row) {
		t.Errorf("row %q: want a live run without announce", row)
	}
	if out := g.mustRun("subagents", "list", "--requester", "main", "--active"); rowOf(out, runID) == "" {
		t.Errorf("subagents list --requester main --active:\n%s", out)
	}
	if out := g.mustRun("subagents", "list", "--requester", "agent:main:other"); out != "No sub-agents.\n" {
		t.Errorf("other requester:\n%s", out)
	}
	var list wire.SubagentsListResult
	if err := json.Unmarshal([]byte(g.mustRun("subagents", "list", "--json")), &list); err != nil ||
		len(list.Subagents) != 1 || list.Subagents[0].ChildRunID != runID || list.Subagents[0].RequesterKey != "agent:main:main" {
		t.Errorf("subagents list --json = %+v (%v)", list, err)
	}

	if out := g.mustRun("subagents", "kill", runID); out != runID+"\n" {
		t.Errorf("kill = %q", out)
	}
	r := g.run("subagents", "wait", runID)
	if r.errText() != "run "+runID+" was aborted" || !strings.HasPrefix(r.stdout, "run "+runID+": aborted") {
		t.Errorf("wait after kill = %q, %v", r.stdout, r.err)
	}
	if out := g.mustRun("subagents", "list", "--active"); out != "No sub-agents.\n" {
		t.Errorf("list --active after kill:\n%s", out)
	}
	if out := g.mustRun("subagents", "kill", runID); !strings.HasPrefix(out, "Nothing to kill") {
		t.Errorf("second kill = %q", out)
	}
	if r := g.run("subagents", "kill", "ghost"); r.errText() != "error: INVALID_REQUEST: no sub-agent run ghost" {
		t.Errorf("kill ghost = %v", r.err)
	}
	if r := g.run("subagents", "wait", "ghost", "--timeout", "300ms"); r.errText() != "run ghost did not finish within 300ms; it keeps running on the gateway" {
		t.Errorf("wait ghost = %v", r.err)
	}

	// wait on a run that succeeds, with --json.
	_, okRun := g.spawnNoWait("quick\n/reply done")
	r = g.run("subagents", "wait", okRun, "--json")
	if m := decodeJSON(t, r.stdout); r.err != nil || m["status"] != "ok" || m["runId"] != okRun {
		t.Errorf("wait --json = %s, %v", r.stdout, r.err)
	}
	if out := g.mustRun("subagents", "wait", okRun); !strings.HasPrefix(out, "run "+okRun+": ok (") {
		t.Errorf("wait = %q", out)
	}
}
