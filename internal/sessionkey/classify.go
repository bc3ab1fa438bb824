package sessionkey

import "strings"

// SubagentDepth returns how deeply nested a sub-agent session is: the number
// of ":subagent:" occurrences in the trimmed, lower-cased key, e.g. 2 for
// "agent:main:subagent:parent:subagent:child", 0 for "main". It mirrors
// getSubagentDepth. Note a legacy "subagent:child-1" has depth 0.
func SubagentDepth(key string) int {
	raw := strings.ToLower(trim(key))
	if raw == "" {
		return 0
	}
	return strings.Count(raw, ":subagent:")
}

// IsSubagent reports whether key is a sub-agent session key: the trimmed key
// starts with "subagent:" (any case), or it parses and its rest starts with
// "subagent:". It mirrors isSubagentSessionKey.
func IsSubagent(key string) bool {
	return hasScope(key, "subagent:")
}

// IsACP reports whether key is an ACP session key: the trimmed key starts
// with "acp:" (any case), or it parses and its rest starts with "acp:". It
// mirrors isAcpSessionKey.
func IsACP(key string) bool {
	return hasScope(key, "acp:")
}

// hasScope reports whether the raw key or the rest of the parsed key starts
// with prefix (lower-case ASCII).
func hasScope(key, prefix string) bool {
	raw := trim(key)
	if raw == "" {
		return false
	}
	if hasPrefixFold(raw, prefix) {
		return true
	}
	return strings.HasPrefix(parsedRest(raw), prefix)
}

// IsCron reports whether key is a cron session key. Only agent-prefixed keys
// count: the key must parse and its rest start with "cron:"; a legacy
// "cron:job-1" alone is not a cron key here. It mirrors isCronSessionKey.
func IsCron(key string) bool {
	return strings.HasPrefix(parsedRest(key), "cron:")
}

// IsCronRun reports whether key is an isolated cron run,
// "agent:<id>:cron:<jobId>:run:<runId>": the key parses and its rest matches
// ^cron:[^:]+:run:[^:]+$. It mirrors isCronRunSessionKey.
func IsCronRun(key string) bool {
	rest := parsedRest(key)
	if !strings.HasPrefix(rest, "cron:") {
		return false
	}
	// A parsed rest has no empty parts, so the regex means exactly four
	// parts: cron, <jobId>, run, <runId>.
	parts := strings.Split(rest, ":")
	return len(parts) == 4 && parts[2] == "run"
}

// ChatType is the chat type a session key encodes.
type ChatType string

// The chat types ChatTypeOf returns.
const (
	ChatDirect  ChatType = "direct"
	ChatGroup   ChatType = "group"
	ChatChannel ChatType = "channel"
	ChatUnknown ChatType = "unknown"
)

// ChatTypeOf derives the chat type from a session key, mirroring
// deriveSessionChatType. The key is trimmed and lower-cased; its scope is
// the parsed rest, or the whole key when it does not parse. If the scope's
// ':'-separated tokens include "group" the type is group, else "channel" →
// channel, else "direct" or "dm" → direct; else the legacy Discord form
// "discord:[<account>:]guild-<g>:channel-<c>" → channel; else unknown
// (including "agent:main:main").
func ChatTypeOf(key string) ChatType {
	raw := strings.ToLower(trim(key))
	if raw == "" {
		return ChatUnknown
	}
	scope := raw
	if k, ok := Parse(raw); ok {
		scope = k.Rest
	}
	var direct bool
	var channel bool
	for part := range strings.SplitSeq(scope, ":") {
		switch part {
		case "group":
			return ChatGroup
		case "channel":
			channel = true
		case "direct", "dm":
			direct = true
		}
	}
	switch {
	case channel:
		return ChatChannel
	case direct:
		return ChatDirect
	case isLegacyDiscordChannel(scope):
		return ChatChannel
	}
	return ChatUnknown
}

