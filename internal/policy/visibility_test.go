package policy

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseVisibility(t *testing.T) {
	tests := []struct {
		in   string
		want Visibility
	}{
		{"self", VisibilitySelf},
		{"tree", VisibilityTree},
		{"agent", VisibilityAgent},
		{"all", VisibilityAll},
		{"ALL", VisibilityAll},
		{" Agent ", VisibilityAgent},
		{"\u00a0self\ufeff", VisibilitySelf},
		{"\tTREE\n", VisibilityTree},
		{"", VisibilityTree},
		{"   ", VisibilityTree},
		{"everyone", VisibilityTree},
		{"al l", VisibilityTree},
		{"spawned", VisibilityTree},
	}
	for _, tt := range tests {
		if got := ParseVisibility(tt.in); got != tt.want {
			t.Errorf("ParseVisibility(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEffectiveVisibility(t *testing.T) {
	tests := []struct {
		configured Visibility
		sandboxed  bool
		clamp      string
		want       Visibility
	}{
		{VisibilityAll, false, ClampSpawned, VisibilityAll},
		{VisibilityAgent, false, "", VisibilityAgent},
		{VisibilitySelf, false, ClampSpawned, VisibilitySelf},
		{VisibilityAll, true, ClampSpawned, VisibilityTree},
		{VisibilityAgent, true, ClampSpawned, VisibilityTree},
		{VisibilityTree, true, ClampSpawned, VisibilityTree},
		{VisibilitySelf, true, ClampSpawned, VisibilityTree}, // quirk: widened
		{VisibilityAll, true, "", VisibilityTree},            // default clamp is spawned
		{VisibilitySelf, true, "", VisibilityTree},
		{VisibilityAll, true, ClampAll, VisibilityAll},
		{VisibilitySelf, true, ClampAll, VisibilitySelf},
		{VisibilityAgent, true, ClampAll, VisibilityAgent},
		{VisibilityAll, true, "Spawned", VisibilityAll}, // clamp compared exactly
		{VisibilityAll, true, "bogus", VisibilityAll},
		{"", false, "", VisibilityTree},
		{"bogus", false, ClampAll, VisibilityTree},
		{"ALL", false, "", VisibilityTree}, // not parsed: use ParseVisibility
	}
	for _, tt := range tests {
		if got := EffectiveVisibility(tt.configured, tt.sandboxed, tt.clamp); got != tt.want {
			t.Errorf("EffectiveVisibility(%q, %v, %q) = %q, want %q", tt.configured, tt.sandboxed, tt.clamp, got, tt.want)
		}
	}
}

func TestRestrictToSpawned(t *testing.T) {
	tests := []struct {
		sandboxed bool
		clamp     string
		requester string
		want      bool
	}{
		{true, ClampSpawned, "agent:main:main", true},
		{true, "", "agent:main:main", true},
		{true, ClampSpawned, "main", true},
		{true, ClampSpawned, "agent:main:discord:group:dev", true},
		{true, ClampSpawned, "agent:main:cron:job-1", true},
		{true, ClampAll, "agent:main:main", false},
		{true, "bogus", "agent:main:main", false},
		{false, ClampSpawned, "agent:main:main", false},
		{false, "", "agent:main:main", false},
		{true, ClampSpawned, "", false},
		{true, ClampSpawned, " \t", false},
		{true, ClampSpawned, "agent:main:subagent:abc", false},
		{true, ClampSpawned, "AGENT:Main:SubAgent:abc", false},
		{true, ClampSpawned, "agent:main:subagent:a:subagent:b", false},
		{true, ClampSpawned, "subagent:child-1", false}, // legacy sub-agent key
		{true, ClampSpawned, "agent:ops:subagent:x", false},
	}
	for _, tt := range tests {
		if got := RestrictToSpawned(tt.sandboxed, tt.clamp, tt.requester); got != tt.want {
			t.Errorf("RestrictToSpawned(%v, %q, %q) = %v, want %v", tt.sandboxed, tt.clamp, tt.requester, got, tt.want)
		}
	}
}

// The guard's literal messages, written out from docs/spec/reference-behaviour.md §3.5
// independently of the implementation.
var (
	wantCrossMessage = map[Action]string{
		ActionHistory: "Session history visibility is restricted. Set tools.sessions.visibility=all to allow cross-agent access.",
		ActionSend:    "Session send visibility is restricted. Set tools.sessions.visibility=all to allow cross-agent access.",
		ActionList:    "Session list visibility is restricted. Set tools.sessions.visibility=all to allow cross-agent access.",
	}
	wantDisabledMessage = map[Action]string{
		ActionHistory: "Agent-to-agent history is disabled. Set tools.agentToAgent.enabled=true to allow cross-agent access.",
		ActionSend:    "Agent-to-agent messaging is disabled. Set tools.agentToAgent.enabled=true to allow cross-agent sends.",
		ActionList:    "Agent-to-agent listing is disabled. Set tools.agentToAgent.enabled=true to allow cross-agent visibility.",
	}
	wantDeniedMessage = map[Action]string{
		ActionHistory: "Agent-to-agent history denied by tools.agentToAgent.allow.",
		ActionSend:    "Agent-to-agent messaging denied by tools.agentToAgent.allow.",
		ActionList:    "Agent-to-agent listing denied by tools.agentToAgent.allow.",
	}
	wantSelfMessage = map[Action]string{
		ActionHistory: "Session history visibility is restricted to the current session (tools.sessions.visibility=self).",
		ActionSend:    "Session send visibility is restricted to the current session (tools.sessions.visibility=self).",
		ActionList:    "Session list visibility is restricted to the current session (tools.sessions.visibility=self).",
	}
	wantTreeMessage = map[Action]string{
		ActionHistory: "Session history visibility is restricted to the current session tree (tools.sessions.visibility=tree).",
		ActionSend:    "Session send visibility is restricted to the current session tree (tools.sessions.visibility=tree).",
		ActionList:    "Session list visibility is restricted to the current session tree (tools.sessions.visibility=tree).",
	}
)

// The dimensions of the guard matrix.
type (
	targetKind  string
	a2aMode     string
	sandboxMode struct {
		name      string
		sandboxed bool
		clamp     string
	}
	requesterCase struct {
		name    string
		key     string
		subagnt bool // the requester is a sub-agent session
		// targets maps each target kind to a key; child and otherChild
		// are in the requester's spawned set.
		targets map[targetKind]string
	}
)

const (
	targetSelf       targetKind = "self"
	targetChild      targetKind = "own spawned child"
	targetSameAgent  targetKind = "other same-agent session"
	targetOtherAgent targetKind = "other agent's session"
	targetOtherChild targetKind = "own spawned child in another agent"

	a2aDisabled a2aMode = "a2a disabled"
	a2aAllowed  a2aMode = "a2a enabled, allowed"
	a2aDenied   a2aMode = "a2a enabled, denied"
)

var (
	matrixVisibilities = []Visibility{VisibilitySelf, VisibilityTree, VisibilityAgent, VisibilityAll}
	matrixActions      = []Action{ActionList, ActionHistory, ActionSend}
	matrixTargets      = []targetKind{targetSelf, targetChild, targetSameAgent, targetOtherAgent, targetOtherChild}
	matrixA2A          = []a2aMode{a2aDisabled, a2aAllowed, a2aDenied}
	matrixSandboxes    = []sandboxMode{
		{"not sandboxed", false, ""},
		{"sandboxed, clamp spawned", true, "spawned"},
		{"sandboxed, clamp unset", true, ""},
		{"sandboxed, clamp all", true, "all"},
	}
	// The requesters belong to agents main and ops; the "other agent" is
	// the one they do not belong to. Keys without an agent prefix belong
	// to main.
	matrixRequesters = []requesterCase{
		{name: "canonical main", key: "agent:main:main", targets: map[targetKind]string{
			targetSelf:       "agent:main:main",
			targetChild:      "agent:main:subagent:c1",
			targetSameAgent:  "agent:main:discord:group:dev",
			targetOtherAgent: "agent:ops:main",
			targetOtherChild: "agent:ops:subagent:c2",
		}},
		{name: "legacy alias main", key: "main", targets: map[targetKind]string{
			targetSelf:       "main",
			targetChild:      "agent:main:subagent:c3",
			targetSameAgent:  "cron:job-1",
			targetOtherAgent: "agent:ops:telegram:direct:9",
			targetOtherChild: "agent:ops:subagent:c4",
		}},
		{name: "sub-agent of main", key: "agent:main:subagent:p", subagnt: true, targets: map[targetKind]string{
			targetSelf:       "agent:main:subagent:p",
			targetChild:      "agent:main:subagent:q",
			targetSameAgent:  "agent:main:main", // its parent is not in its tree
			targetOtherAgent: "agent:ops:main",
			targetOtherChild: "agent:ops:subagent:r",
		}},
		{name: "ops main", key: "agent:ops:main", targets: map[targetKind]string{
			targetSelf:       "agent:ops:main",
			targetChild:      "agent:ops:subagent:s",
			targetSameAgent:  "agent:ops:cron:nightly",
			targetOtherAgent: "main", // legacy key of agent main
			targetOtherChild: "agent:main:subagent:t",
		}},
	}
)

// policyFor returns the A2A policy of a matrix mode for agents main and
// ops: "op*" is a case-insensitive glob covering ops.
func policyFor(m a2aMode) A2A {
	switch m {
	case a2aDisabled:
		return A2A{Enabled: false, Allow: []string{"*"}}
	case a2aAllowed:
		return A2A{Enabled: true, Allow: []string{"main", "OP*"}}
	default:
		return A2A{Enabled: true, Allow: []string{"main"}}
	}
}

// guardOracle computes the guard's expected outcome from the rules of
// docs/spec/reference-behaviour.md §3.2 and §3.5, written independently of Guard.Check:
// the sandbox clamp first, then cross-agent rules, then same-agent rules.
func guardOracle(vis Visibility, sb sandboxMode, action Action, target targetKind, a2a a2aMode) (allowed bool, msg string) {
	effective := vis
	if sb.sandboxed && (sb.clamp == "spawned" || sb.clamp == "") && vis != VisibilityTree {
		effective = VisibilityTree
	}
	if target == targetOtherAgent || target == targetOtherChild {
		switch {
		case effective != VisibilityAll:
			return false, wantCrossMessage[action]
		case a2a == a2aDisabled:
			return false, wantDisabledMessage[action]
		case a2a == a2aDenied:
			return false, wantDeniedMessage[action]
		}
		return true, ""
	}
	if target == targetSelf {
		return true, ""
	}
	switch effective {
	case VisibilitySelf:
		return false, wantSelfMessage[action]
	case VisibilityTree:
		if target == targetChild {
			return true, ""
		}
		return false, wantTreeMessage[action]
	}
	return true, ""
}

// TestGuardMatrix checks Guard.Check against the oracle for every cell of
// visibility × sandbox × action × target × A2A × requester, with the
// guard built the way a tool builds it: EffectiveVisibility, then Check.
func TestGuardMatrix(t *testing.T) {
	cells := 0
	for _, rq := range matrixRequesters {
		spawned := map[string]bool{rq.targets[targetChild]: true, rq.targets[targetOtherChild]: true}
		for _, sb := range matrixSandboxes {
			wantRestrict := sb.sandboxed && (sb.clamp == "spawned" || sb.clamp == "") && !rq.subagnt
			if got := RestrictToSpawned(sb.sandboxed, sb.clamp, rq.key); got != wantRestrict {
				t.Errorf("%s, %s: RestrictToSpawned = %v, want %v", rq.name, sb.name, got, wantRestrict)
			}
			for _, vis := range matrixVisibilities {
				effective := EffectiveVisibility(vis, sb.sandboxed, sb.clamp)
				for _, mode := range matrixA2A {
					for _, action := range matrixActions {
						for _, target := range matrixTargets {
							cells++
							name := fmt.Sprintf("%s/%s/%s/%s/%s/%s", rq.name, sb.name, vis, mode, action, target)
							var spawnedCalls int
							g := Guard{
								Requester:  rq.key,
								Visibility: effective,
								A2A:        policyFor(mode),
								Spawned: func(key string) bool {
									spawnedCalls++
									return spawned[key]
								},
							}
							allowed, status, msg := g.Check(action, rq.targets[target])
							wantAllowed, wantMsg := guardOracle(vis, sb, action, target, mode)
							wantStatus := ""
							if !wantAllowed {
								wantStatus = "forbidden"
							}
							if allowed != wantAllowed || status != wantStatus || msg != wantMsg {
								t.Errorf("%s: Check = (%v, %q, %q), want (%v, %q, %q)",
									name, allowed, status, msg, wantAllowed, wantStatus, wantMsg)
							}
							// The spawned set is only consulted for tree,
							// same-agent, non-self targets (and at most once).
							wantCalls := 0
							if effective == VisibilityTree && (target == targetChild || target == targetSameAgent) {
								wantCalls = 1
							}
							if spawnedCalls != wantCalls {
								t.Errorf("%s: Spawned called %d times, want %d", name, spawnedCalls, wantCalls)
							}
						}
					}
				}
			}
		}
	}
	if want := 4 * 4 * 4 * 3 * 3 * 5; cells != want {
		t.Errorf("matrix has %d cells, want %d", cells, want)
	}
}

// TestGuardSpotChecks pins a few cells to their literal messages.
func TestGuardSpotChecks(t *testing.T) {
	children := func(keys ...string) func(string) bool {
		return func(k string) bool {
			for _, c := range keys {
				if c == k {
					return true
				}
			}
			return false
		}
	}
	const main = "agent:main:main"
	tests := []struct {
		name    string
		guard   Guard
		action  Action
		target  string
		allowed bool
		msg     string
	}{
		{"tree denies sibling history", Guard{Requester: main, Visibility: VisibilityTree},
			ActionHistory, "agent:main:discord:group:dev", false,
			"Session history visibility is restricted to the current session tree (tools.sessions.visibility=tree)."},
		{"tree allows child", Guard{Requester: main, Visibility: VisibilityTree, Spawned: children("agent:main:subagent:x")},
			ActionHistory, "agent:main:subagent:x", true, ""},
		{"tree is one level deep", Guard{Requester: main, Visibility: VisibilityTree, Spawned: children("agent:main:subagent:x")},
			ActionList, "agent:main:subagent:grandchild", false,
			"Session list visibility is restricted to the current session tree (tools.sessions.visibility=tree)."},
		{"tree with nil Spawned denies child", Guard{Requester: main, Visibility: VisibilityTree},
			ActionSend, "agent:main:subagent:x", false,
			"Session send visibility is restricted to the current session tree (tools.sessions.visibility=tree)."},
		{"self denies child send", Guard{Requester: main, Visibility: VisibilitySelf, Spawned: children("agent:main:subagent:x")},
			ActionSend, "agent:main:subagent:x", false,
			"Session send visibility is restricted to the current session (tools.sessions.visibility=self)."},
		{"self allows itself", Guard{Requester: main, Visibility: VisibilitySelf}, ActionHistory, main, true, ""},
		{"self compares keys exactly", Guard{Requester: main, Visibility: VisibilitySelf}, ActionHistory, "AGENT:main:main", false,
			"Session history visibility is restricted to the current session (tools.sessions.visibility=self)."},
		{"agent allows same agent", Guard{Requester: main, Visibility: VisibilityAgent}, ActionSend, "cron:job-1", true, ""},
		{"agent denies cross-agent list", Guard{Requester: main, Visibility: VisibilityAgent},
			ActionList, "agent:ops:main", false,
			"Session list visibility is restricted. Set tools.sessions.visibility=all to allow cross-agent access."},
		{"all, a2a disabled", Guard{Requester: main, Visibility: VisibilityAll},
			ActionSend, "agent:ops:main", false,
			"Agent-to-agent messaging is disabled. Set tools.agentToAgent.enabled=true to allow cross-agent sends."},
		{"all, a2a denied", Guard{Requester: main, Visibility: VisibilityAll, A2A: A2A{Enabled: true, Allow: []string{"main"}}},
			ActionHistory, "agent:ops:main", false, "Agent-to-agent history denied by tools.agentToAgent.allow."},
		{"all, a2a allowed", Guard{Requester: main, Visibility: VisibilityAll, A2A: A2A{Enabled: true, Allow: []string{"ops-*", "main"}}},
			ActionHistory, "agent:ops-a:main", true, ""},
		{"all, a2a denied listing", Guard{Requester: "agent:guest:main", Visibility: VisibilityAll, A2A: A2A{Enabled: true, Allow: []string{"ops-*", "main"}}},
			ActionList, "agent:ops-a:main", false, "Agent-to-agent listing denied by tools.agentToAgent.allow."},
		{"all, listing disabled", Guard{Requester: main, Visibility: VisibilityAll},
			ActionList, "agent:ops:main", false,
			"Agent-to-agent listing is disabled. Set tools.agentToAgent.enabled=true to allow cross-agent visibility."},
		{"all, history disabled", Guard{Requester: main, Visibility: VisibilityAll},
			ActionHistory, "agent:ops:main", false,
			"Agent-to-agent history is disabled. Set tools.agentToAgent.enabled=true to allow cross-agent access."},
		{"all, cross-agent child still needs A2A", Guard{Requester: main, Visibility: VisibilityAll, Spawned: children("agent:ops:subagent:x")},
			ActionSend, "agent:ops:subagent:x", false,
			"Agent-to-agent messaging is disabled. Set tools.agentToAgent.enabled=true to allow cross-agent sends."},
		{"legacy keys belong to main", Guard{Requester: "agent:ops:main", Visibility: VisibilityAgent},
			ActionHistory, "discord:group:dev", false,
			"Session history visibility is restricted. Set tools.sessions.visibility=all to allow cross-agent access."},
		{"agent ids are normalized", Guard{Requester: "agent:Main:main", Visibility: VisibilityAgent},
			ActionSend, "AGENT:MAIN:other", true, ""},
		{"unknown action gets list wording", Guard{Requester: main, Visibility: VisibilityTree},
			Action("status"), "agent:main:x", false,
			"Session list visibility is restricted to the current session tree (tools.sessions.visibility=tree)."},
		{"invalid visibility is tree", Guard{Requester: main, Visibility: "everything"},
			ActionSend, "agent:main:x", false,
			"Session send visibility is restricted to the current session tree (tools.sessions.visibility=tree)."},
		{"sandbox clamp: configured all becomes tree", Guard{Requester: main, Visibility: EffectiveVisibility(VisibilityAll, true, "spawned")},
			ActionHistory, "agent:ops:main", false,
			"Session history visibility is restricted. Set tools.sessions.visibility=all to allow cross-agent access."},
		{"sandbox clamp widens self to tree", Guard{Requester: main, Visibility: EffectiveVisibility(VisibilitySelf, true, "spawned"), Spawned: children("agent:main:subagent:x")},
			ActionHistory, "agent:main:subagent:x", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			allowed, status, msg := tt.guard.Check(tt.action, tt.target)
			wantStatus := ""
			if !tt.allowed {
				wantStatus = StatusForbidden
			}
			if allowed != tt.allowed || status != wantStatus || msg != tt.msg {
				t.Errorf("Check(%q, %q) = (%v, %q, %q), want (%v, %q, %q)",
					tt.action, tt.target, allowed, status, msg, tt.allowed, wantStatus, tt.msg)
			}
		})
	}
	if StatusForbidden != "forbidden" {
		t.Errorf("StatusForbidden = %q", StatusForbidden)
	}
}

func TestCheckLabelSend(t *testing.T) {
	const (
		sandboxMsg  = "Sandboxed sessions_send label lookup is limited to this agent"
		disabledMsg = "Agent-to-agent messaging is disabled. Set tools.agentToAgent.enabled=true to allow cross-agent sends."
		deniedMsg   = "Agent-to-agent messaging denied by tools.agentToAgent.allow."
	)
	on := A2A{Enabled: true}
	tests := []struct {
		name       string
		requester  string
		agentID    string
		restricted bool
		a2a        A2A
		wantAgent  string
		wantMsg    string // "" = allowed
	}{
		{"no agentId", "agent:main:main", "", true, A2A{}, "", ""},
		{"blank agentId", "agent:main:main", "  ", true, A2A{}, "", ""},
		{"own agent", "agent:main:main", "main", true, A2A{}, "main", ""},
		{"own agent normalized", "agent:main:main", " Main ", true, A2A{}, "main", ""},
		{"legacy requester key is main", "main", "MAIN", true, A2A{}, "main", ""},
		{"ops requester, own agent", "agent:ops:main", "OPS", true, A2A{}, "ops", ""},
		{"restricted cross-agent", "agent:main:main", "ops", true, on, "ops", sandboxMsg},
		{"restricted beats a2a", "agent:main:main", "ops", true, A2A{}, "ops", sandboxMsg},
		{"a2a disabled", "agent:main:main", "ops", false, A2A{}, "ops", disabledMsg},
		{"a2a disabled with allow list", "agent:main:main", "ops", false, A2A{Allow: []string{"*"}}, "ops", disabledMsg},
		{"a2a denied", "agent:main:main", "ops", false, A2A{Enabled: true, Allow: []string{"main"}}, "ops", deniedMsg},
		{"a2a denied requester", "agent:guest:main", "ops-a", false, A2A{Enabled: true, Allow: []string{"ops-*", "main"}}, "ops-a", deniedMsg},
		{"a2a allowed, empty allow", "agent:main:main", "ops", false, on, "ops", ""},
		{"a2a allowed by list", "agent:main:main", "Ops-A", false, A2A{Enabled: true, Allow: []string{"ops-*", "main"}}, "ops-a", ""},
		{"agentId normalized", "agent:main:main", "Research Team", false, on, "research-team", ""},
		{"sub-agent requester", "agent:main:subagent:x", "ops", false, A2A{}, "ops", disabledMsg},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agent, d := CheckLabelSend(tt.requester, tt.agentID, tt.restricted, tt.a2a)
			if agent != tt.wantAgent {
				t.Errorf("requestedAgent = %q, want %q", agent, tt.wantAgent)
			}
			switch {
			case tt.wantMsg == "" && d != nil:
				t.Errorf("denied %+v, want allowed", *d)
			case tt.wantMsg != "" && d == nil:
				t.Errorf("allowed, want %q", tt.wantMsg)
			case d != nil && (d.Status != "forbidden" || d.Message != tt.wantMsg):
				t.Errorf("denial %+v, want forbidden %q", *d, tt.wantMsg)
			}
		})
	}
	if SandboxLabelMessage != "Sandboxed sessions_send label lookup is limited to this agent" {
		t.Errorf("SandboxLabelMessage = %q", SandboxLabelMessage)
	}
}

