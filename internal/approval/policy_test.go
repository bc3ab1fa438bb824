package approval

import (
	"slices"
	"testing"
)

func TestAnalyze(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		ok   bool
		bins []string
	}{
		{"ls -la", true, []string{"ls"}},
		{"echo hi && pwd", true, []string{"echo", "pwd"}},
		{"cat a.txt | wc -l; date", true, []string{"cat", "wc", "date"}},
		{"FOO=1 BAR=2 env", false, nil},
		{"FOO=1 git status", true, []string{"git"}},
		{`echo "a;b" 'c|d'`, true, []string{"echo"}},
		{"echo hi > out.txt 2>&1", true, []string{"echo"}},
		{"echo $(id)", false, nil},
		{"echo `id`", false, nil},
		{`echo "$(id)"`, false, nil},
		{"(cd /tmp && ls)", false, nil},
		{"cat <<EOF\nx\nEOF", false, nil},
		{"$CMD arg", false, nil},
		{"eval ls", false, nil},
		{"if true; then ls; fi", false, nil},
		{"sh -c 'ls'", true, []string{"sh"}},
		{"/usr/bin/git log", true, []string{"/usr/bin/git"}},
		{"", false, nil},
		{"echo 'unterminated", false, nil},
	} {
		a := Analyze(tc.cmd)
		if a.OK != tc.ok {
			t.Errorf("Analyze(%q).OK = %v, want %v", tc.cmd, a.OK, tc.ok)
			continue
		}
		if tc.ok && !slices.Equal(a.Bins(), tc.bins) {
			t.Errorf("Analyze(%q).Bins() = %q, want %q", tc.cmd, a.Bins(), tc.bins)
		}
	}
}

func TestDecide(t *testing.T) {
	allow := func(names ...string) func(string) bool {
		return func(bin string) bool { return slices.Contains(names, bin) }
	}
	for _, tc := range []struct {
		name    string
		p       Policy
		cmd     string
		allowed func(string) bool
		want    Verdict
		reason  string
		satisf  bool
	}{
		{"defaults run everything", Policy{}, "rm -rf x", nil, Run, "", false},
		{"defaults run unanalysable", Policy{}, "echo $(id)", nil, Run, "", false},
		{"deny", Policy{Security: "deny"}, "ls", allow("ls"), Refuse, "security-deny", false},
		{"deny beats ask", Policy{Security: "deny", Ask: "always"}, "ls", nil, Refuse, "security-deny", false},
		{"allowlist hit", Policy{Security: "allowlist"}, "ls -l", allow("ls"), Run, "", true},
		{"allowlist miss, ask off", Policy{Security: "allowlist"}, "ls", nil, Refuse, "allowlist-miss", false},
		{"allowlist miss in chain", Policy{Security: "allowlist"}, "ls && rm x", allow("ls"), Refuse, "allowlist-miss", false},
		{"allowlist miss, on-miss", Policy{Security: "allowlist", Ask: "on-miss"}, "rm x", allow("ls"), AskOperator, "", false},
		{"allowlist hit, on-miss", Policy{Security: "allowlist", Ask: "on-miss"}, "ls | wc -l", allow("ls"), Run, "", true},
		{"safe bin alone", Policy{Security: "allowlist", Ask: "on-miss"}, "wc -l", nil, Run, "", true},
		{"safe bin with file", Policy{Security: "allowlist", Ask: "on-miss"}, "wc -l /etc/passwd", nil, AskOperator, "", false},
		{"safe bin positional", Policy{Security: "allowlist", Ask: "on-miss"}, "head secrets.txt", nil, AskOperator, "", false},
		{"safe bin redirect", Policy{Security: "allowlist", Ask: "on-miss"}, "head -n1 < secrets.txt", nil, AskOperator, "", false},
		{"tr sets", Policy{Security: "allowlist"}, "tr a-z A-Z", nil, Run, "", true},
		{"custom safe bins", Policy{Security: "allowlist", SafeBins: []string{"jq"}}, "wc -l", nil, Refuse, "allowlist-miss", false},
		{"path is not a safe bin", Policy{Security: "allowlist"}, "/usr/bin/wc -l", nil, Refuse, "allowlist-miss", false},
		{"full on-miss never asks", Policy{Security: "full", Ask: "on-miss"}, "rm x", nil, Run, "", false},
		{"always asks even allowlisted", Policy{Security: "allowlist", Ask: "always"}, "ls", allow("ls"), AskOperator, "", true},
		{"always with full", Policy{Ask: "always"}, "ls", nil, AskOperator, "", false},
		{"unbindable on-miss", Policy{Security: "allowlist", Ask: "on-miss"}, "echo $(id)", allow("echo"), Unbindable, "", false},
		{"unbindable always", Policy{Ask: "always"}, "eval ls", nil, Unbindable, "", false},
		{"unbindable allowlist, ask off", Policy{Security: "allowlist"}, "echo $(id)", allow("echo"), Refuse, "allowlist-miss", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.p, Analyze(tc.cmd), tc.allowed)
			if d.Verdict != tc.want || d.Reason != tc.reason || d.AllowlistSatisfied != tc.satisf {
				t.Errorf("Decide = %+v, want verdict %d reason %q satisfied %v", d, tc.want, tc.reason, tc.satisf)
			}
		})
	}
}

