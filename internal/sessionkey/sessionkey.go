// Package sessionkey owns Switchboard's session-key model: parsing, building,
// normalizing, classifying and validating session keys and agent ids, the
// main-session alias, and the session-key versus session-id heuristics, with
// the exact semantics of the reference gateway (OpenClaw v2026.3.8,
// src/routing/session-key.ts, src/sessions/session-key-utils.ts and the key
// helpers of src/agents/tools/sessions-*.ts; docs/spec/reference-behaviour.md §2).
//
// It is a leaf: it imports only the standard library, holds no state and does
// no I/O, so any package may import it. All functions are pure and safe for
// concurrent use.
//
// Canonical store keys look like "agent:<agentId>:<rest>"; legacy and alias
// keys ("main", "cron:<job>", "hook:<uuid>", "discord:group:dev", …) carry no
// agent prefix and belong to agent "main". Where the reference has a quirk
// (case-sensitive prefix checks, raw-key classification), the function here
// keeps it and says so in its doc comment.
package sessionkey

import "strings"

const (
	// DefaultAgentID is the agent every key without a parsable agent prefix
	// belongs to, and what an empty agent id normalizes to.
	DefaultAgentID = "main"
	// DefaultMainKey is the default main-session key (config
	// session.mainKey) and the alias tools accept for the main session.
	DefaultMainKey = "main"
	// GlobalKey is the reserved key of the shared session when
	// session.scope is "global".
	GlobalKey = "global"
	// UnknownKey is the reserved key of sessions whose origin is unknown.
	UnknownKey = "unknown"

	// maxAgentIDLen caps a normalized agent id, in bytes (ids are ASCII).
	maxAgentIDLen = 64
	agentPrefix   = "agent:"
)

// Key is a parsed agent-scoped session key "agent:<AgentID>:<Rest>".
// Both fields are lower-case; Rest never has empty ':'-separated parts.
type Key struct {
	// AgentID is the agent id exactly as it appears in the key (trimmed and
	// lower-cased, but not normalized; see AgentID for the normalized id).
	AgentID string
	// Rest is everything after the agent id, e.g. "main",
	// "discord:group:dev" or "subagent:<uuid>".
	Rest string
}

// String formats k as "agent:<AgentID>:<Rest>". For a Key returned by Parse,
// Parse(k.String()) returns k again.
func (k Key) String() string {
	return agentPrefix + k.AgentID + ":" + k.Rest
}

// Parse parses an agent-scoped session key, mirroring the reference's
// parseAgentSessionKey: the key is trimmed and lower-cased, split on ':'
// with empty parts dropped; it needs at least three parts, the first being
// "agent", a non-blank agent id (trimmed) and a non-empty rest (the remaining
// parts re-joined with ':'). Otherwise ok is false.
//
//	Parse("AGENT:Main:Hook:Webhook:42") // {main, hook:webhook:42}, true
//	Parse("agent:main")                 // false
//	Parse("agent::broken")              // false
func Parse(key string) (k Key, ok bool) {
	raw := strings.ToLower(trim(key))
	first, tail, found := nextPart(raw)
	if !found || first != "agent" {
		return Key{}, false
	}
	second, tail, found := nextPart(tail)
	if !found {
		return Key{}, false
	}
	id := trim(second)
	rest := joinNonEmpty(tail)
	if id == "" || rest == "" {
		return Key{}, false
	}
	return Key{AgentID: id, Rest: rest}, true
}

// AgentID returns the normalized agent id a session key belongs to: that of
// the parsed key, or DefaultAgentID ("main") for every key that does not
// parse. It mirrors resolveAgentIdFromSessionKey.
func AgentID(key string) string {
	if k, ok := Parse(key); ok {
		return NormalizeAgentID(k.AgentID)
	}
	return DefaultAgentID
}

// IsValidAgentID reports whether v, trimmed, is a well-formed agent id:
// 1 to 64 ASCII characters matching ^[a-z0-9][a-z0-9_-]{0,63}$,
// case-insensitively. It mirrors isValidAgentId.
//
//	IsValidAgentID("my-research_agent01")  // true
//	IsValidAgentID("../../../etc/passwd")  // false
func IsValidAgentID(v string) bool {
	return validAgentID(trim(v))
}

