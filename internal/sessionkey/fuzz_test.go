package sessionkey

import (
	"strings"
	"testing"
)

// seedKeys are the docs/spec/reference-behaviour.md §2 shapes plus awkward inputs; every fuzz target uses
// them.
var seedKeys = []string{
	"",
	"main",
	"global",
	"unknown",
	"agent:main:main",
	"AGENT:Main:Hook:Webhook:42",
	"agent:main",
	"agent::broken",
	"agent: :x",
	"agent:main: b :",
	":agent:main",
	"agent:main:discord:group:dev",
	"agent:main:discord:channel:c1:thread:42",
	"agent:main:telegram:direct:peer",
	"agent:main:telegram:dm:peer",
	"agent:main:cron:job-1",
	"agent:main:cron:job-1:run:r1",
	"agent:main:hook:0b5c3f0e-8d1a-4c2b-9f3e-1a2b3c4d5e6f",
	"agent:main:subagent:parent:subagent:child",
	"agent:ops:acp:x",
	"cron:job-1",
	"hook:abc",
	"node-abc",
	"node:abc",
	"discord:group:dev",
	"discord:acct:guild-1:channel-2",
	"telegram:group:-100:topic:7",
	"subagent:child-1",
	"0b5c3f0e-8d1a-4c2b-9f3e-1a2b3c4d5e6f",
	"  \ufeffagent:Ops:X\u3000",
	"agent:_ops:x",
	"agent:é:x",
	"\xff\xfe:agent",
	"İ:Σ",
}

func FuzzParse(f *testing.F) {
	for _, s := range seedKeys {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		k, ok := Parse(key)
		if ok {
			if k.AgentID == "" || k.Rest == "" {
				t.Fatalf("Parse(%q) = %+v: empty field", key, k)
			}
			if k.AgentID != strings.ToLower(k.AgentID) || k.Rest != strings.ToLower(k.Rest) {
				t.Fatalf("Parse(%q) = %+v: not lower-case", key, k)
			}
			if strings.Contains(k.AgentID, ":") || strings.Contains(":"+k.Rest+":", "::") {
				t.Fatalf("Parse(%q) = %+v: empty or ':'-bearing parts", key, k)
			}
			k2, ok2 := Parse(k.String())
			if strings.TrimRightFunc(k.Rest, isJSSpace) == k.Rest {
				if !ok2 || k2 != k {
					t.Fatalf("Parse(%q) = %+v; re-parse of %q = %+v, %v", key, k, k.String(), k2, ok2)
				}
			} else if ok2 && (k2.AgentID != k.AgentID || len(k2.Rest) >= len(k.Rest)) {
				// The one reference quirk: white space ending Rest
				// (hidden by a trailing ':' in key) is trimmed by the
				// re-parse; nothing else may change.
				t.Fatalf("Parse(%q) = %+v; re-parse of %q = %+v", key, k, k.String(), k2)
			}
		}
		shape := classifyShape(key)
		if (shape == ShapeAgent) != ok {
			t.Fatalf("classifyShape(%q) = %q but Parse ok = %v", key, shape, ok)
		}
		if id := AgentID(key); !IsValidAgentID(id) {
			t.Fatalf("AgentID(%q) = %q: not valid", key, id)
		}
		if d := SubagentDepth(key); d < 0 {
			t.Fatalf("SubagentDepth(%q) = %d", key, d)
		}
		if IsCronRun(key) && !IsCron(key) {
			t.Fatalf("IsCronRun(%q) without IsCron", key)
		}
		if IsCron(key) && !ok {
			t.Fatalf("IsCron(%q) on an unparsable key", key)
		}
		switch ct := ChatTypeOf(key); ct {
		case ChatDirect, ChatGroup, ChatChannel, ChatUnknown:
		default:
			t.Fatalf("ChatTypeOf(%q) = %q", key, ct)
		}
		switch rk := RowKindOf(key); rk {
		case RowGlobal, RowUnknown, RowGroup, RowDirect:
		default:
			t.Fatalf("RowKindOf(%q) = %q", key, rk)
		}
		if LooksLikeSessionID(key) && LooksLikeSessionKey(key) {
			t.Fatalf("%q looks like both a session id and a key", key)
		}
		_ = IsSubagent(key)
		_ = IsACP(key)
		_ = IsReserved(key)
		_ = IsSessionIDCandidate(key)
		_ = ClassifyKind(key, NewMainAlias("", ""), "group")
	})
}

