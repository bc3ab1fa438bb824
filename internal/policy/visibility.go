package policy

import "github.com/switchboardhq/switchboard/internal/sessionkey"

// Visibility is the session-tool visibility, config tools.sessions.visibility
// (docs/spec/reference-behaviour.md §3.1): which sessions sessions_list,
// sessions_history and sessions_send may see.
type Visibility string

// The visibilities, from narrowest to widest.
const (
	// VisibilitySelf: only the requester's own session.
	VisibilitySelf Visibility = "self"
	// VisibilityTree (the default): the requester's session and the
	// sessions it spawned directly (one level: entries whose spawnedBy is
	// exactly the requester key).
	VisibilityTree Visibility = "tree"
	// VisibilityAgent: every session of the requester's agent.
	VisibilityAgent Visibility = "agent"
	// VisibilityAll: every session, other agents' subject to the A2A
	// policy.
	VisibilityAll Visibility = "all"
)

// valid reports whether v is one of the four visibilities.
func (v Visibility) valid() bool {
	switch v {
	case VisibilitySelf, VisibilityTree, VisibilityAgent, VisibilityAll:
		return true
	}
	return false
}

// orTree returns v, or VisibilityTree when v is not a valid visibility.
func (v Visibility) orTree() Visibility {
	if v.valid() {
		return v
	}
	return VisibilityTree
}

// ParseVisibility parses tools.sessions.visibility: trimmed and
// case-insensitive ("ALL" → all); missing or invalid → VisibilityTree.
func ParseVisibility(s string) Visibility {
	return Visibility(lowerTrim(s)).orTree()
}

// The sandbox clamp values, config
// agents.defaults.sandbox.sessionToolsVisibility (docs/spec/reference-behaviour.md §3.2).
const (
	// ClampSpawned (the default, also for ""): a sandboxed session sees its
	// own tree only.
	ClampSpawned = "spawned"
	// ClampAll: a sandboxed session gets the configured visibility.
	ClampAll = "all"
)

// clampSpawned reports whether clamp is the "spawned" sandbox clamp. Like
// the reference, "" (unset) defaults to spawned and any other value is
// compared exactly, so only "spawned" clamps.
func clampSpawned(clamp string) bool { return clamp == "" || clamp == ClampSpawned }

// EffectiveVisibility returns the visibility a session's tool calls get
// (docs/spec/reference-behaviour.md §3.2): configured, except that a sandboxed session
// under the clamp "spawned" (or "") gets VisibilityTree whatever was
// configured. An invalid configured value counts as VisibilityTree.
//
// Quirk kept from the reference: a configured "self" in such a sandbox is
// widened to "tree", not kept narrower.
func EffectiveVisibility(configured Visibility, sandboxed bool, clamp string) Visibility {
	configured = configured.orTree()
	if sandboxed && clampSpawned(clamp) {
		return VisibilityTree
	}
	return configured
}

// RestrictToSpawned reports whether a session-tool call is
// "sandbox-restricted" (docs/spec/reference-behaviour.md §3.3): the caller is sandboxed,
// the clamp is "spawned" (or ""), the caller has a session (requesterKey is
// its internal key, "" when the call has no session key; do not pass the
// main alias fallback here), and that session is not a sub-agent session
// (sessionkey.IsSubagent). Sub-agent requesters are never restricted this
// way. When restricted, lists pass spawnedBy and exclude global/unknown,
// resolves pass spawnedBy, and label lookups stay within the requester's
// agent (see CheckLabelSend).
func RestrictToSpawned(sandboxed bool, clamp string, requesterKey string) bool {
	return sandboxed && clampSpawned(clamp) && jsTrim(requesterKey) != "" &&
		!sessionkey.IsSubagent(requesterKey)
}

// Action is what a session tool does with a target session; it picks the
// wording of the guard's messages.
type Action string

// The guarded actions.
const (
	ActionList    Action = "list"    // sessions_list
	ActionHistory Action = "history" // sessions_history
	ActionSend    Action = "send"    // sessions_send
)

// StatusForbidden is the tool-result status of every denial in this
// package.
const StatusForbidden = "forbidden"

// Guard is the visibility guard of one tool call
// (docs/spec/reference-behaviour.md §3.5), createSessionVisibilityGuard: built with the requester, the
// effective visibility and the A2A policy, it checks each target session.
// The zero Spawned func means an empty spawned set (the reference's result
// when listing the requester's children fails).
type Guard struct {
	// Requester is the requester's internal session key (the main alias
	// when the call has no session key).
	Requester string
	// Visibility is the effective visibility (EffectiveVisibility). An
	// invalid value counts as VisibilityTree.
	Visibility Visibility
	// A2A is the agent-to-agent policy.
	A2A A2A
	// Spawned reports whether key is in the requester's spawned set: a
	// session whose entry spawnedBy equals Requester exactly. It is
	// consulted only for VisibilityTree, only for same-agent targets other
	// than the requester. nil means the set is empty.
	Spawned func(key string) bool
}

