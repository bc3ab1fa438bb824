package sanitize

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

var redactSeeds = []string{
	"",
	"OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz",
	`{"apiKey": "abc", "token":"x y"}`,
	"curl --api-key 'k' --token \"t\" -H 'Authorization: Bearer abcdefghijklmnopqrstuvwxyz'",
	"-----BEGIN RSA PRIVATE KEY-----\r\nMIIE\r\n-----END RSA PRIVATE KEY-----",
	"ghp_abcdefghijklmnopqrstuvwxyz xoxb-1234567890 123456789:abcdefghijklmnopqrstuvwxyz",
	"KEY=😀😀😀😀😀😀😀😀😀a \xff\xfe PASSWORD=PASSWORD monkey: x",
	"API_KEY=sk-abc…wxyz",
}

func FuzzRedact(f *testing.F) {
	for _, s := range redactSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := DefaultRedactor()
		once, changed := r.Redact(s)
		if changed != (once != s) {
			t.Fatalf("changed = %v for %q → %q", changed, s, once)
		}
		if utf8.ValidString(s) && !utf8.ValidString(once) {
			t.Fatalf("invalid UTF-8 from %q: %q", s, once)
		}
		// Not idempotent (a mask is itself a value), but a second pass only
		// collapses masks, and then nothing changes any more.
		twice, _ := r.Redact(once)
		thrice, changed := r.Redact(twice)
		if changed {
			t.Fatalf("third pass changed %q → %q (from %q)", twice, thrice, s)
		}
		if off, changed := NewRedactor(RedactOptions{Mode: RedactOff}).Redact(s); off != s || changed {
			t.Fatalf("off changed %q", s)
		}
	})
}

// secretFormats embed a secret body in the shape each default pattern
// recognises; the function returns the text and the secret that must not
// survive.
var secretFormats = []func(body string) (text, secret string){
	func(b string) (string, string) { return "OPENAI_API_KEY=" + b, b },
	func(b string) (string, string) { return `export TOKEN="` + b + `"`, b },
	func(b string) (string, string) { return `{"apiKey": "` + b + `"}`, b },
	func(b string) (string, string) { return "--api-key " + b, b },
	func(b string) (string, string) { return "--password '" + b + "'", b },
	func(b string) (string, string) { return "Authorization: Bearer " + b, b },
	func(b string) (string, string) { return "Bearer " + b, b },
	func(b string) (string, string) {
		return "-----BEGIN RSA PRIVATE KEY-----\n" + b + "\n-----END RSA PRIVATE KEY-----", b
	},
	func(b string) (string, string) { return "sk-" + b, "sk-" + b },
	func(b string) (string, string) { return "ghp_" + b, "ghp_" + b },
	func(b string) (string, string) { return "github_pat_" + b, "github_pat_" + b },
	func(b string) (string, string) { return "xoxb-" + b, "xoxb-" + b },
	func(b string) (string, string) { return "xapp-" + b, "xapp-" + b },
	func(b string) (string, string) { return "gsk_" + b, "gsk_" + b },
	func(b string) (string, string) { return "AIza" + b, "AIza" + b },
	func(b string) (string, string) { return "pplx-" + b, "pplx-" + b },
	func(b string) (string, string) { return "npm_" + b, "npm_" + b },
	func(b string) (string, string) { return "1234567:" + b, "1234567:" + b },
}

// FuzzRedactSecret checks that a generated secret never survives redaction
// in full, whatever its body and whatever plain prose surrounds it. The
// prose is limited to letters, digits, spaces and sentence punctuation: the
// patterns apply in sequence, so text built to look like another secret's
// syntax (a key name, a quote, a flag) can hide a secret from the pattern
// meant for it, in the reference too.
func FuzzRedactSecret(f *testing.F) {
	f.Add(uint8(0), "abcdefghij", "see", "ok")
	f.Add(uint8(7), "MIIEowIBAAKCAQEA", "", "")
	f.Add(uint8(17), "AAEhBP0av28H7q3ZbbD", "bot", "Bearer")
	f.Fuzz(func(t *testing.T, kind uint8, seed, prefix, suffix string) {
		format := secretFormats[int(kind)%len(secretFormats)]
		// A body of 20 to 60 characters that every pattern accepts.
		const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
		var body strings.Builder
		for i := 0; i < len(seed) && body.Len() < 60; i++ {
			body.WriteByte(alphabet[int(seed[i])%len(alphabet)])
		}
		for body.Len() < 20 {
			body.WriteByte(alphabet[body.Len()%len(alphabet)])
		}
		text, secret := format(body.String())
		in := prose(prefix) + " " + text + " " + prose(suffix)
		out, changed := DefaultRedactor().Redact(in)
		if !changed || strings.Contains(out, secret) {
			t.Fatalf("secret %q survives in %q (from %q)", secret, out, in)
		}
	})
}

