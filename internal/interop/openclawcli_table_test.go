package interop

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// cliCase is one gateway-backed command of the reference CLI's help, run
// against Switchboard: it must exit 0, never print "unknown method", and
// (with --json) print the fields the CLI itself reads from the answer.
type cliCase struct {
	args []string
	// fields are the members the JSON output must have (a path of keys
	// separated by dots); an empty list only checks it is JSON.
	fields []string
	// text, for a command without --json, is what its output must
	// contain.
	text string
}

// openclawGatewayCommands are the commands of `openclaw --help` (and of
// its command groups' help) that talk to the gateway: found by running
// each against a gateway that is not there and keeping those that fail
// to reach it. Commands that change things (agent, cron add, sessions
// archive, system event) are driven by TestOpenClawCLIGatewayCommands'
// own steps.
var openclawGatewayCommands = []cliCase{
	{args: []string{"health", "--json"}, fields: []string{"ok", "defaultAgentId", "agents"}},
	{args: []string{"status", "--json"}, fields: []string{"heartbeat", "tasks", "sessions"}},
	{args: []string{"gateway", "health", "--json"}, fields: []string{"ok"}},
	{args: []string{"gateway", "stability", "--json"}, fields: []string{"capacity", "count", "events", "summary.byType"}},
	{args: []string{"gateway", "stability"}, text: "Stability"},
	{args: []string{"gateway", "usage-cost", "--json"}, fields: []string{"daily", "totals"}},
	{args: []string{"gateway", "call", "config.schema", "--json"}, fields: []string{"schema.properties.gateway", "version", "generatedAt"}},
	{args: []string{"system", "presence", "--json"}},
	{args: []string{"nodes", "list", "--json"}, fields: []string{"pending", "paired"}},
	{args: []string{"nodes", "list"}, text: "Pending: 0"},
	{args: []string{"nodes", "pending", "--json"}},
	{args: []string{"nodes", "pending"}, text: "No pending"},
	{args: []string{"nodes", "status", "--json"}, fields: []string{"nodes"}},
	{args: []string{"devices", "list", "--json"}, fields: []string{"pending", "paired"}},
	{args: []string{"devices", "list"}, text: "No device pairing entries."},
	{args: []string{"approvals", "pending", "--json"}},
	{args: []string{"approvals", "pending"}, text: "No pending"},
	{args: []string{"hooks", "list", "--json"}, fields: []string{"workspaceDir", "hooks"}},
	{args: []string{"hooks", "list"}, text: "No hooks found."},
	{args: []string{"hooks", "check", "--json"}},
	{args: []string{"skills", "list", "--json"}, fields: []string{"workspaceDir", "skills"}},
	{args: []string{"skills", "list"}, text: "No skills found."},
	{args: []string{"skills", "check", "--json"}, fields: []string{"summary.total"}},
	{args: []string{"skills", "library", "list", "--json"}, fields: []string{"entries", "defaultTarget", "defaultSelectionLimit"}},
	{args: []string{"skills", "curator", "status", "--json"}, fields: []string{"counts.active", "skills", "overlaps"}},
	{args: []string{"models", "list", "--json"}, fields: []string{"models"}},
	{args: []string{"cron", "list", "--json"}, fields: []string{"jobs", "total"}},
	{args: []string{"cron", "status", "--json"}},
	{args: []string{"channels", "status", "--json"}, fields: []string{"channels"}},
	{args: []string{"logs", "--json", "--limit", "2"}},
}

// TestOpenClawCLIGatewayCommands runs every gateway-backed command of the
// reference's CLI against one Switchboard gateway (the read-only ones in
// parallel), then the ones that change something in order: system
// event (wake) and system heartbeat last, sessions archive.
func TestOpenClawCLIGatewayCommands(t *testing.T) {
	url := startSwitchboardLogging(t, nil) // with its log file, for `openclaw logs`
	cli := NewOpenClawCLI(t, url, testToken)
	run := func(t *testing.T, args ...string) CLIResult {
		t.Helper()
		r := cli.Run(t, args...)
		if r.ExitCode != 0 {
			t.Fatalf("openclaw %q: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.ExitCode, r.Stdout, r.Stderr)
		}
		if out := r.Stdout + r.Stderr; strings.Contains(out, "unknown method") {
			t.Fatalf("openclaw %q: an unknown method\nstdout:\n%s\nstderr:\n%s", args, r.Stdout, r.Stderr)
		}
		return r
	}
	t.Run("read", func(t *testing.T) {
		for _, c := range openclawGatewayCommands {
			t.Run(strings.Join(c.args, " "), func(t *testing.T) {
				t.Parallel()
				r := run(t, c.args...)
				if c.text != "" && !strings.Contains(r.Stdout, c.text) {
					t.Errorf("output lacks %q:\n%s", c.text, r.Stdout)
				}
				if !slices.Contains(c.args, "--json") {
					return
				}
				if c.args[0] == "logs" { // JSON lines
					first, _, _ := strings.Cut(r.Stdout, "\n")
					if !json.Valid([]byte(first)) {
						t.Errorf("first line is not JSON: %q", first)
					}
					return
				}
				var v any
				if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
					t.Fatalf("stdout is not JSON: %v\n%s", err, r.Stdout)
				}
				for _, f := range c.fields {
					if _, ok := lookupPath(v, f); !ok {
						t.Errorf("no %q in:\n%s", f, r.Stdout)
					}
				}
			})
		}
	})

	// A system event is a turn of the main session now; its end is the
	// heartbeat event `system heartbeat last` prints.
	t.Run("system event then heartbeat last", func(t *testing.T) {
		if ev := run(t, "system", "event", "--text", "deploy finished", "--json").JSON(t); ev["ok"] != true {
			t.Fatalf("system event: %v", ev)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			r := run(t, "system", "heartbeat", "last", "--json")
			if out := strings.TrimSpace(r.Stdout); out != "null" {
				hb := r.JSON(t)
				if hb["status"] != "sent" || hb["sessionKey"] != "agent:main:main" || !strings.Contains(hb["preview"].(string), "deploy finished") {
					t.Errorf("heartbeat: %v", hb)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("system heartbeat last still null after a system event")
			}
			time.Sleep(200 * time.Millisecond)
		}
		h := run(t, "gateway", "call", "chat.history", "--params", `{"sessionKey":"main"}`, "--json").JSON(t)
		if msgs, _ := h["messages"].([]any); len(msgs) < 2 {
			t.Errorf("the main session has no turn for the event: %v", h)
		}
	})

	// sessions archive, with the scopes the CLI asks for.
	t.Run("sessions archive", func(t *testing.T) {
		const key = "agent:main:archive-me"
		run(t, "agent", "--session-key", key, "--message", "to be archived", "--json")
		res := run(t, "sessions", "archive", key, "--json").JSON(t)
		results, _ := res["results"].([]any)
		if res["ok"] != true || len(results) != 1 || results[0].(map[string]any)["status"] != "archived" {
			t.Fatalf("sessions archive: %v", res)
		}
		again := run(t, "sessions", "archive", key, "--json").JSON(t)
		if rs, _ := again["results"].([]any); len(rs) != 1 || rs[0].(map[string]any)["status"] != "already_archived" {
			t.Errorf("sessions archive again: %v", again)
		}
		list := run(t, "gateway", "call", "sessions.list", "--json").JSON(t)
		for _, s := range list["sessions"].([]any) {
			if s.(map[string]any)["key"] == key {
				t.Errorf("sessions.list still lists the archived session: %v", s)
			}
		}
	})
}

// lookupPath finds the dotted path in v (objects only).
func lookupPath(v any, path string) (any, bool) {
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}
