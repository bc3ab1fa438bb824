package config

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// SecretValues returns every secret value the configuration holds, with
// "${ENV}" references expanded and the environment's overrides applied:
// provider API keys and header values, the gateway's token and password,
// the hooks token, A2A peer tokens (both directions), the Telegram bot
// token (inline, from TELEGRAM_BOT_TOKEN or read from tokenFile) and
// webhook secret, the IRC and NickServ passwords (inline, from the
// environment or read from passwordFile), and MCP servers' header and
// environment values. Texts that leave the gateway are masked by these
// values (package secrets); the order is unspecified.
func (c *Config) SecretValues() []string {
	var out []string
	add := func(vs ...string) {
		for _, v := range vs {
			if x, _ := expandVars(v, c.env); x != "" {
				out = append(out, x)
			}
		}
	}
	for _, p := range c.Providers() {
		add(p.APIKey)
		add(slices.Collect(maps.Values(p.Headers))...)
	}
	a := c.GatewayAuth()
	add(a.Token, a.Password, c.Hooks.Token)
	if ch := c.Channels.A2A; ch != nil {
		for _, p := range ch.Peers {
			add(p.Token, p.OutboundToken)
		}
	}
	// The channels' settings are resolved already: env fallbacks applied,
	// token and password files read as their connectors read them.
	resolved := func(inline, file string) {
		if inline != "" {
			out = append(out, inline)
		}
		if v, err := ReadSecretFile(file); err == nil && v != "" {
			out = append(out, v)
		}
	}
	if c.Channels.Telegram != nil {
		tg := c.Telegram()
		resolved(tg.BotToken, tg.TokenFile)
		resolved(tg.WebhookSecret, "")
	}
	if c.Channels.IRC != nil {
		irc := c.IRC()
		resolved(irc.Password, irc.PasswordFile)
		resolved(irc.NickServPassword, irc.NickServPasswordFile)
	}
	for _, s := range c.MCP.Servers {
		add(slices.Collect(maps.Values(s.Headers))...)
		add(slices.Collect(maps.Values(s.Env))...)
	}
	for _, e := range c.Skills.Entries {
		add(e.APIKey)
		add(slices.Collect(maps.Values(e.Env))...)
	}
	return out
}

// ReadSecretFile reads a secret from a token or password file
// (channels.telegram.tokenFile, channels.irc.passwordFile): its first
// line, trimmed. The file must be a regular file. An empty path reads "".
func ReadSecretFile(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(line), nil
}
