package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/client"
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

// a2aOpen lets agents send to every peer.
const a2aOpen = `tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true } },`

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
	a, b := startPair(t, a2aOpen)
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

// TestA2AOutboundPolicy: tools.agentToAgent (enabled, allow) and the send
// policy apply to a remote peer by its name, before anything is sent.
func TestA2AOutboundPolicy(t *testing.T) {
	dead := freePort(t)
	for _, tc := range []struct{ name, config, status, want string }{
		{"agent-to-agent disabled", `tools: { sessions: { visibility: "all" } },`, "forbidden", "tools.agentToAgent.enabled=true"},
		{"visibility below all", `tools: { agentToAgent: { enabled: true } },`, "forbidden", "tools.sessions.visibility=all"},
		{"peer not in allow", `tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true, allow: ["main", "c"] } },`, "forbidden", "tools.agentToAgent.allow"},
		{"send policy deny", a2aOpen + `session: { sendPolicy: { rules: [{ action: "deny", match: { keyPrefix: "a2a:b" } }] } },`, "error", "blocked by session policy"},
		{"send policy deny channel", a2aOpen + `session: { sendPolicy: { rules: [{ action: "deny", match: { channel: "a2a" } }] } },`, "error", "blocked by session policy"},
		{"allowed (peer down)", `tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true, allow: ["main", "b"] } },`, "error", "connect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startWith(t, "", nil, "", fmt.Sprintf(`channels: { a2a: { peers: { b: { token: "x", url: "http://127.0.0.1:%d/a2a/v1", outboundToken: "y" } } } },`, dead)+tc.config)
			r := toolResult(t, g.dial(t), "agent:main:main", "p", "sessions_send", map[string]any{"sessionKey": "a2a:b", "message": "hi", "timeoutSeconds": 5})
			if r["status"] != tc.status || !strings.Contains(strings.ToLower(fmt.Sprint(r["error"])), strings.ToLower(tc.want)) {
				t.Fatalf("sessions_send = %v; want %s with %q", r, tc.status, tc.want)
			}
		})
	}
}

// TestA2ARingAcrossGateways: a message forwarded round a ring spanning two
// gateways (a → b → a → b → …) keeps its chain id and hop count across the
// A2A hops, and the loop guard stops it at the hop limit like a ring
// inside one gateway.
func TestA2ARingAcrossGateways(t *testing.T) {
	limits := `tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true, maxChainHops: 3 } },`
	a, b := startPair(t, limits)
	ca, cb := a.dial(t), b.dial(t)
	ring := []string{"a2a:b", "a2a:a", "a2a:b", "a2a:a", "a2a:b"}
	msg := "the end of the ring"
	for i := len(ring) - 1; i >= 0; i-- {
		j, _ := json.Marshal(map[string]any{"sessionKey": ring[i], "message": msg, "timeoutSeconds": 0})
		msg = fmt.Sprintf("hop %d\n/tool sessions_send %s", i+1, j) // a peer's message may not start with a slash
	}
	call(t, ca, "chat.send", map[string]any{"sessionKey": "agent:main:main", "message": msg, "idempotencyKey": "ring-1"})

	// The fourth hop (b → a) is refused in b, in chain ring-1.
	peerSessions := func(c *client.Client, peer string) []string {
		var keys []string
		for _, s := range call(t, c, "sessions.list", map[string]any{})["sessions"].([]any) {
			if k := s.(map[string]any)["key"].(string); strings.Contains(k, ":a2a:default:direct:"+peer+":") {
				keys = append(keys, k)
			}
		}
		return keys
	}
	var refused string
	eventually(t, "b refuses the fourth hop", func() bool {
		for _, k := range peerSessions(cb, "a") {
			for _, m := range history(t, cb, k) {
				if b, _ := json.Marshal(m["content"]); m["role"] == "toolResult" && strings.Contains(string(b), "Loop protection") {
					refused = string(b)
				}
			}
		}
		return refused != ""
	})
	if !strings.Contains(refused, "hop 4 of agent chain ring-1") {
		t.Fatalf("refusal = %s", refused)
	}
	// a ran exactly one turn from b (hop 2), and nothing more came back.
	time.Sleep(300 * time.Millisecond)
	var fromB []map[string]any
	for _, k := range peerSessions(ca, "b") {
		for _, m := range history(t, ca, k) {
			if m["role"] == "user" {
				fromB = append(fromB, m)
			}
		}
	}
	if len(fromB) != 1 {
		t.Fatalf("a's turns from b: %d, want 1", len(fromB))
	}
	if p, _ := fromB[0]["provenance"].(map[string]any); p == nil || p["chainId"] != "ring-1" || p["chainHops"] != 2.0 {
		t.Fatalf("provenance of a's turn from b = %v", fromB[0]["provenance"])
	}
}

