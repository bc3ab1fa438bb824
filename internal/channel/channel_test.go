package channel

import (
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestSessionKey(t *testing.T) {
	dm := Inbound{Channel: "irc", AccountID: "default", Kind: KindDirect, Sender: "Alice!a@h", SenderName: "Alice", Text: "hi"}
	grp := Inbound{Channel: "irc", Kind: KindGroup, Room: "#Room", Sender: "bob!b@h", SenderName: "bob"}
	for _, tc := range []struct {
		scope, mainKey string
		in             Inbound
		want           string
	}{
		{"", "", dm, "agent:main:main"},
		{DMScopeMain, "home", dm, "agent:main:home"},
		{DMScopePerPeer, "", dm, "agent:main:direct:alice"},
		{DMScopePerChannelPeer, "", dm, "agent:main:irc:direct:alice"},
		{DMScopePerAccountChannelPeer, "", dm, "agent:main:irc:default:direct:alice"},
		{DMScopePerAccountChannelPeer, "", Inbound{Channel: "irc", SenderName: "x"}, "agent:main:irc:default:direct:x"},
		{"", "", grp, "agent:main:irc:group:#room"},
		{DMScopePerPeer, "", grp, "agent:main:irc:group:#room"},
	} {
		if got := SessionKey("Main", tc.mainKey, tc.scope, tc.in); got != tc.want {
			t.Errorf("SessionKey(%q, %+v) = %q, want %q", tc.scope, tc.in, got, tc.want)
		}
	}
}

func TestRouteFromKey(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want Route
		ok   bool
	}{
		{"agent:main:irc:group:#room", Route{Channel: "irc", To: "#room"}, true},
		{"agent:main:irc:direct:alice", Route{Channel: "irc", To: "alice"}, true},
		{"agent:main:irc:acct:direct:alice", Route{Channel: "irc", AccountID: "acct", To: "alice"}, true},
		{"agent:main:main", Route{}, false},
		{"agent:main:direct:alice", Route{}, false},
		{"agent:main:telegram:group:1", Route{}, false},
		{"agent:main:irc:group:", Route{}, false},
		{"irc:group:#x", Route{}, false},
		{"agent:main:irc:group:#x:topic:", Route{}, false},
	} {
		got, ok := RouteFromKey("irc", tc.key)
		if ok != tc.ok || got != tc.want {
			t.Errorf("RouteFromKey(%q) = %+v %v, want %+v %v", tc.key, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRouteFromKeyTopic(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want Route
		ok   bool
	}{
		{"agent:main:telegram:group:-1001234567890:topic:42", Route{Channel: "telegram", To: "-1001234567890:topic:42"}, true},
		{"agent:main:telegram:group:-42", Route{Channel: "telegram", To: "-42"}, true},
		{"agent:main:telegram:direct:777", Route{Channel: "telegram", To: "777"}, true},
		{"agent:main:telegram:group:-1:thread:42", Route{}, false},
		{"agent:main:telegram:group::topic:42", Route{}, false},
	} {
		got, ok := RouteFromKey("telegram", tc.key)
		if ok != tc.ok || got != tc.want {
			t.Errorf("RouteFromKey(%q) = %+v %v, want %+v %v", tc.key, got, ok, tc.want, tc.ok)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestAdmit(t *testing.T) {
	alice := Inbound{Channel: "irc", Kind: KindDirect, Sender: "alice!~a@host.example", SenderName: "alice"}
	room := func(r string, mentioned bool) Inbound {
		return Inbound{Channel: "irc", Kind: KindGroup, Room: r, Sender: "bob!~b@10.0.0.1", SenderName: "bob", Mentioned: mentioned}
	}
	open := map[string]Group{"#room": {AllowFrom: []string{"*"}}}
	for _, tc := range []struct {
		name string
		p    Policy
		in   Inbound
		want string // "" = allowed
	}{
		{"dm pairing default drops unknown", Policy{}, alice, "dm-sender-not-allowed"},
		{"dm allowlist identity", Policy{DMPolicy: DMPolicyAllowlist, AllowFrom: []string{"ALICE!~a@host.example"}}, alice, ""},
		{"dm allowlist glob", Policy{AllowFrom: []string{"alice!*@*.example"}}, alice, ""},
		{"dm bare nick needs name matching", Policy{AllowFrom: []string{"alice"}}, alice, "dm-sender-not-allowed"},
		{"dm bare nick with name matching", Policy{AllowFrom: []string{"alice"}, AllowNameMatching: true}, alice, ""},
		{"dm id: prefix", Policy{AllowFrom: []string{"id:alice!~a@host.example"}}, alice, ""},
		{"dm open", Policy{DMPolicy: DMPolicyOpen}, alice, ""},
		{"dm disabled", Policy{DMPolicy: DMPolicyDisabled, AllowFrom: []string{"*"}}, alice, "dm-disabled"},
		{"dm wildcard", Policy{AllowFrom: []string{"*"}}, alice, ""},
		{"group disabled", Policy{GroupPolicy: GroupPolicyDisabled, Groups: open}, room("#room", true), "group-policy-disabled"},
		{"group allowlist room missing", Policy{Groups: open}, room("#other", true), "group-not-allowed"},
		{"group allowlist room case", Policy{Groups: open}, room("#ROOM", true), ""},
		{"group needs mention", Policy{Groups: open}, room("#room", false), "missing-mention"},
		{"group mention off", Policy{Groups: map[string]Group{"#room": {AllowFrom: []string{"*"}, RequireMention: ptr(false)}}}, room("#room", false), ""},
		{"group entry without senders", Policy{Groups: map[string]Group{"#room": {}}}, room("#room", true), "group-sender-not-allowed"},
		{"group groupAllowFrom", Policy{Groups: map[string]Group{"#room": {}}, GroupAllowFrom: []string{"bob!*@*"}}, room("#room", true), ""},
		{"room allowFrom overrides global", Policy{Groups: map[string]Group{"#room": {AllowFrom: []string{"carol!*@*"}}}, GroupAllowFrom: []string{"*"}}, room("#room", true), "group-sender-not-allowed"},
		{"group entry disabled", Policy{Groups: map[string]Group{"#room": {Enabled: ptr(false), AllowFrom: []string{"*"}}}}, room("#room", true), "group-disabled"},
		{"wildcard room", Policy{Groups: map[string]Group{"*": {AllowFrom: []string{"*"}}}}, room("#any", true), ""},
		{"open policy unconfigured room mention gated", Policy{GroupPolicy: GroupPolicyOpen}, room("#any", false), "missing-mention"},
		{"open policy unconfigured room", Policy{GroupPolicy: GroupPolicyOpen}, room("#any", true), ""},
		{"open policy still checks senders", Policy{GroupPolicy: GroupPolicyOpen, GroupAllowFrom: []string{"carol!*@*"}}, room("#any", true), "group-sender-not-allowed"},
		{"dm allowFrom is not for groups", Policy{AllowFrom: []string{"*"}, Groups: map[string]Group{"#room": {}}}, room("#room", true), "group-sender-not-allowed"},
	} {
		d := Admit(tc.p, tc.in)
		if d.Allow != (tc.want == "") || d.Reason != tc.want {
			t.Errorf("%s: Admit = %+v, want reason %q", tc.name, d, tc.want)
		}
	}
}

func TestMentioned(t *testing.T) {
	pats := []*regexp.Regexp{regexp.MustCompile(`(?i)\bops bot\b`)}
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"sbbot: hello", true},
		{"hello SBBot", true},
		{"hey @sbbot!", true},
		{"sbbot2 hello", false},
		{"xsbbot hello", false},
		{"sbbot_ hi", false},
		{"sbbot-sbbot", false}, // '-' is a nick character
		{"call the ops bot", true},
		{"nothing here", false},
		{"", false},
	} {
		if got := Mentioned(tc.text, "sbbot", pats); got != tc.want {
			t.Errorf("Mentioned(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
	if Mentioned("anything", "", nil) {
		t.Error("empty nick mentioned")
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		text string
		max  int
		want []string
	}{
		{"hello", 10, []string{"hello"}},
		{"one\ntwo\r\n\nthree", 10, []string{"one", "two", "three"}},
		{"aaaa bbbb cccc", 9, []string{"aaaa bbbb", "cccc"}},
		{"abcdefghijkl", 8, []string{"abcdefgh", "ijkl"}},
		{"tab\there\x00\x07", 20, []string{"tab here"}},
		{"   \n\t\n", 10, nil},
		{"ééééé", 8, []string{"éééé", "é"}},
	} {
		got := Split(tc.text, tc.max)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("Split(%q, %d) = %q, want %q", tc.text, tc.max, got, tc.want)
		}
	}
}

func TestChunk(t *testing.T) {
	for _, tc := range []struct {
		text string
		max  int
		want []string
	}{
		{"hello", 10, []string{"hello"}},
		{"one\ntwo\r\nthree", 20, []string{"one\ntwo\nthree"}},
		{"one two\nthree four", 12, []string{"one two", "three four"}},
		{"aaaa bbbb cccc", 9, []string{"aaaa bbbb", "cccc"}},
		{"abcdefghijkl", 8, []string{"abcdefgh", "ijkl"}},
		{"  \n \n", 10, nil},
		{"ééééé", 8, []string{"éééé", "é"}},
	} {
		got := Chunk(tc.text, tc.max)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("Chunk(%q, %d) = %q, want %q", tc.text, tc.max, got, tc.want)
		}
	}
}

func FuzzChunk(f *testing.F) {
	f.Add("hello world\nsecond line", 10)
	f.Add("ééé\x00\r\n", 3)
	f.Fuzz(func(t *testing.T, text string, n int) {
		n = n%5000 + 1
		limit := max(n, 8)
		var total int
		for _, c := range Chunk(text, n) {
			if len(c) > limit || strings.TrimSpace(c) == "" || !utf8.ValidString(c) {
				t.Fatalf("bad chunk %q (limit %d)", c, limit)
			}
			total += len(strings.Fields(c))
		}
		if want := len(strings.Fields(strings.ToValidUTF8(text, "\uFFFD"))); total < want {
			t.Fatalf("chunks lost words: %d < %d", total, want)
		}
	})
}

func FuzzSplit(f *testing.F) {
	f.Add("hello world\nsecond line", 10)
	f.Add("ééé\x00\r\n", 3)
	f.Fuzz(func(t *testing.T, text string, n int) {
		n = n%600 + 1
		limit := max(n, 8)
		for _, l := range Split(text, n) {
			if len(l) > limit || l == "" || !utf8.ValidString(l) || strings.ContainsAny(l, "\r\n\x00") {
				t.Fatalf("bad line %q (limit %d)", l, limit)
			}
		}
	})
}

func TestLoopGuard(t *testing.T) {
	g := NewLoopGuard(LoopConfig{Enabled: true, MaxEvents: 3, Window: 10 * time.Second, Cooldown: 30 * time.Second})
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	steps := []struct {
		s    int
		a, b string
		want bool
	}{
		{0, "a", "b", true},
		{1, "b", "a", true}, // same pair, other direction
		{2, "a", "b", true},
		{2, "a", "c", true},   // other pair unaffected
		{3, "b", "a", false},  // fourth in window: suppressed
		{20, "a", "b", false}, // cooldown
		{33, "a", "b", true},  // cooldown over
		{34, "a", "b", true},
		{45, "a", "b", true}, // window slid: 33,34 gone? (34 > 35-10 no) -> events 45 only... still allowed
	}
	for i, s := range steps {
		if got := g.Allow("irc:#r", s.a, s.b, at(s.s)); got != s.want {
			t.Fatalf("step %d (%+v): Allow = %v", i, s, got)
		}
	}
	if !g.Allow("irc:#other", "a", "b", at(3)) {
		t.Error("scope not separate")
	}
	off := NewLoopGuard(LoopConfig{Enabled: false, MaxEvents: 1})
	for range 5 {
		if !off.Allow("s", "a", "b", t0) {
			t.Fatal("disabled guard suppressed")
		}
	}
}

func FuzzInbound(f *testing.F) {
	f.Add("#Room", "alice!~a@h", "alice", "sbbot: hi", true)
	f.Add("", "x", "x", "", false)
	f.Fuzz(func(t *testing.T, room, sender, name, text string, group bool) {
		in := Inbound{Channel: "irc", Kind: KindDirect, Room: room, Sender: sender, SenderName: name, Text: text}
		if group {
			in.Kind = KindGroup
		}
		in.Mentioned = Mentioned(text, name, nil)
		p := Policy{AllowFrom: []string{sender, "*!*@*"}, Groups: map[string]Group{NormalizeRoom(room): {AllowFrom: []string{name}}}, AllowNameMatching: true}
		if d := Admit(p, in); !d.Allow && d.Reason == "" {
			t.Fatalf("dropped without a reason: %+v", in)
		}
		key := SessionKey("main", "main", DMScopePerChannelPeer, in)
		if !strings.HasPrefix(key, "agent:main:") {
			t.Fatalf("key %q", key)
		}
	})
}

func TestPlainText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text", "plain text"},
		{"**bold** and *em* and __strong__ and ~~gone~~", "bold and em and strong and gone"},
		{"see [the docs](https://example.com/a_b) now", "see the docs (https://example.com/a_b) now"},
		{"[https://x.test](https://x.test)", "https://x.test"},
		{"use `**not bold**` here", "use **not bold** here"},
		{"# Title\n> quoted", "Title\nquoted"},
		{"```go\nx := a*b*c\n**y**\n```\nafter", "x := a*b*c\n**y**\nafter"},
		{"2 * 3 * 4", "2 * 3 * 4"},
		{"snake_case_name", "snake_case_name"},
	} {
		if got := PlainText(tc.in); got != tc.want {
			t.Errorf("PlainText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzPlainText(f *testing.F) {
	f.Add("**a** `b` [c](d)\n```\ne\n```")
	f.Fuzz(func(t *testing.T, s string) {
		_ = PlainText(s)
	})
}
