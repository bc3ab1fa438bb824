package sessionkey

import "strings"

// InternalChannel is the channel of runs and messages that come from inside
// the gateway (agent-to-agent steps, announces, the control UI): the
// reference calls it "webchat".
const InternalChannel = "webchat"

// StripAgentPrefix returns the "stripped" key the send policy matches
// keyPrefix rules against (docs/spec/reference-behaviour.md §8 step 3), mirroring stripAgentSessionKeyPrefix
// followed by lower-casing: when key, split on ':' with empty parts dropped,
// has at least three parts and the first is exactly "agent", the result is
// the parts after the agent id re-joined with ':'; otherwise it is the whole
// key. Either way it is then lower-cased.
//
// Quirk kept from the reference: the key is not trimmed and "agent" is
// matched case-sensitively before lower-casing, so "AGENT:main:x" stays
// "agent:main:x".
func StripAgentPrefix(key string) string {
	return strings.ToLower(stripAgentPrefix(key))
}

// stripAgentPrefix is stripAgentSessionKeyPrefix: no trimming or
// lower-casing.
func stripAgentPrefix(key string) string {
	parts := splitNonEmpty(key)
	if len(parts) >= 3 && parts[0] == "agent" {
		return strings.Join(parts[2:], ":")
	}
	return key
}

// ChannelFromKey derives a channel id from a session key, the key fallback
// of the send policy's channel fact (docs/spec/reference-behaviour.md §8 step 3), mirroring the reference's
// deriveChannelFromKey: after StripAgentPrefix's stripping (without its
// lower-casing), when the key split on ':' with empty parts dropped has at
// least three parts and the second is exactly "group" or "channel", the
// result is the first part trimmed and lower-cased; otherwise "".
//
//	ChannelFromKey("agent:main:discord:group:dev") // "discord"
//	ChannelFromKey("agent:main:main")              // ""
func ChannelFromKey(key string) string {
	return channelOf(stripAgentPrefix(key), true)
}

// RawChannelFromKey is the key fallback of sessions_list's channel column
// (docs/spec/reference-behaviour.md §4 step 7), mirroring the tail of the reference's deriveChannel: when the
// raw key split on ':' with empty parts dropped has at least three parts and
// the second is exactly "group" or "channel", the result is the first part
// as is; otherwise "" (the caller then shows "unknown").
//
// Quirk kept from the reference (docs/spec/reference-behaviour.md §14.2): unlike ChannelFromKey it does not
// strip the "agent:<id>:" prefix, so canonical group keys such as
// "agent:main:discord:group:dev" yield "" and only legacy keys such as
// "discord:group:dev" yield a channel.
func RawChannelFromKey(key string) string {
	return channelOf(key, false)
}

// channelOf returns parts[0] of key when parts[1] is "group" or "channel"
// and there are at least three non-empty parts; normalized, trimmed and
// lower-cased.
func channelOf(key string, normalize bool) string {
	parts := splitNonEmpty(key)
	if len(parts) < 3 || parts[1] != "group" && parts[1] != "channel" {
		return ""
	}
	if normalize {
		return strings.ToLower(trim(parts[0]))
	}
	return parts[0]
}

// Conversation is the group or channel conversation a session key
// addresses, from which the A2A announce target is built (docs/spec/reference-behaviour.md §6.5 step 1).
type Conversation struct {
	// Channel is the channel id as written in the key, lower-cased. The
	// caller replaces it by the channel registry's normalized id when the
	// registry knows it.
	Channel string
	// Kind is ChatGroup or ChatChannel.
	Kind ChatType
	// ID is the conversation id: the remaining parts re-joined with ':',
	// without a trailing thread suffix. Never empty.
	ID string
	// ThreadID is the ASCII-digit id of a trailing ":topic:<digits>" or
	// ":thread:<digits>" suffix, or "".
	ThreadID string
}

// parseConversation parses the conversation a session key addresses,
// mirroring the key parsing of resolveAnnounceTargetFromKey: split on ':'
// with empty parts dropped; a leading "agent:<id>:" is dropped when there
// are at least three parts; then it needs at least three parts
// "<channel>:<kind>:<rest…>" with kind exactly "group" or "channel". The
// rest, re-joined with ':', loses a trailing ":topic:<digits>" or
// ":thread:<digits>", which becomes ThreadID; without such a suffix it is
// trimmed instead. An empty id gives ok false.
//
//	parseConversation("agent:main:discord:group:dev") // {discord, group, dev, ""}
//	parseConversation("telegram:group:-100:topic:7")  // {telegram, group, -100, 7}
//
// Like the reference, "agent" is matched case-sensitively and the id keeps
// its case.
func parseConversation(key string) (c Conversation, ok bool) {
	parts := splitNonEmpty(key)
	if len(parts) >= 3 && parts[0] == "agent" {
		parts = parts[2:]
	}
	if len(parts) < 3 {
		return Conversation{}, false
	}
	kind := ChatType(parts[1])
	if kind != ChatGroup && kind != ChatChannel {
		return Conversation{}, false
	}
	rest := strings.Join(parts[2:], ":")
	id, thread, found := cutThreadSuffix(rest)
	if !found {
		id = trim(rest)
	}
	if id == "" {
		return Conversation{}, false
	}
	return Conversation{
		Channel:  strings.ToLower(parts[0]),
		Kind:     kind,
		ID:       id,
		ThreadID: thread,
	}, true
}

// cutThreadSuffix matches /:(topic|thread):(\d+)$/ against s and returns s
// without the match and the digits.
func cutThreadSuffix(s string) (before, thread string, found bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return s, "", false
	}
	digits := s[i+1:]
	if digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return s, "", false
	}
	head := s[:i]
	for _, marker := range [...]string{":topic", ":thread"} {
		if strings.HasSuffix(head, marker) {
			return head[:len(head)-len(marker)], digits, true
		}
	}
	return s, "", false
}
