package config

import (
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/lazy"
)

// Channels is the "channels" section. Switchboard reads the A2A, IRC and
// Telegram channels; other channels' keys are reported as unknown.
type Channels struct {
	A2A *A2AChannel `json:"a2a,omitempty"`
	IRC *IRCChannel `json:"irc,omitempty"`
	// Telegram is "channels.telegram".
	Telegram *TelegramChannel `json:"telegram,omitempty"`
	// Defaults holds what several channels share.
	Defaults *ChannelDefaults `json:"defaults,omitempty"`
}

// A2AChannel is "channels.a2a", with the reference's keys.
type A2AChannel struct {
	Enabled *bool `json:"enabled,omitempty"`
	// ConfigWrites is accepted for the reference's schema; Switchboard
	// never writes its config.
	ConfigWrites       *bool              `json:"configWrites,omitempty"`
	AdvertisedURL      string             `json:"advertisedUrl,omitempty"`
	ReplyTimeoutMs     *int               `json:"replyTimeoutMs,omitempty"`
	RateLimitPerMinute *int               `json:"rateLimitPerMinute,omitempty"`
	ExposeAgents       []string           `json:"exposeAgents,omitempty"`
	Peers              map[string]A2APeer `json:"peers,omitempty"`
}

// A2APeer is "channels.a2a.peers.<name>": the token the peer presents to
// us, and where and with which token we reach it.
type A2APeer struct {
	Token         string `json:"token,omitempty"`
	URL           string `json:"url,omitempty"`
	OutboundToken string `json:"outboundToken,omitempty"`
}

// A2A channel defaults and bounds, as the reference has them.
const (
	DefaultA2AReplyTimeout     = 120 * time.Second
	MinA2AReplyTimeoutMs       = 5000
	MaxA2AReplyTimeoutMs       = 600000
	DefaultA2ARateLimitPerMin  = 30
	a2aPeerNamePatternSource   = `^[a-z0-9][a-z0-9._-]{0,63}$`
	a2aURLSchemeProblemMessage = "must be an http:// or https:// URL, got %q"
)

var a2aPeerNamePattern = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(a2aPeerNamePatternSource) }}

// ValidA2APeerName reports whether name is a peer name the reference
// accepts (lower-case letters, digits, '.', '_', '-'; at most 64).
func ValidA2APeerName(name string) bool { return a2aPeerNamePattern.Get().MatchString(name) }

// A2APeerSettings is one peer with its "${ENV}" secrets expanded.
type A2APeerSettings struct {
	Name          string
	Token         string
	URL           string
	OutboundToken string
}

// A2ASettings is "channels.a2a" with defaults applied.
type A2ASettings struct {
	Enabled       bool
	AdvertisedURL string
	ReplyTimeout  time.Duration
	// RateLimitPerMinute is per peer; 0 turns the limit off.
	RateLimitPerMinute int
	// ExposeAgents empty exposes every agent.
	ExposeAgents []string
	// Peers are sorted by name.
	Peers []A2APeerSettings
}

// A2A returns the effective A2A channel settings. The channel is enabled
// when the section is present and enabled is not false.
func (c *Config) A2A() A2ASettings {
	a := c.Channels.A2A
	if a == nil {
		return A2ASettings{ReplyTimeout: DefaultA2AReplyTimeout, RateLimitPerMinute: DefaultA2ARateLimitPerMin}
	}
	s := A2ASettings{
		Enabled:            a.Enabled == nil || *a.Enabled,
		ReplyTimeout:       DefaultA2AReplyTimeout,
		RateLimitPerMinute: DefaultA2ARateLimitPerMin,
		ExposeAgents:       slices.Clone(a.ExposeAgents),
	}
	s.AdvertisedURL, _ = expandVars(strings.TrimSpace(a.AdvertisedURL), c.env)
	if a.ReplyTimeoutMs != nil {
		s.ReplyTimeout = time.Duration(*a.ReplyTimeoutMs) * time.Millisecond
	}
	if a.RateLimitPerMinute != nil {
		s.RateLimitPerMinute = *a.RateLimitPerMinute
	}
	for _, name := range slices.Sorted(maps.Keys(a.Peers)) {
		p := a.Peers[name]
		e := A2APeerSettings{Name: name}
		e.Token, _ = expandVars(p.Token, c.env)
		e.URL, _ = expandVars(strings.TrimSpace(p.URL), c.env)
		e.OutboundToken, _ = expandVars(p.OutboundToken, c.env)
		s.Peers = append(s.Peers, e)
	}
	return s
}

// a2a checks "channels.a2a".
func (k *checker) a2a() {
	a := k.c.Channels.A2A
	if a == nil {
		return
	}
	ap := path("channels", "a2a")
	k.httpURL(ap.key("advertisedUrl"), a.AdvertisedURL)
	k.intRange(ap.key("replyTimeoutMs"), a.ReplyTimeoutMs, MinA2AReplyTimeoutMs, MaxA2AReplyTimeoutMs)
	k.intMin(ap.key("rateLimitPerMinute"), a.RateLimitPerMinute, 0)
	tokens := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(a.Peers)) {
		p := a.Peers[name]
		pp := ap.key("peers").key(name)
		if !ValidA2APeerName(name) {
			k.fail(pp, "peer name must match %s (lower-case letters, digits, '.', '_', '-'; at most 64)", a2aPeerNamePatternSource)
		}
		if p.Token == "" {
			k.fail(pp.key("token"), "is required (the bearer token this peer presents)")
		} else {
			k.vars(pp.key("token"), p.Token)
			if tok, _ := expandVars(p.Token, k.c.env); tok != "" {
				if other, dup := tokens[tok]; dup {
					k.fail(pp.key("token"), "is the same as peer %q's token; each peer needs its own", other)
				}
				tokens[tok] = name
			}
		}
		k.httpURL(pp.key("url"), p.URL)
		if p.OutboundToken != "" {
			k.vars(pp.key("outboundToken"), p.OutboundToken)
		}
	}
}

// httpURL reports a problem when s is set and not an http(s) URL.
func (k *checker) httpURL(p keyPath, s string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return
	}
	k.vars(p, s)
	exp, _ := expandVars(s, k.c.env)
	if u, err := url.Parse(exp); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		k.fail(p, a2aURLSchemeProblemMessage, s)
	}
}
