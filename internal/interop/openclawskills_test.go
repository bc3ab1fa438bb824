package interop

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenClawSkillsList: a skill in the agent's workspace
// (<workspace>/skills/<name>/SKILL.md) is what the reference CLI's
// `skills list`, `skills list --json`, `skills check --json` and
// `skills info` show against Switchboard, gates included.
func TestOpenClawSkillsList(t *testing.T) {
	ws := t.TempDir()
	write := func(name, front string) {
		d := filepath.Join(ws, "skills", name)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "SKILL.md"), []byte("---\n"+front+"\n---\nSteps.\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("release-notes", "name: release-notes\ndescription: Write release notes from merged changes")
	write("needs-bin", "name: needs-bin\ndescription: Needs a missing tool\nmetadata: { \"openclaw\": { \"requires\": { \"bins\": [\"switchboard-no-such-binary\"] } } }")
	wsJSON, _ := json.Marshal(ws)
	url := startSwitchboardConfig(t, nil, `agents: { defaults: { workspace: `+string(wsJSON)+` } },`)
	cli := NewOpenClawCLI(t, url, testToken)
	run := func(args ...string) CLIResult {
		t.Helper()
		r := cli.Run(t, args...)
		if r.ExitCode != 0 || strings.Contains(r.Stdout+r.Stderr, "unknown method") {
			t.Fatalf("openclaw %q: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.ExitCode, r.Stdout, r.Stderr)
		}
		return r
	}

	list := run("skills", "list", "--json").JSON(t)
	if list["workspaceDir"] != ws {
		t.Errorf("workspaceDir = %v, want %s", list["workspaceDir"], ws)
	}
	byName := map[string]map[string]any{}
	for _, s := range list["skills"].([]any) {
		m := s.(map[string]any)
		byName[m["name"].(string)] = m
	}
	if s := byName["release-notes"]; s == nil || s["eligible"] != true || s["description"] != "Write release notes from merged changes" {
		t.Errorf("release-notes in skills list --json: %v", s)
	}
	if s := byName["needs-bin"]; s == nil || s["eligible"] != false {
		t.Errorf("needs-bin in skills list --json: %v", s)
	}
	if out := run("skills", "list").Stdout; !strings.Contains(out, "release-notes") || strings.Contains(out, "No skills found.") {
		t.Errorf("skills list:\n%s", out)
	}
	check := run("skills", "check", "--json").JSON(t)
	if sum, _ := check["summary"].(map[string]any); sum["total"] != float64(2) {
		t.Errorf("skills check summary: %v", check["summary"])
	}
	if out := run("skills", "info", "needs-bin").Stdout; !strings.Contains(out, "switchboard-no-such-binary") {
		t.Errorf("skills info needs-bin does not name the missing binary:\n%s", out)
	}
}
