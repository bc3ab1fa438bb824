package policy

import (
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestA2AAllowed(t *testing.T) {
	tests := []struct {
		name      string
		policy    A2A
		requester string
		target    string
		want      bool
	}{
		// docs/spec/reference-behaviour.md §3.4 example.
		{"spec ops-a to ops-b", A2A{Enabled: true, Allow: []string{"ops-*", "main"}}, "ops-a", "ops-b", true},
		{"spec main to ops-a", A2A{Enabled: true, Allow: []string{"ops-*", "main"}}, "main", "ops-a", true},
		{"spec guest to ops-a", A2A{Enabled: true, Allow: []string{"ops-*", "main"}}, "guest", "ops-a", false},
		{"spec ops-a to guest", A2A{Enabled: true, Allow: []string{"ops-*", "main"}}, "ops-a", "guest", false},

		{"same agent, disabled", A2A{}, "main", "main", true},
		{"same agent, excluded by allow", A2A{Enabled: true, Allow: []string{"ops"}}, "main", "main", true},
		{"disabled", A2A{Allow: []string{"*"}}, "main", "ops", false},
		{"enabled, empty allow", A2A{Enabled: true}, "main", "ops", true},
		{"enabled, zero-length allow", A2A{Enabled: true, Allow: []string{}}, "main", "ops", true},
		{"star", A2A{Enabled: true, Allow: []string{"*"}}, "main", "ops", true},
		{"trimmed star", A2A{Enabled: true, Allow: []string{" * "}}, "main", "ops", true},
		{"only target listed", A2A{Enabled: true, Allow: []string{"ops"}}, "main", "ops", false},
		{"both listed", A2A{Enabled: true, Allow: []string{"ops", "main"}}, "main", "ops", true},
		{"blank pattern never matches", A2A{Enabled: true, Allow: []string{"", "  "}}, "main", "ops", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.policy.Allowed(tt.requester, tt.target); got != tt.want {
				t.Errorf("%+v.Allowed(%q, %q) = %v, want %v", tt.policy, tt.requester, tt.target, got, tt.want)
			}
		})
	}
}

