package config

import (
	"maps"
	"slices"
)

// SecretValues returns every secret value the configuration holds, with
// "${ENV}" references expanded and the environment's overrides applied:
// provider API keys and header values, the gateway's token and password,
// the hooks token, A2A peer tokens (both directions), the Telegram bot
// token and webhook secret, the IRC password, and MCP servers' header and
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
	if tg := c.Channels.Telegram; tg != nil {
		add(tg.BotToken, tg.WebhookSecret)
	}
	if irc := c.Channels.IRC; irc != nil {
		add(irc.Password)
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
