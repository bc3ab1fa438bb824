package policy

import "slices"

// ToolAllowed decides an agent's tool allow/deny list (tools.allow,
// tools.alsoAllow, tools.deny, or the agent's own): a tool matching a deny
// pattern is out; with no allow patterns every other tool is in, else only
// those matching allow or alsoAllow. Patterns are names or "*" globs,
// compared case-insensitively (so "docs__*" covers one MCP server's tools).
func ToolAllowed(tool string, allow, alsoAllow, deny []string) bool {
	name := normalizeToolName(tool)
	if matchesToolPattern(name, deny) {
		return false
	}
	if !slices.ContainsFunc(allow, func(p string) bool { return normalizeToolName(p) != "" }) {
		return true
	}
	return matchesToolPattern(name, slices.Concat(allow, alsoAllow))
}

// GlobMatch reports whether name matches one of the exact-or-"*"-glob
// patterns (case-sensitive), as MCP toolFilter include/exclude lists do.
func GlobMatch(name string, patterns []string) bool {
	for _, p := range patterns {
		if p == name || p == "*" || globMatch(p, name) {
			return true
		}
	}
	return false
}
