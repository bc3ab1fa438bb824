package gateway

import (
	"strings"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/sessionkey"
	"github.com/switchboardhq/switchboard/internal/store"
)

// Send policy decisions.
const (
	policyAllow = "allow"
	policyDeny  = "deny"
)

// msgSendBlocked is the error chat.send and agent return when the send
// policy denies a session.
const msgSendBlocked = "send blocked by session policy"

// resolveSendPolicy decides whether a message may be sent into a session,
// mirroring the reference's resolveSendPolicy (reference-behaviour §8):
//
//  1. the entry's own sendPolicy override ("allow"/"deny", trimmed,
//     case-insensitive) wins outright;
//  2. without a configured session.sendPolicy everything is allowed;
//  3. facts: channel = the first non-empty of the channel param, the
//     entry's channel, its lastChannel, or the channel derived from the key;
//     chatType = the param, else the entry's, else derived from the key
//     ("dm" means "direct"); raw = the lower-cased key; stripped = the key
//     without its "agent:<id>:" prefix;
//  4. rules are scanned in order; a rule matches when every present match
//     field matches (channel and chatType equal, rawKeyPrefix a prefix of
//     raw, keyPrefix a prefix of raw or stripped). A matching deny returns
//     deny at once (any matching deny wins); a matching allow is
//     remembered and the scan goes on;
//  5. then allow if an allow rule matched, else the default (allow when
//     unset or invalid).
//
// entry may be nil (the session does not exist yet).
//
// TODO(policy): this moves to the pure internal/policy package once it
// lands; the table test moves with it.
func resolveSendPolicy(p *config.SendPolicy, entry *store.Session, key, channel, chatType string) string {
	if entry != nil {
		if v := normalizePolicy(entry.SendPolicy); v != "" {
			return v
		}
	}
	if p == nil {
		return policyAllow
	}
	ch := norm(channel)
	if ch == "" && entry != nil {
		ch = firstNonEmpty(norm(entry.Channel), norm(entry.LastChannel))
	}
	if ch == "" {
		ch = sessionkey.ChannelFromKey(key)
	}
	ct := normalizeChatType(chatType)
	if ct == "" && entry != nil {
		ct = normalizeChatType(entry.ChatType)
	}
	if ct == "" {
		ct = normalizeChatType(string(sessionkey.ChatTypeOf(key)))
	}
	raw := strings.ToLower(key)
	stripped := sessionkey.StripAgentPrefix(key)

	allowMatched := false
	for _, rule := range p.Rules {
		if !ruleMatches(rule.Match, ch, ct, raw, stripped) {
			continue
		}
		if normalizePolicy(rule.Action) == policyDeny {
			return policyDeny
		}
		allowMatched = true
	}
	if allowMatched {
		return policyAllow
	}
	if normalizePolicy(p.Default) == policyDeny {
		return policyDeny
	}
	return policyAllow
}

func ruleMatches(m *config.SendPolicyMatch, channel, chatType, raw, stripped string) bool {
	if m == nil {
		return true
	}
	if want := norm(m.Channel); want != "" && want != channel {
		return false
	}
	if want := normalizeChatType(m.ChatType); want != "" && want != chatType {
		return false
	}
	if want := norm(m.RawKeyPrefix); want != "" && !strings.HasPrefix(raw, want) {
		return false
	}
	if want := norm(m.KeyPrefix); want != "" && !strings.HasPrefix(raw, want) && !strings.HasPrefix(stripped, want) {
		return false
	}
	return true
}

// normalizePolicy returns "allow" or "deny", or "" for anything else.
func normalizePolicy(v string) string {
	switch v = norm(v); v {
	case policyAllow, policyDeny:
		return v
	}
	return ""
}

// normalizeChatType returns direct, group or channel ("dm" is direct), or
// "" for anything else, including "unknown".
func normalizeChatType(v string) string {
	switch v = norm(v); v {
	case "direct", "group", "channel":
		return v
	case "dm":
		return "direct"
	}
	return ""
}

func norm(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
