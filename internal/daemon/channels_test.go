package daemon

import (
	"testing"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/settings"
)

func TestRoomTools(t *testing.T) {
	cfg, _, err := config.Parse("t.json5", []byte(`{channels: {irc: {host: "h", nick: "n", groups: {
  "#Locked": { tools: { deny: ["group:runtime"] } },
  "#plain": { allowFrom: ["*"] },
  "*": { tools: { allow: ["read"] } },
}}}}`), config.MapEnv(map[string]string{"HOME": t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	set := settings.Resolve(cfg)
	for _, tc := range []struct {
		key        string
		ok         bool
		exec, read bool
	}{
		{"agent:main:irc:group:#locked", true, false, true},
		{"agent:main:irc:group:#plain", true, false, true}, // no tools of its own: the "*" entry's
		{"agent:main:irc:group:#other", true, false, true},
		{"agent:main:irc:direct:alice", false, true, true},
		{"agent:main:main", false, true, true},
		{"agent:main:telegram:group:#locked", false, true, true},
	} {
		sel, ok := roomTools(set, tc.key)
		if ok != tc.ok {
			t.Errorf("%s: ok = %v", tc.key, ok)
			continue
		}
		if !ok {
			continue
		}
		exec := policy.ToolOffered("exec", sel, policy.ToolSelection{})
		read := policy.ToolOffered("read", sel, policy.ToolSelection{})
		if exec != tc.exec || read != tc.read {
			t.Errorf("%s: exec %v read %v, want %v %v", tc.key, exec, read, tc.exec, tc.read)
		}
	}
}
