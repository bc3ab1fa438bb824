package policy

import "slices"

// defaultHTTPToolDeny is the reference's default deny list of the HTTP
// POST /tools/invoke surface (DEFAULT_GATEWAY_HTTP_TOOL_DENY): command
// execution, file mutation, session orchestration and control-plane tools.
var defaultHTTPToolDeny = []string{
	"exec", "spawn", "shell", "fs_write", "fs_delete", "fs_move", "apply_patch",
	"terminal", "portal", "sessions_spawn", "sessions_send", "conversations_list",
	"conversations_send", "conversations_turn", "cron", "gateway", "plugins",
	"nodes", "computer", "mobile_ui", "openclaw",
}

// DefaultHTTPToolDeny returns a new slice of the tools POST /tools/invoke
// refuses unless gateway.tools.allow names them.
func DefaultHTTPToolDeny() []string { return slices.Clone(defaultHTTPToolDeny) }

// HTTPToolAllowed reports whether POST /tools/invoke may run tool once the
// agent's own tool policy allowed it, mirroring the reference's gateway
// layer: a tool of the default deny list is refused unless allow
// (gateway.tools.allow) names it exactly (after normalisation; "*" and
// globs re-enable nothing), and a tool matching a deny
// (gateway.tools.deny) pattern is always refused. Names and patterns are
// normalised as SubagentToolAllowed describes.
func HTTPToolAllowed(tool string, allow, deny []string) bool {
	name := normalizeToolName(tool)
	if name == "" {
		return false
	}
	if slices.Contains(defaultHTTPToolDeny, name) &&
		!slices.ContainsFunc(allow, func(a string) bool { return normalizeToolName(a) == name }) {
		return false
	}
	return !matchesToolPattern(name, deny)
}