func TestA2AMatchesAllow(t *testing.T) {
	tests := []struct {
		allow []string
		id    string
		want  bool
	}{
		{nil, "anything", true},
		{[]string{}, "", true},
		{[]string{""}, "", false},
		{[]string{" "}, "main", false},
		{[]string{"*"}, "", true},
		{[]string{"\t*\n"}, "ops", true},
		{[]string{"main"}, "main", true},
		{[]string{" main "}, "main", true},
		{[]string{"Main"}, "main", false}, // exact is case-sensitive
		{[]string{"main"}, "Main", false},
		{[]string{"mai"}, "main", false},
		{[]string{"ops-*"}, "ops-a", true},
		{[]string{"ops-*"}, "ops-", true},
		{[]string{"ops-*"}, "ops", false},
		{[]string{"OPS-*"}, "ops-a", true}, // globs are case-insensitive
		{[]string{"ops-*"}, "OPS-A", true},
		{[]string{"*-bot"}, "sales-bot", true},
		{[]string{"*-bot"}, "sales-bots", false},
		{[]string{"a*b*c"}, "abc", true},
		{[]string{"a*b*c"}, "axxbyyc", true},
		{[]string{"a*b*c"}, "acb", false},
		{[]string{"a*a"}, "a", false},
		{[]string{"a*a"}, "aa", true},
		{[]string{"**"}, "", true},
		{[]string{"a.b*"}, "axb", false}, // '.' is literal
		{[]string{"a.b*"}, "a.bc", true},
		{[]string{"(x|y)*"}, "x", false},
		{[]string{"(x|y)*"}, "(x|y)z", true},
		{[]string{"[a]*"}, "a", false},
		{[]string{"ops", "dev-*"}, "dev-1", true},
		{[]string{"ops", "dev-*"}, "qa", false},
		{[]string{"", "qa"}, "qa", true},
	}
	for _, tt := range tests {
		if got := (A2A{Allow: tt.allow}).MatchesAllow(tt.id); got != tt.want {
			t.Errorf("MatchesAllow(%q) with allow %q = %v, want %v", tt.id, tt.allow, got, tt.want)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"", "", true},
		{"", "a", false},
		{"a", "a", true},
		{"*", "", true},
		{"*", "anything", true},
		{"a*", "a", true},
		{"a*", "ba", false},
		{"*a", "ba", true},
		{"*a", "ab", false},
		{"a*a", "a", false}, // prefix and suffix may not overlap
		{"a*a", "aa", true},
		{"a*a", "aba", true},
		{"*a*a*", "a", false},
		{"*a*a*", "aa", true},
		{"*a*a*", "xaxax", true},
		{"a**b", "ab", true},
		{"a*b*c*d", "abcd", true},
		{"a*b*c*d", "abdc", false},
		{"ab*ba", "aba", false},
		{"ab*ba", "abba", true},
		{"*ab*ab*", "aab", false},
		{"*ab*ab*", "abab", true},
		{"x*é*", "xüé", true},
		{"x*é", "xe", false},
	}
	for _, tt := range tests {
		if got := globMatch(tt.pattern, tt.s); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

// TestGlobMatchLinear runs patterns that make a backtracking matcher (such
// as the reference's JavaScript regular expression) take polynomial or
// exponential time; the linear matcher finishes at once.
func TestGlobMatchLinear(t *testing.T) {
	id := strings.Repeat("a", 200_000)
	pattern := strings.Repeat("*a", 2_000) + "*b"
	start := time.Now()
	if (A2A{Allow: []string{pattern}}).MatchesAllow(id) {
		t.Error("pathological pattern matched")
	}
	if !(A2A{Allow: []string{strings.Repeat("*a", 2_000) + "*"}}).MatchesAllow(id) {
		t.Error("repeated segments did not match")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("glob matching took %v; want linear time", d)
	}
}

// referenceMatches is an independent model of the reference's matchesAllow
// for one pattern, built on Go's regexp: the same escaping and anchoring as
// the reference's RegExp, case-insensitive, with '.' spanning newlines (see
// MatchesAllow for why).
func referenceMatches(t *testing.T, raw, id string) bool {
	t.Helper()
	pat := strings.TrimFunc(raw, func(r rune) bool {
		return strings.ContainsRune("\t\n\v\f\r \u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff", r) ||
			r >= '\u2000' && r <= '\u200a'
	})
	switch {
	case pat == "":
		return false
	case pat == "*":
		return true
	case !strings.Contains(pat, "*"):
		return pat == id
	}
	parts := strings.Split(pat, "*")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	re, err := regexp.Compile(`(?is)^` + strings.Join(parts, ".*") + `$`)
	if err != nil {
		t.Fatalf("compile %q: %v", pat, err)
	}
	return re.MatchString(id)
}

func FuzzMatchesAllow(f *testing.F) {
	for _, s := range [][2]string{
		{"ops-*", "ops-a"}, {"OPS-*", "ops-a"}, {"*", ""}, {"", ""}, {" main ", "main"},
		{"a*a", "a"}, {"*a*a*", "aa"}, {"a*b*c", "acb"}, {"k*", "\u212a"}, {"ſ*", "S"},
		{"x*", "x\n"}, {"*\u00e9", "\u00c9"}, {"a.b*", "axb"}, {"\xff*", "\xff"}, {"*", "\xff"},
		{"\ufffd*", "\xff"}, {"ab*ba", "aba"}, {"\u0130*", "i"}, {"*\u03a3", "\u03c2"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, id string) {
		if !utf8.ValidString(pattern) {
			t.Skip("the reference regexp cannot be built from invalid UTF-8")
		}
		want := referenceMatches(t, pattern, id)
		if got := (A2A{Allow: []string{pattern}}).MatchesAllow(id); got != want {
			t.Errorf("MatchesAllow(%q) with allow [%q] = %v, reference %v", id, pattern, got, want)
		}
		// The case-sensitive glob used for tool names, against regexp.
		// Tool names reach it normalized, and so valid UTF-8.
		if strings.Contains(pattern, "*") && utf8.ValidString(id) {
			parts := strings.Split(pattern, "*")
			for i, p := range parts {
				parts[i] = regexp.QuoteMeta(p)
			}
			re := regexp.MustCompile(`(?s)^` + strings.Join(parts, ".*") + `$`)
			if got, want := globMatch(pattern, id), re.MatchString(id); got != want {
				t.Errorf("globMatch(%q, %q) = %v, regexp %v", pattern, id, got, want)
			}
		}
	})
}
