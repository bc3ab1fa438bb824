package config

import (
	"cmp"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/lazy"
)

// IRCChannel is "channels.irc", with the reference's keys (one account).
type IRCChannel struct {
	Enabled      *bool    `json:"enabled,omitempty"`
	Host         string   `json:"host,omitempty"`
	Port         *int     `json:"port,omitempty"`
	TLS          *bool    `json:"tls,omitempty"`
	Nick         string   `json:"nick,omitempty"`
	Username     string   `json:"username,omitempty"`
	Realname     string   `json:"realname,omitempty"`
	Password     string   `json:"password,omitempty"`
	PasswordFile string   `json:"passwordFile,omitempty"`
	Channels     []string `json:"channels,omitempty"`

	DMPolicy                     string              `json:"dmPolicy,omitempty"`
	AllowFrom                    []string            `json:"allowFrom,omitempty"`
	GroupPolicy                  string              `json:"groupPolicy,omitempty"`
	GroupAllowFrom               []string            `json:"groupAllowFrom,omitempty"`
	Groups                       map[string]IRCGroup `json:"groups,omitempty"`
	DangerouslyAllowNameMatching *bool               `json:"dangerouslyAllowNameMatching,omitempty"`
	MentionPatterns              []string            `json:"mentionPatterns,omitempty"`
	TextChunkLimit               *int                `json:"textChunkLimit,omitempty"`
	NickServ                     *IRCNickServ        `json:"nickserv,omitempty"`
	BotLoopProtection            *BotLoopProtection  `json:"botLoopProtection,omitempty"`
}

// ChannelDefaults is "channels.defaults".
type ChannelDefaults struct {
	BotLoopProtection *BotLoopProtection `json:"botLoopProtection,omitempty"`
}

// BotLoopProtection is a "botLoopProtection" block; unset keys inherit
// from the wider block.
type BotLoopProtection struct {
	Enabled            *bool `json:"enabled,omitempty"`
	MaxEventsPerWindow *int  `json:"maxEventsPerWindow,omitempty"`
	WindowSeconds      *int  `json:"windowSeconds,omitempty"`
	CooldownSeconds    *int  `json:"cooldownSeconds,omitempty"`
}

// BotLoopSettings is a resolved bot-pair loop guard.
type BotLoopSettings struct {
	Enabled          bool
	MaxEvents        int
	Window, Cooldown time.Duration
}

// Bot-loop protection defaults, as the reference has them.
const (
	DefaultBotLoopMaxEvents = 20
	DefaultBotLoopWindow    = 60 * time.Second
	DefaultBotLoopCooldown  = 60 * time.Second
)

// layer applies b's set keys over s.
func (s BotLoopSettings) layer(b *BotLoopProtection) BotLoopSettings {
	if b == nil {
		return s
	}
	if b.Enabled != nil {
		s.Enabled = *b.Enabled
	}
	if b.MaxEventsPerWindow != nil {
		s.MaxEvents = *b.MaxEventsPerWindow
	}
	if b.WindowSeconds != nil {
		s.Window = time.Duration(*b.WindowSeconds) * time.Second
	}
	if b.CooldownSeconds != nil {
		s.Cooldown = time.Duration(*b.CooldownSeconds) * time.Second
	}
	return s
}

// botLoop checks one botLoopProtection block.
func (k *checker) botLoop(p keyPath, b *BotLoopProtection) {
	if b == nil {
		return
	}
	k.intMin(p.key("maxEventsPerWindow"), b.MaxEventsPerWindow, 1)
	k.intMin(p.key("windowSeconds"), b.WindowSeconds, 1)
	k.intMin(p.key("cooldownSeconds"), b.CooldownSeconds, 0)
}

// IRCGroup is "channels.irc.groups.<room>".
type IRCGroup struct {
	Enabled        *bool    `json:"enabled,omitempty"`
	RequireMention *bool    `json:"requireMention,omitempty"`
	AllowFrom      []string `json:"allowFrom,omitempty"`
	SystemPrompt   string   `json:"systemPrompt,omitempty"`
	// BotLoopProtection overrides the channel's for this room.
	BotLoopProtection *BotLoopProtection `json:"botLoopProtection,omitempty"`
	// Tools narrows the tools of the room's session.
	Tools *GroupTools `json:"tools,omitempty"`
}

// GroupTools is a room's "tools": tool names, "group:…" groups or globs
// its session may (allow; empty allows all) and may not (deny) use, on
// top of the agent's own policy.
type GroupTools struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// IRCNickServ is "channels.irc.nickserv".
type IRCNickServ struct {
	Enabled       *bool  `json:"enabled,omitempty"`
	Service       string `json:"service,omitempty"`
	Password      string `json:"password,omitempty"`
	PasswordFile  string `json:"passwordFile,omitempty"`
	Register      *bool  `json:"register,omitempty"`
	RegisterEmail string `json:"registerEmail,omitempty"`
}

