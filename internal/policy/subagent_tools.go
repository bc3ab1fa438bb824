package policy

import (
	"slices"
	"strings"
)

// subagentAlwaysDenied are the tools no sub-agent session gets by default,
// whatever its depth (docs/spec/reference-behaviour.md §9.4).
var subagentAlwaysDenied = []string{
	"gateway",
	"agents_list",
	"whatsapp_login",
	"session_status",
	"cron",
	"memory_search",
	"memory_get",
	"sessions_send",
}

// subagentLeafDenied are the tools a leaf sub-agent (one that may not spawn
// further) additionally does not get by default.
var subagentLeafDenied = []string{
	"sessions_list",
	"sessions_history",
	"sessions_spawn",
}

// SubagentDeniedTools returns a new slice of the tools a sub-agent at depth
// does not get by default (before tools.subagents.tools applies): gateway,
// agents_list, whatsapp_login, session_status, cron, memory_search,
// memory_get and sessions_send always, and for a leaf (depth >= max(1,
// maxSpawnDepth); a negative depth counts as 1) also sessions_list,
// sessions_history and sessions_spawn.
func SubagentDeniedTools(depth, maxSpawnDepth int) []string {
	if depth < 0 {
		depth = 1
	}
	if depth >= max(1, maxSpawnDepth) {
		return slices.Concat(subagentAlwaysDenied, subagentLeafDenied)
	}
	return slices.Clone(subagentAlwaysDenied)
}

// SubagentToolAllowed reports whether a sub-agent session at depth (its
// spawn depth, >= 1; a negative depth counts as 1) may use tool, mirroring
// resolveSubagentToolPolicy followed by the tool-policy matcher.
// maxSpawnDepth is agents.defaults.subagents.maxSpawnDepth; allow,
// alsoAllow and deny are tools.subagents.tools.{allow,alsoAllow,deny}, nil
// when unset.
//
// The default deny list is SubagentDeniedTools(depth, maxSpawnDepth); with
// the default maxSpawnDepth 1 every sub-agent is a leaf and cannot spawn.
// A default-denied tool named exactly in allow or alsoAllow is re-enabled
// ("*" and globs re-enable nothing); configured deny always wins. Then:
//
//   - a tool matching a deny pattern is refused;
//   - otherwise, with no effective allow list, it is allowed;
//   - otherwise it must match an allow pattern ("apply_patch" also passes
//     when "exec" does).
//
// The effective allow list is allow ∪ alsoAllow when both are set (non-nil,
// even if empty), else allow; alsoAllow alone re-enables tools but
// restricts nothing. Tool names and patterns are trimmed and lower-cased,
// with the aliases bash → exec, apply-patch → apply_patch and list → ls;
// a blank pattern is ignored; "*" matches every tool; other patterns with
// '*' are anchored globs. Tool groups ("group:…") are not expanded here: callers
// that support them expand entries before calling.
func SubagentToolAllowed(tool string, depth, maxSpawnDepth int, allow, alsoAllow, deny []string) bool {
	base := SubagentDeniedTools(depth, maxSpawnDepth)
	explicit := make(map[string]bool, len(allow)+len(alsoAllow))
	for _, t := range slices.Concat(allow, alsoAllow) {
		explicit[normalizeToolName(t)] = true
	}
	name := normalizeToolName(tool)
	for _, t := range base {
		if !explicit[t] && t == name {
			return false
		}
	}
	if matchesToolPattern(name, deny) {
		return false
	}
	effective := allow
	if allow != nil && alsoAllow != nil {
		effective = slices.Concat(allow, alsoAllow)
	}
	if !slices.ContainsFunc(effective, func(p string) bool { return normalizeToolName(p) != "" }) {
		return true
	}
	return matchesToolPattern(name, effective) ||
		name == "apply_patch" && matchesToolPattern("exec", effective)
}

// normalizeToolName mirrors normalizeToolName: trimmed, lower-cased, with
// the aliases bash → exec and apply-patch → apply_patch, and Switchboard's
// list → ls.
func normalizeToolName(name string) string {
	switch n := lowerTrim(name); n {
	case "bash":
		return "exec"
	case "apply-patch":
		return "apply_patch"
	case "list":
		// Switchboard's directory-listing tool was "list"; it is now the
		// reference's "ls", and configurations naming "list" keep
		// selecting it.
		return "ls"
	default:
		return n
	}
}

// matchesToolPattern reports whether the normalized tool name matches one
// of patterns (normalized first; blank ones ignored): "*" matches every
// name, a pattern without '*' must be equal, one with '*' is an anchored
// glob (case-sensitive, both sides being lower-cased already).
func matchesToolPattern(name string, patterns []string) bool {
	for _, raw := range patterns {
		p := normalizeToolName(raw)
		switch {
		case p == "":
		case p == "*":
			return true
		case !strings.Contains(p, "*"):
			if p == name {
				return true
			}
		case globMatch(p, name):
			return true
		}
	}
	return false
}
