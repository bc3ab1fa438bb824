package policy

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
