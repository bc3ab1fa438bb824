package config

import "slices"

// ChatCompletionsEnabled reports gateway.http.endpoints.chatCompletions.enabled
// (default false).
func (c *Config) ChatCompletionsEnabled() bool {
	return boolOr(c.Gateway.HTTP.Endpoints.ChatCompletions.Enabled, false)
}

// ResponsesEnabled reports gateway.http.endpoints.responses.enabled (default
// false).
func (c *Config) ResponsesEnabled() bool {
	return boolOr(c.Gateway.HTTP.Endpoints.Responses.Enabled, false)
}

// GatewayToolsAllow and GatewayToolsDeny return copies of
// gateway.tools.allow and gateway.tools.deny.
func (c *Config) GatewayToolsAllow() []string { return slices.Clone(c.Gateway.Tools.Allow) }

// GatewayToolsDeny returns a copy of gateway.tools.deny.
func (c *Config) GatewayToolsDeny() []string { return slices.Clone(c.Gateway.Tools.Deny) }
