package policy

import (
	"slices"
	"testing"
)

// checkDenial compares a *Denial with a wanted message, "" meaning nil.
func checkDenial(t *testing.T, what string, d *Denial, want string) {
	t.Helper()
	switch {
	case want == "" && d != nil:
		t.Errorf("%s = %+v, want allowed (nil)", what, *d)
	case want != "" && d == nil:
		t.Errorf("%s = nil, want forbidden %q", what, want)
	case d != nil && (d.Status != "forbidden" || d.Message != want):
		t.Errorf("%s = %+v, want {forbidden %q}", what, *d, want)
	}
}

func TestCheckSpawnDepth(t *testing.T) {
	tests := []struct {
		depth, max int
		want       string
	}{
		{0, 1, ""},
		{1, 1, "sessions_spawn is not allowed at this depth (current depth: 1, max: 1)"},
		{2, 1, "sessions_spawn is not allowed at this depth (current depth: 2, max: 1)"},
		{1, 2, ""},
		{2, 2, "sessions_spawn is not allowed at this depth (current depth: 2, max: 2)"},
		{4, 5, ""},
		{5, 5, "sessions_spawn is not allowed at this depth (current depth: 5, max: 5)"},
	}
	for _, tt := range tests {
		checkDenial(t, "CheckSpawnDepth", CheckSpawnDepth(tt.depth, tt.max), tt.want)
	}
}

func TestCheckActiveChildren(t *testing.T) {
	tests := []struct {
		n, max int
		want   string
	}{
		{0, 5, ""},
		{4, 5, ""},
		{5, 5, "sessions_spawn has reached max active children for this session (5/5)"},
		{7, 5, "sessions_spawn has reached max active children for this session (7/5)"},
		{0, 1, ""},
		{1, 1, "sessions_spawn has reached max active children for this session (1/1)"},
		{19, 20, ""},
		{20, 20, "sessions_spawn has reached max active children for this session (20/20)"},
	}
	for _, tt := range tests {
		checkDenial(t, "CheckActiveChildren", CheckActiveChildren(tt.n, tt.max), tt.want)
	}
}

func TestCheckAllowAgents(t *testing.T) {
	tests := []struct {
		name      string
		requester string
		target    string
		allow     []string
		want      string
	}{
		{"own agent, no allowlist", "main", "main", nil, ""},
		{"no target means own agent", "main", "", nil, ""},
		{"blank target means own agent", "ops", "  ", nil, ""},
		{"own agent, normalized", "Main", " MAIN ", nil, ""},
		{"no allowlist", "main", "beta", nil, "agentId is not allowed for sessions_spawn (allowed: none)"},
		{"empty allowlist", "main", "beta", []string{}, "agentId is not allowed for sessions_spawn (allowed: none)"},
		{"blank entries only", "main", "beta", []string{"", "  "}, "agentId is not allowed for sessions_spawn (allowed: none)"},
		{"listed", "main", "beta", []string{"beta"}, ""},
		{"star", "main", "beta", []string{"*"}, ""},
		{"trimmed star", "main", "beta", []string{" * "}, ""},
		{"star among others", "main", "zeta", []string{"alpha", "*"}, ""},
		{"allowlist normalized", "main", "research", []string{"Research"}, ""},
		{"target normalized", "main", "BETA", []string{"beta"}, ""},
		{"both normalized", "main", "Research Team", []string{" research team "}, ""},
		{"not listed", "main", "beta", []string{"alpha"}, "agentId is not allowed for sessions_spawn (allowed: alpha)"},
		{"several, dedupe, order kept", "main", "gamma", []string{"zeta", " Alpha ", "alpha", "", "ZETA"},
			"agentId is not allowed for sessions_spawn (allowed: zeta, alpha)"},
		{"normalized ids in message", "main", "gamma", []string{"Research Team"},
			"agentId is not allowed for sessions_spawn (allowed: research-team)"},
		{"ops requester", "ops", "main", []string{"qa"}, "agentId is not allowed for sessions_spawn (allowed: qa)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDenial(t, "CheckAllowAgents", CheckAllowAgents(tt.requester, tt.target, tt.allow), tt.want)
		})
	}
}

func TestChildSandboxed(t *testing.T) {
	const mainKey = "agent:research:main"
	child := "agent:research:subagent:0d3c"
	tests := []struct {
		mode, key, mainKey string
		want               bool
	}{
		{"", child, mainKey, false},
		{"off", child, mainKey, false},
		{"off", mainKey, mainKey, false},
		{"all", child, mainKey, true},
		{"all", mainKey, mainKey, true},
		{"non-main", child, mainKey, true},
		{"non-main", mainKey, mainKey, false},
		{"non-main", " " + mainKey + "\n", mainKey, false},
		{"non-main", "global", "global", false},
		{"non-main", child, "global", true},
		{"bogus", child, mainKey, true}, // like the reference: not off/all → non-main
		{"Off", child, mainKey, true},   // compared exactly
	}
	for _, tt := range tests {
		if got := ChildSandboxed(tt.mode, tt.key, tt.mainKey); got != tt.want {
			t.Errorf("ChildSandboxed(%q, %q, %q) = %v, want %v", tt.mode, tt.key, tt.mainKey, got, tt.want)
		}
	}
}

