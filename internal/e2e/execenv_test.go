package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecAllowlistRefusesAssignments is issue 30's reproduction: in
// allowlist mode "PATH=<dir> head" ran the dir's head and
// "LD_PRELOAD=/x head" ran at all. Both are refused with the reference's
// Security Violation text and nothing runs; a safe assignment still runs.
func TestExecAllowlistRefusesAssignments(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "pwned")
	fake := "#!/bin/sh\necho pwned > " + marker + "\n"
	if err := os.WriteFile(filepath.Join(dir, "head"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	g := startWith(t, "", nil, "", `tools: { exec: { security: "allowlist", timeoutSeconds: 30 } },`)
	c := g.dial(t)
	for i, tc := range []struct{ cmd, want string }{
		{"PATH=" + dir + " head -n1", "Security Violation: Custom 'PATH' variable is forbidden during host execution."},
		{"PATH=" + dir + "; head -n1", "Security Violation: Custom 'PATH' variable is forbidden during host execution."},
		{"LD_PRELOAD=/x head -n1", "Security Violation: Environment variable 'LD_PRELOAD' is forbidden during host execution."},
		{"FOO=1 head -n1", "Exec denied (allowlist-miss): FOO=1 head -n1"},
		{"TZ=UTC head -c0", ""},
	} {
		id := "env" + string(rune('a'+i))
		call(t, c, "chat.send", map[string]any{"sessionKey": "agent:main:main", "message": toolTurn("exec", map[string]any{"command": tc.cmd}), "idempotencyKey": id})
		waitRun(t, c, id)
		got := lastToolText(t, c, "agent:main:main", "exec")
		if tc.want != "" && got != tc.want || tc.want == "" && strings.Contains(got, "denied") {
			t.Errorf("%q: result %q, want %q", tc.cmd, got, tc.want)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the planted head ran")
	}
}
