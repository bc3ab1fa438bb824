package config

import (
	"strings"
	"testing"
)

func TestTelegramSettings(t *testing.T) {
	env := MapEnv(map[string]string{"HOME": t.TempDir(), "TG_TOKEN": "123:abc", "TG_SECRET": "s3cret_x"})
	c := mustParse(t, `{
  channels: { telegram: {
    botToken: "${TG_TOKEN}", apiRoot: "http://127.0.0.1:9/", dmPolicy: "allowlist", allowFrom: ["tg:42", "7"],
    groups: {
      "-1001": { requireMention: false, systemPrompt: "be brief",
        topics: { "3": { requireMention: true, allowFrom: ["9"] }, "*": { enabled: false } } },
      "*": { groupPolicy: "open" },
    },
    textChunkLimit: 1000, webhookUrl: "https://bot.example.com/tg/updates", webhookSecret: "${TG_SECRET}",
    webhookHost: "0.0.0.0", webhookPort: 8787,
  } },
}`, env)
	s := c.Telegram()
	if !s.Enabled || s.BotToken != "123:abc" || s.APIRoot != "http://127.0.0.1:9" || s.DMPolicy != "allowlist" ||
		s.GroupPolicy != "allowlist" || s.TextChunkLimit != 1000 || s.WebhookSecret != "s3cret_x" || s.WebhookPath != "/tg/updates" {
		t.Fatalf("settings = %+v", s)
	}
	if strings.Join(s.GroupAllowFrom, ",") != "tg:42,7" {
		t.Errorf("groupAllowFrom = %q, want allowFrom's", s.GroupAllowFrom)
	}
	g := s.Groups["-1001"]
	if g.RequireMention == nil || *g.RequireMention || g.SystemPrompt != "be brief" || len(g.Topics) != 2 ||
		g.Topics["3"].AllowFrom[0] != "9" || g.Topics["*"].Enabled == nil || s.Groups["*"].GroupPolicy != "open" {
		t.Errorf("groups = %+v", s.Groups)
	}
	if r := c.Redacted().Channels.Telegram; r.BotToken != "${TG_TOKEN}" || r.WebhookSecret != "${TG_SECRET}" {
		t.Errorf("redacted = %+v", r)
	}
	red := mustParse(t, `{channels: {telegram: {botToken: "1:x", webhookUrl: "https://h/tg", webhookSecret: "abc"}}}`, env).Redacted()
	if r := red.Channels.Telegram; r.BotToken != "***" || r.WebhookSecret != "***" {
		t.Errorf("redacted = %+v", r)
	}
	if err := red.Validate(); err != nil {
		t.Errorf("redacted config does not validate: %v", err)
	}

	d := mustParse(t, `{channels: {telegram: {}}}`, MapEnv(map[string]string{"HOME": t.TempDir(), "TELEGRAM_BOT_TOKEN": "9:env"})).Telegram()
	if !d.Enabled || d.BotToken != "9:env" || d.APIRoot != DefaultTelegramAPIRoot || d.DMPolicy != "pairing" ||
		d.GroupPolicy != "allowlist" || d.TextChunkLimit != DefaultTelegramTextChunkLimit || d.WebhookPath != DefaultTelegramWebhookPath || d.WebhookURL != "" {
		t.Errorf("defaults = %+v", d)
	}
	if off := mustParse(t, `{channels: {telegram: {enabled: false}}}`, env).Telegram(); off.Enabled {
		t.Errorf("disabled section enabled: %+v", off)
	}
	if none := mustParse(t, `{}`, env).Telegram(); none.Enabled {
		t.Errorf("absent section: %+v", none)
	}
}

func TestTelegramInvalid(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`{channels: {telegram: {}}}`, "channels.telegram.botToken: is required"},
		{`{channels: {telegram: {botToken: "a", tokenFile: "/f"}}}`, "set botToken or tokenFile, not both"},
		{`{channels: {telegram: {botToken: "a", dmPolicy: "everyone"}}}`, "channels.telegram.dmPolicy: must be one of"},
		{`{channels: {telegram: {botToken: "a", dmPolicy: "allowlist"}}}`, "channels.telegram.allowFrom: needs at least one"},
		{`{channels: {telegram: {botToken: "a", groupPolicy: "x"}}}`, "channels.telegram.groupPolicy: must be one of"},
		{`{channels: {telegram: {botToken: "a", groups: {mygroup: {}}}}}`, "channels.telegram.groups.mygroup: must be a numeric Telegram chat id"},
		{`{channels: {telegram: {botToken: "a", groups: {"-1": {topics: {general: {}}}}}}}`, "must be a numeric forum topic"},
		{`{channels: {telegram: {botToken: "a", groups: {"-1": {groupPolicy: "x"}}}}}`, "groupPolicy: must be one of"},
		{`{channels: {telegram: {botToken: "a", mentionPatterns: ["("]}}}`, "is not a valid regular expression"},
		{`{channels: {telegram: {botToken: "a", textChunkLimit: 5000}}}`, "channels.telegram.textChunkLimit: must be between"},
		{`{channels: {telegram: {botToken: "a", webhookUrl: "https://x.example/tg"}}}`, "channels.telegram.webhookSecret: is required"},
		{`{channels: {telegram: {botToken: "a", webhookUrl: "x", webhookSecret: "s"}}}`, "channels.telegram.webhookUrl"},
		{`{channels: {telegram: {botToken: "a", webhookSecret: "has space"}}}`, "must be 1-256 characters"},
		{`{channels: {telegram: {botToken: "a", webhookPath: "/healthz"}}}`, "is one of the gateway's own paths"},
		{`{channels: {telegram: {botToken: "a", webhookPath: "nope"}}}`, "must be a URL path"},
		{`{channels: {telegram: {botToken: "a", webhookUrl: "https://x.example/v1/chat/completions", webhookSecret: "s"}}}`, "channels.telegram.webhookUrl: \"/v1/chat/completions\" is one of the gateway's own paths"},
		{`{channels: {telegram: {botToken: "a", webhookPath: "/hooks/tg"}}}`, "is one of the gateway's own paths"},
		{`{hooks: {path: "/in"}, channels: {telegram: {botToken: "a", webhookPath: "/in/tg"}}}`, "is one of the gateway's own paths"},
		{`{channels: {telegram: {botToken: "a", webhookPath: "/a/{x}"}}}`, "must be a URL path"},
		{`{channels: {telegram: {botToken: "a", apiRoot: "https://api.telegram.org/bot1:x"}}}`, "leave out /bot<TOKEN>"},
		{`{channels: {telegram: {botToken: "${NOPE_UNSET}"}}}`, "environment variable NOPE_UNSET is not set"},
	} {
		_, _, err := Parse("test.json5", []byte(tc.src), MapEnv(map[string]string{"HOME": t.TempDir()}))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.src, err, tc.want)
		}
	}
}
