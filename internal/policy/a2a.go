package policy

import "strings"

// A2A is the agent-to-agent policy, config tools.agentToAgent
// (docs/spec/reference-behaviour.md §3.4).
type A2A struct {
	// Enabled is tools.agentToAgent.enabled (default false).
	Enabled bool
	// Allow is tools.agentToAgent.allow. Empty (nil or zero length)
	// allows every agent; otherwise an agent must match one pattern (see
	// MatchesAllow).
	Allow []string
}

// Allowed reports whether an agent may reach another agent's sessions,
// mirroring isAllowed: the same agent is always allowed; otherwise the
// policy must be enabled and both requesterAgent and targetAgent must match
// the allow list. The ids are compared as given (exactly); pass normalized
// ids, e.g. from sessionkey.AgentID.
//
// With Allow ["ops-*", "main"]: ops-a → ops-b and main → ops-a are allowed,
// guest → ops-a is not.
func (p A2A) Allowed(requesterAgent, targetAgent string) bool {
	if requesterAgent == targetAgent {
		return true
	}
	return p.Enabled && p.MatchesAllow(requesterAgent) && p.MatchesAllow(targetAgent)
}

// MatchesAllow reports whether agentID matches the allow list, mirroring
// matchesAllow: an empty list matches every id; otherwise some pattern must
// match. A pattern is trimmed; an empty one never matches; "*" matches
// every id; one without '*' must equal the id exactly (case-sensitively);
// one with '*' is a glob anchored at both ends where each '*' stands for
// any run of characters, matched case-insensitively.
//
// The glob match runs in (expected) time linear in the lengths of the
// pattern and the id, with no backtracking blow-up on patterns such as
// "*a*a*a*a*b". Two conscious divergences from the reference's JavaScript
// regular expression, unreachable with normalized agent ids ([a-z0-9_-]
// only): case-insensitivity is Unicode simple case folding (Go's (?i)),
// which differs from JavaScript's non-unicode /i only for a few non-ASCII
// letters (e.g. U+017F, U+212A and astral-plane letters), and '*' also
// spans line terminators.
func (p A2A) MatchesAllow(agentID string) bool {
	if len(p.Allow) == 0 {
		return true
	}
	var folded string // agentID case-folded, computed once on demand
	for _, raw := range p.Allow {
		pat := jsTrim(raw)
		switch {
		case pat == "":
			continue
		case pat == "*":
			return true
		case !strings.Contains(pat, "*"):
			if pat == agentID {
				return true
			}
		default:
			if folded == "" {
				folded = foldCanonical(agentID)
			}
			if globMatch(foldCanonical(pat), folded) {
				return true
			}
		}
	}
	return false
}

// globMatch reports whether s matches pattern, where each '*' in pattern
// stands for any (possibly empty) run of bytes and everything else matches
// itself; the match is anchored at both ends. Both strings are compared
// byte-wise, which on valid UTF-8 is the same as rune-wise because UTF-8 is
// self-synchronizing.
//
// It never backtracks: the first segment must be a prefix, the last a
// suffix (not overlapping the prefix), and each segment in between is found
// at its leftmost position after the previous one. Leftmost is always
// safe, because any later placement leaves no more room for the segments
// that follow.
func globMatch(pattern, s string) bool {
	first, rest, found := strings.Cut(pattern, "*")
	if !found {
		return pattern == s
	}
	middle, last := "", rest
	if i := strings.LastIndexByte(rest, '*'); i >= 0 {
		middle, last = rest[:i], rest[i+1:]
	}
	if len(s) < len(first)+len(last) || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		return false
	}
	s = s[len(first) : len(s)-len(last)]
	for seg := range strings.SplitSeq(middle, "*") {
		if seg == "" {
			continue
		}
		j := strings.Index(s, seg)
		if j < 0 {
			return false
		}
		s = s[j+len(seg):]
	}
	return true
}