// TestA2AOutboundDurable: a fire-and-forget send to a peer that is down is
// kept in the outbox and retried with backoff until the peer is up; the
// late reply is recorded. A send the peer refuses (a wrong token) is dead
// at once.
func TestA2AOutboundDurable(t *testing.T) {
	pa, pb := freePort(t), freePort(t)
	a := startOn(t, pa, "", nil, `{ id: "fake-1" }`, "", "", fmt.Sprintf(`channels: { a2a: { peers: {
    b: { token: "b-to-a", url: "http://127.0.0.1:%d/a2a/v1", outboundToken: "a-to-b" },
    bad: { token: "bad-to-a", url: "http://127.0.0.1:%d/a2a/v1", outboundToken: "wrong" } } } },`, pb, pb)+a2aOpen)
	ca := a.dial(t)
	r := toolResult(t, ca, "agent:main:main", "ff1", "sessions_send", map[string]any{"sessionKey": "a2a:b", "message": "while you were down", "timeoutSeconds": 0})
	if r["status"] != "accepted" || !strings.HasPrefix(fmt.Sprint(r["runId"]), "a2a-send:") {
		t.Fatalf("fire-and-forget to a peer that is down = %v", r)
	}
	eventually(t, "a retries the send", func() bool {
		return strings.Contains(a.stdio.String(), "will retry") && strings.Contains(a.stdio.String(), "kind=a2a_send")
	})
	b := startOn(t, pb, "", nil, `{ id: "fake-1" }`, "", "", fmt.Sprintf(`channels: { a2a: { peers: {
    a: { token: "a-to-b", url: "http://127.0.0.1:%d/a2a/v1", outboundToken: "b-to-a" } } } },`, pa)+a2aOpen)
	cb := b.dial(t)
	eventually(t, "a records b's late reply", func() bool {
		logs := a.stdio.String()
		return strings.Contains(logs, "a2a late reply recorded") && strings.Contains(logs, "state=TASK_STATE_COMPLETED")
	})
	var got bool
	for _, s := range call(t, cb, "sessions.list", map[string]any{})["sessions"].([]any) {
		if k := s.(map[string]any)["key"].(string); strings.Contains(k, ":a2a:default:direct:a:") {
			for _, m := range history(t, cb, k) {
				if b, _ := json.Marshal(m["content"]); m["role"] == "user" && strings.Contains(string(b), "while you were down") {
					got = true
				}
			}
		}
	}
	if !got {
		t.Fatal("b never ran the message sent while it was down")
	}

	r = toolResult(t, ca, "agent:main:main", "ff2", "sessions_send", map[string]any{"sessionKey": "a2a:bad", "message": "refused", "timeoutSeconds": 0})
	if r["status"] != "accepted" {
		t.Fatalf("fire-and-forget = %v", r)
	}
	eventually(t, "the refused send is dead", func() bool {
		logs := a.stdio.String()
		return strings.Contains(logs, "outbox: item is dead") && strings.Contains(logs, "HTTP 401")
	})
}

// TestA2AOutboundLateReply: the reply to a fire-and-forget send and the
// late reply to a send that timed out are each posted once into the
// sender's session, as inter-session messages from "a2a:<peer>".
func TestA2AOutboundLateReply(t *testing.T) {
	a, _ := startPair(t, a2aOpen)
	ca := a.dial(t)
	r := toolResult(t, ca, "agent:main:main", "ff", "sessions_send", map[string]any{"sessionKey": "a2a:b", "message": "fire and forget", "timeoutSeconds": 0})
	if r["status"] != "accepted" {
		t.Fatalf("fire-and-forget = %v", r)
	}
	r = toolResult(t, ca, "agent:main:main", "slow", "sessions_send", map[string]any{"sessionKey": "a2a:b",
		"message": "slow one\n/sleep 2s\n/reply the late answer", "timeoutSeconds": 1})
	if r["status"] != "timeout" || !strings.Contains(fmt.Sprint(r["error"]), "will be posted into this session") {
		t.Fatalf("slow send = %v", r)
	}
	taskID := fmt.Sprint(r["runId"])
	late := func() []string {
		var out []string
		for _, m := range history(t, ca, "agent:main:main") {
			p, _ := m["provenance"].(map[string]any)
			if m["role"] == "assistant" && p["kind"] == "inter_session" && p["sourceSessionKey"] == "a2a:b" && p["sourceTool"] == "sessions_send" {
				out = append(out, texts([]map[string]any{m})[0])
			}
		}
		return out
	}
	eventually(t, "both late replies are posted", func() bool { return len(late()) == 2 })
	// The dispatcher has settled both items; nothing is posted again.
	eventually(t, "both items are delivered", func() bool {
		return strings.Count(a.stdio.String(), "a2a late reply recorded") == 2
	})
	time.Sleep(500 * time.Millisecond)
	got := late()
	if len(got) != 2 || !strings.Contains(got[0]+got[1], "echo: fire and forget") ||
		!strings.Contains(got[0]+got[1], "Reply from a2a:b to sessions_send (runId "+taskID+"):\nthe late answer") {
		t.Fatalf("late replies in the sender's session: %q", got)
	}
}
