package telegramtest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/switchboardhq/switchboard/internal/channel/telegram/tgfake"
	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/provider/scripted"
)

// history returns a session's chat.history as text.
func history(t *testing.T, c *client.Client, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var hist map[string]any
	if err := c.Call(ctx, "chat.history", map[string]any{"sessionKey": key}, &hist); err != nil {
		t.Fatalf("chat.history %s: %v", key, err)
	}
	return fmt.Sprint(hist)
}

// quiet fails when fake sends anything beyond n messages within d.
func quiet(t *testing.T, fake *tgfake.Server, n int, d time.Duration) {
	t.Helper()
	time.Sleep(d)
	if got := fake.Sent(); len(got) > n {
		t.Errorf("unexpected messages: %+v", got[n:])
	}
}

func TestDMGroupTopicAndLongReply(t *testing.T) {
	fake := tgfake.Start(t, botToken)
	long := strings.TrimSpace(strings.Repeat("the quick brown fox jumps over the lazy dog ", 250)) // ~11k bytes
	_, c, logs := startGateway(t, fake, fmt.Sprintf(`
    dmPolicy: "allowlist", allowFrom: ["tg:7"],
    groups: {
      "-100": { allowFrom: ["*"] },
      "-200": { allowFrom: ["*"], requireMention: false, systemPrompt: %q, topics: { "9": { enabled: false } } },
    },`, scripted.WhenRule("long please", scripted.ReplyDirective(long))), "")
	res, _ := status(t, c)
	if !slices.Equal(res.ChannelOrder, []string{"telegram"}) || !res.Channels["telegram"].Configured {
		t.Errorf("channels.status = %+v", res)
	}
	a := waitConnected(t, c)
	if a.Nick != "@"+tgfake.BotUsername || a.State != "connected" || !a.Running || a.ConnectedAtMs == 0 {
		t.Errorf("account = %+v", a)
	}

	// A DM from a sender not on allowFrom is dropped; one from the listed
	// sender gets the (first) reply, in the private chat.
	fake.Push(tgfake.DM(8, "Eve", "let me in"))
	fake.Push(tgfake.DM(7, "Ann", "hello in private"))
	sent := fake.WaitSent(t, 1, 20*time.Second)
	if sent[0] != (tgfake.Sent{ChatID: "7", Text: "echo: hello in private"}) {
		t.Fatalf("dm reply = %+v", sent[0])
	}

	// Mention gating in a plain group: the message without the bot's
	// handle gets nothing; the next, with it, is answered in the group.
	fake.Push(tgfake.Group(-100, 8, "Bob", "just chatting"))
	fake.Push(tgfake.Group(-100, 8, "Bob", "@sb_test_bot ping one"))
	sent = fake.WaitSent(t, 2, 20*time.Second)
	if sent[1] != (tgfake.Sent{ChatID: "-100", Text: "echo: @bob: @sb_test_bot ping one"}) {
		t.Fatalf("group reply = %+v", sent[1])
	}

	// A forum topic is a session of its own, and its reply goes into the
	// topic's thread; a disabled topic of the same forum is silent.
	fake.Push(tgfake.Topic(-200, 9, 8, "Bob", "disabled topic"))
	fake.Push(tgfake.Topic(-200, 42, 8, "Bob", "topic hello"))
	sent = fake.WaitSent(t, 3, 20*time.Second)
	if sent[2] != (tgfake.Sent{ChatID: "-200", ThreadID: "42", Text: "echo: @bob: topic hello"}) {
		t.Fatalf("topic reply = %+v", sent[2])
	}
	if h := history(t, c, "agent:main:telegram:group:-200:topic:42"); !strings.Contains(h, "topic hello") || strings.Contains(h, "disabled topic") {
		t.Errorf("topic session history = %s", h)
	}
	// The General topic is thread 1 in the session key, and its replies
	// leave message_thread_id out (Telegram refuses thread 1).
	fake.Push(tgfake.Topic(-200, 0, 8, "Bob", "general hello"))
	sent = fake.WaitSent(t, 4, 20*time.Second)
	if sent[3] != (tgfake.Sent{ChatID: "-200", Text: "echo: @bob: general hello"}) {
		t.Fatalf("general topic reply = %+v", sent[3])
	}
	if h := history(t, c, "agent:main:telegram:group:-200:topic:1"); !strings.Contains(h, "general hello") {
		t.Errorf("general topic session history = %s", h)
	}

	// A long reply is split into messages under Telegram's 4096-character
	// limit that together carry the whole text, all in the topic.
	fake.Push(tgfake.Topic(-200, 42, 8, "Bob", "long please"))
	var parts []string
	for n := 5; strings.Join(parts, " ") != long; n++ {
		if n > 12 {
			t.Fatalf("long reply parts = %d", len(parts))
		}
		s := fake.WaitSent(t, n, 20*time.Second)[n-1]
		if s.ChatID != "-200" || s.ThreadID != "42" || len(utf16.Encode([]rune(s.Text))) > 4096 {
			t.Fatalf("part %d = chat %s thread %s, %d bytes", n-4, s.ChatID, s.ThreadID, len(s.Text))
		}
		parts = append(parts, s.Text)
	}
	if len(parts) < 3 {
		t.Errorf("long reply came in %d messages, want at least 3", len(parts))
	}
	quiet(t, fake, 4+len(parts), 300*time.Millisecond)

	_, a = status(t, c)
	if a.Inbound != 5 || a.Outbound != int64(4+len(parts)) {
		t.Errorf("counts = in %d out %d, want 5 admitted and %d sent", a.Inbound, a.Outbound, 4+len(parts))
	}
	if fake.Pending() > 1 {
		t.Errorf("%d updates never confirmed", fake.Pending())
	}
	if strings.Contains(logs.String(), botToken) {
		t.Error("the gateway's logs hold the bot token")
	}
}

