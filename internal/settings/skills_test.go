package settings

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSkillScope(t *testing.T) {
	c := parse(t, `{
  gateway: { auth: { mode: "token", token: "t" } },
  agents: { defaults: { workspace: "/ws", skills: ["a"] }, list: [{ id: "main" }, { id: "solo", skills: [] }] },
  skills: { load: { extraDirs: ["/extra"] }, entries: { a: { enabled: false, env: { K: "v" } } }, limits: { maxSkillsPromptChars: 500 } },
}`)
	sc := SkillScope(c, "main")
	if len(sc.Roots) != 4 || sc.Roots[0].Dir != filepath.Join("/ws", "skills") || sc.Roots[3].Dir != "/extra" {
		t.Errorf("roots = %+v", sc.Roots)
	}
	if sc.PromptChars != 500 || len(sc.Policy.Allow) != 1 || sc.Policy.Entries["a"].Env["K"] != "v" || *sc.Policy.Entries["a"].Enabled {
		t.Errorf("scope = %+v", sc)
	}
	if solo := SkillScope(c, "solo"); solo.Policy.Allow == nil || len(solo.Policy.Allow) != 0 {
		t.Errorf("an empty agent list must give no skills: %#v", solo.Policy.Allow)
	}
	truthy := sc.Policy.ConfigTruthy
	for path, want := range map[string]bool{
		"gateway.auth.mode": true, "gateway.auth.token": true, "browser.enabled": false,
		"gateway.auth.mode.deeper": false, "skills.load.extraDirs": true,
	} {
		if got := truthy(path); got != want {
			t.Errorf("ConfigTruthy(%q) = %v, want %v", path, got, want)
		}
	}
}

// Settings.SkillScope makes an agent's scope once (a warm turn asks for it
// every run), gives what SkillScope gives, and keeps agents apart; new
// Settings from a changed configuration give the new scope.
func TestSettingsSkillScopeMemoised(t *testing.T) {
	src := `{
  agents: { defaults: { workspace: "/ws", skills: ["a"] }, list: [{ id: "main" }, { id: "solo", workspace: "/solo", skills: [] }] },
  skills: { load: { extraDirs: ["/extra"] }, entries: { a: { env: { K: "v" } } }, limits: { maxSkillsPromptChars: 500 } },
}`
	c := parse(t, src)
	s := Resolve(c)
	want := SkillScope(c, "main")
	got := s.SkillScope("main")
	if !slices.Equal(got.Roots, want.Roots) || !slices.Equal(got.AllowTargets, want.AllowTargets) || got.PromptChars != want.PromptChars ||
		!slices.Equal(got.Policy.Allow, want.Policy.Allow) || got.Policy.Entries["a"].Env["K"] != "v" || got.Policy.ConfigTruthy == nil {
		t.Errorf("SkillScope(main) = %+v, want %+v", got, want)
	}
	if n := testing.AllocsPerRun(50, func() { _ = s.SkillScope("main") }); n != 0 {
		t.Errorf("a second SkillScope(main) made %v allocations, want 0 (made once)", n)
	}
	if solo := s.SkillScope("solo"); solo.Roots[0].Dir != filepath.Join("/solo", "skills") || len(solo.Policy.Allow) != 0 || solo.Policy.Allow == nil {
		t.Errorf("SkillScope(solo) = %+v", solo)
	}
	changed := Resolve(parse(t, strings.Replace(src, `maxSkillsPromptChars: 500`, `maxSkillsPromptChars: 900`, 1)))
	if sc := changed.SkillScope("main"); sc.PromptChars != 900 {
		t.Errorf("after a changed configuration PromptChars = %d, want 900", sc.PromptChars)
	}
}
