package sanitize

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard/internal/lazy"
)

// Redaction modes, config logging.redactSensitive.
const (
	// RedactTools redacts tool payloads (the default).
	RedactTools = "tools"
	// RedactOff disables redaction.
	RedactOff = "off"
)

// Masking constants of the reference.
const (
	maskMinLen    = 18 // secrets shorter than this (UTF-16 units) become "***"
	maskKeepStart = 6
	maskKeepEnd   = 4
)

// RedactOptions configures a Redactor. The zero value is the reference's
// default: mode "tools" with the default secret patterns.
type RedactOptions struct {
	// Mode is logging.redactSensitive: RedactOff disables redaction; any
	// other value (including "") means RedactTools, as in the reference.
	Mode string
	// Patterns is logging.redactPatterns. A non-empty list replaces the
	// default patterns (it does not add to them). Each entry is either a
	// bare pattern, matched case-insensitively, or "/pattern/flags" with
	// flags from "gimsuy" (i, m and s apply; g is implied; u and y are
	// ignored), matched case-sensitively unless the flags include i.
	//
	// Patterns use Go's RE2 syntax, not JavaScript's: backreferences and
	// lookaround are not supported, \s and \w are ASCII-only, and (?i)
	// folds Unicode; and an empty match right after another match is not
	// masked (JavaScript masks it as "***" too). Blank entries and entries
	// that do not compile are skipped, as the reference skips invalid ones;
	// Validate reports the latter. If every entry is skipped, nothing is
	// redacted.
	Patterns []string
	// Secrets are literal values that are always masked where redaction is
	// on, whatever the patterns: the gateway's token and password and the
	// providers' API keys. Values shorter than MinSecretLen are ignored (they
	// would mask ordinary words).
	Secrets []string
}

// MinSecretLen is the shortest literal secret RedactOptions.Secrets masks.
const MinSecretLen = 8

