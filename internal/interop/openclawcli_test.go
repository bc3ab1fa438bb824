package interop

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestOpenClawCLIOperatorCommands runs the reference's own CLI (npm
// openclaw) against Switchboard, as an operator moving over keeps doing:
// every command must exit 0 and print what the reference's gateway would
// make it print.
func TestOpenClawCLIOperatorCommands(t *testing.T) {
	url := startSwitchboardLogging(t, nil) // with its log file, for `openclaw logs`
	cli := NewOpenClawCLI(t, url, testToken)

	ok := func(args ...string) CLIResult {
		t.Helper()
		r := cli.Run(t, args...)
		if r.ExitCode != 0 {
			t.Fatalf("openclaw %q: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.ExitCode, r.Stdout, r.Stderr)
		}
		return r
	}

	// A turn through the gateway's agent method, waited on by the CLI.
	run := ok("agent", "--session-key", "agent:main:cli-interop", "--message", "hello from openclaw", "--json").JSON(t)
	if run["status"] != "ok" {
		t.Fatalf("agent: %v", run)
	}
	payloads, _ := run["result"].(map[string]any)["payloads"].([]any)
	if len(payloads) != 1 || payloads[0].(map[string]any)["text"] != "echo: hello from openclaw" {
		t.Fatalf("agent payloads: %v", run["result"])
	}

	if h := ok("health", "--json").JSON(t); h["ok"] != true || h["defaultAgentId"] != "main" {
		t.Errorf("health: %v", h)
	}
	if s := ok("status", "--json").JSON(t); s["heartbeat"] == nil || s["tasks"] == nil {
		t.Errorf("status: missing heartbeat/tasks: %v", s)
	}
	m := ok("models", "list", "--json").JSON(t)
	models, _ := m["models"].([]any)
	if len(models) == 0 || models[0].(map[string]any)["key"] != "scripted/echo-1" {
		t.Errorf("models list: %v", m)
	}
	if c := ok("gateway", "usage-cost", "--json").JSON(t); c["daily"] == nil {
		t.Errorf("gateway usage-cost: %v", c)
	}
	var presence []map[string]any
	if r := ok("system", "presence", "--json"); json.Unmarshal([]byte(r.Stdout), &presence) != nil || len(presence) == 0 || presence[0]["mode"] != "gateway" {
		t.Errorf("system presence: %s", r.Stdout)
	}
	if r := ok("system", "heartbeat", "last", "--json"); strings.TrimSpace(r.Stdout) != "null" {
		t.Errorf("system heartbeat last: %q", r.Stdout)
	}
	logs := ok("logs", "--json", "--limit", "5")
	first, rest, _ := strings.Cut(logs.Stdout, "\n")
	var meta map[string]any
	if json.Unmarshal([]byte(first), &meta) != nil || meta["type"] != "meta" {
		t.Errorf("logs: first line %q", first)
	}
	if !strings.Contains(rest, `"type":"log"`) {
		t.Errorf("logs: no log lines after the meta line:\n%s", logs.Stdout)
	}
	probe := ok("gateway", "probe", "--url", url, "--token", testToken, "--json").JSON(t)
	if probe["ok"] != true || probe["primaryTargetId"] != "explicit" {
		t.Errorf("gateway probe: ok=%v primary=%v", probe["ok"], probe["primaryTargetId"])
	}
	// What Switchboard does not serve degrades with the reference's error shape.
	unknown := cli.Run(t, "gateway", "call", "no.such.method", "--json").JSON(t)
	e, _ := unknown["error"].(map[string]any)
	if unknown["ok"] != false || e["code"] != "INVALID_REQUEST" || e["message"] != "unknown method: no.such.method" {
		t.Errorf("gateway call no.such.method: %v", unknown)
	}
}

// TestOpenClawCLICron drives Switchboard's cron jobs with the reference's
// own `openclaw cron` commands, unchanged: add, list, get, show, edit,
// disable and enable, run (and its history: how the run ended), rm.
func TestOpenClawCLICron(t *testing.T) {
	url := startSwitchboard(t)
	cli := NewOpenClawCLI(t, url, testToken)
	ok := func(args ...string) CLIResult {
		t.Helper()
		r := cli.Run(t, args...)
		if r.ExitCode != 0 {
			t.Fatalf("openclaw %q: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.ExitCode, r.Stdout, r.Stderr)
		}
		return r
	}
	job := ok("cron", "add", "--name", "nightly", "--every", "1h", "--message", "summarize the day", "--agent", "main", "--json").JSON(t)
	id, _ := job["id"].(string)
	if id == "" || job["name"] != "nightly" || job["enabled"] != true {
		t.Fatalf("cron add: %v", job)
	}
	list := ok("cron", "list", "--json").JSON(t)
	jobs, _ := list["jobs"].([]any)
	if len(jobs) != 1 || jobs[0].(map[string]any)["id"] != id || list["total"] != 1.0 {
		t.Fatalf("cron list: %v", list)
	}
	if table := ok("cron", "list").Stdout; !strings.Contains(table, id) || !strings.Contains(table, "every 1h") {
		t.Errorf("cron list table:\n%s", table)
	}
	if got := ok("cron", "get", id, "--json").JSON(t); got["id"] != id {
		t.Errorf("cron get: %v", got)
	}
	if show := ok("cron", "show", id).Stdout; !strings.Contains(show, "status: idle") {
		t.Errorf("cron show before a run:\n%s", show)
	}
	edited := ok("cron", "edit", id, "--message", "changed", "--json").JSON(t)
	if p, _ := edited["payload"].(map[string]any); p["message"] != "changed" {
		t.Errorf("cron edit: %v", edited)
	}
	if d := ok("cron", "disable", id, "--json").JSON(t); d["enabled"] != false {
		t.Errorf("cron disable: %v", d)
	}
	if e := ok("cron", "enable", id, "--json").JSON(t); e["enabled"] != true {
		t.Errorf("cron enable: %v", e)
	}
	ran := ok("cron", "run", id, "--json").JSON(t)
	runID, _ := ran["runId"].(string)
	if ran["ran"] != true || runID == "" {
		t.Fatalf("cron run: %v", ran)
	}
	// The history says how the run ended (the offline model answers at
	// once; the history is written when the run ends).
	deadline := time.Now().Add(20 * time.Second)
	var entry map[string]any
	for entry == nil || entry["status"] == "running" {
		runs := ok("cron", "runs", "--id", id, "--json").JSON(t)
		if es, _ := runs["entries"].([]any); len(es) == 1 {
			entry, _ = es[0].(map[string]any)
		}
		if time.Now().After(deadline) {
			t.Fatalf("cron runs never showed the finished run: %v", runs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if entry["runId"] != runID || entry["status"] != "ok" {
		t.Errorf("cron runs: %v", entry)
	}
	if show := ok("cron", "show", id).Stdout; !strings.Contains(show, "status: ok") {
		t.Errorf("cron show after the run:\n%s", show)
	}
	ok("cron", "rm", id)
	if list := ok("cron", "list", "--json").JSON(t); list["total"] != 0.0 {
		t.Errorf("cron list after rm: %v", list)
	}
	if r := cli.Run(t, "cron", "get", id); r.ExitCode == 0 {
		t.Errorf("cron get of a removed job exited 0:\n%s", r.Stdout)
	}
}