// Environment variables that fill channels.irc keys left unset, as the
// reference's default account reads them.
const (
	EnvIRCHost                  = "IRC_HOST"
	EnvIRCPort                  = "IRC_PORT"
	EnvIRCTLS                   = "IRC_TLS"
	EnvIRCNick                  = "IRC_NICK"
	EnvIRCUsername              = "IRC_USERNAME"
	EnvIRCRealname              = "IRC_REALNAME"
	EnvIRCPassword              = "IRC_PASSWORD"
	EnvIRCChannels              = "IRC_CHANNELS"
	EnvIRCNickServPassword      = "IRC_NICKSERV_PASSWORD"
	EnvIRCNickServRegisterEmail = "IRC_NICKSERV_REGISTER_EMAIL"
)

// parseEnvBool reads an environment flag (true/false, 1/0, yes/no, on/off).
func parseEnvBool(v string) (value, ok bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "1", "yes", "on":
		return true, true
	case "false", "0", "no", "off":
		return false, true
	}
	return false, false
}

// IRC defaults, as the reference has them.
const (
	DefaultIRCPortTLS        = 6697
	DefaultIRCPortPlain      = 6667
	DefaultIRCRealname       = "OpenClaw"
	DefaultIRCUsername       = "openclaw"
	DefaultIRCNickServ       = "NickServ"
	DefaultIRCTextChunkLimit = 350
	ircChunkLimitMax         = 4000
)

// IRCGroupSettings is one room's settings.
type IRCGroupSettings struct {
	Enabled        *bool
	RequireMention *bool
	AllowFrom      []string
	SystemPrompt   string
	// BotLoop is the room's guard, layered over the channel's.
	BotLoop BotLoopSettings
	// Tools is nil when the room does not narrow the tools.
	Tools *GroupTools
}

// IRCSettings is "channels.irc" with defaults applied and "${ENV}"
// references expanded.
type IRCSettings struct {
	// Enabled is true when the section is present with a host and nick
	// and enabled is not false.
	Enabled                   bool
	Host                      string
	Port                      int
	TLS                       bool
	Nick, Username, Realname  string
	Password, PasswordFile    string
	Channels                  []string
	DMPolicy, GroupPolicy     string
	AllowFrom, GroupAllowFrom []string
	Groups                    map[string]IRCGroupSettings // by lower-cased room
	AllowNameMatching         bool
	MentionPatterns           []string
	TextChunkLimit            int
	NickServEnabled           bool
	NickServService           string
	NickServPassword          string
	NickServPasswordFile      string
	NickServRegister          bool
	NickServRegisterEmail     string
	// BotLoop is the channel's guard: built-in defaults, then
	// channels.defaults.botLoopProtection, then channels.irc's.
	BotLoop BotLoopSettings
}

