package irctest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/channel/irc"
)

// TestBotLoopProtectionTwoGateways puts two gateways in one room, both
// answering every message without a mention: each answers the other's
// answers, a loop that only the bot-pair guard ends. With a budget of 3
// per pair the room goes quiet, and a person is still answered.
func TestBotLoopProtectionTwoGateways(t *testing.T) {
	srv := startServer(t)
	conf := func(nick string) string {
		return fmt.Sprintf(`
    host: "127.0.0.1", port: %d, tls: false, nick: %q, channels: ["#room"],
    groups: { "#room": { allowFrom: ["*"], requireMention: false,
      botLoopProtection: { maxEventsPerWindow: 3, windowSeconds: 60, cooldownSeconds: 60 } } },`, srv.port, nick)
	}
	_, ca := startGateway(t, conf("bota"))
	_, cb := startGateway(t, conf("botb"))
	waitJoined(t, ca, "#room")
	waitJoined(t, cb, "#room")

	hum := connectUser(t, srv, "hum")
	hum.send("JOIN #room")
	hum.expect(5*time.Second, func(m irc.Message) bool { return m.Command == "JOIN" && m.Nick() == "hum" })
	hum.send("PRIVMSG #room :start")

	fromBots := func(m irc.Message) bool {
		return m.Command == "PRIVMSG" && (m.Nick() == "bota" || m.Nick() == "botb") && m.Param(0) == "#room"
	}
	// Collect the bots' messages until the room stays quiet for 3s.
	count := func(limit int) []string {
		var got []string
		deadline := time.After(60 * time.Second)
		for {
			select {
			case m, ok := <-hum.msgs:
				if !ok {
					t.Fatal("connection closed")
				}
				if fromBots(m) {
					got = append(got, m.Nick()+": "+m.Param(1))
					if len(got) > limit {
						t.Fatalf("the bots keep answering each other: %d messages, last %q", len(got), got[len(got)-1])
					}
				}
			case <-time.After(3 * time.Second):
				return got
			case <-deadline:
				t.Fatalf("no quiet in 60s: %q", got)
			}
		}
	}
	got := count(16)
	t.Logf("loop stopped after %d bot messages", len(got))
	if len(got) < 6 {
		t.Errorf("only %d bot messages: %q; the bots should answer each other until the budget runs out", len(got), got)
	}
	seen := strings.Join(got, "\n")
	if !strings.Contains(seen, "bota: echo: hum: start") || !strings.Contains(seen, "botb: echo: hum: start") {
		t.Errorf("a bot did not answer the person: %q", got)
	}

	// People are not affected: both bots still answer, and the answers
	// do not restart the loop (the pair is cooling down).
	hum.send("PRIVMSG #room :still there")
	again := count(2)
	if len(again) != 2 {
		t.Errorf("after the loop: %q, want one answer from each bot", again)
	}
}
