package approval

import (
	"path"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard/internal/tools"
)

// Security values of tools.exec.security and askFallback.
const (
	SecurityDeny      = "deny"
	SecurityAllowlist = "allowlist"
	SecurityFull      = "full"
)

// Ask values of tools.exec.ask.
const (
	AskOff    = "off"
	AskOnMiss = "on-miss"
	AskAlways = "always"
)

// Decisions an operator may give.
const (
	AllowOnce   = "allow-once"
	AllowAlways = "allow-always"
	Deny        = "deny"
)

// DefaultSafeBins are the reference's default stdin-only binaries.
var DefaultSafeBins = []string{"cut", "uniq", "head", "tail", "tr", "wc"}

// DefaultSafeEnv are the variables a command line may assign before an
// allowlisted command ("TZ=UTC date") when tools.exec.safeEnv is unset:
// locale, time zone and terminal size, none of which names code to run.
var DefaultSafeEnv = []string{"LANG", "LC_ALL", "TZ", "NO_COLOR", "COLUMNS", "LINES"}

// Policy is one agent's effective exec approval policy.
type Policy struct {
	// Security is deny, allowlist or full ("" means full, the reference's
	// gateway-host default).
	Security string
	// Ask is off, on-miss or always ("" means off).
	Ask string
	// AskFallback resolves a prompt nobody can answer or that expires:
	// deny, allowlist or full ("" means deny).
	AskFallback string
	// SafeBins are stdin-only binaries that satisfy the allowlist without
	// an entry; nil means DefaultSafeBins.
	SafeBins []string
	// SafeEnv are the variables a command line may assign before its
	// commands without missing the allowlist; nil means DefaultSafeEnv.
	// The variables tools.BlockedExecEnv names are refused whatever it
	// lists.
	SafeEnv []string
}

// Stricter returns the stricter of two policies field by field, as the
// reference combines tools.exec with the approvals document: the lower
// security, the more asking ask, the lower askFallback. An empty field
// has no say. SafeBins and SafeEnv come from p.
func (p Policy) Stricter(q Policy) Policy {
	secRank := map[string]int{SecurityDeny: 0, SecurityAllowlist: 1, SecurityFull: 2}
	askRank := map[string]int{AskOff: 0, AskOnMiss: 1, AskAlways: 2}
	pick := func(a, b string, rank map[string]int, lower bool) string {
		ra, oka := rank[a]
		rb, okb := rank[b]
		switch {
		case !okb:
			return a
		case !oka:
			return b
		case lower == (rb < ra):
			return b
		}
		return a
	}
	p.Security = pick(p.Security, q.Security, secRank, true)
	p.Ask = pick(p.Ask, q.Ask, askRank, false)
	p.AskFallback = pick(p.AskFallback, q.AskFallback, secRank, true)
	return p
}

// Normalized returns p with its defaults filled in.
func (p Policy) Normalized() Policy {
	if p.Security == "" {
		p.Security = SecurityFull
	}
	if p.Ask == "" {
		p.Ask = AskOff
	}
	if p.AskFallback == "" {
		p.AskFallback = SecurityDeny
	}
	if p.SafeBins == nil {
		p.SafeBins = DefaultSafeBins
	}
	if p.SafeEnv == nil {
		p.SafeEnv = DefaultSafeEnv
	}
	return p
}

// Segment is one simple command of a shell command line.
type Segment struct {
	// Argv is the command's words, environment assignments removed. It is
	// empty for a segment of assignments only ("PATH=/tmp; head"), which
	// sets shell variables for the commands after it.
	Argv []string
	// Env is the segment's leading assignments ("NAME=value"), in order.
	Env []string
}

// Bin is the segment's executable as written.
func (s Segment) Bin() string {
	if len(s.Argv) == 0 {
		return ""
	}
	return s.Argv[0]
}

// Analysis is what could be learnt of a command line without running it.
type Analysis struct {
	// OK is set when every segment's executable is known: the line has no
	// command substitution, subshell, here-document, function, control
	// keyword or variable in command position. When it is not set, an
	// approval cannot be bound to the binaries that would run.
	OK       bool
	Segments []Segment
	// Redirects is set when the line redirects to or from files.
	Redirects bool
}