// IRC returns the effective IRC channel settings.
func (c *Config) IRC() IRCSettings {
	r := c.Channels.IRC
	loop := BotLoopSettings{Enabled: true, MaxEvents: DefaultBotLoopMaxEvents, Window: DefaultBotLoopWindow, Cooldown: DefaultBotLoopCooldown}
	if d := c.Channels.Defaults; d != nil {
		loop = loop.layer(d.BotLoopProtection)
	}
	if r == nil {
		return IRCSettings{BotLoop: loop}
	}
	x := func(s string) string { v, _ := expandVars(strings.TrimSpace(s), c.env); return v }
	e := func(name string) string { return strings.TrimSpace(c.env.get(name)) }
	s := IRCSettings{
		Host: cmp.Or(x(r.Host), e(EnvIRCHost)), Nick: cmp.Or(x(r.Nick), e(EnvIRCNick)),
		Username: cmp.Or(x(r.Username), e(EnvIRCUsername)), Realname: cmp.Or(x(r.Realname), e(EnvIRCRealname)),
		Password: x(r.Password), PasswordFile: x(r.PasswordFile),
		TLS: r.TLS == nil || *r.TLS, DMPolicy: norm(r.DMPolicy), GroupPolicy: norm(r.GroupPolicy),
		AllowFrom: slices.Clone(r.AllowFrom), GroupAllowFrom: slices.Clone(r.GroupAllowFrom),
		AllowNameMatching: r.DangerouslyAllowNameMatching != nil && *r.DangerouslyAllowNameMatching,
		MentionPatterns:   slices.Clone(r.MentionPatterns), TextChunkLimit: DefaultIRCTextChunkLimit,
		Groups: map[string]IRCGroupSettings{}, BotLoop: loop.layer(r.BotLoopProtection),
	}
	if s.Password == "" && s.PasswordFile == "" {
		s.Password = c.env.get(EnvIRCPassword)
	}
	if v, ok := parseEnvBool(e(EnvIRCTLS)); ok && r.TLS == nil {
		s.TLS = v
	}
	s.Enabled = (r.Enabled == nil || *r.Enabled) && s.Host != "" && s.Nick != ""
	if s.DMPolicy == "" {
		s.DMPolicy = "pairing"
	}
	if s.GroupPolicy == "" {
		s.GroupPolicy = "allowlist"
	}
	s.Port = DefaultIRCPortPlain
	if s.TLS {
		s.Port = DefaultIRCPortTLS
	}
	if r.Port != nil {
		s.Port = *r.Port
	} else if n, err := strconv.Atoi(e(EnvIRCPort)); err == nil && n >= 1 && n <= 65535 {
		s.Port = n
	}
	if s.Username == "" {
		s.Username = s.Nick
	}
	if s.Username == "" {
		s.Username = DefaultIRCUsername
	}
	if s.Realname == "" {
		s.Realname = DefaultIRCRealname
	}
	if r.TextChunkLimit != nil {
		s.TextChunkLimit = *r.TextChunkLimit
	}
	chans := r.Channels
	if len(chans) == 0 {
		chans = strings.Split(e(EnvIRCChannels), ",")
	}
	for _, ch := range chans {
		if ch = strings.TrimSpace(ch); ch != "" {
			s.Channels = append(s.Channels, ch)
		}
	}
	for _, room := range slices.Sorted(maps.Keys(r.Groups)) {
		g := r.Groups[room]
		s.Groups[strings.ToLower(strings.TrimSpace(room))] = IRCGroupSettings{
			Enabled: g.Enabled, RequireMention: g.RequireMention, AllowFrom: slices.Clone(g.AllowFrom), SystemPrompt: g.SystemPrompt,
			BotLoop: s.BotLoop.layer(g.BotLoopProtection), Tools: cloneGroupTools(g.Tools),
		}
	}
	n := r.NickServ
	if n == nil {
		n = &IRCNickServ{}
	}
	s.NickServService = x(n.Service)
	s.NickServPassword, s.NickServPasswordFile = x(n.Password), x(n.PasswordFile)
	if s.NickServPassword == "" && s.NickServPasswordFile == "" {
		s.NickServPassword = c.env.get(EnvIRCNickServPassword)
	}
	s.NickServEnabled = (n.Enabled == nil || *n.Enabled) && (s.NickServPassword != "" || s.NickServPasswordFile != "")
	s.NickServRegister = n.Register != nil && *n.Register
	s.NickServRegisterEmail = cmp.Or(x(n.RegisterEmail), e(EnvIRCNickServRegisterEmail))
	if s.NickServService == "" {
		s.NickServService = DefaultIRCNickServ
	}
	return s
}

func cloneGroupTools(t *GroupTools) *GroupTools {
	if t == nil {
		return nil
	}
	return &GroupTools{Allow: slices.Clone(t.Allow), Deny: slices.Clone(t.Deny)}
}

// ircNickPattern is a conservative RFC 2812 nick.
func ircNickPattern() *regexp.Regexp { return ircNickPatternValue.Get() }

// ircNickPatternValue is built on the first call of ircNickPattern.
var ircNickPatternValue = lazy.Value[*regexp.Regexp]{New: buildIrcNickPattern}

// buildIrcNickPattern builds ircNickPattern's value.
func buildIrcNickPattern() *regexp.Regexp {
	return regexp.MustCompile("^[A-Za-z\\[\\]\\\\`_^{|}][A-Za-z0-9\\[\\]\\\\`_^{|}-]{0,29}$")
}

