package gateway

import (
	"slices"
	"time"

	"github.com/switchboardhq/switchboard/internal/settings"
)

// AuthRateLimitOf turns gateway.auth.rateLimit into the gateway's limiter
// settings (nil: the defaults).
func AuthRateLimitOf(rl *settings.AuthRateLimit) *AuthRateLimit {
	out := DefaultAuthRateLimit
	if rl == nil {
		return &out
	}
	if rl.MaxAttempts != nil {
		out.MaxAttempts = *rl.MaxAttempts
	}
	if rl.WindowMs != nil {
		out.Window = time.Duration(*rl.WindowMs) * time.Millisecond
	}
	if rl.LockoutMs != nil {
		out.Lockout = time.Duration(*rl.LockoutMs) * time.Millisecond
	}
	if rl.ExemptLoopback != nil {
		out.ExemptLoopback = *rl.ExemptLoopback
	}
	return &out
}

// AllowedOriginsOf are the browser origins admitted besides private
// same-origin loads: gateway.controlUi.allowedOrigins and
// gateway.publicOrigin.
func AllowedOriginsOf(set *settings.Settings) []string {
	out := slices.Clone(set.AllowedOrigins)
	if o := set.PublicOrigin; o != "" {
		out = append(out, o)
	}
	return out
}

// PublicURLsOf are the URLs the gateway is reached at from outside; their
// hosts pass the doors' Host check.
func PublicURLsOf(set *settings.Settings) []string {
	var out []string
	for _, u := range []string{set.PublicOrigin, set.A2A.AdvertisedURL, set.Telegram.WebhookURL} {
		if u != "" {
			out = append(out, u)
		}
	}
	return out
}
