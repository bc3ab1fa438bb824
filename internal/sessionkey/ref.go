package sessionkey

import "strings"

// LooksLikeSessionID reports whether s, trimmed, is shaped like an RFC 4122
// UUID, ^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$
// case-insensitively (no version or variant check). It mirrors
// looksLikeSessionId.
func LooksLikeSessionID(s string) bool {
	s = trim(s)
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return false
			}
		default:
			if !isHex(s[i]) {
				return false
			}
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// LooksLikeSessionKey reports whether s, trimmed, looks like a session key
// rather than a session id, mirroring looksLikeSessionKey (docs/spec/reference-behaviour.md §2.4): true for
// exactly "main", "global" and "unknown", for ACP keys (IsACP), and for
// anything starting with "agent:", "cron:", "hook:", "node-" or "node:", or
// containing ":group:" or ":channel:". False for e.g. "random-slug",
// "sess-group" and "subagent:child-1".
//
// Quirk kept from the reference: apart from the ACP check these tests are
// case-sensitive, so "AGENT:main:main" does not look like a key (and is
// therefore first tried as a session id).
func LooksLikeSessionKey(s string) bool {
	raw := trim(s)
	switch raw {
	case "":
		return false
	case DefaultMainKey, GlobalKey, UnknownKey:
		return true
	}
	if IsACP(raw) {
		return true
	}
	for _, p := range [...]string{agentPrefix, "cron:", "hook:", "node-", "node:"} {
		if strings.HasPrefix(raw, p) {
			return true
		}
	}
	return strings.Contains(raw, ":group:") || strings.Contains(raw, ":channel:")
}

// IsSessionIDCandidate reports whether a sessions_history/sessions_send
// target should be resolved as a session id first (docs/spec/reference-behaviour.md §2.4):
// LooksLikeSessionID(s) || !LooksLikeSessionKey(s). It mirrors
// shouldResolveSessionIdInput.
func IsSessionIDCandidate(s string) bool {
	return LooksLikeSessionID(s) || !LooksLikeSessionKey(s)
}
