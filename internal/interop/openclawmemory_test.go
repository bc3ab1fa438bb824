package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/cli"
	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/config"
)

// TestOpenClawMemoryCommands: a fact the agent writes with `write` into
// memory/ of its Switchboard workspace is what the reference CLI's
// `memory status`, `memory index` and `memory search` see once
// `switchboard memory openclaw-env` has pointed it there. (Those commands
// are not gateway clients: they open an index of their own in-process.)
func TestOpenClawMemoryCommands(t *testing.T) {
	dir := t.TempDir()
	ws := startSwitchboardIn(t, dir, nil, "")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{URL: ws, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	const note = "memory/2026-11-27.md"
	args, _ := json.Marshal(map[string]any{"path": note,
		"content": "# Notes\n\nDecided: the release train leaves on Thursdays (ticket ZEPHYR-42).\n"})
	var out map[string]any
	if err := c.Call(ctx, "chat.send", map[string]any{"sessionKey": "agent:main:main", "idempotencyKey": "mem-write",
		"message": "/tool write " + string(args) + "\n/then done"}, &out); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(ctx, "agent.wait", map[string]any{"runId": "mem-write", "timeoutMs": 60000}, &out); err != nil || out["status"] != "ok" {
		t.Fatalf("agent.wait = %v, %v", out, err)
	}

	var envOut bytes.Buffer
	if err := cli.Run(ctx, []string{"--json", "memory", "openclaw-env"}, cli.Options{
		Env:    config.MapEnv(map[string]string{"SWITCHBOARD_STATE_DIR": dir, "HOME": dir}),
		Stdout: &envOut, Stderr: &envOut,
	}); err != nil {
		t.Fatalf("switchboard memory openclaw-env: %v\n%s", err, envOut.String())
	}
	var env map[string]string
	if err := json.Unmarshal(envOut.Bytes(), &env); err != nil {
		t.Fatalf("memory openclaw-env --json: %v\n%s", err, envOut.String())
	}
	ocli := NewOpenClawCLI(t, ws, testToken)
	ocli.Timeout = 3 * time.Minute
	for _, name := range []string{"OPENCLAW_STATE_DIR", "OPENCLAW_CONFIG_PATH"} {
		if env[name] == "" {
			t.Fatalf("memory openclaw-env --json lacks %s: %v", name, env)
		}
		ocli.Env = append(ocli.Env, name+"="+env[name])
	}
	workspace := filepath.Join(dir, "workspace")

	if out := ocli.MustRun(t, "memory", "index").Stdout; !strings.Contains(out, "Memory index updated (main): 1 file indexed.") {
		t.Errorf("openclaw memory index:\n%s", out)
	}
	var status []struct {
		AgentID string
		Status  struct {
			Files, Chunks int
			Dirty         bool
			WorkspaceDir  string
			Provider      string
			Sources       []string
		}
	}
	r := ocli.MustRun(t, "memory", "status", "--json")
	if err := json.Unmarshal([]byte(r.Stdout), &status); err != nil {
		t.Fatalf("openclaw memory status --json: %v\n%s", err, r.Stdout)
	}
	if len(status) != 1 || status[0].AgentID != "main" || status[0].Status.WorkspaceDir != workspace ||
		status[0].Status.Files != 1 || status[0].Status.Chunks == 0 || status[0].Status.Dirty || status[0].Status.Provider != "none" {
		t.Errorf("openclaw memory status --json = %+v", status)
	}

	search := ocli.MustRun(t, "memory", "search", "--json", "release train Thursdays").JSON(t)
	hits, _ := search["results"].([]any)
	if len(hits) == 0 {
		t.Fatalf("openclaw memory search found nothing: %v", search)
	}
	if hit, _ := hits[0].(map[string]any); hit["path"] != note || !strings.Contains(hit["snippet"].(string), "ZEPHYR-42") {
		t.Errorf("openclaw memory search --json: first hit %v", hit)
	}
	refOut := ocli.MustRun(t, "memory", "search", "ZEPHYR-42").Stdout
	if !strings.Contains(refOut, note+":1-") || !strings.Contains(refOut, "release train leaves on Thursdays") {
		t.Errorf("openclaw memory search:\n%s", refOut)
	}
	// switchboard memory search prints a hit line of the same form for the
	// same file, from the gateway's own index. (The scores differ, and the
	// reference counts the empty line after a file's last newline in its
	// end line: 1-4 where Switchboard says 1-3.)
	var sbOut bytes.Buffer
	if err := cli.Run(t.Context(), []string{"memory", "search", "ZEPHYR-42", "--url", ws, "--token", testToken}, cli.Options{
		Env: config.MapEnv(map[string]string{"HOME": dir}), Stdout: &sbOut, Stderr: &sbOut,
	}); err != nil {
		t.Fatalf("switchboard memory search: %v\n%s", err, sbOut.String())
	}
	hitLine := func(out string) string { // "<score> <path>:<start>-<end>" → "<path>:<start>"
		first, _, _ := strings.Cut(out, "\n")
		_, loc, _ := strings.Cut(first, " ")
		if i := strings.LastIndex(loc, "-"); i > strings.LastIndex(loc, ":") {
			loc = loc[:i]
		}
		return loc
	}
	if a, b := hitLine(sbOut.String()), hitLine(refOut); a != b || a == "" {
		t.Errorf("first hit: switchboard %q, openclaw %q\nswitchboard:\n%s\nopenclaw:\n%s", a, b, sbOut.String(), refOut)
	}
}