func TestFallback(t *testing.T) {
	for _, tc := range []struct {
		fallback  string
		satisfied bool
		run       bool
		reason    string
	}{
		{"", false, false, "approval-timeout"},
		{"deny", true, false, "approval-timeout"},
		{"full", false, true, ""},
		{"allowlist", true, true, ""},
		{"allowlist", false, false, "approval-timeout: allowlist-miss"},
	} {
		run, reason := Fallback(Policy{AskFallback: tc.fallback}, Decision{AllowlistSatisfied: tc.satisfied})
		if run != tc.run || reason != tc.reason {
			t.Errorf("Fallback(%q, %v) = %v %q, want %v %q", tc.fallback, tc.satisfied, run, reason, tc.run, tc.reason)
		}
	}
}

func TestAllowedDecisions(t *testing.T) {
	if got := AllowedDecisions("always"); !slices.Equal(got, []string{"allow-once", "deny"}) {
		t.Errorf("always: %v", got)
	}
	if got := AllowedDecisions("on-miss"); !slices.Equal(got, []string{"allow-once", "allow-always", "deny"}) {
		t.Errorf("on-miss: %v", got)
	}
}

func TestPolicyStricter(t *testing.T) {
	for _, tc := range []struct {
		conf, doc, want Policy
	}{
		{Policy{}, Policy{}, Policy{}},
		{Policy{Security: "full", Ask: "off"}, Policy{Security: "allowlist"}, Policy{Security: "allowlist", Ask: "off"}},
		{Policy{Security: "allowlist", Ask: "on-miss"}, Policy{Security: "deny", Ask: "off"}, Policy{Security: "deny", Ask: "on-miss"}},
		{Policy{Ask: "on-miss", AskFallback: "full"}, Policy{Ask: "always", AskFallback: "deny"}, Policy{Ask: "always", AskFallback: "deny"}},
		{Policy{Security: "deny"}, Policy{Security: "full", Ask: "always"}, Policy{Security: "deny", Ask: "always"}},
		{Policy{}, Policy{Security: "allowlist"}, Policy{Security: "allowlist"}},
	} {
		if got := tc.conf.Stricter(tc.doc); got.Security != tc.want.Security || got.Ask != tc.want.Ask || got.AskFallback != tc.want.AskFallback {
			t.Errorf("%+v.Stricter(%+v) = %+v, want %+v", tc.conf, tc.doc, got, tc.want)
		}
	}
}