// Check reports whether the requester may perform action on the target
// session (an internal key), mirroring the guard's check. When not allowed,
// status is StatusForbidden and message is the reference's exact text;
// when allowed both are "".
//
// Agent ids come from sessionkey.AgentID (keys without an agent prefix
// belong to "main"). A cross-agent target needs VisibilityAll, an enabled
// A2A policy and A2A.Allowed, checked in that order. A same-agent target is
// denied under VisibilitySelf unless it is the requester, and under
// VisibilityTree unless it is the requester or in the spawned set; the
// requester comparison is exact string equality. An unknown action gets
// the list wording, as in the reference.
func (g Guard) Check(action Action, target string) (allowed bool, status string, message string) {
	vis := g.Visibility.orTree()
	requesterAgent := sessionkey.AgentID(g.Requester)
	if targetAgent := sessionkey.AgentID(target); targetAgent != requesterAgent {
		switch {
		case vis != VisibilityAll:
			return false, StatusForbidden, crossVisibilityMessage(action)
		case !g.A2A.Enabled:
			return false, StatusForbidden, a2aDisabledMessage(action)
		case !g.A2A.Allowed(requesterAgent, targetAgent):
			return false, StatusForbidden, a2aDeniedMessage(action)
		}
		return true, "", ""
	}
	if target == g.Requester {
		return true, "", ""
	}
	switch vis {
	case VisibilitySelf:
		return false, StatusForbidden, actionPrefix(action) +
			" visibility is restricted to the current session (tools.sessions.visibility=self)."
	case VisibilityTree:
		if g.Spawned == nil || !g.Spawned(target) {
			return false, StatusForbidden, actionPrefix(action) +
				" visibility is restricted to the current session tree (tools.sessions.visibility=tree)."
		}
	}
	return true, "", ""
}

// CheckRemote is Check for a remote A2A peer (sessions_send to
// "a2a:<peer>"): a peer is another agent, so it needs VisibilityAll, an
// enabled A2A policy, and both the requester's agent and the peer name
// matching the allow list, checked in that order.
func (g Guard) CheckRemote(action Action, peer string) (allowed bool, status string, message string) {
	switch {
	case g.Visibility.orTree() != VisibilityAll:
		return false, StatusForbidden, crossVisibilityMessage(action)
	case !g.A2A.Enabled:
		return false, StatusForbidden, a2aDisabledMessage(action)
	case !g.A2A.MatchesAllow(sessionkey.AgentID(g.Requester)) || !g.A2A.MatchesAllow(peer):
		return false, StatusForbidden, a2aDeniedMessage(action)
	}
	return true, "", ""
}

// actionPrefix is the subject of the self and tree messages.
func actionPrefix(a Action) string {
	switch a {
	case ActionHistory:
		return "Session history"
	case ActionSend:
		return "Session send"
	}
	return "Session list"
}

// crossVisibilityMessage denies a cross-agent target below VisibilityAll.
func crossVisibilityMessage(a Action) string {
	return actionPrefix(a) + " visibility is restricted. Set tools.sessions.visibility=all to allow cross-agent access."
}

// a2aDisabledMessage denies a cross-agent target when A2A is disabled.
func a2aDisabledMessage(a Action) string {
	switch a {
	case ActionHistory:
		return "Agent-to-agent history is disabled. Set tools.agentToAgent.enabled=true to allow cross-agent access."
	case ActionSend:
		return "Agent-to-agent messaging is disabled. Set tools.agentToAgent.enabled=true to allow cross-agent sends."
	}
	return "Agent-to-agent listing is disabled. Set tools.agentToAgent.enabled=true to allow cross-agent visibility."
}

// a2aDeniedMessage denies a cross-agent target the allow list excludes.
func a2aDeniedMessage(a Action) string {
	switch a {
	case ActionHistory:
		return "Agent-to-agent history denied by tools.agentToAgent.allow."
	case ActionSend:
		return "Agent-to-agent messaging denied by tools.agentToAgent.allow."
	}
	return "Agent-to-agent listing denied by tools.agentToAgent.allow."
}

// SandboxLabelMessage is the error of a sandbox-restricted sessions_send
// label lookup aimed at another agent.
const SandboxLabelMessage = "Sandboxed sessions_send label lookup is limited to this agent"

// CheckLabelSend makes the policy checks of sessions_send's label path
// (docs/spec/reference-behaviour.md §6.1 step 3), before the label is resolved.
// requesterKey is the requester's internal key (the main alias when the
// call has no session key); agentIDParam is the tool's agentId parameter
// ("" when absent); restricted is RestrictToSpawned.
//
// requestedAgent is NormalizeAgentID(agentIDParam), or "" when the
// parameter is blank; the caller passes it to sessions.resolve as agentId
// when non-empty. When requestedAgent is another agent than the
// requester's: a restricted caller gets SandboxLabelMessage, else a
// disabled A2A policy and then an allow list excluding either agent give
// the send action's A2A messages. All denials are StatusForbidden.
func CheckLabelSend(requesterKey, agentIDParam string, restricted bool, a2a A2A) (requestedAgent string, d *Denial) {
	if jsTrim(agentIDParam) == "" {
		return "", nil
	}
	requestedAgent = sessionkey.NormalizeAgentID(agentIDParam)
	requesterAgent := sessionkey.AgentID(requesterKey)
	if requestedAgent == requesterAgent {
		return requestedAgent, nil
	}
	switch {
	case restricted:
		return requestedAgent, forbidden(SandboxLabelMessage)
	case !a2a.Enabled:
		return requestedAgent, forbidden(a2aDisabledMessage(ActionSend))
	case !a2a.Allowed(requesterAgent, requestedAgent):
		return requestedAgent, forbidden(a2aDeniedMessage(ActionSend))
	}
	return requestedAgent, nil
}
