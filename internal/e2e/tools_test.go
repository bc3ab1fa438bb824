package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// toolText runs one chat.send on key making the model call tool with args
// and returns the text of the tool result the model got back.
func toolText(t *testing.T, c *client.Client, key, runID, tool string, args any) string {
	t.Helper()
	call(t, c, "chat.send", map[string]any{"sessionKey": key, "message": toolTurn(tool, args), "idempotencyKey": runID})
	if w := call(t, c, "agent.wait", map[string]any{"runId": runID, "timeoutMs": 30000}); w["status"] != "ok" {
		t.Fatalf("run %s = %v", runID, w)
	}
	msgs := history(t, c, key)
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i]; m["role"] == "toolResult" && m["toolName"] == tool {
			b, _ := json.Marshal(m["content"])
			var blocks []struct{ Type, Text string }
			if err := json.Unmarshal(b, &blocks); err != nil {
				t.Fatalf("tool result content %s: %v", b, err)
			}
			var s strings.Builder
			for _, bl := range blocks {
				s.WriteString(bl.Text)
			}
			return s.String()
		}
	}
	t.Fatalf("no %s result in %s", tool, key)
	return ""
}

// offeredTools returns the tool names of the model's last request.
func offeredTools(t *testing.T, llm *fakellm.Server) []string {
	t.Helper()
	reqs := llm.Requests()
	if len(reqs) == 0 || reqs[len(reqs)-1].Request == nil {
		t.Fatal("no model request")
	}
	var names []string
	for _, d := range reqs[len(reqs)-1].Request.Tools {
		names = append(names, d.Name)
	}
	slices.Sort(names)
	return names
}

// The model asks for exec through the real protocol; the command runs in
// the agent's workspace and the result text is the reference's.
func TestExecThroughGateway(t *testing.T) {
	dir := t.TempDir()
	g := startWith(t, dir, nil, "", `tools: { exec: { timeoutSeconds: 30 } },`)
	c := g.dial(t)
	ws, err := filepath.EvalSymlinks(filepath.Join(dir, "workspace"))
	if err != nil {
		ws = filepath.Join(dir, "workspace")
	}

	start := time.Now()
	got := toolText(t, c, "agent:main:main", "e1", "exec", map[string]any{"command": "echo hi; pwd"})
	t.Logf("chat.send to finished run with exec: %v", time.Since(start))
	if got != "hi\n"+ws+"\n" {
		t.Errorf("echo = %q", got)
	}
	if got := toolText(t, c, "agent:main:main", "e2", "exec", map[string]any{"command": "echo oops >&2; exit 3"}); got != "oops\n\n\n(Command exited with code 3)" {
		t.Errorf("exit 3 = %q", got)
	}

	start = time.Now()
	got = toolText(t, c, "agent:main:main", "e3", "exec", map[string]any{
		"command": "(sleep 2; echo late > late.txt) & sleep 6", "timeoutSeconds": 1,
	})
	if !strings.HasPrefix(got, "Command timed out after 1 seconds.") {
		t.Errorf("timeout = %q", got)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("timed-out run took %v", took)
	}
	time.Sleep(2500 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(ws, "late.txt")); !os.IsNotExist(err) {
		t.Errorf("a child outlived the timeout: %v", err)
	}

	// edit through the gateway, then read the file back with exec.
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\nbeta\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := toolText(t, c, "agent:main:main", "e4", "edit", map[string]any{"path": "a.txt", "oldText": "beta", "newText": "gamma"}); got != "Successfully replaced 1 block(s) in a.txt." {
		t.Errorf("edit = %q", got)
	}
	if got := toolText(t, c, "agent:main:main", "e5", "exec", map[string]any{"command": "cat a.txt"}); got != "alpha\ngamma\n" {
		t.Errorf("after edit = %q", got)
	}
	// apply_patch through the gateway.
	got = toolText(t, c, "agent:main:main", "e7", "apply_patch", map[string]any{"input": "*** Begin Patch\n*** Update File: a.txt\n@@\n-gamma\n+delta\n*** Add File: b.txt\n+new\n*** End Patch"})
	if got != "Success. Updated the following files:\nA b.txt\nM a.txt" {
		t.Errorf("apply_patch = %q", got)
	}
	if got := toolText(t, c, "agent:main:main", "e8", "exec", map[string]any{"command": "cat a.txt b.txt"}); got != "alpha\ndelta\nnew\n" {
		t.Errorf("after apply_patch = %q", got)
	}
	// A refused call reaches the model as an error result; nothing runs.
	got = toolText(t, c, "agent:main:main", "e6", "exec", map[string]any{"command": "touch pwned", "env": map[string]string{"LD_PRELOAD": "/x.so"}})
	if !strings.Contains(got, "Security Violation: Environment variable 'LD_PRELOAD' is forbidden during host execution.") {
		t.Errorf("refusal = %q", got)
	}
	if _, err := os.Stat(filepath.Join(ws, "pwned")); !os.IsNotExist(err) {
		t.Errorf("refused command ran: %v", err)
	}
}