// validAgentID matches ^[a-z0-9][a-z0-9_-]{0,63}$ case-insensitively (ASCII
// only, as the reference's non-unicode /i regex does).
func validAgentID(s string) bool {
	if s == "" || len(s) > maxAgentIDLen || !isAlnum(lowerASCII(s[0])) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isIDChar(lowerASCII(s[i])) {
			return false
		}
	}
	return true
}

// NormalizeAgentID turns v into an agent id that IsValidAgentID accepts,
// mirroring normalizeAgentId: v is trimmed; empty gives "main"; a valid id is
// lower-cased; anything else is lower-cased, each run of characters outside
// [a-z0-9_-] becomes one '-', leading and trailing '-' are stripped, the
// result is capped at 64 bytes, and empty gives "main".
//
// One conscious divergence: the reference strips only leading '-', so an
// input such as "_ops" or "é_x" normalizes to an id starting with '_', which
// its own isValidAgentId rejects. Here leading '_' are stripped too ("_ops"
// → "ops"), so the result is always valid. Whenever the reference's result
// is a valid id, the two agree.
func NormalizeAgentID(v string) string {
	trimmed := trim(v)
	if trimmed == "" {
		return DefaultAgentID
	}
	if validAgentID(trimmed) {
		return strings.ToLower(trimmed)
	}
	lowered := strings.ToLower(trimmed)
	var b strings.Builder
	b.Grow(len(lowered))
	inRun := false
	for _, r := range lowered {
		if r < 0x80 && isIDChar(byte(r)) {
			b.WriteRune(r)
			inRun = false
			continue
		}
		if !inRun {
			b.WriteByte('-')
			inRun = true
		}
	}
	out := strings.TrimLeft(b.String(), "-_")
	out = strings.TrimRight(out, "-")
	if len(out) > maxAgentIDLen {
		out = out[:maxAgentIDLen]
	}
	if out == "" {
		return DefaultAgentID
	}
	return out
}

// Shape is the coarse shape of a session key, as classifySessionKeyShape
// reports it.
type Shape string

// The shapes classifyShape returns.
const (
	// ShapeMissing: the key is empty or blank.
	ShapeMissing Shape = "missing"
	// ShapeAgent: the key parses as "agent:<id>:<rest>".
	ShapeAgent Shape = "agent"
	// ShapeMalformedAgent: the key starts with "agent:" (any case) but
	// does not parse, e.g. "agent:main" or "agent::broken".
	ShapeMalformedAgent Shape = "malformed_agent"
	// ShapeLegacyOrAlias: any other key, e.g. "main", "cron:job-1",
	// "discord:group:dev".
	ShapeLegacyOrAlias Shape = "legacy_or_alias"
)

// classifyShape reports the shape of key, mirroring classifySessionKeyShape.
func classifyShape(key string) Shape {
	raw := trim(key)
	switch {
	case raw == "":
		return ShapeMissing
	case parses(raw):
		return ShapeAgent
	case hasPrefixFold(raw, agentPrefix):
		return ShapeMalformedAgent
	default:
		return ShapeLegacyOrAlias
	}
}

// NormalizeMainKey normalizes a configured main-session key (config
// session.mainKey): trimmed and lower-cased, empty gives "main". It mirrors
// normalizeMainKey.
func NormalizeMainKey(v string) string {
	t := trim(v)
	if t == "" {
		return DefaultMainKey
	}
	return strings.ToLower(t)
}

// MainKey returns the main-session store key of an agent,
// "agent:<NormalizeAgentID(agentID)>:<NormalizeMainKey(mainKey)>", e.g.
// MainKey("Main", "") == "agent:main:main". It mirrors
// buildAgentMainSessionKey.
func MainKey(agentID, mainKey string) string {
	return agentPrefix + NormalizeAgentID(agentID) + ":" + NormalizeMainKey(mainKey)
}