// prose keeps the letters, digits, spaces and . , ! ? of s.
func prose(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == ' ', r == '.', r == ',', r == '!', r == '?':
			return r
		}
		return -1
	}, s)
}

func FuzzRedactCustom(f *testing.F) {
	f.Add(`token=(\w+)`, "token=abc")
	f.Add(`/a(b)?c/gims`, "ac abc")
	f.Add(`x*`, "xxyx")
	f.Fuzz(func(t *testing.T, pattern, s string) {
		r := NewRedactor(RedactOptions{Patterns: []string{pattern}})
		out, changed := r.Redact(s)
		if changed != (out != s) {
			t.Fatalf("changed = %v", changed)
		}
		if err := (RedactOptions{Patterns: []string{pattern}}).Validate(); (err == nil) != (r.Enabled() || isBlank(pattern)) {
			t.Fatalf("Validate() = %v but Enabled() = %v", err, r.Enabled())
		}
	})
}

var historySeeds = []string{
	`[]`,
	`[{"role":"user","content":"hello TOKEN=abc"}]`,
	`[{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"thinking","thinking":"t","thinkingSignature":"s"},{"type":"image","data":"AAAA"},{"type":"toolCall","partialJson":"{}"}],"usage":{},"cost":1}]`,
	`[{"role":"toolResult","content":"x","details":{"a":[1,2]}},{"role":"tool","content":"y"},null,{"role":"user","content":[["a"],null,"s",3]}]`,
	`[{"role":"user","content":"<>&\u2028\u0000😀","text":"sk-abcdefghijklmnopqrstuvwxyz"}]`,
}

func FuzzSanitizeHistory(f *testing.F) {
	for _, s := range historySeeds {
		f.Add([]byte(s), uint16(0), uint16(0), false)
		f.Add([]byte(s), uint16(3), uint16(90), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, maxChars, maxBytes uint16, includeTools bool) {
		var msgs []map[string]any
		if json.Unmarshal(data, &msgs) != nil {
			s := string(data)
			msgs = []map[string]any{
				{"role": "user", "content": s, "details": s},
				{"role": "assistant", "content": []any{
					map[string]any{"type": "text", "text": s},
					map[string]any{"type": "thinking", "thinking": s, "thinkingSignature": s},
					map[string]any{"type": "image", "data": s},
				}},
				{"role": "toolResult", "content": s},
			}
		}
		before := deepCopyMessages(msgs)
		opts := HistoryOptions{IncludeTools: includeTools, MaxChars: int(maxChars % 5000), MaxBytes: int(maxBytes)}
		res := SanitizeHistory(msgs, opts)

		if !reflect.DeepEqual(before, msgs) {
			t.Fatal("input modified")
		}
		if res.Messages == nil {
			t.Fatal("Messages is nil")
		}
		if got := JSONSize(res.Messages); res.Bytes != got {
			t.Fatalf("Bytes = %d, JSONSize = %d", res.Bytes, got)
		}
		if got := jsMeasure(t, res.Messages); res.Bytes != got {
			t.Fatalf("Bytes = %d, oracle = %d", res.Bytes, got)
		}
		limit := opts.MaxBytes
		if limit == 0 {
			limit = DefaultMaxBytes
		}
		placeholder := len(res.Messages) == 1 && res.Messages[0]["content"] == OmittedPlaceholder && res.Messages[0]["role"] == "assistant"
		if res.Bytes > limit && !placeholder {
			t.Fatalf("Bytes = %d over the cap %d", res.Bytes, limit)
		}
		if placeholder && !res.DroppedMessages {
			t.Fatal("placeholder without DroppedMessages")
		}
		if res.Truncated != (res.DroppedMessages || res.ContentTruncated) {
			t.Fatalf("Truncated = %v, DroppedMessages = %v, ContentTruncated = %v", res.Truncated, res.DroppedMessages, res.ContentTruncated)
		}
		maxText := opts.MaxChars
		if maxText == 0 {
			maxText = DefaultMaxChars
		}
		maxText += utf16Len(TruncatedSuffix)
		for _, m := range res.Messages {
			if !includeTools && isToolMessage(m) {
				t.Fatalf("tool message kept: %v", m)
			}
			for _, k := range []string{"details", "usage", "cost"} {
				if _, ok := m[k]; ok {
					t.Fatalf("%s kept", k)
				}
			}
			if c, ok := m["content"].(string); ok && c != OmittedPlaceholder && utf16Len(c) > maxText {
				t.Fatalf("content is %d units", utf16Len(c))
			}
			blocks, _ := m["content"].([]any)
			for _, b := range blocks {
				blk, _ := b.(map[string]any)
				if text, ok := blk["text"].(string); ok && utf16Len(text) > maxText {
					t.Fatalf("block text is %d units", utf16Len(text))
				}
				if _, ok := blk["data"]; ok && blk["type"] == "image" {
					t.Fatal("image data kept")
				}
				if _, ok := blk["thinkingSignature"]; ok && blk["type"] == "thinking" {
					t.Fatal("thinkingSignature kept")
				}
			}
		}
	})
}

