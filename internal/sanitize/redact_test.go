package sanitize

import (
	"strings"
	"testing"
)

// Expected values were checked against the reference's redactSensitiveText
// under Node (with the captured span masked in place; see Redact).
func TestRedactDefaultPatterns(t *testing.T) {
	long := "abcdefghijklmnopqrstuvwxyz" // 26 units: masked to abcdef…wxyz
	tests := []struct {
		name, in, want string
	}{
		// ENV-style assignments.
		{"env keeps key name", "OPENAI_API_KEY=sk-" + long, "OPENAI_API_KEY=sk-abc…wxyz"},
		{"env short value", "DB_PASSWORD=hunter2", "DB_PASSWORD=***"},
		{"env double quotes", `export GITHUB_TOKEN="` + long + `"`, `export GITHUB_TOKEN="abcdef…wxyz"`},
		{"env single quotes and colon", "secret: 'abc'", "secret: '***'"},
		{"env passwd lowercase", "passwd = opensesame", "passwd = ***"},
		{"env value stops at backslash", `TOKEN=abc\def`, `TOKEN=***\def`},
		{"env unmatched quote", `KEY="abc def"`, `KEY="abc def"`},
		{"env suffix match quirk", "monkey: bananas", "monkey: ***"},
		{"env JS whitespace", "API_KEY\u00a0=\ufeffabc", "API_KEY\u00a0=\ufeff***"},
		{"env not Go-only whitespace", "API_KEY\u0085=abc", "API_KEY\u0085=abc"},
		{"env Kelvin sign is not k", "\u212aEY=abc", "\u212aEY=abc"},
		{"env needs word boundary", "KEYS=abc", "KEYS=abc"},
		// JSON fields.
		{"json apiKey", `{"apiKey": "` + long + `"}`, `{"apiKey": "abcdef…wxyz"}`},
		{"json accessToken", `{"accessToken":"short"}`, `{"accessToken":"***"}`},
		{"json refreshToken case-insensitive", `{"REFRESHTOKEN" : "x y z"}`, `{"REFRESHTOKEN" : "***"}`},
		{"json other field", `{"name": "` + long + `"}`, `{"name": "` + long + `"}`},
		// CLI flags.
		{"cli api-key", "curl --api-key " + long, "curl --api-key abcdef…wxyz"},
		{"cli api_key quoted", `tool --api_key "s3cr3t"`, `tool --api_key "***"`},
		{"cli apikey single quoted", "tool --apikey 's3cr3t'", "tool --apikey '***'"},
		{"cli token", "gh --token abc", "gh --token ***"},
		{"cli password", "mysql --password hunter2", "mysql --password ***"},
		// Authorization headers.
		{"authorization header", "Authorization: Bearer " + long, "Authorization: Bearer abcdef…wxyz"},
		{"authorization short", "authorization=bearer abc", "authorization=bearer ***"},
		// Bearer tokens of 18+ characters.
		{"bearer long", "Bearer " + long, "Bearer abcdef…wxyz"},
		{"bearer exactly 18", "Bearer abcdefghijklmnopqr", "Bearer abcdef…opqr"},
		{"bearer 17 untouched", "Bearer abcdefghijklmnopq", "Bearer abcdefghijklmnopq"},
		// PEM private key blocks.
		{"pem", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nAAAA\n-----END RSA PRIVATE KEY-----",
			"-----BEGIN RSA PRIVATE KEY-----\n…redacted…\n-----END RSA PRIVATE KEY-----"},
		{"pem crlf and blank lines", "x -----BEGIN PRIVATE KEY-----\r\n\r\nMIIE\r\n-----END PRIVATE KEY----- y",
			"x -----BEGIN PRIVATE KEY-----\n…redacted…\n-----END PRIVATE KEY----- y"},
		{"pem one line", "-----BEGIN PRIVATE KEY-----MIIE-----END PRIVATE KEY-----", "***"},
		{"pem lowercase masked as a token", "-----begin private key-----\nMIIE\n-----end private key-----", "-----b…----"},
		// Common token prefixes.
		{"sk", "use sk-proj-" + long + " now", "use sk-pro…wxyz now"},
		{"sk short", "sk-12345678", "***"},
		{"sk too short", "sk-1234567", "sk-1234567"},
		{"sk needs boundary", "ask-" + long, "ask-" + long},
		{"ghp", "ghp_" + long + "0123456789", "ghp_ab…6789"},
		{"github_pat", "github_pat_11ABCDEFG0123456789_" + long, "github…wxyz"},
		{"xoxb", "xoxb-1234567890-abcdef", "xoxb-1…cdef"},
		{"xoxp uppercase", "XOXP-1234567890", "***"},
		{"xapp", "xapp-1-A0123456789-" + long, "xapp-1…wxyz"},
		{"gsk", "gsk_" + long, "gsk_ab…wxyz"},
		{"AIza", "AIzaSyA-" + long, "AIzaSy…wxyz"},
		{"pplx", "pplx-" + long, "pplx-a…wxyz"},
		{"npm", "npm_" + long, "npm_ab…wxyz"},
		{"telegram", "bot 123456789:AAEhBP0av28H7q3ZbbD-abcdefghijk ok", "bot 123456…hijk ok"},
		{"telegram short digits", "12345:AAEhBP0av28H7q3ZbbD-abcdefghijk", "12345:AAEhBP0av28H7q3ZbbD-abcdefghijk"},
		// No secrets.
		{"plain", "nothing to see here", "nothing to see here"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := DefaultRedactor().Redact(tt.in)
			if got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if changed != (tt.want != tt.in) {
				t.Errorf("Redact(%q) changed = %v, want %v", tt.in, changed, tt.want != tt.in)
			}
		})
	}
}

