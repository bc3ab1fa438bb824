package settings

import (
	"path/filepath"
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