// SubagentKey returns the store key of a spawned sub-agent session,
// "agent:<NormalizeAgentID(agentID)>:subagent:<id>", where id is normally a
// fresh lower-case UUID. id is used as given.
func SubagentKey(agentID, id string) string {
	return agentPrefix + NormalizeAgentID(agentID) + ":subagent:" + id
}

// ToStoreKey maps a key as a client sent it (requestKey) to the canonical
// store key for agent agentID, mirroring toAgentStoreSessionKey:
//
//   - empty, blank or "main" (any case) → MainKey(agentID, mainKey);
//   - a parsable agent key → re-normalized "agent:<id>:<rest>" (lower-cased,
//     empty parts dropped; the embedded agent id wins over agentID);
//   - any other key starting with "agent:" (any case), i.e. a malformed
//     agent key such as "agent:main" → returned trimmed and lower-cased,
//     unchanged otherwise, so it is never prefixed twice (and does not parse);
//   - anything else → "agent:<NormalizeAgentID(agentID)>:<lower-cased key>".
//
// Note "main" is compared literally, not against mainKey.
func ToStoreKey(agentID, requestKey, mainKey string) string {
	raw := trim(requestKey)
	if raw == "" || strings.EqualFold(raw, DefaultMainKey) {
		return MainKey(agentID, mainKey)
	}
	if k, ok := Parse(raw); ok {
		return k.String()
	}
	lowered := strings.ToLower(raw)
	if strings.HasPrefix(lowered, agentPrefix) {
		return lowered
	}
	return agentPrefix + NormalizeAgentID(agentID) + ":" + lowered
}

// parses reports whether Parse(key) succeeds.
func parses(key string) bool {
	_, ok := Parse(key)
	return ok
}

// parsedRest returns the Rest of the parsed key, or "" when key does not
// parse (Rest is never empty for a parsed key).
func parsedRest(key string) string {
	k, _ := Parse(key)
	return k.Rest
}

// nextPart skips leading ':' in s and returns the part up to the next ':'
// and everything after that ':'. found is false when s holds no more parts.
func nextPart(s string) (part, tail string, found bool) {
	s = strings.TrimLeft(s, ":")
	if s == "" {
		return "", "", false
	}
	part, tail, _ = strings.Cut(s, ":")
	return part, tail, true
}

// joinNonEmpty returns s with empty ':'-separated parts dropped, the same as
// JS s.split(":").filter(Boolean).join(":"). It allocates only when s has
// empty inner parts.
func joinNonEmpty(s string) string {
	s = strings.Trim(s, ":")
	if !strings.Contains(s, "::") {
		return s
	}
	return strings.Join(splitNonEmpty(s), ":")
}

// splitNonEmpty splits s on ':' dropping empty parts, like JS
// s.split(":").filter(Boolean).
func splitNonEmpty(s string) []string {
	parts := strings.Split(s, ":")
	out := parts[:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// trim removes leading and trailing white space as JavaScript's
// String.prototype.trim does (the reference trims with it): the same set as
// unicode.IsSpace, except that U+FEFF counts and U+0085 does not.
func trim(s string) string {
	if s == "" || isPlainASCII(s[0]) && isPlainASCII(s[len(s)-1]) {
		return s // fast path: nothing to trim
	}
	return strings.TrimFunc(s, isJSSpace)
}

// isPlainASCII reports whether c is a printable ASCII byte other than space.
func isPlainASCII(c byte) bool { return ' ' < c && c < 0x80 }

// isJSSpace reports whether r is JS WhiteSpace or LineTerminator.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', '\u00a0', '\u1680',
		'\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff':
		return true
	}
	return r >= '\u2000' && r <= '\u200a'
}

// hasPrefixFold reports whether s starts with the lower-case ASCII prefix,
// ignoring the case of s.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.ToLower(s[:len(prefix)]) == prefix
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

func isAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

func isIDChar(c byte) bool { return isAlnum(c) || c == '_' || c == '-' }
