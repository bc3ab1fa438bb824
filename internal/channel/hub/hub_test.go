package hub

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
	checkRoomTools(t, set, []roomToolsCase{
		{"agent:main:irc:group:#locked", true, false, true},
		{"agent:main:irc:group:#plain", true, false, true}, // no tools of its own: the "*" entry's
		{"agent:main:irc:group:#other", true, false, true},
		{"agent:main:irc:direct:alice", false, true, true},
		{"agent:main:main", false, true, true},
		{"agent:main:telegram:group:#locked", false, true, true},
	})
}

func TestTelegramRoomTools(t *testing.T) {
	cfg, _, err := config.Parse("t.json5", []byte(`{channels: {telegram: {botToken: "1:x", groups: {
  "-100": { tools: { deny: ["group:runtime"] }, topics: { "7": { tools: { allow: ["exec"] } }, "8": { requireMention: false } } },
  "-200": { topics: { "*": { tools: { deny: ["read"] } } } },
  "*": { tools: { allow: ["read"] } },
}}}}`), config.MapEnv(map[string]string{"HOME": t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	set := settings.Resolve(cfg)
	checkRoomTools(t, set, []roomToolsCase{
		{"agent:main:telegram:group:-100", true, false, true},
		{"agent:main:telegram:group:-100:topic:7", true, true, false}, // the topic's own
		{"agent:main:telegram:group:-100:topic:8", true, false, true}, // inherits the group's
		{"agent:main:telegram:group:-200", false, true, true},         // its own entry has no tools
		{"agent:main:telegram:group:-200:topic:3", true, true, false}, // the topics' "*"
		{"agent:main:telegram:group:-300", true, false, true},         // the "*" group
		{"agent:main:telegram:direct:7", false, true, true},
	})
}

// roomToolsCase is a session key, whether RoomTools selects tools for it,
// and, when it does, whether exec and read are offered.
type roomToolsCase struct {
	key        string
	ok         bool
	exec, read bool
}

func checkRoomTools(t *testing.T, set *settings.Settings, cases []roomToolsCase) {
	t.Helper()
	for _, tc := range cases {
		sel, ok := RoomTools(set, tc.key)
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
