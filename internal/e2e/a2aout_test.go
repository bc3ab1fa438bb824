package e2e

import (
	"fmt"
	"net"
	"strings"
	"testing"
)

// freePort returns a loopback port free a moment ago, for two gateways
// that must know each other's URL before either starts.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startPair starts gateways a and b, each the other's A2A peer (named
// "a" and "b"), with extra config members for both.
func startPair(t *testing.T, extraConfig string) (a, b *gateway) {
	t.Helper()
	pa, pb := freePort(t), freePort(t)
	peer := func(name, in string, port int, out string) string {
		return fmt.Sprintf(`channels: { a2a: { rateLimitPerMinute: 0, peers: { %s: { token: %q, url: "http://127.0.0.1:%d/a2a/v1", outboundToken: %q } } } },`,
			name, in, port, out)
	}
	a = startOn(t, pa, "", nil, `{ id: "fake-1" }`, "", "", peer("b", "b-to-a", pb, "a-to-b")+extraConfig)
	b = startOn(t, pb, "", nil, `{ id: "fake-1" }`, "", "", peer("a", "a-to-b", pa, "b-to-a")+extraConfig)
	return a, b
}

// TestA2AOutbound: sessions_send to "a2a:<peer>" between two real
// gateways, both ways: the reply when it comes in time, accepted without
// a wait, timeout when the peer does not answer in time; one remote
// session per sender session.
func TestA2AOutbound(t *testing.T) {
	a, b := startPair(t, "")
	ca, cb := a.dial(t), b.dial(t)

	r := toolResult(t, ca, "agent:main:main", "ok1", "sessions_send", map[string]any{"sessionKey": "a2a:b", "message": "hello from a", "timeoutSeconds": 20})
	if r["status"] != "ok" || !strings.Contains(fmt.Sprint(r["reply"]), "echo: hello from a") || r["sessionKey"] != "a2a:b" {
		t.Fatalf("a → b = %v", r)
	}
	r = toolResult(t, cb, "agent:main:main", "ok2", "sessions_send", map[string]any{"sessionKey": "a2a:a", "message": "hello from b", "timeoutSeconds": 20})
	if r["status"] != "ok" || !strings.Contains(fmt.Sprint(r["reply"]), "echo: hello from b") {
		t.Fatalf("b → a = %v", r)
	}
	r = toolResult(t, ca, "agent:main:main", "ff", "sessions_send", map[string]any{"sessionKey": "a2a:b", "message": "no wait", "timeoutSeconds": 0})
	if r["status"] != "accepted" || r["runId"] == "" {
		t.Fatalf("fire-and-forget = %v", r)
	}
	r = toolResult(t, ca, "agent:main:other", "slow", "sessions_send", map[string]any{"sessionKey": "a2a:b", "message": "think long\n/stall", "timeoutSeconds": 1})
	if r["status"] != "timeout" || !strings.Contains(fmt.Sprint(r["error"]), "continues") {
		t.Fatalf("stalled peer = %v", r)
	}
	r = toolResult(t, ca, "agent:main:main", "nopeer", "sessions_send", map[string]any{"sessionKey": "a2a:nobody", "message": "hi", "timeoutSeconds": 5})
	if r["status"] == "ok" || r["status"] == "accepted" {
		t.Fatalf("unknown peer = %v", r)
	}

	// b ran a's main session's turns in one session, and a's other
	// session's in another.
	peerSessions := func() []string {
		var keys []string
		for _, s := range call(t, cb, "sessions.list", map[string]any{})["sessions"].([]any) {
			if k := s.(map[string]any)["key"].(string); strings.Contains(k, ":a2a:default:direct:a:") {
				keys = append(keys, k)
			}
		}
		return keys
	}
	eventually(t, "b has run a's turns in two sessions", func() bool {
		keys := peerSessions()
		if len(keys) != 2 {
			return false
		}
		var users []int
		for _, k := range keys {
			n := 0
			for _, m := range history(t, cb, k) {
				if m["role"] == "user" {
					n++
				}
			}
			users = append(users, n)
		}
		return (users[0] == 2 && users[1] == 1) || (users[0] == 1 && users[1] == 2)
	})
}
