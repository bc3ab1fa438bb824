package config

import (
	"cmp"
	"github.com/switchboardhq/switchboard/internal/lazy"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// TelegramChannel is "channels.telegram", with the reference's keys (one
// account). Long polling is the transport unless webhookUrl is set.
type TelegramChannel struct {
	Enabled   *bool  `json:"enabled,omitempty"`
	BotToken  string `json:"botToken,omitempty"`
	TokenFile string `json:"tokenFile,omitempty"`
	// APIRoot is the Bot API root ("https://api.telegram.org"), without
	// "/bot<TOKEN>"; a self-hosted Bot API server or a test's fake.
	APIRoot string `json:"apiRoot,omitempty"`

	DMPolicy       string                   `json:"dmPolicy,omitempty"`
	AllowFrom      []string                 `json:"allowFrom,omitempty"`
	GroupPolicy    string                   `json:"groupPolicy,omitempty"`
	GroupAllowFrom []string                 `json:"groupAllowFrom,omitempty"`
	Groups         map[string]TelegramGroup `json:"groups,omitempty"`
	// MentionPatterns are regular expressions that count as mentioning
	// the bot in groups, besides "@<bot username>" and replies to it.
	MentionPatterns []string `json:"mentionPatterns,omitempty"`
	TextChunkLimit  *int     `json:"textChunkLimit,omitempty"`

	// WebhookURL switches to webhook mode: the gateway registers it with
	// setWebhook and serves updates on WebhookPath of its own listener.
	WebhookURL    string `json:"webhookUrl,omitempty"`
	WebhookSecret string `json:"webhookSecret,omitempty"`
	WebhookPath   string `json:"webhookPath,omitempty"`
	// WebhookHost, WebhookPort and WebhookCertPath are accepted for the
	// reference's schema; Switchboard serves the webhook on the gateway's
	// listener, so they are not used.
	WebhookHost     string `json:"webhookHost,omitempty"`
	WebhookPort     *int   `json:"webhookPort,omitempty"`
	WebhookCertPath string `json:"webhookCertPath,omitempty"`

	BotLoopProtection *BotLoopProtection `json:"botLoopProtection,omitempty"`
}

// TelegramGroup is "channels.telegram.groups.<chatId>" and, under it,
// "topics.<threadId>" (a topic's own Topics is not used).
type TelegramGroup struct {
	Enabled        *bool    `json:"enabled,omitempty"`
	RequireMention *bool    `json:"requireMention,omitempty"`
	AllowFrom      []string `json:"allowFrom,omitempty"`
	// GroupPolicy overrides the channel's groupPolicy for this group.
	GroupPolicy  string `json:"groupPolicy,omitempty"`
	SystemPrompt string `json:"systemPrompt,omitempty"`
	// Tools narrows the tools of the group's (or topic's) session.
	Tools *GroupTools `json:"tools,omitempty"`
	// Topics are the forum topics' settings by thread id ("*" for the
	// topics without their own); they inherit the group's.
	Topics map[string]TelegramGroup `json:"topics,omitempty"`
}

// Telegram defaults, as the reference has them.
const (
	EnvTelegramBotToken           = "TELEGRAM_BOT_TOKEN"
	DefaultTelegramAPIRoot        = "https://api.telegram.org"
	DefaultTelegramWebhookPath    = "/telegram-webhook"
	DefaultTelegramTextChunkLimit = 4000
	// TelegramMaxMessage is the Bot API's sendMessage text limit.
	TelegramMaxMessage = 4096
)

// TelegramGroupSettings is one group's (or topic's) settings.
type TelegramGroupSettings struct {
	Enabled        *bool
	RequireMention *bool
	AllowFrom      []string
	GroupPolicy    string
	SystemPrompt   string
	// Tools is nil when the group (or topic) does not narrow the tools.
	Tools *GroupTools
	// Topics are by thread id or "*"; nil for a topic.
	Topics map[string]TelegramGroupSettings
}

// TelegramSettings is "channels.telegram" with defaults applied and
// "${ENV}" references expanded.
type TelegramSettings struct {
	// Enabled is true when the section is present with a token (or token
	// file) and enabled is not false.
	Enabled             bool
	BotToken, TokenFile string
	APIRoot             string
	DMPolicy            string
	GroupPolicy         string
	AllowFrom           []string
	GroupAllowFrom      []string
	Groups              map[string]TelegramGroupSettings // by chat id or "*"
	MentionPatterns     []string
	TextChunkLimit      int
	WebhookURL          string
	WebhookSecret       string
	WebhookPath         string
	// BotLoop is the channel's guard: built-in defaults, then
	// channels.defaults.botLoopProtection, then channels.telegram's.
	BotLoop BotLoopSettings
}

// Telegram returns the effective Telegram channel settings.
func (c *Config) Telegram() TelegramSettings {
	r := c.Channels.Telegram
	loop := BotLoopSettings{Enabled: true, MaxEvents: DefaultBotLoopMaxEvents, Window: DefaultBotLoopWindow, Cooldown: DefaultBotLoopCooldown}
	if d := c.Channels.Defaults; d != nil {
		loop = loop.layer(d.BotLoopProtection)
	}
	if r == nil {
		return TelegramSettings{BotLoop: loop}
	}
	x := func(s string) string { v, _ := expandVars(strings.TrimSpace(s), c.env); return v }
	s := TelegramSettings{
		BotToken: x(r.BotToken), TokenFile: x(r.TokenFile), APIRoot: strings.TrimRight(x(r.APIRoot), "/"),
		DMPolicy: cmp.Or(norm(r.DMPolicy), "pairing"), GroupPolicy: cmp.Or(norm(r.GroupPolicy), "allowlist"),
		AllowFrom: slices.Clone(r.AllowFrom), GroupAllowFrom: slices.Clone(r.GroupAllowFrom),
		Groups: map[string]TelegramGroupSettings{}, MentionPatterns: slices.Clone(r.MentionPatterns),
		TextChunkLimit: DefaultTelegramTextChunkLimit,
		WebhookURL:     x(r.WebhookURL), WebhookSecret: x(r.WebhookSecret), WebhookPath: x(r.WebhookPath),
		BotLoop: loop.layer(r.BotLoopProtection),
	}
	if r.GroupAllowFrom == nil { // the reference falls back to allowFrom
		s.GroupAllowFrom = slices.Clone(r.AllowFrom)
	}
	if s.BotToken == "" && s.TokenFile == "" {
		s.BotToken = strings.TrimSpace(c.env.get(EnvTelegramBotToken))
	}
	s.Enabled = (r.Enabled == nil || *r.Enabled) && (s.BotToken != "" || s.TokenFile != "")
	if s.APIRoot == "" {
		s.APIRoot = DefaultTelegramAPIRoot
	}
	if s.WebhookPath == "" {
		s.WebhookPath = DefaultTelegramWebhookPath
		if u, err := url.Parse(s.WebhookURL); err == nil && s.WebhookURL != "" && u.Path != "" && u.Path != "/" {
			s.WebhookPath = u.Path
		}
	}
	if r.TextChunkLimit != nil {
		s.TextChunkLimit = *r.TextChunkLimit
	}
	for id, g := range r.Groups {
		s.Groups[strings.TrimSpace(id)] = telegramGroup(g, true)
	}
	return s
}

func telegramGroup(g TelegramGroup, topics bool) TelegramGroupSettings {
	out := TelegramGroupSettings{
		Enabled: g.Enabled, RequireMention: g.RequireMention, AllowFrom: slices.Clone(g.AllowFrom),
		GroupPolicy: norm(g.GroupPolicy), SystemPrompt: g.SystemPrompt, Tools: cloneGroupTools(g.Tools),
	}
	if topics && len(g.Topics) > 0 {
		out.Topics = map[string]TelegramGroupSettings{}
		for id, t := range g.Topics {
			out.Topics[strings.TrimSpace(id)] = telegramGroup(t, false)
		}
	}
	return out
}

var (
	telegramChatID = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`^-?[0-9]{1,20}$`) }}
	telegramTopic  = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]{1,12}$`) }}
	// telegramSecret is what setWebhook accepts as secret_token.
	telegramSecret = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`) }}
)

