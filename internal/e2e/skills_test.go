package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// skillFile writes a SKILL.md under dir/name with the given frontmatter
// lines.
func skillFile(t *testing.T, dir, name, front string) string {
	t.Helper()
	d := filepath.Join(dir, name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(d, "SKILL.md")
	if err := os.WriteFile(p, []byte("---\n"+front+"\n---\nSteps for "+name+".\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSkillsInPromptAndStatus: skills in the workspace, the state dir and
// an extra dir are listed to the model in its system prompt, in the
// reference's catalog, when eligible; a skill missing a binary, one turned
// off in skills.entries, one hidden from the model and one outside the
// agent's allowlist are not, and skills.status says why for each; a skill
// added between turns is in the next turn's prompt; a hostile SKILL.md is
// refused without harming its siblings.
func TestSkillsInPromptAndStatus(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "workspace")
	wsSkills := filepath.Join(ws, "skills")
	extra := filepath.Join(dir, "extra-skills")
	notes := skillFile(t, wsSkills, "release-notes", "name: release-notes\ndescription: Write release notes from merged changes")
	skillFile(t, filepath.Join(dir, "skills"), "release-notes", "name: release-notes\ndescription: the managed copy, shadowed")
	managed := skillFile(t, filepath.Join(dir, "skills"), "weather", "name: weather\ndescription: Forecasts for a city")
	skillFile(t, extra, "needs-bin", "name: needs-bin\ndescription: needs a tool\nmetadata:\n  {\n    \"openclaw\":\n      {\n        \"requires\": { \"bins\": [\"switchboard-no-such-binary\"] },\n      },\n  }")
	skillFile(t, extra, "turned-off", "name: turned-off\ndescription: disabled in config")
	skillFile(t, extra, "command-only", "name: command-only\ndescription: only as a command\ndisable-model-invocation: true")
	skillFile(t, extra, "not-allowed", "name: not-allowed\ndescription: outside the allowlist")
	skillFile(t, extra, "with-key", "name: with-key\ndescription: needs its key\nmetadata: { \"openclaw\": { \"primaryEnv\": \"SKILLTEST_KEY\", \"requires\": { \"env\": [\"SKILLTEST_KEY\"] } } }")
	huge := skillFile(t, wsSkills, "huge", "name: huge\ndescription: d")
	if err := os.WriteFile(huge, []byte("---\nname: huge\ndescription: d\n---\n"+strings.Repeat("x", 300_000)), 0o600); err != nil {
		t.Fatal(err)
	}

	extraCfg, _ := json.Marshal(extra)
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := startDefaults(t, dir, llm, `{ id: "fake-1" }`,
		`skills: ["release-notes", "weather", "needs-bin", "turned-off", "command-only", "later", "with-key"],`, "",
		`skills: { load: { extraDirs: [`+string(extraCfg)+`] }, entries: { "turned-off": { enabled: false }, "with-key": { apiKey: "sk-skill-5150" } } },`)
	c := g.dial(t)

	if w := runTurn(t, c, "agent:main:main", "sk-1", "/reply ok\nhello"); w["status"] != "ok" {
		t.Fatalf("turn: %v", w)
	}
	body := lastSystem(t, llm)
	for _, want := range []string{"## Skills", "<available_skills>", "<name>release-notes</name>",
		"<description>Write release notes from merged changes</description>", "<location>" + notes + "</location>",
		"<name>weather</name>", "<location>" + managed + "</location>", "read exact <location> with `read`"} {
		if !strings.Contains(body, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, body)
		}
	}
	for _, absent := range []string{"needs-bin", "turned-off", "command-only", "not-allowed", "shadowed", "huge"} {
		if strings.Contains(body, absent) {
			t.Errorf("system prompt lists %q:\n%s", absent, body)
		}
	}

	st := call(t, c, "skills.status", map[string]any{"agentId": "main"})
	if st["workspaceDir"] != ws || st["managedSkillsDir"] != filepath.Join(dir, "skills") {
		t.Errorf("skills.status dirs: %v %v", st["workspaceDir"], st["managedSkillsDir"])
	}
	got := map[string]map[string]any{}
	for _, e := range st["skills"].([]any) {
		m := e.(map[string]any)
		got[m["name"].(string)] = m
	}
	check := func(name, field string, want any) {
		t.Helper()
		m, ok := got[name]
		if !ok {
			t.Errorf("skills.status lacks %s: %v", name, st["skills"])
			return
		}
		if g, _ := json.Marshal(m[field]); string(g) != mustJSON(want) {
			t.Errorf("%s.%s = %s, want %s", name, field, g, mustJSON(want))
		}
	}
	check("release-notes", "source", "openclaw-workspace")
	check("release-notes", "modelVisible", true)
	check("weather", "source", "openclaw-managed")
	check("needs-bin", "eligible", false)
	check("needs-bin", "missing", map[string]any{"bins": []string{"switchboard-no-such-binary"}, "anyBins": []string{}, "env": []string{}, "config": []string{}, "os": []string{}})
	check("turned-off", "disabled", true)
	check("command-only", "modelVisible", false)
	check("command-only", "commandVisible", true)
	check("not-allowed", "blockedByAgentFilter", true)
	if _, ok := got["huge"]; ok {
		t.Errorf("the oversized SKILL.md was loaded")
	}
	check("with-key", "eligible", true)
	if len(got) != 7 {
		t.Errorf("skills.status lists %d skills, want 7: %v", len(got), st["skills"])
	}
	// The skill's apiKey reaches host commands as its primaryEnv.
	if out := toolText(t, c, "agent:main:main", "sk-env", "exec", map[string]any{"command": `[ "$SKILLTEST_KEY" = sk-skill-5150 ] && echo injected || echo missing`}); !strings.Contains(out, "injected") {
		t.Errorf("exec does not see the skill's key: %q", out)
	}

	// A skill added now is in the next turn's prompt.
	later := skillFile(t, wsSkills, "later", "name: later\ndescription: Added while the gateway runs")
	if w := runTurn(t, c, "agent:main:main", "sk-2", "/reply ok\nagain"); w["status"] != "ok" {
		t.Fatalf("turn: %v", w)
	}
	if body := lastSystem(t, llm); !strings.Contains(body, "<location>"+later+"</location>") {
		t.Errorf("the added skill is not in the next prompt:\n%s", body)
	}
}

// lastSystem is the system message of the model's last request.
func lastSystem(t *testing.T, llm *fakellm.Server) string {
	t.Helper()
	reqs := llm.Requests()
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[len(reqs)-1].Body, &req); err != nil {
		t.Fatal(err)
	}
	for _, m := range req.Messages {
		if m.Role == "system" {
			if s, ok := m.Content.(string); ok {
				return s
			}
			b, _ := json.Marshal(m.Content)
			return string(b)
		}
	}
	return ""
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
