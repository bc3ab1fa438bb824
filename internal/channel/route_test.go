package channel

import (
	"strings"
	"testing"
)

// routeFromKeyReference is RouteFromKey as it was, splitting every key:
// the reference the early rejection must agree with.
func routeFromKeyReference(channel, key string) (r Route, ok bool) {
	parts := strings.Split(key, ":")
	if len(parts) < 3 || parts[0] != "agent" {
		return Route{}, false
	}
	rest := parts[2:]
	if len(rest) < 3 || rest[0] != channel {
		return Route{}, false
	}
	switch {
	case len(rest) == 3 && (rest[1] == "group" || rest[1] == "direct") && rest[2] != "":
		return Route{Channel: channel, To: rest[2]}, true
	case len(rest) == 5 && rest[1] == "group" && rest[2] != "" && rest[3] == "topic" && rest[4] != "":
		return Route{Channel: channel, To: rest[2] + ":topic:" + rest[4]}, true
	case len(rest) == 4 && rest[2] == "direct" && rest[3] != "":
		return Route{Channel: channel, AccountID: rest[1], To: rest[3]}, true
	}
	return Route{}, false
}

var routeKeys = []string{"", "agent", "agent:", "agent:main", "agent:main:", "agent:main:main", "agent:main:irc",
	"agent:main:irc:", "agent:main:irc:group:#room", "agent:main:irc:direct:alice", "agent:main:irc:acct:direct:bob",
	"agent:main:telegram:group:-100:topic:7", "agent:main:telegram:group::topic:7", "agent::irc:group:x",
	"agent:main:ircx:group:x", "agent:main:xirc:group:x", "agent:main:irc", "Agent:main:irc:group:x",
	"agent:main:subagent:1234", "agent:ops:irc:group:#a:b", "agent:main:irc:group:", "agent:a:b:irc:group:x"}

// TestRouteFromKeyMatchesReference checks RouteFromKey against the
// splitting reference, and that a key that names no channel costs nothing.
func TestRouteFromKeyMatchesReference(t *testing.T) {
	for _, ch := range []string{"irc", "telegram", "", "main"} {
		for _, key := range routeKeys {
			r, ok := RouteFromKey(ch, key)
			wr, wok := routeFromKeyReference(ch, key)
			if r != wr || ok != wok {
				t.Errorf("RouteFromKey(%q, %q) = %+v, %v; the reference says %+v, %v", ch, key, r, ok, wr, wok)
			}
		}
	}
	if n := testing.AllocsPerRun(50, func() { RouteFromKey("telegram", "agent:main:main") }); n != 0 {
		t.Errorf("RouteFromKey of a main session's key made %v allocations, want 0", n)
	}
}

// FuzzRouteFromKey checks RouteFromKey against the splitting reference.
func FuzzRouteFromKey(f *testing.F) {
	for _, key := range routeKeys {
		f.Add("irc", key)
	}
	f.Add("telegram", "agent:main:telegram:group:-100:topic:7")
	f.Fuzz(func(t *testing.T, ch, key string) {
		r, ok := RouteFromKey(ch, key)
		wr, wok := routeFromKeyReference(ch, key)
		if r != wr || ok != wok {
			t.Errorf("RouteFromKey(%q, %q) = %+v, %v; the reference says %+v, %v", ch, key, r, ok, wr, wok)
		}
	})
}
