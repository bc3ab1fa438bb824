package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/channel/telegram/tgfake"
)

// TestChannelReplySurvivesKill9: a chat channel's reply is an outbox item
// stored with the run's end. The Bot API refuses every send, the gateway
// is killed (SIGKILL) after the run ended ok, and the restarted gateway
// delivers the reply once the API answers again — exactly once.
func TestChannelReplySurvivesKill9(t *testing.T) {
	const bot = "987654:fake-bot-token"
	fake := tgfake.Start(t, bot)
	down := make([]tgfake.Failure, 1000)
	for i := range down {
		down[i] = tgfake.Failure{Code: 500, Description: "Internal Server Error: try later"}
	}
	fake.Fail("sendMessage", down...)
	dir := t.TempDir()
	tg := fmt.Sprintf(`channels: { telegram: { botToken: %q, apiRoot: %q, dmPolicy: "allowlist", allowFrom: ["tg:7"] } },`, bot, fake.URL())
	g := startWith(t, dir, nil, "", tg)
	fake.Push(tgfake.DM(7, "Ann", "hello over there"))
	// The run ended (its reply was tried, and refused, at least twice:
	// the second try comes from the stored item, after a backoff).
	eventually(t, "two refused sends", func() bool { return fake.Calls("sendMessage") >= 2 })
	g.kill()
	if n := len(fake.Sent()); n != 0 {
		t.Fatalf("%d messages sent while the API was down", n)
	}
	fake.Heal("sendMessage")
	g2 := startWith(t, dir, nil, "", tg)
	sent := fake.WaitSent(t, 1, 30*time.Second)
	if sent[0] != (tgfake.Sent{ChatID: "7", Text: "echo: hello over there"}) {
		t.Fatalf("reply = %+v", sent[0])
	}
	// A later turn's reply comes after it, and the first is not sent again.
	fake.Push(tgfake.DM(7, "Ann", "second"))
	sent = fake.WaitSent(t, 2, 30*time.Second)
	if len(sent) != 2 || sent[1] != (tgfake.Sent{ChatID: "7", Text: "echo: second"}) {
		t.Fatalf("sent = %+v", sent)
	}
	_ = g2
}
