package sessionkey

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in     string
		want   Key
		wantOK bool
	}{
		// docs/spec/reference-behaviour.md §2.2 examples.
		{"AGENT:Main:Hook:Webhook:42", Key{"main", "hook:webhook:42"}, true},
		{"agent:main", Key{}, false},
		{"agent::broken", Key{}, false},
		// docs/spec/reference-behaviour.md §2.1 shapes.
		{"agent:main:main", Key{"main", "main"}, true},
		{"agent:main:discord:group:123", Key{"main", "discord:group:123"}, true},
		{"agent:main:telegram:direct:peer", Key{"main", "telegram:direct:peer"}, true},
		{"agent:main:cron:job-1:run:r1", Key{"main", "cron:job-1:run:r1"}, true},
		{"agent:ops:subagent:a:subagent:b", Key{"ops", "subagent:a:subagent:b"}, true},
		{"agent:ops:acp:x:y", Key{"ops", "acp:x:y"}, true},
		// Trimming, empty parts, agent id trimming.
		{"  agent:ops:discord:group:dev  ", Key{"ops", "discord:group:dev"}, true},
		{"agent:main::subagent::x:", Key{"main", "subagent:x"}, true},
		{"::agent:main:x", Key{"main", "x"}, true},
		{"agent: ops :x", Key{"ops", "x"}, true},
		{"agent: :x", Key{}, false},
		{"agent:a b:x", Key{"a b", "x"}, true},
		{"\ufeffagent:main:x\u3000", Key{"main", "x"}, true}, // JS trim set
		{"\u0085agent:main:x", Key{}, false},                 // NEL is not JS white space
		// Rest keeps inner white space; trailing white space hidden by a
		// trailing ':' survives (reference quirk).
		{"agent:main: b :", Key{"main", " b "}, true},
		// Not agent keys.
		{"", Key{}, false},
		{"   ", Key{}, false},
		{"main", Key{}, false},
		{"cron:job-1", Key{}, false},
		{"agents:main:x", Key{}, false},
		{"agent", Key{}, false},
		{":::", Key{}, false},
	}
	for _, tt := range tests {
		got, ok := Parse(tt.in)
		if ok != tt.wantOK || got != tt.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
		if ok {
			if s, want := got.String(), "agent:"+tt.want.AgentID+":"+tt.want.Rest; s != want {
				t.Errorf("Parse(%q).String() = %q, want %q", tt.in, s, want)
			}
		}
	}
}