// Validate reports every problem with o: a Mode other than "", RedactTools
// or RedactOff, and each pattern that does not compile. A Redactor built
// from options that fail validation still works; it skips the bad patterns.
func (o RedactOptions) Validate() error {
	var errs []error
	switch o.Mode {
	case "", RedactTools, RedactOff:
	default:
		errs = append(errs, fmt.Errorf("sanitize: redact mode %q is not %q or %q", o.Mode, RedactTools, RedactOff))
	}
	for _, p := range o.Patterns {
		if isBlank(p) {
			continue
		}
		if _, err := compileCustom(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// A Redactor masks secrets in text. It is immutable and safe for concurrent
// use. The nil *Redactor behaves as DefaultRedactor().
type Redactor struct {
	off bool
	// rules are compiled on first use: the gateway builds its redactors
	// while it starts, and compiling the default patterns there took
	// about 0.3 ms and 0.5 MB before the first request.
	rules lazy.Value[[]rule]
}

// list returns r's rules, compiling them on the first call.
func (r *Redactor) list() []rule { return r.rules.Get() }

// rule is one redaction pattern.
type rule struct {
	re *regexp.Regexp
	// may reports, from the ASCII-lowered text, whether re can match at
	// all; nil means always try. It is a necessary condition only: it
	// skips work, never changes a result.
	may func(lower string) bool
}

// defaultRedactorValue compiles the default rules on first use.
var defaultRedactorValue = Redactor{rules: lazy.Value[[]rule]{New: defaultRules}}

func defaultRedactor() *Redactor { return &defaultRedactorValue }

// DefaultRedactor returns the shared Redactor for the zero RedactOptions:
// mode "tools" with the default secret patterns.
func DefaultRedactor() *Redactor { return defaultRedactor() }

// NewRedactor returns a Redactor for opts. It never fails: patterns that do
// not compile are skipped (see RedactOptions.Validate).
func NewRedactor(opts RedactOptions) *Redactor {
	if opts.Mode == RedactOff {
		return &Redactor{off: true}
	}
	if len(opts.Patterns) == 0 && len(opts.Secrets) == 0 {
		return defaultRedactor()
	}
	opts.Secrets, opts.Patterns = slices.Clone(opts.Secrets), slices.Clone(opts.Patterns)
	return &Redactor{rules: lazy.Value[[]rule]{New: func() []rule { return compileRules(opts) }}}
}

// compileRules compiles opts' secrets (each matched literally), then its
// patterns, or the default patterns when it has none; patterns that do
// not compile are skipped.
func compileRules(opts RedactOptions) []rule {
	var rules []rule
	for _, sec := range opts.Secrets {
		if len(sec) >= MinSecretLen {
			rules = append(rules, rule{re: regexp.MustCompile(regexp.QuoteMeta(sec))})
		}
	}
	if len(opts.Patterns) == 0 {
		return append(rules, defaultRedactor().list()...)
	}
	for _, p := range opts.Patterns {
		if isBlank(p) {
			continue
		}
		re, err := compileCustom(p)
		if err != nil {
			continue
		}
		rules = append(rules, rule{re: re})
	}
	return rules
}

// Enabled reports whether r redacts anything at all.
func (r *Redactor) Enabled() bool {
	if r == nil {
		return true
	}
	return !r.off && len(r.list()) > 0
}

// Redact masks the secrets in s and reports whether the result differs from
// s. The patterns apply one after the other, each to the output of the
// previous one, and each masks every match:
//
//   - a match containing "PRIVATE KEY-----" (a PEM block) becomes its first
//     line, "…redacted…" and its last line, each on its own line ("***" when
//     it has fewer than two non-empty lines);
//   - otherwise the secret is the last non-empty capture group (the whole
//     match when there is none) and only it is masked, so the key name in
//     "OPENAI_API_KEY=sk-…" stays: a secret shorter than 18 UTF-16 units
//     becomes "***", a longer one its first 6 units, "…" and its last 4.
//
// Two deliberate differences from the reference, which replaces the first
// occurrence of the secret's text within the match rather than the captured
// span, and slices UTF-16 units blindly: here the captured span itself is
// masked (the reference would mask the key instead when the secret's text
// also occurs in it, as in "PASSWORD=PASSWORD", and leave the secret
// visible), and the kept start and end never split a surrogate pair (they
// may then be one unit shorter).
//
// Redaction is not idempotent, in the reference either: a masked value is
// itself a value, so redacting "API_KEY=sk-abc…wxyz" again gives
// "API_KEY=***". A second pass may mask such masks again; a third changes
// nothing.
func (r *Redactor) Redact(s string) (string, bool) {
	if r == nil {
		r = defaultRedactor()
	}
	if s == "" || r.off {
		return s, false
	}
	rules := r.list()
	if len(rules) == 0 {
		return s, false
	}
	out := s
	lower, lowerOK := "", false
	for i := range rules {
		ru := &rules[i]
		if ru.may != nil {
			if !lowerOK {
				lower, lowerOK = asciiLower(out), true
			}
			if !ru.may(lower) {
				continue
			}
		}
		if next := ru.apply(out); next != out {
			out, lowerOK = next, false
		}
	}
	return out, out != s
}

// apply masks every match of ru in s.
func (ru *rule) apply(s string) string {
	ms := ru.re.FindAllStringSubmatchIndex(s, -1)
	if ms == nil {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, m := range ms {
		b.WriteString(s[last:m[0]])
		b.WriteString(redactMatch(s, m))
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// redactMatch returns the replacement for the match m (submatch indexes
// into s).
func redactMatch(s string, m []int) string {
	match := s[m[0]:m[1]]
	if strings.Contains(match, "PRIVATE KEY-----") {
		return redactPEM(match)
	}
	for g := len(m)/2 - 1; g >= 1; g-- {
		a, e := m[2*g], m[2*g+1]
		if a >= 0 && e > a {
			return s[m[0]:a] + maskToken(s[a:e]) + s[e:m[1]]
		}
	}
	return maskToken(match)
}

// maskToken masks one secret.
func maskToken(t string) string {
	if utf16Len(t) < maskMinLen {
		return "***"
	}
	return utf16Prefix(t, maskKeepStart) + "…" + utf16Suffix(t, maskKeepEnd)
}

// redactPEM keeps the first and last non-empty lines of a PEM block, lines
// being split at "\n" or "\r\n".
func redactPEM(block string) string {
	var first, last string
	n := 0
	rest := block
	for {
		line, tail, more := strings.Cut(rest, "\n")
		if more {
			line = strings.TrimSuffix(line, "\r")
		}
		if line != "" {
			if n == 0 {
				first = line
			}
			last = line
			n++
		}
		if !more {
			break
		}
		rest = tail
	}
	if n < 2 {
		return "***"
	}
	return first + "\n…redacted…\n" + last
}

// anyOf is a rule prefilter: the text contains one of the literals.
func anyOf(literals ...string) func(string) bool {
	return func(lower string) bool { return containsAny(lower, literals) }
}

// mayAssign is the prefilter of the ENV-style rule: a key word that ends a
// word, then optional whitespace and "=" or ":".
func mayAssign(lower string) bool {
	for _, kw := range [...]string{"key", "token", "secret", "password", "passwd"} {
		for i := 0; ; {
			j := strings.Index(lower[i:], kw)
			if j < 0 {
				break
			}
			e := i + j + len(kw)
			if e == len(lower) || !isWordByte(lower[e]) {
				for e < len(lower) {
					r, size := utf8.DecodeRuneInString(lower[e:])
					if !isJSSpace(r) {
						break
					}
					e += size
				}
				if e < len(lower) && (lower[e] == '=' || lower[e] == ':') {
					return true
				}
			}
			i += j + 1
		}
	}
	return false
}

// mayBotToken is the prefilter of the Telegram rule: six digits and ":".
func mayBotToken(lower string) bool {
	for i := 0; ; {
		j := strings.IndexByte(lower[i:], ':')
		if j < 0 {
			return false
		}
		c := i + j
		if c >= 6 && isDigits(lower[c-6:c]) {
			return true
		}
		i = c + 1
	}
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// slashPattern is the reference's /^\/(.+)\/([gimsuy]*)$/ (JavaScript's "."
// excludes all four line terminators).
var slashPattern = &lazyRE{expr: `^/([^\n\r\x{2028}\x{2029}]+)/([gimsuy]*)$`}

// compileCustom compiles one logging.redactPatterns entry.
func compileCustom(raw string) (*regexp.Regexp, error) {
	body, flags := raw, "i"
	if m := slashPattern.get().FindStringSubmatch(raw); m != nil {
		body, flags = m[1], ""
		seen := map[rune]bool{}
		for _, f := range m[2] {
			if seen[f] {
				return nil, fmt.Errorf("sanitize: redact pattern %q: duplicate flag %q", raw, f)
			}
			seen[f] = true
			if f == 'i' || f == 'm' || f == 's' {
				flags += string(f)
			}
		}
	}
	expr := body
	if flags != "" {
		expr = "(?" + flags + ")" + body
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("sanitize: redact pattern %q: %w", raw, err)
	}
	return re, nil
}

// defaultRules are the reference's default secret patterns (compiled there
// with flags "gi"), rewritten for RE2:
//
//   - JavaScript's \s becomes jsSpace, and /i becomes ASCII-only folding
//     (ci, and both letter ranges in classes);
//   - (["']?)(V)\1 — an optional quote, the value and the same quote again —
//     becomes "(V)"|'(V)'|(V), which matches the same text with the same
//     preference, the value being the only non-empty group;
//   - [\s\S] becomes (?s:.).
func defaultRules() []rule {
	const (
		valueEnv = `[^` + jsSpaceChars + `"'\\]+` // [^\s"'\\]+
		valueCLI = `[^` + jsSpaceChars + `"']+`   // [^\s"']+
		bearer   = `[A-Za-z0-9._\-+=]`
	)
	quoted := func(v string) string {
		return `(?:"(` + v + `)"|'(` + v + `)'|(` + v + `))`
	}
	specs := []struct {
		expr string
		may  func(lower string) bool
	}{
		// ENV-style assignments: \b[A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD)\b\s*[=:]\s*(["']?)([^\s"'\\]+)\1
		{`\b[A-Za-z0-9_]*` + ciAlt("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD") + `\b` + jsSpace + `*[=:]` + jsSpace + `*` + quoted(valueEnv), mayAssign},
		// JSON fields: "(?:apiKey|token|secret|password|passwd|accessToken|refreshToken)"\s*:\s*"([^"]+)"
		{`"` + ciAlt("apiKey", "token", "secret", "password", "passwd", "accessToken", "refreshToken") + `"` + jsSpace + `*:` + jsSpace + `*"([^"]+)"`, anyOf(`"apikey"`, `"token"`, `"secret"`, `"password"`, `"passwd"`, `"accesstoken"`, `"refreshtoken"`)},
		// CLI flags: --(?:api[-_]?key|token|secret|password|passwd)\s+(["']?)([^\s"']+)\1
		{`--(?:` + ci("api") + `[-_]?` + ci("key") + `|` + ci("token") + `|` + ci("secret") + `|` + ci("password") + `|` + ci("passwd") + `)` + jsSpace + `+` + quoted(valueCLI), anyOf("--api", "--token", "--secret", "--passw")},
		// Authorization headers: Authorization\s*[:=]\s*Bearer\s+([A-Za-z0-9._\-+=]+)
		{ci("Authorization") + jsSpace + `*[:=]` + jsSpace + `*` + ci("Bearer") + jsSpace + `+(` + bearer + `+)`, anyOf("authorization")},
		// \bBearer\s+([A-Za-z0-9._\-+=]{18,})\b
		{`\b` + ci("Bearer") + jsSpace + `+(` + bearer + `{18,})\b`, anyOf("bearer")},
		// PEM blocks: -----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]+?-----END [A-Z ]*PRIVATE KEY-----
		{`-----` + ci("BEGIN") + ` [A-Za-z ]*` + ci("PRIVATE KEY") + `-----(?s:.)+?-----` + ci("END") + ` [A-Za-z ]*` + ci("PRIVATE KEY") + `-----`, anyOf("private key-----")},
		// Common token prefixes.
		{`\b(` + ci("sk-") + `[A-Za-z0-9_-]{8,})\b`, anyOf("sk-")},
		{`\b(` + ci("ghp_") + `[A-Za-z0-9]{20,})\b`, anyOf("ghp_")},
		{`\b(` + ci("github_pat_") + `[A-Za-z0-9_]{20,})\b`, anyOf("github_pat_")},
		{`\b(` + ci("xox") + `[baprsBAPRS]-[A-Za-z0-9-]{10,})\b`, anyOf("xox")},
		{`\b(` + ci("xapp-") + `[A-Za-z0-9-]{10,})\b`, anyOf("xapp-")},
		{`\b(` + ci("gsk_") + `[A-Za-z0-9_-]{10,})\b`, anyOf("gsk_")},
		{`\b(` + ci("AIza") + `[0-9A-Za-z\-_]{20,})\b`, anyOf("aiza")},
		{`\b(` + ci("pplx-") + `[A-Za-z0-9_-]{10,})\b`, anyOf("pplx-")},
		{`\b(` + ci("npm_") + `[A-Za-z0-9]{10,})\b`, anyOf("npm_")},
		// Telegram bot tokens: \b(\d{6,}:[A-Za-z0-9_-]{20,})\b
		{`\b([0-9]{6,}:[A-Za-z0-9_-]{20,})\b`, mayBotToken},
	}
	rules := make([]rule, len(specs))
	for i, s := range specs {
		rules[i] = rule{re: regexp.MustCompile(s.expr), may: s.may}
	}
	return rules
}
