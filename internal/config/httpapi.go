package config

import (
	"slices"
	"strings"
)

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

// DefaultChatImageMaxBytes is chatCompletions.images.maxBytes's default.
const DefaultChatImageMaxBytes = 10 << 20

// ChatImageLimits returns chatCompletions.images' per-image byte limit
// (default DefaultChatImageMaxBytes) and allowed MIME types (nil: the
// default list), lower-cased.
func (c *Config) ChatImageLimits() (maxBytes int, mimes []string) {
	im := c.Gateway.HTTP.Endpoints.ChatCompletions.Images
	if im == nil {
		return DefaultChatImageMaxBytes, nil
	}
	maxBytes = DefaultChatImageMaxBytes
	if im.MaxBytes != nil && *im.MaxBytes > 0 {
		maxBytes = *im.MaxBytes
	}
	for _, m := range im.AllowedMimes {
		if m = strings.ToLower(strings.TrimSpace(m)); m != "" {
			mimes = append(mimes, m)
		}
	}
	return maxBytes, mimes
}