func TestAgentID(t *testing.T) {
	tests := []struct{ in, want string }{
		{"agent:main:main", "main"},
		{"agent:Ops:discord:group:dev", "ops"},
		{"agent:My Agent:x", "my-agent"},
		{"agent:_ops:x", "ops"},
		// Every non-agent key belongs to main.
		{"main", "main"},
		{"cron:job-1", "main"},
		{"discord:group:dev", "main"},
		{"agent:ops", "main"},
		{"", "main"},
	}
	for _, tt := range tests {
		if got := AgentID(tt.in); got != tt.want {
			t.Errorf("AgentID(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestIsValidAgentID(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		// docs/spec/reference-behaviour.md §2.2 examples.
		{"Agent not found: xyz", false},
		{"../../../etc/passwd", false},
		{strings.Repeat("a", 65), false},
		{"my-research_agent01", true},
		// Edges.
		{strings.Repeat("a", 64), true},
		{"main", true},
		{"MAIN", true},
		{" main ", true},
		{"0", true},
		{"a_", true},
		{"a-", true},
		{"_a", false},
		{"-a", false},
		{"a.b", false},
		{"a b", false},
		{"ä", false},
		{"\u212a", false}, // Kelvin sign: not ASCII k
		{"", false},
		{"   ", false},
	}
	for _, tt := range tests {
		if got := IsValidAgentID(tt.in); got != tt.want {
			t.Errorf("IsValidAgentID(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestNormalizeAgentID(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "main"},
		{"   ", "main"},
		{"Main", "main"},
		{" Ops ", "ops"},
		{"my-research_agent01", "my-research_agent01"},
		{"A_B", "a_b"},
		{"a--b", "a--b"},
		{"Agent not found: xyz", "agent-not-found-xyz"},
		{"../../../etc/passwd", "etc-passwd"},
		{strings.Repeat("a", 65), strings.Repeat("a", 64)},
		{strings.Repeat("a", 64) + "!", strings.Repeat("a", 64)},
		// The cap applies after stripping, so a dash can end the id.
		{strings.Repeat("a", 63) + "!b", strings.Repeat("a", 63) + "-"},
		{"--x--", "x"},
		{"a b", "a-b"},
		{"a  !  b", "a-b"},
		{"é", "main"},
		{"Ünïcode", "n-code"},
		{"x😀y", "x-y"},
		{"!!!", "main"},
		// Conscious fix: leading '_' is stripped like leading '-'.
		{"_ops", "ops"},
		{"-_x", "x"},
		{"é_x", "x"},
		{"_", "main"},
		{"a_", "a_"},
	}
	for _, tt := range tests {
		got := NormalizeAgentID(tt.in)
		if got != tt.want {
			t.Errorf("NormalizeAgentID(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if !IsValidAgentID(got) {
			t.Errorf("NormalizeAgentID(%q) = %q, not a valid id", tt.in, got)
		}
	}
}

func TestClassifyShape(t *testing.T) {
	tests := []struct {
		in   string
		want Shape
	}{
		{"", ShapeMissing},
		{"  ", ShapeMissing},
		{"agent:main:main", ShapeAgent},
		{"AGENT:Main:Hook:Webhook:42", ShapeAgent},
		{"agent:main", ShapeMalformedAgent},
		{"agent::broken", ShapeMalformedAgent},
		{"Agent:", ShapeMalformedAgent},
		{" agent: :x", ShapeMalformedAgent},
		{"main", ShapeLegacyOrAlias},
		{"cron:job-1", ShapeLegacyOrAlias},
		{"subagent:child-1", ShapeLegacyOrAlias},
		{"discord:group:dev", ShapeLegacyOrAlias},
		{":agent:main", ShapeLegacyOrAlias},
		{"agents:main:x", ShapeLegacyOrAlias},
	}
	for _, tt := range tests {
		if got := classifyShape(tt.in); got != tt.want {
			t.Errorf("classifyShape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNormalizeMainKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "main"},
		{"  ", "main"},
		{"main", "main"},
		{" Primary ", "primary"},
		{"WORK:Desk", "work:desk"},
	}
	for _, tt := range tests {
		if got := NormalizeMainKey(tt.in); got != tt.want {
			t.Errorf("NormalizeMainKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMainKey(t *testing.T) {
	tests := []struct{ agentID, mainKey, want string }{
		{"main", "", "agent:main:main"},
		{"", "", "agent:main:main"},
		{"Ops", " Primary ", "agent:ops:primary"},
		{"Research Bot", "main", "agent:research-bot:main"},
	}
	for _, tt := range tests {
		if got := MainKey(tt.agentID, tt.mainKey); got != tt.want {
			t.Errorf("MainKey(%q, %q) = %q, want %q", tt.agentID, tt.mainKey, got, tt.want)
		}
	}
}

func TestSubagentKey(t *testing.T) {
	const id = "0b5c3f0e-8d1a-4c2b-9f3e-1a2b3c4d5e6f"
	tests := []struct{ agentID, want string }{
		{"main", "agent:main:subagent:" + id},
		{"Research Bot", "agent:research-bot:subagent:" + id},
		{"", "agent:main:subagent:" + id},
	}
	for _, tt := range tests {
		got := SubagentKey(tt.agentID, id)
		if got != tt.want {
			t.Errorf("SubagentKey(%q) = %q, want %q", tt.agentID, got, tt.want)
		}
		if !IsSubagent(got) || SubagentDepth(got) != 1 {
			t.Errorf("SubagentKey(%q) = %q: IsSubagent %v, depth %d", tt.agentID, got, IsSubagent(got), SubagentDepth(got))
		}
	}
}

func TestToStoreKey(t *testing.T) {
	tests := []struct{ agentID, requestKey, mainKey, want string }{
		// Empty or "main" → the agent's main key.
		{"main", "", "", "agent:main:main"},
		{"main", "   ", "", "agent:main:main"},
		{"ops", "main", "", "agent:ops:main"},
		{"ops", " MAIN ", "primary", "agent:ops:primary"},
		{"ops", "", " Primary ", "agent:ops:primary"},
		{"Research Bot", "main", "", "agent:research-bot:main"},
		// "main" is literal, not the configured main key.
		{"ops", "primary", "primary", "agent:ops:primary"},
		// Parsable agent keys are re-normalized; their agent id wins.
		{"ops", "agent:main:main", "", "agent:main:main"},
		{"main", "AGENT:Ops:Discord:Group:Dev", "", "agent:ops:discord:group:dev"},
		{"main", "agent:main::a::b:", "", "agent:main:a:b"},
		{"main", "agent:main:agent:x:y", "", "agent:main:agent:x:y"},
		// Malformed agent keys are not prefixed again.
		{"main", "agent:main", "", "agent:main"},
		{"main", "agent::broken", "", "agent::broken"},
		{"main", " AGENT:X ", "", "agent:x"},
		// Everything else gets the agent prefix, lower-cased.
		{"main", "discord:group:req", "", "agent:main:discord:group:req"},
		{"My Agent", "cron:job-1", "", "agent:my-agent:cron:job-1"},
		{"main", "  Hook:ABC  ", "", "agent:main:hook:abc"},
		{"main", "main:thread:1", "x", "agent:main:main:thread:1"},
		{"main", "subagent:child-1", "", "agent:main:subagent:child-1"},
		{"main", "global", "", "agent:main:global"},
	}
	for _, tt := range tests {
		if got := ToStoreKey(tt.agentID, tt.requestKey, tt.mainKey); got != tt.want {
			t.Errorf("ToStoreKey(%q, %q, %q) = %q, want %q", tt.agentID, tt.requestKey, tt.mainKey, got, tt.want)
		}
	}
}

func TestSubagentDepth(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"agent:main:subagent:parent:subagent:child", 2},
		{"main", 0},
		{"", 0},
		{"agent:main:subagent:a", 1},
		{" AGENT:MAIN:SUBAGENT:A ", 1},
		{"subagent:child-1", 0},
		{"agent:main:subagent:subagent:x", 1}, // non-overlapping, like JS split
		{"agent:main:subagent:a:subagent:b:subagent:c", 3},
	}
	for _, tt := range tests {
		if got := SubagentDepth(tt.in); got != tt.want {
			t.Errorf("SubagentDepth(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestIsSubagent(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"subagent:child-1", true},
		{"SubAgent:x", true},
		{"  subagent:x", true},
		{"agent:main:subagent:x", true},
		{"agent:main:subagent:a:subagent:b", true},
		{"agent:main:main", false},
		{"agent:main:cron:x:subagent:y", false},
		{"agent:main:subagent", false},
		{"subagent", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := IsSubagent(tt.in); got != tt.want {
			t.Errorf("IsSubagent(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestIsACP(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"acp:x", true},
		{"ACP:x", true},
		{"agent:main:acp:x", true},
		{"agent:main:ACP:x", true},
		{"agent:main:main", false},
		{"xacp:y", false},
		{"agent:main:acp", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := IsACP(tt.in); got != tt.want {
			t.Errorf("IsACP(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestIsCron(t *testing.T) {
	tests := []struct {
		in          string
		cron, isRun bool
	}{
		{"cron:job-1", false, false}, // docs/spec/reference-behaviour.md §2.2: legacy alone is not cron
		{"agent:main:cron:job-1", true, false},
		{"AGENT:MAIN:CRON:JOB-1", true, false},
		{"agent:main:cron:job-1:run:r1", true, true},
		{"agent:main:cron::job-1::run::r1", true, true},
		{"agent:main:cron:job-1:run:r1:x", true, false},
		{"agent:main:cron:job-1:run", true, false},
		{"agent:main:cron:job-1:walk:r1", true, false},
		{"cron:job-1:run:r1", false, false},
		{"agent:main:cron", false, false},
		{"agent:main:cronjob:x", false, false},
		{"agent:main:main", false, false},
		{"", false, false},
	}
	for _, tt := range tests {
		if got := IsCron(tt.in); got != tt.cron {
			t.Errorf("IsCron(%q) = %v, want %v", tt.in, got, tt.cron)
		}
		if got := IsCronRun(tt.in); got != tt.isRun {
			t.Errorf("IsCronRun(%q) = %v, want %v", tt.in, got, tt.isRun)
		}
	}
}

func TestChatTypeOf(t *testing.T) {
	tests := []struct {
		in   string
		want ChatType
	}{
		{"agent:main:discord:group:dev", ChatGroup},
		{"agent:main:discord:channel:c1", ChatChannel},
		{"agent:main:telegram:direct:peer", ChatDirect},
		{"agent:main:telegram:dm:peer", ChatDirect},
		{"agent:main:main", ChatUnknown},
		{"main", ChatUnknown},
		{"", ChatUnknown},
		{"discord:group:dev", ChatGroup},
		{"AGENT:MAIN:SLACK:CHANNEL:C1", ChatChannel},
		{"x:channel:y:group:z", ChatGroup}, // group wins over channel
		{"x:dm:y:channel:z", ChatChannel},  // channel wins over direct
		{"agent:main:discord:group:dev:thread:1", ChatGroup},
		// Legacy Discord guild/channel form.
		{"discord:acct:guild-1:channel-2", ChatChannel},
		{"discord:guild-1:channel-2", ChatChannel},
		{"agent:main:discord:acct:guild-1:channel-2", ChatChannel},
		{"discord::guild-1:channel-2", ChatUnknown},
		{"discord:guild-:channel-2", ChatUnknown},
		{"discord:a:b:guild-1:channel-2", ChatUnknown},
		{"slack:guild-1:channel-2", ChatUnknown},
		{"agent:main:subagent:x", ChatUnknown},
		{"agent:main:groups:x", ChatUnknown},
	}
	for _, tt := range tests {
		if got := ChatTypeOf(tt.in); got != tt.want {
			t.Errorf("ChatTypeOf(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMainAlias(t *testing.T) {
	tests := []struct {
		scope, mainKey string
		want           MainAlias
	}{
		// docs/spec/reference-behaviour.md §2.3 example.
		{"global", " Primary ", MainAlias{MainKey: "primary", Alias: "global", Scope: "global"}},
		{"", "", MainAlias{MainKey: "main", Alias: "main", Scope: "per-sender"}},
		{"per-sender", "Work", MainAlias{MainKey: "work", Alias: "work", Scope: "per-sender"}},
		{"global", "", MainAlias{MainKey: "main", Alias: "global", Scope: "global"}},
		// Scope is compared exactly, as the reference does.
		{"Global", "", MainAlias{MainKey: "main", Alias: "main", Scope: "Global"}},
	}
	for _, tt := range tests {
		got := NewMainAlias(tt.scope, tt.mainKey)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("NewMainAlias(%q, %q) mismatch (-want +got):\n%s", tt.scope, tt.mainKey, diff)
		}
	}
}

func TestMainAliasMapping(t *testing.T) {
	perSender := NewMainAlias("", "")
	primary := NewMainAlias("per-sender", "primary")
	global := NewMainAlias("global", "primary")
	tests := []struct {
		name                   string
		alias                  MainAlias
		key, display, internal string
		caller, requester      string
	}{
		{"default main", perSender, "main", "main", "main", "", "main"},
		{"canonical not aliased", perSender, "agent:main:main", "agent:main:main", "agent:main:main", "agent:main:main", "agent:main:main"},
		{"primary shown as main", primary, "primary", "main", "primary", "main", "primary"},
		{"main means primary", primary, "main", "main", "primary", "  ", "primary"},
		{"global shown as main", global, "global", "main", "global", "", "global"},
		{"mainKey shown as main too", global, "primary", "main", "primary", "main", "global"},
		{"other unchanged", global, "discord:group:dev", "discord:group:dev", "discord:group:dev", " agent:ops:main ", "agent:ops:main"},
		{"exact match only", perSender, "Main", "Main", "Main", "Main", "Main"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.alias.Display(tt.key); got != tt.display {
				t.Errorf("Display(%q) = %q, want %q", tt.key, got, tt.display)
			}
			if got := tt.alias.Internal(tt.key); got != tt.internal {
				t.Errorf("Internal(%q) = %q, want %q", tt.key, got, tt.internal)
			}
			if got := tt.alias.RequesterKey(tt.caller); got != tt.requester {
				t.Errorf("RequesterKey(%q) = %q, want %q", tt.caller, got, tt.requester)
			}
		})
	}
}

func TestLooksLikeSessionID(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"0b5c3f0e-8d1a-4c2b-9f3e-1a2b3c4d5e6f", true},
		{"0B5C3F0E-8D1A-4C2B-9F3E-1A2B3C4D5E6F", true},
		{"  0b5c3f0e-8d1a-4c2b-9f3e-1a2b3c4d5e6f\n", true},
		{"00000000-0000-0000-0000-000000000000", true},
		{"0b5c3f0e-8d1a-4c2b-9f3e-1a2b3c4d5e6", false},
		{"0b5c3f0e-8d1a-4c2b-9f3e-1a2b3c4d5e6f0", false},
		{"0b5c3f0e8d1a-4c2b-9f3e-1a2b3c4d5e6f-", false},
		{"0b5c3f0g-8d1a-4c2b-9f3e-1a2b3c4d5e6f", false},
		{"{0b5c3f0e-8d1a-4c2b-9f3e-1a2b3c4d5e6f}", false},
		{"agent:main:main", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := LooksLikeSessionID(tt.in); got != tt.want {
			t.Errorf("LooksLikeSessionID(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestLooksLikeSessionKey(t *testing.T) {
	tests := []struct {
		in        string
		want      bool
		candidate bool // IsSessionIDCandidate
	}{
		// docs/spec/reference-behaviour.md §2.4 list.
		{"main", true, false},
		{"global", true, false},
		{"unknown", true, false},
		{"acp:session-1", true, false},
		{"ACP:session-1", true, false},
		{"agent:main:acp:x", true, false},
		{"agent:main:main", true, false},
		{"agent:", true, false},
		{"cron:job-1", true, false},
		{"hook:0b5c3f0e", true, false},
		{"node-abc", true, false},
		{"node:abc", true, false},
		{"discord:group:dev", true, false},
		{"x:channel:y", true, false},
		{"  main  ", true, false},
		// docs/spec/reference-behaviour.md §2.4 negatives.
		{"random-slug", false, true},
		{"sess-group", false, true},
		{"subagent:child-1", false, true},
		// Edges: exact, case-sensitive checks (reference quirk).
		{"Main", false, true},
		{"AGENT:main:main", false, true},
		{"group:dev", false, true},
		{"", false, true},
		// A UUID is always a session-id candidate.
		{"0b5c3f0e-8d1a-4c2b-9f3e-1a2b3c4d5e6f", false, true},
	}
	for _, tt := range tests {
		if got := LooksLikeSessionKey(tt.in); got != tt.want {
			t.Errorf("LooksLikeSessionKey(%q) = %v, want %v", tt.in, got, tt.want)
		}
		if got := IsSessionIDCandidate(tt.in); got != tt.candidate {
			t.Errorf("IsSessionIDCandidate(%q) = %v, want %v", tt.in, got, tt.candidate)
		}
	}
}

func TestIsReserved(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"global", true},
		{"unknown", true},
		{"Global", false},
		{" global", false},
		{"main", false},
		{"agent:main:global", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := IsReserved(tt.in); got != tt.want {
			t.Errorf("IsReserved(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseKind(t *testing.T) {
	tests := []struct {
		in     string
		want   Kind
		wantOK bool
	}{
		{"main", KindMain, true},
		{" Group ", KindGroup, true},
		{"CRON", KindCron, true},
		{"hook", KindHook, true},
		{"node", KindNode, true},
		{"other", KindOther, true},
		{"direct", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := ParseKind(tt.in)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("ParseKind(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestClassifyKind(t *testing.T) {
	perSender := NewMainAlias("", "")
	global := NewMainAlias("global", "primary")
	tests := []struct {
		key         string
		alias       MainAlias
		gatewayKind string
		want        Kind
	}{
		{"main", perSender, "direct", KindMain},
		// docs/spec/reference-behaviour.md §4 step 6 quirk: prefix-based on the raw key.
		{"agent:main:main", perSender, "direct", KindOther},
		{"agent:main:cron:x", perSender, "direct", KindOther},
		{"agent:main:node-test", perSender, "direct", KindOther},
		{"global", global, "global", KindMain},
		{"primary", global, "direct", KindMain},
		{"main", global, "direct", KindOther},
		{"cron:job-1", perSender, "direct", KindCron},
		{"hook:abc", perSender, "direct", KindHook},
		{"node-abc", perSender, "direct", KindNode},
		{"node:abc", perSender, "direct", KindNode},
		{"Cron:job-1", perSender, "direct", KindOther},
		{"agent:main:x", perSender, "group", KindGroup},
		{"cron:job-1", perSender, "group", KindCron}, // prefix beats gateway kind
		{"agent:main:discord:group:dev", perSender, "", KindGroup},
		{"agent:main:slack:channel:c1", perSender, "", KindGroup},
		{"agent:main:discord:Group:dev", perSender, "", KindOther},
		{"agent:main:subagent:x", perSender, "direct", KindOther},
		{"agent:main:x", perSender, "Group", KindOther},
	}
	for _, tt := range tests {
		if got := ClassifyKind(tt.key, tt.alias, tt.gatewayKind); got != tt.want {
			t.Errorf("ClassifyKind(%q, %+v, %q) = %q, want %q", tt.key, tt.alias, tt.gatewayKind, got, tt.want)
		}
	}
}

func TestRowKindOf(t *testing.T) {
	tests := []struct {
		in   string
		want RowKind
	}{
		{"global", RowGlobal},
		{"unknown", RowUnknown},
		{"agent:main:discord:group:dev", RowGroup},
		{"agent:main:slack:channel:c1", RowGroup},
		{"discord:acct:guild-1:channel-2", RowGroup},
		{"agent:main:main", RowDirect},
		{"agent:main:telegram:dm:peer", RowDirect},
		{"agent:main:subagent:x", RowDirect},
		{"Global", RowDirect},
		{"", RowDirect},
	}
	for _, tt := range tests {
		if got := RowKindOf(tt.in); got != tt.want {
			t.Errorf("RowKindOf(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestStripAgentPrefix(t *testing.T) {
	tests := []struct{ in, want string }{
		{"agent:main:discord:group:dev", "discord:group:dev"},
		{"agent:main:main", "main"},
		{"agent:main::a::b", "a:b"},
		{"Discord:Group:Dev", "discord:group:dev"},
		{"agent:main", "agent:main"},
		{"main", "main"},
		{"", ""},
		// Quirks: case-sensitive "agent", no trimming.
		{"AGENT:main:x", "agent:main:x"},
		{" agent:main:x", " agent:main:x"},
	}
	for _, tt := range tests {
		if got := StripAgentPrefix(tt.in); got != tt.want {
			t.Errorf("StripAgentPrefix(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestChannelFromKey(t *testing.T) {
	tests := []struct{ in, want, raw string }{
		{"agent:main:discord:group:dev", "discord", ""}, // raw: docs/spec/reference-behaviour.md §14.2 quirk
		{"agent:main:Slack:channel:C1", "slack", ""},
		{"discord:group:dev", "discord", "discord"},
		{"Discord:group:dev", "discord", "Discord"},
		{" Discord :channel:dev", "discord", " Discord "},
		{"x::group::y", "x", "x"},
		{"agent:main:main", "", ""},
		{"agent:main:telegram:direct:x", "", ""},
		{"agent:main:discord:Group:dev", "", ""},
		{"AGENT:main:discord:group:dev", "", ""}, // case-sensitive "agent"
		{"discord:group", "", ""},
		{"main", "", ""},
		{"", "", ""},
	}
	for _, tt := range tests {
		if got := ChannelFromKey(tt.in); got != tt.want {
			t.Errorf("ChannelFromKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := RawChannelFromKey(tt.in); got != tt.raw {
			t.Errorf("RawChannelFromKey(%q) = %q, want %q", tt.in, got, tt.raw)
		}
	}
}

func TestParseConversation(t *testing.T) {
	tests := []struct {
		in     string
		want   Conversation
		wantOK bool
	}{
		// docs/spec/reference-behaviour.md §6.5 example.
		{"agent:main:discord:group:dev", Conversation{"discord", ChatGroup, "dev", ""}, true},
		{"discord:group:dev", Conversation{"discord", ChatGroup, "dev", ""}, true},
		{"telegram:group:-100:topic:7", Conversation{"telegram", ChatGroup, "-100", "7"}, true},
		{"agent:main:slack:channel:C1:thread:1700", Conversation{"slack", ChatChannel, "C1", "1700"}, true},
		{"agent:main:slack:channel:c1:thread:abc", Conversation{"slack", ChatChannel, "c1:thread:abc", ""}, true},
		{"discord:group:a:topic:1:thread:2", Conversation{"discord", ChatGroup, "a:topic:1", "2"}, true},
		{"discord:group:dev:thread", Conversation{"discord", ChatGroup, "dev:thread", ""}, true},
		{"discord:channel:topic:5", Conversation{"discord", ChatChannel, "topic:5", ""}, true},
		{"WhatsApp:group:123@g.us", Conversation{"whatsapp", ChatGroup, "123@g.us", ""}, true},
		{"agent:main:discord:group: dev ", Conversation{"discord", ChatGroup, "dev", ""}, true},
		{"discord:group: dev :thread:5", Conversation{"discord", ChatGroup, " dev ", "5"}, true},
		{"agent:main:discord:group:dev:thread:1:x", Conversation{"discord", ChatGroup, "dev:thread:1:x", ""}, true},
		{"discord:group:  ", Conversation{}, false},
		{"agent:main:main", Conversation{}, false},
		{"agent:main:discord:dm:x", Conversation{}, false},
		{"agent:main:discord:Group:x", Conversation{}, false},
		{"discord:group", Conversation{}, false},
		{"main", Conversation{}, false},
		{"", Conversation{}, false},
	}
	for _, tt := range tests {
		got, ok := parseConversation(tt.in)
		if ok != tt.wantOK {
			t.Errorf("parseConversation(%q) ok = %v, want %v", tt.in, ok, tt.wantOK)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("parseConversation(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

var benchKeys = []string{
	"agent:main:main",
	"AGENT:Main:Hook:Webhook:42",
	"agent:main:discord:group:1234567890:thread:42",
	"agent:ops:subagent:0b5c3f0e-8d1a-4c2b-9f3e-1a2b3c4d5e6f",
	"discord:group:dev",
}

func BenchmarkParse(b *testing.B) {
	for _, key := range benchKeys {
		b.Run(key, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Parse(key)
			}
		})
	}
}
