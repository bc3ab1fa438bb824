package policy

import "testing"

func TestUntrusted(t *testing.T) {
	for _, tc := range []struct{ channel, provenance, key, want string }{
		{"webhook", "hook", "agent:main:hook:1", "webhook"},
		{"irc", "hook", "agent:main:hook:1", "webhook"}, // a hook delivering to a chat
		{"a2a", "", "agent:main:a2a:peer:ctx", "a2a"},
		{"internal", "a2a", "agent:main:a2a:peer:ctx", "a2a"}, // a peer's turn, whatever its channel
		{"irc", "", "agent:main:irc:group:#ops", "irc room"},
		{"irc", "", "agent:main:main", ""}, // an allowlisted DM
		{"webchat", "", "agent:main:main", ""},
		{"", "inter_session", "agent:main:group:x", ""},
		{"cron", "cron", "agent:main:cron:j1", ""},
	} {
		if got := Untrusted(tc.channel, tc.provenance, tc.key); got != tc.want {
			t.Errorf("Untrusted(%q, %q, %q) = %q, want %q", tc.channel, tc.provenance, tc.key, got, tc.want)
		}
	}
	for _, tc := range []struct {
		tool  string
		allow []string
		want  bool
	}{
		{"exec", nil, false},
		{"exec", []string{"exec"}, true},
		{"process", []string{"group:runtime"}, true},
		{"write", []string{"group:runtime"}, false},
		{"edit", []string{"*"}, true},
	} {
		if got := UntrustedGrant(tc.tool, tc.allow); got != tc.want {
			t.Errorf("UntrustedGrant(%q, %v) = %v", tc.tool, tc.allow, got)
		}
	}
}
