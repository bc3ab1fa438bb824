package policy

import "slices"

// toolGroups are the reference's tool groups for tools.allow, alsoAllow and
// deny. "list", the old name of Switchboard's directory-listing tool, is
// an alias of "ls" (see normalizeToolName).
var toolGroups = [...]namedList{
	{"group:runtime", []string{"exec", "process", "code_execution"}},
	{"group:fs", []string{"ls", "read", "write", "edit", "apply_patch"}},
	{"group:sessions", []string{"sessions", "sessions_list", "sessions_history", "sessions_search", "conversations_list",
		"conversations_send", "conversations_turn", "sessions_send", "sessions_spawn", "sessions_yield", "subagents",
		"session_status", "suggest_task", "dismiss_task"}},
	{"group:memory", []string{"memory_search", "memory_get"}},
	{"group:web", []string{"web_search", "x_search", "web_fetch"}},
	{"group:ui", []string{"browser", "screen", "theme", "dashboard", "terminal", "portal", "canvas", "show_widget"}},
	{"group:automation", []string{"heartbeat_respond", "automations", "cron", "gateway", "plugins", "openclaw"}},
	{"group:messaging", []string{"message"}},
	{"group:nodes", []string{"nodes", "computer"}},
	{"group:agents", []string{"agents_list", "get_goal", "create_goal", "update_goal", "progress_card", "ask_user", "skill_workshop"}},
	{"group:media", []string{"view_image", "image_generate", "music_generate", "video_generate", "tts", "pdf"}},
}

// toolProfiles are the base allow lists of the restrictive profiles;
// "full" (like an unset profile) filters nothing.
var toolProfiles = [...]namedList{
	{"minimal", []string{"session_status", "gateway"}},
	{"coding", []string{"group:fs", "group:runtime", "group:web", "group:sessions", "group:memory", "cron", "gateway",
		"get_goal", "create_goal", "update_goal", "progress_card", "ask_user", "skill_workshop", "view_image",
		"image_generate", "music_generate", "video_generate", "theme"}},
	{"messaging", []string{"group:messaging", "sessions", "sessions_list", "sessions_history", "sessions_search",
		"conversations_list", "conversations_send", "conversations_turn", "sessions_send", "sessions_spawn",
		"sessions_yield", "subagents", "session_status", "gateway", "ask_user", "theme"}},
}

// ToolProfiles lists the valid tools.profile values.
var ToolProfiles = []string{"minimal", "coding", "messaging", "full"}

// ToolSelection is one scope's tool selection: tools.{profile, allow,
// alsoAllow, deny} or an agent's agents.list[].tools. Nil slices are unset.
type ToolSelection struct {
	// Profile is "minimal", "coding", "messaging", "full" or "" (unset).
	Profile string
	// Allow, AlsoAllow and Deny are tool names, groups and globs.
	Allow, AlsoAllow, Deny []string
}

// ExpandToolGroups returns entries with every known "group:…" entry
// replaced by its tools; other entries, unknown groups included, are kept
// as written (an unknown group matches no tool, so an allow list naming
// only one still restricts). A nil input gives nil.
func ExpandToolGroups(entries []string) []string {
	if entries == nil {
		return nil
	}
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		n := lowerTrim(e)
		if ts, ok := lookup(toolGroups[:], n); ok {
			out = append(out, ts...)
			continue
		}
		out = append(out, e)
	}
	return out
}

// ToolOffered reports whether a run gets tool under the global selection
// (tools.*) and its agent's (agents.list[].tools.*), as the reference's
// layered policy does. A tool must pass every layer:
//
//  1. the profile — the agent's profile when set, else the global one:
//     minimal, coding and messaging allow their tools plus alsoAllow (the
//     agent's when set, else the global one); full, unset or unknown
//     profiles filter nothing;
//  2. the global allow/deny;
//  3. the agent's allow/deny.
//
// In each layer deny wins, an empty allow list allows everything, entries
// may be groups, "*" or anchored globs, names compare case-insensitively
// with the aliases bash → exec, apply-patch → apply_patch and list → ls, and
// apply_patch is allowed wherever write is (denying write does not deny
// apply_patch).
func ToolOffered(tool string, global, agent ToolSelection) bool {
	name := normalizeToolName(tool)
	profile := lowerTrim(agent.Profile)
	if profile == "" {
		profile = lowerTrim(global.Profile)
	}
	if base, ok := lookup(toolProfiles[:], profile); ok {
		also := agent.AlsoAllow
		if also == nil {
			also = global.AlsoAllow
		}
		if !layerAllows(name, slices.Concat(base, also), nil) {
			return false
		}
	}
	return layerAllows(name, global.Allow, global.Deny) && layerAllows(name, agent.Allow, agent.Deny)
}

// layerAllows applies one allow/deny layer to a normalized tool name.
func layerAllows(name string, allow, deny []string) bool {
	if matchesToolPattern(name, ExpandToolGroups(deny)) {
		return false
	}
	allow = ExpandToolGroups(allow)
	if !slices.ContainsFunc(allow, func(p string) bool { return normalizeToolName(p) != "" }) {
		return true
	}
	return matchesToolPattern(name, allow) ||
		name == "apply_patch" && matchesToolPattern("write", allow)
}

// namedList is a named list of tool names: a tool group or a profile's
// base allow list. The tables are arrays, initialised statically.
type namedList struct {
	name  string
	names []string
}

// lookup returns the names of the list called name.
func lookup(lists []namedList, name string) ([]string, bool) {
	for _, l := range lists {
		if l.name == name {
			return l.names, true
		}
	}
	return nil, false
}
