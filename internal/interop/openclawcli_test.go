package interop

import (
	"encoding/json"
	"strings"
	"testing"
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