// irc checks "channels.irc" and "channels.defaults".
func (k *checker) irc() {
	if d := k.c.Channels.Defaults; d != nil {
		k.botLoop(path("channels", "defaults", "botLoopProtection"), d.BotLoopProtection)
	}
	r := k.c.Channels.IRC
	if r == nil {
		return
	}
	p := path("channels", "irc")
	k.botLoop(p.key("botLoopProtection"), r.BotLoopProtection)
	on := r.Enabled == nil || *r.Enabled
	env := func(name string) string { return strings.TrimSpace(k.c.env.get(name)) }
	if on && strings.TrimSpace(r.Host) == "" && env(EnvIRCHost) == "" {
		k.fail(p.key("host"), "is required when the IRC channel is enabled (or set %s)", EnvIRCHost)
	}
	if v := env(EnvIRCPort); v != "" && r.Port == nil {
		if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 65535 {
			k.fail(p.key("port"), "%s=%q: must be between 1 and 65535", EnvIRCPort, v)
		}
	}
	if v := env(EnvIRCTLS); v != "" && r.TLS == nil {
		if _, ok := parseEnvBool(v); !ok {
			k.fail(p.key("tls"), "%s=%q: must be true or false", EnvIRCTLS, v)
		}
	}
	if len(r.Channels) == 0 {
		for ch := range strings.SplitSeq(env(EnvIRCChannels), ",") {
			if ch = strings.TrimSpace(ch); ch != "" && !validIRCRoom(ch) {
				k.fail(p.key("channels"), "%s: %q is not an IRC channel name such as \"#room\"", EnvIRCChannels, ch)
			}
		}
	}
	if strings.ContainsAny(r.Host, " \r\n/") {
		k.fail(p.key("host"), "must be a host name, got %q", r.Host)
	}
	k.vars(p.key("host"), r.Host)
	k.intRange(p.key("port"), r.Port, 1, 65535)
	if on && strings.TrimSpace(r.Nick) == "" && env(EnvIRCNick) == "" {
		k.fail(p.key("nick"), "is required when the IRC channel is enabled (or set %s)", EnvIRCNick)
	}
	k.vars(p.key("nick"), r.Nick)
	nick, _ := expandVars(strings.TrimSpace(r.Nick), k.c.env)
	if nick = cmp.Or(nick, env(EnvIRCNick)); nick != "" && !ircNickPattern().MatchString(nick) {
		k.fail(p.key("nick"), "must be an IRC nick (a letter or one of []\\`_^{|} then letters, digits or those, at most 30), got %q", nick)
	}
	for _, f := range []struct{ key, v string }{{"username", r.Username}, {"realname", r.Realname}} {
		k.vars(p.key(f.key), f.v)
		if strings.ContainsAny(f.v, "\r\n\x00") {
			k.fail(p.key(f.key), "must not contain line breaks")
		}
	}
	if strings.ContainsAny(r.Username, " @") {
		k.fail(p.key("username"), "must not contain spaces or '@', got %q", r.Username)
	}
	k.vars(p.key("password"), r.Password)
	k.vars(p.key("passwordFile"), r.PasswordFile)
	if r.Password != "" && r.PasswordFile != "" {
		k.fail(p.key("passwordFile"), "set password or passwordFile, not both")
	}
	for i, ch := range r.Channels {
		if !validIRCRoom(strings.TrimSpace(ch)) {
			k.fail(p.key("channels").index(i), "must be an IRC channel name such as \"#room\", got %q", ch)
		}
	}
	k.enum(p.key("dmPolicy"), r.DMPolicy, "pairing", "allowlist", "open", "disabled")
	k.enum(p.key("groupPolicy"), r.GroupPolicy, "allowlist", "open", "disabled")
	for _, room := range slices.Sorted(maps.Keys(r.Groups)) {
		if room != "*" && !validIRCRoom(room) {
			k.fail(p.key("groups").key(room), "must be an IRC channel name such as \"#room\" or \"*\"")
		}
		k.botLoop(p.key("groups").key(room).key("botLoopProtection"), r.Groups[room].BotLoopProtection)
	}
	for i, pat := range r.MentionPatterns {
		if _, err := regexp.Compile("(?i)" + pat); err != nil {
			k.fail(p.key("mentionPatterns").index(i), "is not a valid regular expression: %v", err)
		}
	}
	k.intRange(p.key("textChunkLimit"), r.TextChunkLimit, 1, ircChunkLimitMax)
	if n := r.NickServ; n != nil {
		np := p.key("nickserv")
		k.vars(np.key("password"), n.Password)
		k.vars(np.key("passwordFile"), n.PasswordFile)
		if n.Password != "" && n.PasswordFile != "" {
			k.fail(np.key("passwordFile"), "set password or passwordFile, not both")
		}
		if n.Register != nil && *n.Register && strings.TrimSpace(n.RegisterEmail) == "" {
			k.fail(np.key("registerEmail"), "is required when register is true")
		}
		if strings.ContainsAny(n.Service, " \r\n") {
			k.fail(np.key("service"), "must be a nick, got %q", n.Service)
		}
	}
}

// validIRCRoom reports whether s is a channel name: a '#', '&', '+' or
// '!' prefix and no space, comma, colon, BEL, CR, LF or NUL.
func validIRCRoom(s string) bool {
	return len(s) > 1 && len(s) <= 200 && strings.IndexByte("#&+!", s[0]) >= 0 && !strings.ContainsAny(s, " ,:\a\r\n\x00")
}