// telegram checks "channels.telegram".
func (k *checker) telegram() {
	r := k.c.Channels.Telegram
	if r == nil {
		return
	}
	p := path("channels", "telegram")
	k.botLoop(p.key("botLoopProtection"), r.BotLoopProtection)
	on := r.Enabled == nil || *r.Enabled
	for _, f := range []struct{ key, v string }{
		{"botToken", r.BotToken}, {"tokenFile", r.TokenFile}, {"apiRoot", r.APIRoot},
		{"webhookUrl", r.WebhookURL}, {"webhookSecret", r.WebhookSecret}, {"webhookPath", r.WebhookPath},
	} {
		k.vars(p.key(f.key), f.v)
	}
	if r.BotToken != "" && r.TokenFile != "" {
		k.fail(p.key("tokenFile"), "set botToken or tokenFile, not both")
	}
	if on && strings.TrimSpace(r.BotToken) == "" && strings.TrimSpace(r.TokenFile) == "" && strings.TrimSpace(k.c.env.get(EnvTelegramBotToken)) == "" {
		k.fail(p.key("botToken"), "is required when the Telegram channel is enabled (or set tokenFile or %s)", EnvTelegramBotToken)
	}
	if r.APIRoot != "" {
		k.httpURL(p.key("apiRoot"), r.APIRoot)
		if strings.Contains(r.APIRoot, "/bot") {
			k.fail(p.key("apiRoot"), "is the Bot API root only; leave out /bot<TOKEN>")
		}
	}
	k.enum(p.key("dmPolicy"), r.DMPolicy, "pairing", "allowlist", "open", "disabled")
	k.enum(p.key("groupPolicy"), r.GroupPolicy, "allowlist", "open", "disabled")
	if norm(r.DMPolicy) == "allowlist" && len(r.AllowFrom) == 0 {
		k.fail(p.key("allowFrom"), "needs at least one user id when dmPolicy is \"allowlist\"")
	}
	for _, id := range slices.Sorted(maps.Keys(r.Groups)) {
		gp := p.key("groups").key(id)
		if id != "*" && !telegramChatID.Get().MatchString(strings.TrimSpace(id)) {
			k.fail(gp, "must be a numeric Telegram chat id (such as \"-1001234567890\") or \"*\"")
		}
		g := r.Groups[id]
		k.enum(gp.key("groupPolicy"), g.GroupPolicy, "allowlist", "open", "disabled")
		for _, tid := range slices.Sorted(maps.Keys(g.Topics)) {
			tp := gp.key("topics").key(tid)
			if tid != "*" && !telegramTopic.Get().MatchString(strings.TrimSpace(tid)) {
				k.fail(tp, "must be a numeric forum topic (thread) id or \"*\"")
			}
			k.enum(tp.key("groupPolicy"), g.Topics[tid].GroupPolicy, "allowlist", "open", "disabled")
			if len(g.Topics[tid].Topics) > 0 {
				k.fail(tp.key("topics"), "topics do not nest")
			}
		}
	}
	for i, pat := range r.MentionPatterns {
		if _, err := regexp.Compile("(?i)" + pat); err != nil {
			k.fail(p.key("mentionPatterns").index(i), "is not a valid regular expression: %v", err)
		}
	}
	k.intRange(p.key("textChunkLimit"), r.TextChunkLimit, 1, TelegramMaxMessage)
	if r.WebhookURL != "" {
		k.httpURL(p.key("webhookUrl"), r.WebhookURL)
		if strings.TrimSpace(r.WebhookSecret) == "" {
			k.fail(p.key("webhookSecret"), "is required when webhookUrl is set")
		}
	}
	if sec, err := expandVars(strings.TrimSpace(r.WebhookSecret), k.c.env); err == nil && sec != "" && sec != redacted && !telegramSecret.Get().MatchString(sec) {
		k.fail(p.key("webhookSecret"), "must be 1-256 characters of A-Z, a-z, 0-9, _ and -")
	}
	k.webhookPath(p, r)
	k.intRange(p.key("webhookPort"), r.WebhookPort, 1, 65535)
}