// isLegacyDiscordChannel matches
// ^discord:(?:[^:]+:)?guild-[^:]+:channel-[^:]+$.
func isLegacyDiscordChannel(s string) bool {
	if !strings.HasPrefix(s, "discord:") {
		return false // what the split below rejects first, without splitting
	}
	parts := strings.Split(s, ":")
	if parts[0] != "discord" {
		return false
	}
	switch len(parts) {
	case 3:
	case 4:
		if parts[1] == "" {
			return false
		}
		parts = parts[1:]
	default:
		return false
	}
	return hasNonEmptySuffix(parts[1], "guild-") && hasNonEmptySuffix(parts[2], "channel-")
}

// hasNonEmptySuffix reports whether s is prefix followed by at least one
// more byte.
func hasNonEmptySuffix(s, prefix string) bool {
	return len(s) > len(prefix) && strings.HasPrefix(s, prefix)
}

// Kind is the session kind sessions_list reports for a row.
type Kind string

// The kinds ClassifyKind returns; also the values the sessions_list kinds
// filter accepts.
const (
	KindMain  Kind = "main"
	KindGroup Kind = "group"
	KindCron  Kind = "cron"
	KindHook  Kind = "hook"
	KindNode  Kind = "node"
	KindOther Kind = "other"
)

// ParseKind parses one entry of the sessions_list kinds filter: trimmed and
// lower-cased, it must be one of main, group, cron, hook, node or other.
func ParseKind(s string) (Kind, bool) {
	switch k := Kind(strings.ToLower(trim(s))); k {
	case KindMain, KindGroup, KindCron, KindHook, KindNode, KindOther:
		return k, true
	}
	return "", false
}

// ClassifyKind classifies a session row for sessions_list, mirroring
// classifySessionKind: key equal to alias.Alias or alias.MainKey → main;
// starts with "cron:" → cron; "hook:" → hook; "node-" or "node:" → node;
// gatewayKind (the gateway row's kind) "group" → group; key contains
// ":group:" or ":channel:" → group; else other.
//
// Quirk kept from the reference (docs/spec/reference-behaviour.md §14.2): the checks are exact and
// prefix-based on the raw store key, so the canonical "agent:main:main" and
// "agent:main:cron:x" are "other" unless they equal the alias or main key,
// and kinds ["main"] only matches legacy/alias keys.
func ClassifyKind(key string, alias MainAlias, gatewayKind string) Kind {
	switch {
	case key == alias.Alias || key == alias.MainKey:
		return KindMain
	case strings.HasPrefix(key, "cron:"):
		return KindCron
	case strings.HasPrefix(key, "hook:"):
		return KindHook
	case strings.HasPrefix(key, "node-"), strings.HasPrefix(key, "node:"):
		return KindNode
	case gatewayKind == "group":
		return KindGroup
	case strings.Contains(key, ":group:"), strings.Contains(key, ":channel:"):
		return KindGroup
	}
	return KindOther
}

// RowKind is the kind the gateway's sessions.list rows carry.
type RowKind string

// The row kinds RowKindOf returns.
const (
	RowGlobal  RowKind = "global"
	RowUnknown RowKind = "unknown"
	RowGroup   RowKind = "group"
	RowDirect  RowKind = "direct"
)

// RowKindOf returns the gateway row kind of a store key: "global" and
// "unknown" for the reserved keys (exact match), group when ChatTypeOf(key)
// is group or channel, else direct.
func RowKindOf(key string) RowKind {
	switch key {
	case GlobalKey:
		return RowGlobal
	case UnknownKey:
		return RowUnknown
	}
	switch ChatTypeOf(key) {
	case ChatGroup, ChatChannel:
		return RowGroup
	}
	return RowDirect
}

// IsReserved reports whether key is one of the reserved keys "global" and
// "unknown" (exact match). sessions_list never shows "unknown", and shows
// "global" only when the main alias is "global".
func IsReserved(key string) bool {
	return key == GlobalKey || key == UnknownKey
}