func TestRedactMasking(t *testing.T) {
	tests := []struct {
		name, token, want string
	}{
		{"empty", "", "***"},
		{"17 units", "abcdefghijklmnopq", "***"},
		{"18 units", "abcdefghijklmnopqr", "abcdef…opqr"},
		{"emoji count two units", "😀😀😀😀😀😀😀😀😀", "😀😀😀…😀😀"}, // 18 units
		{"8 emoji are 16 units", "😀😀😀😀😀😀😀😀", "***"},
		// The reference would keep "a😀😀" plus a lone high surrogate.
		{"never split a pair at the start", "a😀😀😀😀😀😀😀😀😀", "a😀😀…😀😀"},
		{"never split a pair at the end", "😀😀😀😀😀😀😀😀😀a", "😀😀😀…😀a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := maskToken(tt.token); got != tt.want {
				t.Errorf("maskToken(%q) = %q, want %q", tt.token, got, tt.want)
			}
		})
	}
}

func TestRedactMasksCapturedSpan(t *testing.T) {
	// The reference replaces the first occurrence of the secret's text in
	// the match, which here is the key name: "***=PASSWORD".
	got, _ := DefaultRedactor().Redact("PASSWORD=PASSWORD")
	if want := "PASSWORD=***"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	got, _ = DefaultRedactor().Redact("passwd\t::")
	if want := "passwd\t:***"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestRedactNotIdempotent(t *testing.T) {
	once, _ := DefaultRedactor().Redact("API_KEY=sk-abcdefghijklmnopqrstuvwxyz")
	if once != "API_KEY=sk-abc…wxyz" {
		t.Fatalf("once = %q", once)
	}
	twice, changed := DefaultRedactor().Redact(once)
	if twice != "API_KEY=***" || !changed {
		t.Errorf("twice = %q, %v; want API_KEY=***, true", twice, changed)
	}
	thrice, changed := DefaultRedactor().Redact(twice)
	if thrice != twice || changed {
		t.Errorf("thrice = %q, %v; want no change", thrice, changed)
	}
}

func TestRedactorOptions(t *testing.T) {
	secret := "sk-abcdefghijklmnopqrstuvwxyz"
	tests := []struct {
		name    string
		opts    RedactOptions
		in      string
		want    string
		enabled bool
	}{
		{"zero value is the default", RedactOptions{}, secret, "sk-abc…wxyz", true},
		{"tools", RedactOptions{Mode: RedactTools}, secret, "sk-abc…wxyz", true},
		{"unknown mode means tools", RedactOptions{Mode: "bogus"}, secret, "sk-abc…wxyz", true},
		{"off", RedactOptions{Mode: RedactOff}, secret, secret, false},
		{"off ignores patterns", RedactOptions{Mode: RedactOff, Patterns: []string{"sk"}}, secret, secret, false},
		{"OFF is not off", RedactOptions{Mode: "OFF"}, secret, "sk-abc…wxyz", true},
		{"custom replaces defaults", RedactOptions{Patterns: []string{`secret-\d+`}}, "SECRET-123 " + secret, "*** " + secret, true},
		{"custom capture group", RedactOptions{Patterns: []string{`token=(\w+)`}}, "token=abc other", "token=*** other", true},
		{"custom long match", RedactOptions{Patterns: []string{`id-\w+`}}, "id-abcdefghijklmnopqrstuvwxyz", "id-abc…wxyz", true},
		{"slash form is case-sensitive", RedactOptions{Patterns: []string{`/Secret\d/`}}, "secret1 Secret2", "secret1 ***", true},
		{"slash form with i", RedactOptions{Patterns: []string{`/secret\d/gi`}}, "secret1 Secret2", "*** ***", true},
		{"slash form with s", RedactOptions{Patterns: []string{`/a.b/s`}}, "a\nb", "***", true},
		{"slash form without s", RedactOptions{Patterns: []string{`/a.b/`}}, "a\nb", "a\nb", true},
		{"invalid pattern skipped", RedactOptions{Patterns: []string{"(", "abc"}}, "abc (", "*** (", true},
		{"duplicate flags invalid", RedactOptions{Patterns: []string{"/abc/ii", "def"}}, "abc def", "abc ***", true},
		{"backreference unsupported", RedactOptions{Patterns: []string{`(a)\1`}}, "aa", "aa", false},
		{"all invalid redacts nothing", RedactOptions{Patterns: []string{"("}}, secret, secret, false},
		{"blank still replaces defaults", RedactOptions{Patterns: []string{"  "}}, secret, secret, false},
		{"empty list means defaults", RedactOptions{Patterns: []string{}}, secret, "sk-abc…wxyz", true},
		{"custom PEM rule", RedactOptions{Patterns: []string{`x[\s\S]*y`}}, "PRIVATE KEY-----x\n1\ny", "PRIVATE KEY-----***", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRedactor(tt.opts)
			if got, _ := r.Redact(tt.in); got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if got := r.Enabled(); got != tt.enabled {
				t.Errorf("Enabled() = %v, want %v", got, tt.enabled)
			}
		})
	}
}