// webhookPath checks the path the webhook is served on (webhookPath, else
// webhookUrl's path): a plain URL path that is none of the gateway's own.
func (k *checker) webhookPath(p keyPath, r *TelegramChannel) {
	key, wp := p.key("webhookPath"), strings.TrimSpace(r.WebhookPath)
	if wp == "" {
		u, err := url.Parse(strings.TrimSpace(r.WebhookURL))
		if err != nil || u.Path == "" || u.Path == "/" {
			return
		}
		key, wp = p.key("webhookUrl"), u.Path
	}
	if !strings.HasPrefix(wp, "/") || strings.ContainsAny(wp, " {}?#\t\r\n") || strings.HasSuffix(wp, "/") {
		k.fail(key, "must be a URL path such as %q, got %q", DefaultTelegramWebhookPath, wp)
		return
	}
	hooks := cmp.Or(strings.TrimRight(strings.TrimSpace(k.c.Hooks.Path), "/"), "/hooks")
	own := []string{"/healthz", "/health", "/readyz", "/ready", "/metrics", "/mcp", "/tools/invoke"}
	for _, prefix := range []string{"/v1/", "/a2a/", "/ui/", "/.well-known/", hooks + "/"} {
		if strings.HasPrefix(wp+"/", prefix) {
			own = append(own, wp)
		}
	}
	if slices.Contains(own, wp) {
		k.fail(key, "%q is one of the gateway's own paths; choose another webhook path", wp)
	}
}