// Bins returns the segments' executables, without repeats.
func (a Analysis) Bins() []string {
	var out []string
	for _, s := range a.Segments {
		if b := s.Bin(); b != "" && !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}

// shellKeywords start compound commands whose bodies Analyze does not
// follow.
var shellKeywords = []string{"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done",
	"case", "esac", "function", "select", "{", "}", "!", "[[", "]]", "time", "coproc"}

// evalBins run their arguments as code: a segment naming one cannot be
// bound to what it will run.
var evalBins = []string{"eval", "exec", "source", ".", "command", "builtin", "xargs", "env", "nohup",
	"sudo", "doas", "su", "nice", "timeout", "stdbuf", "watch", "find"}

// Analyze splits a /bin/sh command line into simple commands on ;, &,
// &&, ||, | and newlines, honouring quotes. It is deliberately
// conservative: anything it cannot follow leaves OK unset.
func Analyze(command string) Analysis {
	a := Analysis{OK: true}
	var (
		words   []string
		env     []string
		cur     strings.Builder
		inWord  bool
		quoted  bool // the current word had quotes (not a keyword)
		fail    = func() Analysis { return Analysis{OK: false, Segments: a.Segments, Redirects: a.Redirects} }
		endWord = func() {
			if inWord {
				w := cur.String()
				if !quoted && len(words) == 0 && isAssignment(w) {
					// VAR=value before the command: not the executable.
					env = append(env, w)
				} else {
					words = append(words, w)
				}
			}
			cur.Reset()
			inWord, quoted = false, false
		}
	)
	endSegment := func() bool {
		endWord()
		if len(words) == 0 && len(env) == 0 {
			return true
		}
		seg := Segment{Argv: words, Env: env}
		words, env = nil, nil
		bin := seg.Bin()
		if bin != "" && (slices.Contains(shellKeywords, bin) || slices.Contains(evalBins, path.Base(bin))) {
			return false
		}
		a.Segments = append(a.Segments, seg)
		return true
	}
	rs := []rune(command)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case c == '\\':
			if i+1 < len(rs) {
				i++
				if rs[i] != '\n' {
					cur.WriteRune(rs[i])
					inWord, quoted = true, true
				}
			}
		case c == '\'':
			j := i + 1
			for j < len(rs) && rs[j] != '\'' {
				j++
			}
			if j >= len(rs) {
				return fail()
			}
			cur.WriteString(string(rs[i+1 : j]))
			inWord, quoted = true, true
			i = j
		case c == '"':
			j := i + 1
			for ; j < len(rs) && rs[j] != '"'; j++ {
				if rs[j] == '\\' {
					j++
					continue
				}
				if rs[j] == '`' || (rs[j] == '$' && j+1 < len(rs) && rs[j+1] == '(') {
					return fail()
				}
			}
			if j >= len(rs) {
				return fail()
			}
			cur.WriteString(string(rs[i+1 : j]))
			inWord, quoted = true, true
			i = j
		case c == '`', c == '(', c == ')':
			return fail()
		case c == '$':
			if i+1 < len(rs) && rs[i+1] == '(' {
				return fail()
			}
			if !inWord && len(words) == 0 {
				return fail() // a variable in command position
			}
			cur.WriteRune(c)
			inWord = true
		case c == '<' || c == '>':
			if c == '<' && i+1 < len(rs) && rs[i+1] == '<' {
				return fail() // here-document
			}
			if c == '<' && i+1 < len(rs) && rs[i+1] == '(' {
				return fail()
			}
			// A redirection: the digits before it are its fd, the word
			// after it its target, neither an argument.
			if inWord && isDigits(cur.String()) {
				cur.Reset()
				inWord = false
			} else {
				endWord()
			}
			a.Redirects = true
			for i+1 < len(rs) && (rs[i+1] == '>' || rs[i+1] == '&' || rs[i+1] == '|') {
				i++
			}
			for i+1 < len(rs) && (rs[i+1] == ' ' || rs[i+1] == '\t') {
				i++
			}
			// Skip the target word (quotes honoured loosely).
			for i+1 < len(rs) && !strings.ContainsRune(" \t\n;&|<>()", rs[i+1]) {
				i++
				if rs[i] == '`' || rs[i] == '$' && i+1 < len(rs) && rs[i+1] == '(' {
					return fail()
				}
			}
		case c == ';' || c == '&' || c == '|' || c == '\n':
			if !endSegment() {
				return fail()
			}
			for i+1 < len(rs) && (rs[i+1] == '&' || rs[i+1] == '|') {
				i++
			}
		case c == ' ' || c == '\t':
			endWord()
		case c == '#' && !inWord:
			for i+1 < len(rs) && rs[i+1] != '\n' {
				i++
			}
		default:
			cur.WriteRune(c)
			inWord = true
		}
	}
	if !endSegment() {
		return fail()
	}
	if len(a.Segments) == 0 || len(a.Bins()) == 0 {
		return fail()
	}
	return a
}