func TestNilRedactorIsDefault(t *testing.T) {
	var r *Redactor
	got, changed := r.Redact("sk-abcdefghijklmnopqrstuvwxyz")
	if got != "sk-abc…wxyz" || !changed {
		t.Errorf("nil Redact = %q, %v", got, changed)
	}
	if !r.Enabled() {
		t.Error("nil Enabled() = false")
	}
	if NewRedactor(RedactOptions{}) != DefaultRedactor() {
		t.Error("NewRedactor(zero) is not the shared default")
	}
}

func TestRedactOptionsValidate(t *testing.T) {
	tests := []struct {
		name  string
		opts  RedactOptions
		wants []string // substrings of the error; none means nil
	}{
		{"zero", RedactOptions{}, nil},
		{"off with valid patterns", RedactOptions{Mode: RedactOff, Patterns: []string{"abc", "/x/i", " "}}, nil},
		{"bad mode", RedactOptions{Mode: "full"}, []string{`redact mode "full"`}},
		{"every bad pattern", RedactOptions{Patterns: []string{"(", "ok", "/x/gg", `(?=x)`}},
			[]string{`redact pattern "("`, `redact pattern "/x/gg": duplicate flag 'g'`, `redact pattern "(?=x)"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if len(tt.wants) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tt.wants)
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
			if n := strings.Count(err.Error(), "\n") + 1; n != len(tt.wants) {
				t.Errorf("Validate() reported %d problems, want %d: %v", n, len(tt.wants), err)
			}
		})
	}
}

func TestRedactAppliesPatternsInOrder(t *testing.T) {
	// The JSON rule runs before the sk- rule and masks the whole value;
	// a later rule sees the earlier output.
	in := `{"token": "sk-abcdefghijklmnopqrstuvwxyz and more"}`
	got, _ := DefaultRedactor().Redact(in)
	if want := `{"token": "sk-abc…more"}`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestRedactLiteralSecrets(t *testing.T) {
	tok := "gw-3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
	for _, tc := range []struct {
		name string
		opts RedactOptions
		want bool // whether tok is masked
	}{
		{"default patterns", RedactOptions{Secrets: []string{tok}}, true},
		{"custom patterns replace defaults, not secrets", RedactOptions{Patterns: []string{"nothing-matches-this"}, Secrets: []string{tok}}, true},
		{"redaction off", RedactOptions{Mode: RedactOff, Secrets: []string{tok}}, false},
	} {
		r := NewRedactor(tc.opts)
		out, changed := r.Redact("here is the token " + tok + " pasted")
		if masked := !strings.Contains(out, tok); masked != tc.want || changed != tc.want {
			t.Errorf("%s: %q (changed %v)", tc.name, out, changed)
		}
	}
	r := NewRedactor(RedactOptions{Secrets: []string{"short", "", "pass.wd+more"}})
	if out, _ := r.Redact("a short word"); out != "a short word" {
		t.Errorf("a secret under %d bytes was masked: %q", MinSecretLen, out)
	}
	if out, _ := r.Redact("pw is pass.wd+more!"); strings.Contains(out, "pass.wd+more") {
		t.Errorf("a secret with regexp metacharacters leaked: %q", out)
	}
}

// TestNewRedactorCompilesOnFirstUse: building a redactor compiles nothing
// (the gateway builds its redactors while it starts); its first Redact
// compiles its rules, and every later use shares them.
func TestNewRedactorCompilesOnFirstUse(t *testing.T) {
	opts := RedactOptions{Secrets: []string{"hunter2-the-password"}, Patterns: []string{`tok-[0-9]+`}}
	var r *Redactor
	if n := testing.AllocsPerRun(1, func() { r = NewRedactor(opts) }); n > 4 {
		t.Fatalf("NewRedactor allocated %v times: it compiled its rules", n)
	}
	opts.Secrets[0], opts.Patterns[0] = "changed-after-the-call", "changed"
	got, changed := r.Redact("pw hunter2-the-password and tok-123")
	if want := "pw hunter…word and ***"; got != want || !changed {
		t.Fatalf("Redact = %q, %v; want %q, true", got, changed, want)
	}
	if n := testing.AllocsPerRun(1, func() { r.Enabled() }); n != 0 {
		t.Fatalf("Enabled after the first use allocated %v times: the rules were compiled again", n)
	}
}