func FuzzNormalizeAgentID(f *testing.F) {
	for _, s := range seedKeys {
		f.Add(s)
	}
	for _, s := range []string{"my-research_agent01", "Agent not found: xyz", "../../../etc/passwd", strings.Repeat("a", 65), "_", "-_-", strings.Repeat("a", 63) + "!b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got := NormalizeAgentID(v)
		if !IsValidAgentID(got) {
			t.Fatalf("NormalizeAgentID(%q) = %q: not valid", v, got)
		}
		if again := NormalizeAgentID(got); again != got {
			t.Fatalf("NormalizeAgentID not idempotent: %q → %q → %q", v, got, again)
		}
		if IsValidAgentID(v) && got != strings.ToLower(trim(v)) {
			t.Fatalf("NormalizeAgentID(%q) = %q: changed a valid id beyond lower-casing", v, got)
		}
	})
}

func FuzzToStoreKey(f *testing.F) {
	for _, s := range seedKeys {
		f.Add("main", s, "")
		f.Add("Research Bot", s, " Primary ")
	}
	f.Add("ops", "main", ":")
	f.Add("", ":::", "")
	f.Fuzz(func(t *testing.T, agentID, requestKey, mainKey string) {
		out := ToStoreKey(agentID, requestKey, mainKey)
		if !strings.HasPrefix(out, "agent:") {
			t.Fatalf("ToStoreKey(%q, %q, %q) = %q: no agent prefix", agentID, requestKey, mainKey, out)
		}
		if out != strings.ToLower(out) {
			t.Fatalf("ToStoreKey(%q, %q, %q) = %q: not lower-case", agentID, requestKey, mainKey, out)
		}

		lowered := strings.ToLower(trim(requestKey))
		shape := classifyShape(requestKey)

		// No double prefix: a key that already starts with "agent:" never
		// gets another one; it is re-normalized or passed through.
		if strings.HasPrefix(lowered, "agent:") {
			k, ok := Parse(requestKey)
			if !(ok && out == k.String()) && out != lowered {
				t.Fatalf("ToStoreKey(%q, %q, %q) = %q: agent key re-prefixed", agentID, requestKey, mainKey, out)
			}
		}
		// Literally, "agent:<x>:agent:" only appears when it was already
		// in the input (an agent key whose rest starts with "agent:", a
		// malformed key passed through, or such a main key).
		if hasDoublePrefix(out) {
			k, ok := Parse(requestKey)
			fromInput := ok && strings.HasPrefix(k.Rest, "agent:") ||
				shape == ShapeMalformedAgent ||
				strings.HasPrefix(NormalizeMainKey(mainKey), "agent:")
			if !fromInput {
				t.Fatalf("ToStoreKey(%q, %q, %q) = %q: double prefix", agentID, requestKey, mainKey, out)
			}
		}

		// Always parses, except for the reference's pass-through of
		// malformed agent keys and tails made only of ':'.
		tail := lowered
		if lowered == "" || strings.EqualFold(trim(requestKey), "main") {
			tail = NormalizeMainKey(mainKey)
		}
		wantParse := shape != ShapeMalformedAgent && strings.Trim(tail, ":") != ""
		if _, ok := Parse(out); ok != wantParse {
			t.Fatalf("ToStoreKey(%q, %q, %q) = %q: parses = %v, want %v", agentID, requestKey, mainKey, out, ok, wantParse)
		}

		// Feeding a store key back in never grows it: it comes back
		// re-normalized (empty parts dropped) or unchanged.
		again := ToStoreKey(agentID, out, mainKey)
		want := out
		if k, ok := Parse(out); ok {
			want = k.String()
		}
		if again != want {
			t.Fatalf("ToStoreKey(%q, %q, %q): %q fed back gives %q, want %q", agentID, requestKey, mainKey, out, again, want)
		}
	})
}