// tools.profile, allow/deny and agents.list[].tools decide which tool
// schemas the model receives, and a removed tool cannot be called.
func TestToolProfilesThroughGateway(t *testing.T) {
	all := []string{"agents_list", "apply_patch", "edit", "exec", "ls", "process", "read", "sessions_history", "sessions_list", "sessions_send", "sessions_spawn", "web_fetch", "write"}
	// Outside a sandbox the memory tools join them.
	allMem := []string{"agents_list", "apply_patch", "edit", "exec", "ls", "memory_get", "memory_search", "process", "read", "sessions_history", "sessions_list", "sessions_send", "sessions_spawn", "web_fetch", "write"}
	tests := []struct {
		name, tools, agents string
		key                 string
		want                []string
	}{
		{"unset", ``, ``, "agent:main:main", allMem},
		{"full", `tools: { profile: "full" },`, ``, "agent:main:main", allMem},
		{"minimal", `tools: { profile: "minimal" },`, ``, "agent:main:main", nil},
		{"coding", `tools: { profile: "coding" },`, ``, "agent:main:main",
			[]string{"apply_patch", "edit", "exec", "ls", "memory_get", "memory_search", "process", "read", "sessions_history", "sessions_list", "sessions_send", "sessions_spawn", "web_fetch", "write"}},
		{"messaging", `tools: { profile: "messaging" },`, ``, "agent:main:main",
			[]string{"sessions_history", "sessions_list", "sessions_send", "sessions_spawn"}},
		{"deny group and glob", `tools: { deny: ["group:runtime", "sessions_*"] },`, ``, "agent:main:main",
			[]string{"agents_list", "apply_patch", "edit", "ls", "memory_get", "memory_search", "read", "web_fetch", "write"}},
		{"profile plus alsoAllow", `tools: { profile: "minimal", alsoAllow: ["group:fs"] },`, ``, "agent:main:main",
			[]string{"apply_patch", "edit", "ls", "read", "write"}},
		{"sandboxed agent: exec and the file tools in the sandbox's own workspace (workspaceAccess none), the sandbox tool policy's defaults", ``, `{ id: "main", default: true, sandbox: { mode: "all" } }`, "agent:main:main",
			[]string{"apply_patch", "edit", "exec", "ls", "process", "read", "sessions_history", "sessions_list", "sessions_send", "sessions_spawn", "write"}},
		{"sandbox tool policy alsoAllow", `tools: { sandbox: { tools: { alsoAllow: ["web_fetch", "agents_*"] } } },`, `{ id: "main", default: true, sandbox: { mode: "all" } }`, "agent:main:main", all},
		{"an agent's sandbox tool lists replace the global ones list by list", `tools: { sandbox: { tools: { alsoAllow: ["web_fetch"] } } },`,
			`{ id: "main", default: true, sandbox: { mode: "all" }, tools: { sandbox: { tools: { allow: ["group:fs"], deny: ["write"] } } } }`, "agent:main:main",
			[]string{"apply_patch", "edit", "ls", "read", "web_fetch"}},
		{"non-main sandbox keeps exec in main", ``, `{ id: "main", default: true, sandbox: { mode: "non-main" } }`, "agent:main:main", allMem},
		{"non-main sandbox confines elsewhere", ``, `{ id: "main", default: true, sandbox: { mode: "non-main", workspaceAccess: "ro" } }`, "agent:main:side",
			[]string{"exec", "ls", "process", "read", "sessions_history", "sessions_list", "sessions_send", "sessions_spawn"}},
		{"per agent", `tools: { profile: "coding" },`, `{ id: "main", default: true }, { id: "ops", tools: { profile: "minimal", alsoAllow: ["exec"] } }`, "agent:ops:main",
			[]string{"exec"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
			g := startWith(t, "", llm, tc.agents, tc.tools)
			c := g.dial(t)
			call(t, c, "chat.send", map[string]any{"sessionKey": tc.key, "message": "hello", "idempotencyKey": "p1"})
			if w := call(t, c, "agent.wait", map[string]any{"runId": "p1", "timeoutMs": 30000}); w["status"] != "ok" {
				t.Fatalf("run = %v", w)
			}
			if diff := cmp.Diff(tc.want, offeredTools(t, llm)); diff != "" {
				t.Errorf("offered tools (-want +got):\n%s", diff)
			}
		})
	}
	// A model that calls a removed tool anyway gets an error, and the
	// command does not run.
	dir := t.TempDir()
	g := startWith(t, dir, nil, "", `tools: { deny: ["exec"] },`)
	c := g.dial(t)
	got := toolText(t, c, "agent:main:main", "d1", "exec", map[string]any{"command": "touch ran"})
	if !strings.Contains(got, "Tool exec not found") {
		t.Errorf("denied exec result = %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "workspace", "ran")); !os.IsNotExist(err) {
		t.Errorf("denied exec ran: %v", err)
	}
}
