package policy

import "strings"

// HostActingTools are the tools that change the gateway host: commands and
// file writes. Sessions driven from outside the operator do not get them
// unless the operator grants them (or a sandbox confines them).
var HostActingTools = []string{"exec", "process", "write", "edit", "apply_patch"}

// Untrusted names where a session's input comes from when it is driven
// from outside the operator ("" when the operator or the operator's own
// agents drive it): "webhook", "a2a", or "<channel> room".
//
// channel is the input's channel, provenance its provenance kind, and
// key the session key.
func Untrusted(channel, provenance, key string) string {
	switch {
	case channel == "webhook" || provenance == "hook":
		return "webhook"
	case channel == "a2a" || provenance == "a2a":
		return "a2a"
	}
	// A chat room (anyone in it may prompt the bot); direct messages pass
	// the channel's sender allowlist.
	if _, rest, ok := strings.Cut(key, ":group:"); ok && rest != "" && channel != "" && channel != "webchat" && channel != "internal" {
		return channel + " room"
	}
	return ""
}

// UntrustedGrant reports whether the operator granted tool to untrusted
// sessions: allow holds tool names, groups or "*".
func UntrustedGrant(tool string, allow []string) bool {
	return matchesToolPattern(normalizeToolName(tool), ExpandToolGroups(allow))
}