func TestCheckSandbox(t *testing.T) {
	const (
		escape  = "Sandboxed sessions cannot spawn unsandboxed subagents. Set a sandboxed target agent or use the same agent runtime."
		require = `sessions_spawn sandbox="require" needs a sandboxed target runtime. Pick a sandboxed agentId or use sandbox="inherit".`
	)
	tests := []struct {
		child, requester bool
		param            string
		want             string
	}{
		{true, true, "require", ""},
		{true, false, "require", ""},
		{true, true, "inherit", ""},
		{false, false, "inherit", ""},
		{false, false, "", ""},
		{false, true, "inherit", escape},
		{false, true, "require", escape}, // the requester check comes first
		{false, false, "require", require},
	}
	for _, tt := range tests {
		checkDenial(t, "CheckSandbox", CheckSandbox(tt.child, tt.requester, tt.param), tt.want)
	}
	if SandboxEscapeMessage != escape || SandboxRequireMessage != require {
		t.Errorf("sandbox messages changed: %q, %q", SandboxEscapeMessage, SandboxRequireMessage)
	}
}

func TestAllowedSpawnTargets(t *testing.T) {
	tests := []struct {
		name       string
		requester  string
		allow      []string
		configured []string
		wantAny    bool
		wantIDs    []string
	}{
		{"defaults", "main", nil, nil, false, []string{"main"}},
		{"requester normalized", " Main ", nil, nil, false, []string{"main"}},
		{"empty requester is main", "", nil, nil, false, []string{"main"}},
		{"allowlist", "main", []string{"beta", "alpha"}, []string{"main", "gamma"}, false, []string{"main", "alpha", "beta"}},
		{"allowlisted need not be configured", "main", []string{"ghost"}, []string{"main"}, false, []string{"main", "ghost"}},
		{"allowlist normalized, deduped, blanks dropped", "main", []string{" Beta ", "beta", "", "  ", "MAIN"}, nil, false,
			[]string{"main", "beta"}},
		{"star lists configured", "main", []string{"*"}, []string{"main", "Research", "beta", "alpha"}, true,
			[]string{"main", "alpha", "beta", "research"}},
		{"star ignores other entries", "main", []string{"zeta", " * "}, []string{"beta"}, true, []string{"main", "beta"}},
		{"star, nothing configured", "main", []string{"*"}, nil, true, []string{"main"}},
		{"requester first even if unconfigured", "zz", []string{"*"}, []string{"main", "aa"}, true, []string{"zz", "aa", "main"}},
		{"star-ish entries are ids", "main", []string{"*x"}, nil, false, []string{"main", "x"}},
		// Order as Node's localeCompare gives it for these ids (checked
		// with node: '_' < '-' < digits < letters, prefix first).
		{"locale order", "main",
			[]string{"a-b", "ab", "a_b", "a1", "a9b", "0x", "zz", "a", "a-", "a_", "a__", "a-_", "b0", "9", "a-1", "a_1"}, nil, false,
			[]string{"main", "0x", "9", "a", "a_", "a__", "a_1", "a_b", "a-", "a-_", "a-1", "a-b", "a1", "a9b", "ab", "b0", "zz"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotAny, gotIDs := AllowedSpawnTargets(tt.requester, tt.allow, tt.configured)
			if gotAny != tt.wantAny || !slices.Equal(gotIDs, tt.wantIDs) {
				t.Errorf("AllowedSpawnTargets = %v, %q; want %v, %q", gotAny, gotIDs, tt.wantAny, tt.wantIDs)
			}
		})
	}
}

func TestAllowedSpawnTargetsDoesNotAlias(t *testing.T) {
	allow := []string{"beta", "alpha", "main"}
	AllowedSpawnTargets("main", allow, nil)
	if !slices.Equal(allow, []string{"beta", "alpha", "main"}) {
		t.Errorf("input modified: %q", allow)
	}
}

func TestCompareAgentIDs(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"a", "a", 0},
		{"", "a", -1},
		{"a", "ab", -1},
		{"ab", "a", 1},
		{"a_b", "a-b", -1},
		{"a-b", "a1", -1},
		{"a9", "aa", -1},
		{"z", "a", 1},
	}
	for _, tt := range tests {
		if got := compareAgentIDs(tt.a, tt.b); got != tt.want {
			t.Errorf("compareAgentIDs(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestSandboxReadsMainKey checks that a mode SandboxReadsMainKey says
// decides without the agent's main key gives the same answer whatever
// key is passed, and that the modes that compare with it are reported.
func TestSandboxReadsMainKey(t *testing.T) {
	keys := []string{"", "agent:main:main", " agent:main:main ", "agent:main:other", "global"}
	for _, mode := range []string{"", SandboxOff, SandboxAll, "non-main", "weird", " off"} {
		reads := SandboxReadsMainKey(mode)
		differs := false
		for _, child := range keys {
			for _, main := range keys {
				if ChildSandboxed(mode, child, main) != ChildSandboxed(mode, child, "") {
					differs = true
				}
			}
		}
		if differs && !reads {
			t.Errorf("mode %q: ChildSandboxed reads the main key, SandboxReadsMainKey says no", mode)
		}
		if want := mode != "" && mode != SandboxOff && mode != SandboxAll; reads != want {
			t.Errorf("SandboxReadsMainKey(%q) = %v, want %v", mode, reads, want)
		}
	}
}
