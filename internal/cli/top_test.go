package cli

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

func TestTopTreesAndLanes(t *testing.T) {
	res := &wire.RunsActiveResult{
		Runs: []wire.ActiveRun{
			{RunID: "r1", SessionKey: "agent:main:main", Lane: "main", Status: "running"},
			{RunID: "r2", SessionKey: "agent:main:main", Lane: "main", Status: "queued"},
			{RunID: "r3", SessionKey: "agent:main:subagent:a", Lane: "subagent", Status: "running"},
			{RunID: "r4", SessionKey: "agent:main:subagent:b", Lane: "subagent", Status: "queued"},
			{RunID: "r5", SessionKey: "agent:ops:main", Lane: "main", Status: "queued"},
		},
		Sessions: []wire.ActivitySession{
			{Key: "agent:main:main", InputTokens: 10, OutputTokens: 5, TotalTokens: 15, Cost: 0.5, UpdatedAt: 3},
			{Key: "agent:main:subagent:a", SpawnedBy: "agent:main:main", InputTokens: 1, OutputTokens: 2, TotalTokens: 3, Cost: 0.25, UpdatedAt: 9},
			// b was spawned by a: a grandchild of main.
			{Key: "agent:main:subagent:b", SpawnedBy: "agent:main:subagent:a", TotalTokens: 7, Cost: 0.125},
			// A parent not listed: the session is its own tree's root.
			{Key: "agent:x:subagent:orphan", SpawnedBy: "agent:x:main", TotalTokens: 1, UpdatedAt: 20},
			// A cycle in stored data ends where it closes.
			{Key: "c1", SpawnedBy: "c2", UpdatedAt: 1},
			{Key: "c2", SpawnedBy: "c1"},
		},
	}
	lanes := topLanes(res.Runs)
	if diff := cmp.Diff([]laneStat{{"main", 1, 2}, {"subagent", 1, 1}}, lanes, cmp.AllowUnexported(laneStat{})); diff != "" {
		t.Errorf("lanes (-want +got):\n%s", diff)
	}
	trees := topTrees(res)
	if len(trees) != 5 {
		t.Fatalf("trees = %+v", trees)
	}
	main := trees[0]
	want := sessionTree{root: "agent:main:main", sessions: 3, running: 2, queued: 2, input: 11, output: 7, tokens: 25, cost: 0.875, updated: 9}
	if main != want {
		t.Errorf("main tree = %+v, want %+v", main, want)
	}
	if trees[1].root != "agent:ops:main" || trees[1].queued != 1 || trees[1].sessions != 0 {
		t.Errorf("second tree (active, no session row) = %+v", trees[1])
	}
	if trees[2].root != "agent:x:subagent:orphan" {
		t.Errorf("third tree = %+v", trees[2])
	}
	if trees[3].sessions+trees[4].sessions != 2 {
		t.Errorf("cycle trees = %+v %+v", trees[3], trees[4])
	}
}

func TestShortAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "0s", 0: "0s", 42 * time.Second: "42s", 185 * time.Second: "3m05s", 2*time.Hour + 10*time.Minute: "2h10m",
	} {
		if got := shortAge(d); got != want {
			t.Errorf("shortAge(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestRenderTopIdle(t *testing.T) {
	var b strings.Builder
	renderTop(&b, &wire.RunsActiveResult{TS: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli()}, "ws://x")
	out := b.String()
	for _, want := range []string{"switchboard top  ws://x  2026-01-02 03:04:05 UTC\n", "runs: 0 running, 0 queued\n", "LANES", "(idle)", "RUNS", "SESSION TREES"} {
		if !strings.Contains(out, want) {
			t.Errorf("idle frame lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("a rendered frame carries screen control")
	}
}

// TestTopOnce runs `switchboard top --once` against a gateway with a
// stalled run, a message queued behind it and a stalled sub-agent.
func TestTopOnce(t *testing.T) {
	g := startGateway(t, "")
	g.mustRun("sessions", "send", "main", "/queue followup")
	g.mustRun("sessions", "send", "main", "/reply partial\n/stall")
	g.mustRun("sessions", "send", "main", "waiting behind")
	spawn, _ := json.Marshal(map[string]any{"tool": "sessions_spawn", "sessionKey": "agent:main:main", "args": map[string]any{"task": "hold on\n/stall"}})
	g.mustRun("call", "tools.invoke", string(spawn))

	var out string
	deadline := time.Now().Add(15 * time.Second)
	for {
		out = g.mustRun("top", "--once")
		if strings.Contains(out, "runs: 2 running, 1 queued\n") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("--once output carries screen control:\n%q", out)
	}
	lines := strings.Split(out, "\n")
	has := func(fields ...string) bool {
		for _, l := range lines {
			if slicesEqualPrefix(strings.Fields(l), fields) {
				return true
			}
		}
		return false
	}
	for _, want := range [][]string{
		{"runs:", "2", "running,", "1", "queued"},
		{"main", "1", "1"},     // lane main: the stalled run and the queued one
		{"subagent", "1", "0"}, // the sub-agent's lane
		{"running"}, {"queued"},
		{"agent:main:main", "2", "2", "1"}, // one tree: main and its child
	} {
		if !has(want...) {
			t.Errorf("top --once lacks a line starting %q:\n%s", want, out)
		}
	}
	m := decodeJSON(t, g.mustRun("top", "--once", "--json"))
	if runs, _ := m["runs"].([]any); len(runs) != 3 {
		t.Errorf("--json runs = %v", m["runs"])
	}
	if r := g.run("top", "--json"); r.err == nil || !strings.Contains(r.errText(), "--json needs --once") {
		t.Errorf("top --json = %v", r.err)
	}
	if r := g.run("top", "--once", "--limit", "0"); r.err == nil || !strings.Contains(r.errText(), "out of range") {
		t.Errorf("top --limit 0 = %v", r.err)
	}
	g.mustRun("call", "sessions.abort", `{"key":"main","clearQueued":true}`)
}

func slicesEqualPrefix(got, prefix []string) bool {
	if len(got) < len(prefix) {
		return false
	}
	for i := range prefix {
		if got[i] != prefix[i] {
			return false
		}
	}
	return true
}

// TestTopLive: without --once, top redraws (clear screen, frame) at each
// interval until interrupted, and an interrupt is a clean exit.
func TestTopLive(t *testing.T) {
	g := startGateway(t, "")
	var out strings.Builder
	ctx, cancel := context.WithTimeout(t.Context(), 700*time.Millisecond)
	defer cancel()
	err := Run(ctx, []string{"--url", g.url, "top", "--interval", "200ms"},
		Options{Env: g.env(), Stdout: &out, Stderr: io.Discard, Stdin: strings.NewReader("")})
	if err != nil {
		t.Fatalf("top: %v", err)
	}
	frames := strings.Count(out.String(), ansiClear)
	if frames < 2 || strings.Count(out.String(), "switchboard top  ") != frames {
		t.Errorf("%d frames in:\n%q", frames, out.String())
	}
	if r := g.run("top", "--interval", "1ms"); r.err == nil || !strings.Contains(r.errText(), "too short") {
		t.Errorf("top --interval 1ms = %v", r.err)
	}
}

// TestRenderTopLongKeys: a session key longer than its column's default
// width (a cron job's, a channel peer's) widens the column, so the rows
// stay aligned with their headers.
func TestRenderTopLongKeys(t *testing.T) {
	long := "agent:main:cron:4f9c2a8e-1b7d-4c3e-9a5f-0e6d8b2c1a7f:run:1764370000"
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli()
	var b strings.Builder
	renderTop(&b, &wire.RunsActiveResult{
		TS: now,
		Runs: []wire.ActiveRun{
			{RunID: "r1", SessionKey: long, Lane: "cron-scheduled-lane-1", Status: "running", CreatedAt: now},
			{RunID: "r2", SessionKey: "agent:main:main", Lane: "main", Status: "queued", CreatedAt: now},
		},
		Sessions: []wire.ActivitySession{{Key: long, TotalTokens: 5}, {Key: "agent:main:main", TotalTokens: 7, UpdatedAt: 1}},
	}, "ws://x")
	out := b.String()
	line := func(prefix string) string {
		for l := range strings.Lines(out) {
			if strings.HasPrefix(strings.TrimSpace(l), prefix) {
				return l
			}
		}
		t.Fatalf("no line starting %q:\n%s", prefix, out)
		return ""
	}
	// Left-aligned columns start where their header does; right-aligned
	// ones end where it ends.
	for _, c := range []struct{ header, name, row, value string }{
		{"STATUS", "RUN", "running", " r1"},
		{"STATUS", "RUN", "queued", " r2"},
		{"STATUS", "SESSION", "queued", " agent:main:main"},
	} {
		if got, want := strings.Index(line(c.row), c.value)+1, strings.Index(line(c.header), c.name); got != want {
			t.Errorf("%s column: %q at %d, header at %d:\n%s", c.name, c.value, got, want, out)
		}
	}
	for _, c := range []struct{ header, name, row, value string }{
		{"LANE ", "QUEUED", "cron-scheduled-lane-1", " 0\n"},
		{"ROOT", "TOKENS", long, " 5 "},
		{"ROOT", "TOKENS", "agent:main:main", " 7 "},
	} {
		got := strings.Index(line(c.row), c.value) + len(strings.TrimRight(c.value, " \n"))
		if want := strings.Index(line(c.header), c.name) + len(c.name); got != want {
			t.Errorf("%s column: %q ends at %d, header at %d:\n%s", c.name, c.value, got, want, out)
		}
	}
}
