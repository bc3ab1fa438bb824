package irctest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/channel/irc"
	"github.com/switchboardhq/switchboard/internal/client"
)

// TestCommandsFromIRC: admission answers an allowlisted IRC sender's
// direct message /queue collect, /compact and /new exactly as it answers
// the operator's WebSocket (without the model), while the same text from a
// room (anyone may speak there) is text for the model; a session whose send
// policy denies gets nothing back and never reaches the model.
func TestCommandsFromIRC(t *testing.T) {
	srv := startServer(t)
	_, c := startGateway(t, fmt.Sprintf(`
    host: "127.0.0.1", port: %d, tls: false, nick: "sbbot", channels: ["#room"],
    allowFrom: ["alice!*@*"],
    groups: { "#room": { allowFrom: ["*"], requireMention: false } },`, srv.port))
	waitJoined(t, c, "#room")
	alice := connectUser(t, srv, "alice")
	dm := func(text string) string {
		t.Helper()
		alice.send("PRIVMSG sbbot :" + text)
		return alice.expect(20*time.Second, privmsgFrom("sbbot", "alice")).Param(1)
	}
	ctx := context.Background()
	operator := func(key, text string, n int) string {
		t.Helper()
		var res map[string]any
		id := fmt.Sprintf("op-%d", n)
		if err := c.Call(ctx, "chat.send", map[string]any{"sessionKey": key, "message": text, "idempotencyKey": id}, &res); err != nil {
			t.Fatalf("chat.send %q: %v", text, err)
		}
		if res["status"] == "started" {
			c.Call(ctx, "agent.wait", map[string]any{"runId": id, "timeoutMs": 30000}, nil)
		}
		return lastAssistant(t, c, "agent:main:"+key)
	}
	if got := dm("hello"); got != "echo: hello" {
		t.Fatalf("hello = %q", got)
	}
	operator("ws-twin", "hello", 0)
	for i, cmd := range []string{"/queue collect", "/compact", "/new"} {
		want := operator("ws-twin", cmd, i+1)
		if got := dm(cmd); got != want {
			t.Errorf("%s from IRC = %q, from the WebSocket %q", cmd, got, want)
		}
	}
	alice.send("JOIN #room")
	alice.expect(5*time.Second, func(m irc.Message) bool { return m.Command == "JOIN" && m.Nick() == "alice" })
	alice.send("PRIVMSG #room :/new")
	if got := alice.expect(20*time.Second, privmsgFrom("sbbot", "#room")).Param(1); got != "echo: alice: /new" {
		t.Errorf("/new in a room = %q, want the model's answer", got)
	}

	// Denied: the message gets nothing back and never reaches the session.
	// The connector hands messages over in order, so the next thing the bot
	// sends is the answer to the command that follows (commands are
	// answered whatever the policy, so that "/send on" can lift it).
	var out map[string]any
	if err := c.Call(ctx, "sessions.patch", map[string]any{"key": "agent:main:main", "sendPolicy": "deny"}, &out); err != nil {
		t.Fatal(err)
	}
	alice.send("PRIVMSG sbbot :denied message")
	if got := dm("/queue"); !strings.HasPrefix(got, "Current queue settings") {
		t.Errorf("after the refused message the bot sent %q", got)
	}
	inHistory(t, c, "agent:main:main", "denied message", false)
}

// lastAssistant is the text of key's last assistant message.
func lastAssistant(t *testing.T, c *client.Client, key string) string {
	t.Helper()
	var hist struct {
		Messages []struct {
			Role    string
			Content []struct{ Text string }
		}
	}
	if err := c.Call(context.Background(), "chat.history", map[string]any{"sessionKey": key, "limit": 100}, &hist); err != nil {
		t.Fatal(err)
	}
	for i := len(hist.Messages) - 1; i >= 0; i-- {
		if m := hist.Messages[i]; m.Role == "assistant" && len(m.Content) > 0 {
			var b strings.Builder
			for _, p := range m.Content {
				b.WriteString(p.Text)
			}
			return b.String()
		}
	}
	t.Fatalf("no assistant message in %s", key)
	return ""
}

// inHistory checks whether text is in key's history (want).
func inHistory(t *testing.T, c *client.Client, key, text string, want bool) {
	t.Helper()
	var hist map[string]any
	if err := c.Call(context.Background(), "chat.history", map[string]any{"sessionKey": key, "limit": 100}, &hist); err != nil {
		t.Fatal(err)
	}
	if got := strings.Contains(fmt.Sprint(hist["messages"]), text); got != want {
		t.Errorf("%q in %s's history: %v, want %v", text, key, got, want)
	}
}
