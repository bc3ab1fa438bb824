package policy

import "slices"

// The reference's sandbox tool policy defaults: what a sandboxed session
// keeps when tools.sandbox.tools leaves a list unset.
var (
	DefaultSandboxToolAllow = []string{
		"exec", "process", "read", "ls", "write", "edit", "apply_patch", "view_image",
		"sessions_list", "sessions_history", "sessions_search", "sessions_send", "sessions_spawn",
		"sessions_yield", "subagents", "session_status",
	}
	DefaultSandboxToolDeny = []string{
		"browser", "canvas", "computer", "mobile_ui", "nodes", "automations", "gateway",
		// Channel tools, by channel id.
		"discord", "feishu", "googlechat", "imessage", "irc", "line", "matrix", "mattermost", "msteams",
		"nextcloud-talk", "nostr", "signal", "slack", "telegram", "tlon", "twitch", "whatsapp", "zalo",
	}
)

// SandboxToolPolicy is tools.sandbox.tools after the agent's lists replaced
// the global ones: nil lists are unset.
type SandboxToolPolicy struct {
	// Allow replaces the default allow list (empty: every tool).
	Allow []string
	// AlsoAllow adds to Allow, or to the default list when Allow is unset.
	AlsoAllow []string
	// Deny replaces the default deny list.
	Deny []string
}

// SandboxToolAllowed reports whether a sandboxed session keeps tool under
// p, as the reference resolves it:
//   - allow: the configured list (an empty one allows every tool) plus
//     alsoAllow; unset, the default list plus alsoAllow;
//   - deny: the configured list; unset, the default list minus the tools
//     the configured allow or alsoAllow name explicitly;
//   - denying "image" denies view_image too, and a non-empty allow list
//     keeps view_image unless it is denied.
//
// Deny wins; entries may be groups, "*" or globs.
func SandboxToolAllowed(tool string, p SandboxToolPolicy) bool {
	name := normalizeToolName(tool)
	allow := sandboxAllow(p)
	deny := ExpandToolGroups(p.Deny)
	if p.Deny == nil {
		explicit := ExpandToolGroups(slices.Concat(p.Allow, p.AlsoAllow))
		deny = nil
		for _, d := range DefaultSandboxToolDeny {
			if !matchesToolPattern(d, explicit) {
				deny = append(deny, d)
			}
		}
	}
	if matchesToolPattern("image", deny) && !matchesToolPattern("view_image", deny) {
		deny = append(deny, "view_image")
	}
	if matchesToolPattern(name, deny) {
		return false
	}
	if len(allow) == 0 {
		return true
	}
	return name == "view_image" || matchesToolPattern(name, allow)
}

// sandboxAllow is the allow list of p with groups expanded (empty: every
// tool).
func sandboxAllow(p SandboxToolPolicy) []string {
	switch {
	case p.Allow != nil && len(p.Allow) == 0:
		return nil
	case p.Allow != nil:
		return ExpandToolGroups(slices.Concat(p.Allow, p.AlsoAllow))
	}
	return ExpandToolGroups(slices.Concat(DefaultSandboxToolAllow, p.AlsoAllow))
}
