package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard/internal/sessionkey"
)

// Denial is a refused decision: the tool result's status and error text,
// exactly as the reference words them. A nil *Denial means allowed.
type Denial struct {
	// Status is the tool-result status, StatusForbidden for every denial
	// in this package.
	Status string
	// Message is the tool-result error text.
	Message string
}

// forbidden returns a StatusForbidden denial.
func forbidden(msg string) *Denial { return &Denial{Status: StatusForbidden, Message: msg} }

// CheckSpawnDepth is step 6 of the spawn pipeline
// (docs/spec/reference-behaviour.md §9.3): a caller at callerDepth (its stored spawnDepth, else derived from
// its spawnedBy ancestry, else its key's ":subagent:" count) may not spawn
// when callerDepth >= maxDepth (agents.defaults.subagents.maxSpawnDepth,
// 1..5, default 1).
//
//	CheckSpawnDepth(1, 1) // "sessions_spawn is not allowed at this depth (current depth: 1, max: 1)"
func CheckSpawnDepth(callerDepth, maxDepth int) *Denial {
	if callerDepth < maxDepth {
		return nil
	}
	return forbidden(fmt.Sprintf("sessions_spawn is not allowed at this depth (current depth: %d, max: %d)",
		callerDepth, maxDepth))
}

// CheckActiveChildren is step 7 of the spawn pipeline: a requester with
// active >= maxChildren active children (runs it requested that have not
// ended or still have pending descendants; maxChildren is
// agents.defaults.subagents.maxChildrenPerAgent, 1..20, default 5) may not
// spawn another.
//
//	CheckActiveChildren(5, 5) // "sessions_spawn has reached max active children for this session (5/5)"
func CheckActiveChildren(active, maxChildren int) *Denial {
	if active < maxChildren {
		return nil
	}
	return forbidden(fmt.Sprintf("sessions_spawn has reached max active children for this session (%d/%d)",
		active, maxChildren))
}

// CheckAllowAgents is step 8 of the spawn pipeline, the cross-agent
// allowlist. requesterAgent is the requester's agent id (the caller's
// override, else the agent of its internal key); targetAgent is the tool's
// agentId parameter, "" (or blank) meaning the requester's own agent. Both
// are normalized (sessionkey.NormalizeAgentID); the child then belongs to
// the normalized target.
//
// Spawning into the requester's own agent is always allowed. Otherwise
// allowAgents (agents.list[<requester>].subagents.allowAgents, default
// empty) must contain "*" (after trimming) or the target, compared as
// lower-cased normalized ids; blank entries are ignored. The target need not
// be configured in agents.list. The denial lists the normalized allowed ids
// in first-seen order without repeats, joined with ", ", or "none":
//
//	"agentId is not allowed for sessions_spawn (allowed: alpha, beta)"
func CheckAllowAgents(requesterAgent, targetAgent string, allowAgents []string) *Denial {
	requester := sessionkey.NormalizeAgentID(requesterAgent)
	target := requester
	if jsTrim(targetAgent) != "" {
		target = sessionkey.NormalizeAgentID(targetAgent)
	}
	if target == requester {
		return nil
	}
	allowAny, ids := allowAgentSet(allowAgents)
	if allowAny || slices.Contains(ids, strings.ToLower(target)) {
		return nil
	}
	text := "none"
	if len(ids) > 0 {
		text = strings.Join(ids, ", ")
	}
	return forbidden("agentId is not allowed for sessions_spawn (allowed: " + text + ")")
}

// allowAgentSet reads a subagents.allowAgents list: allowAny is whether an
// entry is "*" after trimming; ids are the other non-blank entries,
// normalized and lower-cased, in first-seen order without repeats.
func allowAgentSet(allowAgents []string) (allowAny bool, ids []string) {
	for _, v := range allowAgents {
		switch t := jsTrim(v); t {
		case "":
		case "*":
			allowAny = true
		default:
			ids = appendNew(ids, strings.ToLower(sessionkey.NormalizeAgentID(v)))
		}
	}
	return allowAny, ids
}