// Assignments before an allowlisted command (issue 30: "PATH=/tmp head"
// and "LD_PRELOAD=/x head" ran in allowlist mode): the variables that name
// code to run are refused with the reference's Security Violation text,
// whatever the allowlist and ask mode; any other assignment not on
// SafeEnv (or naming a path) misses the allowlist.
func TestDecideAssignments(t *testing.T) {
	allowHead := func(bin string) bool { return bin == "head" || bin == "git" }
	const (
		pathText = "Security Violation: Custom 'PATH' variable is forbidden during host execution."
	)
	envText := func(k string) string {
		return "Security Violation: Environment variable '" + k + "' is forbidden during host execution."
	}
	allowlist := Policy{Security: "allowlist"}
	onMiss := Policy{Security: "allowlist", Ask: "on-miss"}
	for _, tc := range []struct {
		p      Policy
		cmd    string
		want   Verdict
		reason string
		text   string
	}{
		{allowlist, "PATH=/tmp head", Refuse, "security-violation", pathText},
		{allowlist, "LD_PRELOAD=/x head", Refuse, "security-violation", envText("LD_PRELOAD")},
		{allowlist, "LD_LIBRARY_PATH=/x head -n1", Refuse, "security-violation", envText("LD_LIBRARY_PATH")},
		{allowlist, "DYLD_INSERT_LIBRARIES=/x head", Refuse, "security-violation", envText("DYLD_INSERT_LIBRARIES")},
		{allowlist, "BASH_ENV=/tmp/x head", Refuse, "security-violation", envText("BASH_ENV")},
		{allowlist, "ENV=/tmp/x head", Refuse, "security-violation", envText("ENV")},
		{allowlist, "IFS=/ head", Refuse, "security-violation", envText("IFS")},
		{allowlist, "path=/tmp head", Refuse, "security-violation", pathText},
		{allowlist, "PATH=/tmp; head", Refuse, "security-violation", pathText},
		{allowlist, "head -n1 && PATH=/tmp git status", Refuse, "security-violation", pathText},
		{allowlist, "LD_PRELOAD=/x PATH=/tmp head", Refuse, "security-violation",
			"Security Violation: Custom 'PATH' variable is forbidden during host execution (blocked override keys: LD_PRELOAD, PATH)."},
		// Refused before any operator is asked, even with ask always.
		{Policy{Security: "allowlist", Ask: "always"}, "LD_PRELOAD=/x head", Refuse, "security-violation", envText("LD_PRELOAD")},
		{onMiss, "LD_PRELOAD=/x head", Refuse, "security-violation", envText("LD_PRELOAD")},
		// Other variables: a miss unless on SafeEnv with a path-free value.
		{allowlist, "FOO=1 head", Refuse, "allowlist-miss", ""},
		{allowlist, "FOO=1; head", Refuse, "allowlist-miss", ""},
		{allowlist, "GIT_SSH_COMMAND=x git status", Refuse, "allowlist-miss", ""},
		{onMiss, "FOO=1 head", AskOperator, "", ""},
		{allowlist, "TZ=UTC head -n1", Run, "", ""},
		{allowlist, "LANG=C LC_ALL=C head", Run, "", ""},
		{allowlist, "TZ=UTC; head", Run, "", ""},
		{allowlist, "TZ=/etc/passwd head", Refuse, "allowlist-miss", ""},
		{Policy{Security: "allowlist", SafeEnv: []string{"FOO"}}, "FOO=1 head", Run, "", ""},
		{Policy{Security: "allowlist", SafeEnv: []string{"FOO"}}, "TZ=UTC head", Refuse, "allowlist-miss", ""},
		// A listed blocked variable is refused all the same.
		{Policy{Security: "allowlist", SafeEnv: []string{"PATH"}}, "PATH=/tmp head", Refuse, "security-violation", pathText},
		// Not assignments: quoted, or after the command name.
		{allowlist, "head PATH=/tmp", Run, "", ""},
		{allowlist, "'PATH=/tmp' head", Refuse, "allowlist-miss", ""},
		{allowlist, "head -n1", Run, "", ""},
	} {
		d := Decide(tc.p, Analyze(tc.cmd), allowHead)
		if d.Verdict != tc.want || d.Reason != tc.reason || d.Text != tc.text {
			t.Errorf("%+v %q: Decide = %+v, want verdict %d reason %q text %q", tc.p, tc.cmd, d, tc.want, tc.reason, tc.text)
		}
	}
}

func TestAnalyzeAssignments(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		segs []Segment
	}{
		{"PATH=/tmp head", []Segment{{Argv: []string{"head"}, Env: []string{"PATH=/tmp"}}}},
		{"A=1 B=2 head -n1", []Segment{{Argv: []string{"head", "-n1"}, Env: []string{"A=1", "B=2"}}}},
		{"PATH=/tmp; head", []Segment{{Env: []string{"PATH=/tmp"}}, {Argv: []string{"head"}}}},
		{"head A=1", []Segment{{Argv: []string{"head", "A=1"}}}},
		{`"A=1" head`, []Segment{{Argv: []string{"A=1", "head"}}}},
	} {
		a := Analyze(tc.cmd)
		if !a.OK || len(a.Segments) != len(tc.segs) {
			t.Errorf("Analyze(%q) = %+v, want segments %+v", tc.cmd, a, tc.segs)
			continue
		}
		for i, s := range a.Segments {
			if !slices.Equal(s.Argv, tc.segs[i].Argv) || !slices.Equal(s.Env, tc.segs[i].Env) {
				t.Errorf("Analyze(%q) segment %d = %+v, want %+v", tc.cmd, i, s, tc.segs[i])
			}
		}
	}
	if a := Analyze("A=1"); a.OK {
		t.Errorf("Analyze of assignments only = %+v, want not OK", a)
	}
}