func TestWebhookMode(t *testing.T) {
	fake := tgfake.Start(t, botToken)
	d, c, logs := startGateway(t, fake, `
    dmPolicy: "open", webhookUrl: "https://bot.example.com/tg/updates", webhookSecret: "hook-s3cret",`, "")
	waitConnected(t, c)
	if h := fake.Webhook(); h.URL != "https://bot.example.com/tg/updates" || h.Secret != "hook-s3cret" {
		t.Fatalf("setWebhook = %+v", h)
	}
	url := "http://" + d.Addrs[0].String() + "/tg/updates"
	post := func(secret string, body []byte) int {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if secret != "" {
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("wrong-secret", fake.Update(tgfake.DM(7, "Ann", "forged"))); code != http.StatusUnauthorized {
		t.Errorf("wrong secret: status %d, want 401", code)
	}
	if code := post("", fake.Update(tgfake.DM(7, "Ann", "forged too"))); code != http.StatusUnauthorized {
		t.Errorf("no secret: status %d, want 401", code)
	}
	if code := post("hook-s3cret", fake.Update(tgfake.DM(7, "Ann", "via webhook"))); code != http.StatusOK {
		t.Fatalf("right secret: status %d, want 200", code)
	}
	sent := fake.WaitSent(t, 1, 20*time.Second)
	if sent[0] != (tgfake.Sent{ChatID: "7", Text: "echo: via webhook"}) {
		t.Fatalf("reply = %+v (a forged update got through?)", sent[0])
	}
	quiet(t, fake, 1, 300*time.Millisecond)
	if n := fake.Calls("getUpdates"); n != 0 {
		t.Errorf("webhook mode called getUpdates %d times", n)
	}
	if h := history(t, c, "agent:main:main"); strings.Contains(h, "forged") {
		t.Errorf("forged update stored: %s", h)
	}
	if _, a := status(t, c); a.Inbound != 1 || !a.Connected {
		t.Errorf("account = %+v", a)
	}
	if strings.Contains(logs.String(), botToken) || strings.Contains(logs.String(), "hook-s3cret") {
		t.Error("the gateway's logs hold a secret")
	}
}

// TestAnnouncesReachTheTopic: a sub-agent spawned from a forum topic's
// session announces its result into that topic's thread, through the
// same channel layer as IRC.
func TestAnnouncesReachTheTopic(t *testing.T) {
	fake := tgfake.Start(t, botToken)
	_, c, _ := startGateway(t, fake, `groups: { "-300": { allowFrom: ["*"], requireMention: false } },`,
		`tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true } },`)
	waitConnected(t, c)
	fake.Push(tgfake.Topic(-300, 7, 8, "Bob", "hello bot"))
	fake.WaitSent(t, 1, 20*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const topic = "agent:main:telegram:group:-300:topic:7"
	var res struct {
		OK      bool           `json:"ok"`
		Details map[string]any `json:"details"`
	}
	if err := c.Call(ctx, "tools.invoke", map[string]any{"tool": "sessions_spawn", "sessionKey": topic,
		"args": map[string]any{"task": "research\n/reply child found 42"}}, &res); err != nil || res.Details["status"] != "accepted" {
		t.Fatalf("spawn = %v %+v", err, res)
	}
	deadline := time.Now().Add(30 * time.Second)
	for n := 2; ; n++ {
		s := fake.WaitSent(t, n, time.Until(deadline))[n-1]
		if s.ChatID != "-300" || s.ThreadID != "7" {
			t.Fatalf("message outside the topic: %+v", s)
		}
		if strings.Contains(s.Text, "child found 42") {
			t.Logf("announce in the topic: %q", s.Text)
			return
		}
	}
}

// TestDMScopePerChannelPeer: with session.dmScope per-channel-peer each
// Telegram user gets a session of its own, keyed by the numeric user id.
// TestWhoamiInADM: /whoami from a private chat answers with the
// sender's numeric id (the allowFrom entry that admits them) and handle,
// without a model turn.
func TestWhoamiInADM(t *testing.T) {
	fake := tgfake.Start(t, botToken)
	_, c, _ := startGateway(t, fake, `dmPolicy: "open",`, "")
	waitConnected(t, c)
	fake.Push(tgfake.DM(31, "Ida", "/whoami"))
	sent := fake.WaitSent(t, 1, 20*time.Second)
	if want := "🧭 Identity\nChannel: telegram\nUser id: 31\nName: @ida\nAllowFrom: 31"; sent[0] != (tgfake.Sent{ChatID: "31", Text: want}) {
		t.Errorf("/whoami reply = %+v, want %q", sent[0], want)
	}
}

func TestDMScopePerChannelPeer(t *testing.T) {
	fake := tgfake.Start(t, botToken)
	_, c, _ := startGateway(t, fake, `dmPolicy: "open",`, `session: { dmScope: "per-channel-peer" },`)
	waitConnected(t, c)
	fake.Push(tgfake.DM(11, "Fay", "I am Fay"))
	fake.WaitSent(t, 1, 20*time.Second)
	fake.Push(tgfake.DM(12, "Gus", "I am Gus"))
	sent := fake.WaitSent(t, 2, 20*time.Second)
	if sent[0].ChatID != "11" || sent[1].ChatID != "12" {
		t.Errorf("replies = %+v", sent)
	}
	if h := history(t, c, "agent:main:telegram:direct:11"); !strings.Contains(h, "I am Fay") || strings.Contains(h, "I am Gus") {
		t.Errorf("fay's session = %s", h)
	}
}

// TestTopicToolsNarrowTheSession: a forum topic's tools.deny takes the
// tool away from its session's runs; another topic of the same group,
// without its own, runs it.
func TestTopicToolsNarrowTheSession(t *testing.T) {
	fake := tgfake.Start(t, botToken)
	rule := scripted.WhenRule("list please", scripted.ToolDirective("sessions_list", nil))
	_, c, _ := startGateway(t, fake, fmt.Sprintf(`groups: { "-400": { allowFrom: ["*"], requireMention: false, systemPrompt: %q,
      topics: { "5": { tools: { deny: ["group:sessions"] } } } } },`, rule), "")
	waitConnected(t, c)
	fake.Push(tgfake.Topic(-400, 4, 8, "Bob", "list please"))
	open := fake.WaitSent(t, 1, 20*time.Second)[0]
	fake.Push(tgfake.Topic(-400, 5, 8, "Bob", "list please"))
	locked := fake.WaitSent(t, 2, 20*time.Second)[1]
	if open.ThreadID != "4" || !strings.HasPrefix(open.Text, "tool sessions_list returned") || strings.Contains(open.Text, "not found") {
		t.Errorf("topic 4 reply = %+v, want the tool's result", open)
	}
	if locked.ThreadID != "5" || !strings.Contains(locked.Text, "Tool sessions_list not found") {
		t.Errorf("topic 5 reply = %+v, want the tool refused", locked)
	}
}