func FuzzAssistantText(f *testing.F) {
	f.Add("Hi <think>x</think> there", "", false)
	f.Add("[Tool Call: a (ID: 1)]\nArguments: {\"x\": [1, \"]\"]}\n<final>ok</final>", "[Tool Result for ID 1]\nr", true)
	f.Add("```\n<think>\n```\n<invoke a>x</invoke> minimax:tool_call", "500 Internal Server Error", true)
	f.Fuzz(func(t *testing.T, a, b string, failed bool) {
		msg := assistant(a, b)
		if failed {
			msg["stopReason"] = "error"
		}
		got := AssistantText(msg)
		if utf8.ValidString(a) && utf8.ValidString(b) && !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8: %q", got)
		}
		msgs := []map[string]any{msg, {"role": "toolResult", "content": a}}
		if r := LastMessageReply(msgs); r != got {
			t.Fatalf("LastMessageReply = %q, AssistantText = %q", r, got)
		}
		if r := LatestReply(msgs); r != got && !(isBlank(got) && r == "") {
			t.Fatalf("LatestReply = %q, AssistantText = %q", r, got)
		}
	})
}

// scanJSONish is the reference's consumeJsonish as a direct scan: the
// oracle for jsonishIndex.
func scanJSONish(input string, start int) (int, bool) {
	i := start
	for i < len(input) && (input[i] == ' ' || input[i] == '\t' || input[i] == '\n' || input[i] == '\r') {
		i++
	}
	if i >= len(input) {
		return 0, false
	}
	switch input[i] {
	case '{', '[':
		depth, inString, escape := 0, false, false
		for j := i; j < len(input); j++ {
			c := input[j]
			if inString {
				switch {
				case escape:
					escape = false
				case c == '\\':
					escape = true
				case c == '"':
					inString = false
				}
				continue
			}
			switch c {
			case '"':
				inString = true
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	case '"':
		escape := false
		for j := i + 1; j < len(input); j++ {
			switch c := input[j]; {
			case escape:
				escape = false
			case c == '\\':
				escape = true
			case c == '"':
				return j + 1, true
			}
		}
		return 0, false
	}
	end := i
	for end < len(input) && input[end] != '\n' && input[end] != '\r' {
		end++
	}
	return end, true
}

func FuzzJSONishIndex(f *testing.F) {
	f.Add(`{"a": [1, "}\"]"], "b": {}} x`)
	f.Add(`[{"\\"}]]`)
	f.Add("\"abc\\\" \n {[}] \"")
	f.Fuzz(func(t *testing.T, s string) {
		ix := newJSONishIndex(s)
		for i := 0; i <= len(s); i++ {
			gotEnd, gotOK := ix.consume(i)
			wantEnd, wantOK := scanJSONish(s, i)
			if gotOK != wantOK || gotOK && gotEnd != wantEnd {
				t.Fatalf("consume(%q, %d) = %d, %v; want %d, %v", s, i, gotEnd, gotOK, wantEnd, wantOK)
			}
		}
	})
}
