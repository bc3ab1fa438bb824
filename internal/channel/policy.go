package channel

import (
	"path"
	"regexp"
	"strings"
)

// dmPolicy values.
const (
	DMPolicyPairing   = "pairing"
	DMPolicyAllowlist = "allowlist"
	DMPolicyOpen      = "open"
	DMPolicyDisabled  = "disabled"
)

// groupPolicy values.
const (
	GroupPolicyAllowlist = "allowlist"
	GroupPolicyOpen      = "open"
	GroupPolicyDisabled  = "disabled"
)

// Policy is a channel's access configuration, resolved.
type Policy struct {
	// DMPolicy is "pairing" (default), "allowlist", "open" or "disabled".
	// Switchboard has no pairing store, so "pairing" admits exactly the
	// allowFrom senders, like "allowlist".
	DMPolicy  string
	AllowFrom []string
	// GroupPolicy is "allowlist" (default), "open" or "disabled".
	GroupPolicy    string
	GroupAllowFrom []string
	// Groups are the per-room settings by normalised room; "*" applies
	// to rooms without their own entry.
	Groups map[string]Group
	// AllowNameMatching lets bare nick entries match (the reference's
	// dangerouslyAllowNameMatching); otherwise entries must be full
	// identities (nick!user@host, globs allowed).
	AllowNameMatching bool
}

// Group is one room's settings.
type Group struct {
	// Enabled false drops the room's messages.
	Enabled *bool
	// RequireMention defaults to true.
	RequireMention *bool
	// AllowFrom overrides the policy's GroupAllowFrom for the room.
	AllowFrom []string
}

// Decision is the outcome of the access gates.
type Decision struct {
	Allow bool
	// Reason names the gate that dropped the message (for logs).
	Reason string
}

func drop(reason string) Decision { return Decision{Reason: reason} }

// Admit applies the reference's gates to in: for DMs the DM policy and
// allowFrom; for groups the group policy, the room allowlist, the sender
// allowlist (the room's allowFrom, else groupAllowFrom) and mention
// gating.
func Admit(p Policy, in Inbound) Decision {
	if in.Kind != KindGroup {
		switch p.DMPolicy {
		case DMPolicyDisabled:
			return drop("dm-disabled")
		case DMPolicyOpen:
			return Decision{Allow: true}
		}
		if !SenderAllowed(p.AllowFrom, in, p.AllowNameMatching) {
			return drop("dm-sender-not-allowed")
		}
		return Decision{Allow: true}
	}
	if p.GroupPolicy == GroupPolicyDisabled {
		return drop("group-policy-disabled")
	}
	room := NormalizeRoom(in.Room)
	g, own := p.Groups[room]
	if !own {
		g, own = p.Groups["*"]
	}
	if own && g.Enabled != nil && !*g.Enabled {
		return drop("group-disabled")
	}
	if p.GroupPolicy != GroupPolicyOpen && !own {
		return drop("group-not-allowed")
	}
	senders := p.GroupAllowFrom
	if g.AllowFrom != nil {
		senders = g.AllowFrom
	}
	if (p.GroupPolicy != GroupPolicyOpen || len(senders) > 0) && !SenderAllowed(senders, in, p.AllowNameMatching) {
		return drop("group-sender-not-allowed")
	}
	if (g.RequireMention == nil || *g.RequireMention) && !in.Mentioned {
		return drop("missing-mention")
	}
	return Decision{Allow: true}
}

// SenderAllowed reports whether an allowlist admits in's sender. "*"
// admits everyone; an entry with '!' or '@' is matched against the full
// identity (case-insensitive, '*' and '?' globs); a bare name matches the
// sender's name only when names is true.
func SenderAllowed(list []string, in Inbound, names bool) bool {
	id := strings.ToLower(in.Sender)
	name := strings.ToLower(in.SenderName)
	for _, e := range list {
		e = strings.ToLower(strings.TrimSpace(e))
		e = strings.TrimPrefix(e, "id:")
		switch {
		case e == "":
		case e == "*":
			return true
		case strings.ContainsAny(e, "!@"):
			if ok, err := path.Match(e, id); err == nil && ok || e == id {
				return true
			}
		case names && e == name:
			return true
		}
	}
	return false
}

// Mentioned reports whether text mentions nick (as a whole word,
// case-insensitively) or matches one of patterns.
func Mentioned(text, nick string, patterns []*regexp.Regexp) bool {
	for _, re := range patterns {
		if re.MatchString(text) {
			return true
		}
	}
	if nick == "" {
		return false
	}
	lt, ln := strings.ToLower(text), strings.ToLower(nick)
	for i := 0; ; {
		j := strings.Index(lt[i:], ln)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(ln)
		if (start == 0 || !nickByte(lt[start-1])) && (end == len(lt) || !nickByte(lt[end])) {
			return true
		}
		i = start + 1
	}
}

// nickByte reports whether c can be part of an IRC nick.
func nickByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("[]\\`_^{|}-", c) >= 0
}