// hasDoublePrefix reports whether s starts "agent:<x>:agent:" with x free of
// ':'.
func hasDoublePrefix(s string) bool {
	rest, ok := strings.CutPrefix(s, "agent:")
	if !ok {
		return false
	}
	_, after, found := strings.Cut(rest, ":")
	return found && strings.HasPrefix(after, "agent:")
}

func FuzzDerive(f *testing.F) {
	for _, s := range seedKeys {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if ch := ChannelFromKey(key); ch != strings.ToLower(trim(ch)) || strings.Contains(ch, ":") {
			t.Fatalf("ChannelFromKey(%q) = %q", key, ch)
		}
		if ch := RawChannelFromKey(key); strings.Contains(ch, ":") {
			t.Fatalf("RawChannelFromKey(%q) = %q", key, ch)
		}
		if s := StripAgentPrefix(key); s != strings.ToLower(s) {
			t.Fatalf("StripAgentPrefix(%q) = %q: not lower-case", key, s)
		}
		if c, ok := parseConversation(key); ok {
			if c.ID == "" || c.Channel == "" || c.Kind != ChatGroup && c.Kind != ChatChannel {
				t.Fatalf("parseConversation(%q) = %+v", key, c)
			}
			if strings.Trim(c.ThreadID, "0123456789") != "" {
				t.Fatalf("parseConversation(%q) = %+v: non-digit thread", key, c)
			}
		} else if c != (Conversation{}) {
			t.Fatalf("parseConversation(%q) = %+v, false: want zero value", key, c)
		}

		a := NewMainAlias(key, key)
		if a.MainKey != NormalizeMainKey(key) || a.Alias == "" {
			t.Fatalf("NewMainAlias(%q, %q) = %+v", key, key, a)
		}
		if got := a.Display(a.Internal("main")); got != "main" {
			t.Fatalf("%+v: Display(Internal(main)) = %q", a, got)
		}
		if a.RequesterKey("") != a.Alias {
			t.Fatalf("%+v: RequesterKey(\"\") = %q", a, a.RequesterKey(""))
		}
		if k, ok := ParseKind(key); ok != (k != "") {
			t.Fatalf("ParseKind(%q) = %q, %v", key, k, ok)
		}
	})
}

// isLegacyDiscordChannelReference is isLegacyDiscordChannel as it was,
// splitting every scope.
func isLegacyDiscordChannelReference(s string) bool {
	parts := strings.Split(s, ":")
	if parts[0] != "discord" {
		return false
	}
	switch len(parts) {
	case 3:
	case 4:
		if parts[1] == "" {
			return false
		}
		parts = parts[1:]
	default:
		return false
	}
	return hasNonEmptySuffix(parts[1], "guild-") && hasNonEmptySuffix(parts[2], "channel-")
}

// FuzzLegacyDiscordChannel checks the early rejection of scopes that are
// not Discord's against the splitting reference; a main session's scope
// is rejected without an allocation.
func FuzzLegacyDiscordChannel(f *testing.F) {
	for _, s := range []string{"", "discord", "discord:", "discord:guild-1:channel-2", "discord:acct:guild-1:channel-2",
		"discord::guild-1:channel-2", "Discord:guild-1:channel-2", "main", "discordx:guild-1:channel-2", "discord:guild-:channel-2"} {
		f.Add(s)
	}
	if n := testing.AllocsPerRun(50, func() { isLegacyDiscordChannel("main") }); n != 0 {
		f.Errorf("isLegacyDiscordChannel(main) made %v allocations, want 0", n)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isLegacyDiscordChannel(s), isLegacyDiscordChannelReference(s); got != want {
			t.Errorf("isLegacyDiscordChannel(%q) = %v, the reference says %v", s, got, want)
		}
	})
}