// appendNew appends id to ids unless it is already there.
func appendNew(ids []string, id string) []string {
	if slices.Contains(ids, id) {
		return ids
	}
	return append(ids, id)
}

// The sandbox modes of agents.list[].sandbox.mode and
// agents.defaults.sandbox.mode.
const (
	SandboxOff     = "off"      // never sandboxed (the default, also for "")
	SandboxNonMain = "non-main" // every session but the agent's main one
	SandboxAll     = "all"      // every session
)

// SandboxReadsMainKey reports whether ChildSandboxed of sandboxMode reads
// its agentMainKey: off and all decide without it, so a caller need not
// make the key (a run on the host made it at each of three checks).
func SandboxReadsMainKey(sandboxMode string) bool {
	return sandboxMode != "" && sandboxMode != SandboxOff && sandboxMode != SandboxAll
}

// ChildSandboxed reports whether the session childKey of an agent whose
// sandbox mode is sandboxMode (agents.list[].sandbox.mode, else
// agents.defaults.sandbox.mode; "" means off) runs sandboxed, mirroring
// shouldSandboxSession: off → no, all → yes, otherwise (non-main, and like
// the reference any other value) yes unless childKey equals agentMainKey,
// the agent's main session key ("global" under session.scope "global"),
// both trimmed.
func ChildSandboxed(sandboxMode, childKey, agentMainKey string) bool {
	switch sandboxMode {
	case "", SandboxOff:
		return false
	case SandboxAll:
		return true
	}
	return jsTrim(childKey) != jsTrim(agentMainKey)
}

// The sandbox denials of sessions_spawn.
const (
	// SandboxEscapeMessage: a sandboxed requester may not spawn an
	// unsandboxed child.
	SandboxEscapeMessage = "Sandboxed sessions cannot spawn unsandboxed subagents. Set a sandboxed target agent or use the same agent runtime."
	// SandboxRequireMessage: sandbox="require" needs a sandboxed child.
	SandboxRequireMessage = `sessions_spawn sandbox="require" needs a sandboxed target runtime. Pick a sandboxed agentId or use sandbox="inherit".`
)

// CheckSandbox is step 10 of the spawn pipeline: an unsandboxed child is
// refused when the requester is sandboxed (SandboxEscapeMessage, checked
// first) or sandboxParam, the tool's normalized sandbox parameter, is
// "require" (SandboxRequireMessage). A sandboxed child is always allowed.
func CheckSandbox(childSandboxed, requesterSandboxed bool, sandboxParam string) *Denial {
	switch {
	case childSandboxed:
		return nil
	case requesterSandboxed:
		return forbidden(SandboxEscapeMessage)
	case sandboxParam == "require":
		return forbidden(SandboxRequireMessage)
	}
	return nil
}

// AllowedSpawnTargets is the allowed set agents_list reports
// (docs/spec/reference-behaviour.md §11). requester is the requester's agent id,
// allowAgents its subagents.allowAgents, configured the ids of agents.list;
// all are normalized with sessionkey.NormalizeAgentID.
//
// allowAny is whether an allowAgents entry is "*" after trimming. ids holds
// the requester first, then, without repeats and sorted as JavaScript's
// localeCompare sorts ids ('_' < '-' < digits < letters), every configured
// id when allowAny, else every non-blank, non-"*" allowAgents entry
// (allowlisted ids need not be configured).
func AllowedSpawnTargets(requester string, allowAgents []string, configured []string) (allowAny bool, ids []string) {
	self := sessionkey.NormalizeAgentID(requester)
	allowAny, allowed := allowAgentSet(allowAgents)
	if allowAny {
		allowed = nil
		for _, id := range configured {
			allowed = appendNew(allowed, sessionkey.NormalizeAgentID(id))
		}
	}
	ids = []string{self}
	rest := slices.DeleteFunc(allowed, func(id string) bool { return id == self })
	slices.SortFunc(rest, compareAgentIDs)
	return allowAny, append(ids, rest...)
}