func isAssignment(w string) bool {
	k, _, ok := strings.Cut(w, "=")
	if !ok || k == "" {
		return false
	}
	for i, r := range k {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// safeBin reports whether seg is a stdin-only use of one of bins: invoked
// by bare name, with option flags only (tr also takes its character sets)
// and no path-like token.
func safeBin(seg Segment, bins []string) bool {
	bin := seg.Bin()
	if bin == "" || strings.Contains(bin, "/") || !slices.Contains(bins, bin) {
		return false
	}
	for _, arg := range seg.Argv[1:] {
		if strings.Contains(arg, "/") || strings.HasPrefix(arg, "~") || strings.HasPrefix(arg, "--file") {
			return false
		}
		if !strings.HasPrefix(arg, "-") && bin != "tr" {
			return false // a positional: a file operand
		}
	}
	return true
}

// safeEnv reports whether every assignment of env names a variable on
// safe with a value that names no path.
func safeEnv(env, safe []string) bool {
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if !slices.Contains(safe, k) || strings.ContainsAny(v, "/~") {
			return false
		}
	}
	return true
}

// Verdict is what Decide says about a command.
type Verdict int

// Verdicts.
const (
	// Run: the command runs without asking.
	Run Verdict = iota
	// Refuse: policy forbids it (security deny, or an allowlist miss with
	// ask off); Reason says why.
	Refuse
	// AskOperator: an operator must decide before it runs.
	AskOperator
	// Unbindable: an approval is needed but cannot be bound safely to
	// what would run; the command is refused.
	Unbindable
)

// Decision is Decide's answer.
type Decision struct {
	Verdict Verdict
	// Reason is the denial reason for Refuse ("security-deny",
	// "allowlist-miss", "security-violation").
	Reason string
	// Text, when set, is the whole refusal the caller returns (the
	// reference's Security Violation text for a blocked assignment).
	Text string
	// AllowlistSatisfied is set when every segment is allowlisted or a
	// safe bin (askFallback allowlist uses it).
	AllowlistSatisfied bool
}

// Decide is the reference's approval policy for command line a under
// policy p. allowed reports whether an executable (as written) is on the
// agent's allowlist.
//
// An assignment before a command or on its own ("LD_PRELOAD=/x head",
// "PATH=/tmp; head") of a variable tools.BlockedExecEnv names is refused
// outright, with the reference's Security Violation text in Text; any
// other assignment not on p.SafeEnv, or whose value names a path, misses
// the allowlist.
func Decide(p Policy, a Analysis, allowed func(bin string) bool) Decision {
	p = p.Normalized()
	if p.Security == SecurityDeny {
		return Decision{Verdict: Refuse, Reason: "security-deny"}
	}
	var blocked []string
	for _, seg := range a.Segments {
		for _, kv := range seg.Env {
			if k, _, _ := strings.Cut(kv, "="); tools.BlockedExecEnv(k) && !slices.Contains(blocked, k) {
				blocked = append(blocked, k)
			}
		}
	}
	if err := tools.ExecEnvViolation(blocked, nil); err != nil {
		return Decision{Verdict: Refuse, Reason: "security-violation", Text: err.Error()}
	}
	satisfied := a.OK && len(a.Segments) > 0
	for _, seg := range a.Segments {
		if !satisfied {
			break
		}
		if !safeEnv(seg.Env, p.SafeEnv) {
			satisfied = false
			break
		}
		if len(seg.Argv) == 0 || safeBin(seg, p.SafeBins) && !a.Redirects {
			continue
		}
		satisfied = allowed != nil && allowed(seg.Bin())
	}
	d := Decision{AllowlistSatisfied: satisfied}
	ask := p.Ask == AskAlways || p.Ask == AskOnMiss && p.Security == SecurityAllowlist && !satisfied
	switch {
	case ask && !a.OK:
		d.Verdict = Unbindable
	case ask:
		d.Verdict = AskOperator
	case p.Security == SecurityAllowlist && !satisfied:
		d.Verdict, d.Reason = Refuse, "allowlist-miss"
	default:
		d.Verdict = Run
	}
	return d
}

// Fallback resolves a prompt that no operator answered (none could, or it
// expired) by p's askFallback: it reports whether the command runs, and
// the denial reason when it does not.
func Fallback(p Policy, d Decision) (run bool, reason string) {
	switch p.Normalized().AskFallback {
	case SecurityFull:
		return true, ""
	case SecurityAllowlist:
		if d.AllowlistSatisfied {
			return true, ""
		}
		return false, "approval-timeout: allowlist-miss"
	}
	return false, "approval-timeout"
}

// AllowedDecisions are the decisions an operator may give under ask: with
// ask always, allow-always is not offered (it would not stop the prompts).
func AllowedDecisions(ask string) []string {
	if ask == AskAlways {
		return []string{AllowOnce, Deny}
	}
	return []string{AllowOnce, AllowAlways, Deny}
}

// ValidDecision reports whether d is one of the three decisions.
func ValidDecision(d string) bool {
	return d == AllowOnce || d == AllowAlways || d == Deny
}