func TestGuardCheckRemote(t *testing.T) {
	on := A2A{Enabled: true}
	for _, tt := range []struct {
		name string
		g    Guard
		peer string
		want string // "" allowed
	}{
		{"allowed", Guard{Requester: "agent:main:main", Visibility: VisibilityAll, A2A: on}, "b", ""},
		{"tree visibility", Guard{Requester: "agent:main:main", Visibility: VisibilityTree, A2A: on}, "b", "tools.sessions.visibility=all"},
		{"disabled", Guard{Requester: "agent:main:main", Visibility: VisibilityAll}, "b", "tools.agentToAgent.enabled=true"},
		{"peer allowed", Guard{Requester: "agent:main:main", Visibility: VisibilityAll, A2A: A2A{Enabled: true, Allow: []string{"main", "peer-*"}}}, "peer-b", ""},
		{"peer not allowed", Guard{Requester: "agent:main:main", Visibility: VisibilityAll, A2A: A2A{Enabled: true, Allow: []string{"main", "peer-*"}}}, "b", "tools.agentToAgent.allow"},
		{"agent not allowed", Guard{Requester: "agent:guest:main", Visibility: VisibilityAll, A2A: A2A{Enabled: true, Allow: []string{"main", "b"}}}, "b", "tools.agentToAgent.allow"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ok, status, msg := tt.g.CheckRemote(ActionSend, tt.peer)
			if tt.want == "" {
				if !ok {
					t.Fatalf("denied: %s %s", status, msg)
				}
				return
			}
			if ok || status != StatusForbidden || !strings.Contains(msg, tt.want) {
				t.Fatalf("CheckRemote = %v %q %q, want a denial with %q", ok, status, msg, tt.want)
			}
		})
	}
}
