package sanitize

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// decode parses JSON into the generic form chat.history messages arrive in.
func decode[T any](t testing.TB, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

// deepCopy copies generic JSON values.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return v
		}
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		if v == nil {
			return v
		}
		a := make([]any, len(v))
		for i, e := range v {
			a[i] = deepCopy(e)
		}
		return a
	}
	return v
}

func deepCopyMessages(msgs []map[string]any) []map[string]any {
	out := make([]map[string]any, len(msgs))
	for i, m := range msgs {
		out[i], _ = deepCopy(m).(map[string]any)
	}
	return out
}

func TestSanitizeHistoryMessages(t *testing.T) {
	secret := "sk-abcdefghijklmnopqrstuvwxyz" // → sk-abc…wxyz
	tests := []struct {
		name string
		in   string // JSON array of messages
		opts HistoryOptions
		want string // JSON array of messages
		// flags
		truncated, redacted bool
	}{
		{
			name: "tool messages dropped",
			in:   `[{"role":"user","content":"a"},{"role":"toolResult","content":"r"},{"role":"tool","content":"t"},{"role":"system","content":"s"}]`,
			want: `[{"role":"user","content":"a"},{"role":"system","content":"s"}]`,
		},
		{
			name: "tool messages kept with includeTools",
			in:   `[{"role":"toolResult","content":"r"},{"role":"tool","content":"t"}]`,
			opts: HistoryOptions{IncludeTools: true},
			want: `[{"role":"toolResult","content":"r"},{"role":"tool","content":"t"}]`,
		},
		{
			name:      "details usage cost deleted",
			in:        `[{"role":"toolResult","content":"r","details":{"big":[1,2,3]},"usage":{"input":1},"cost":null}]`,
			opts:      HistoryOptions{IncludeTools: true},
			want:      `[{"role":"toolResult","content":"r"}]`,
			truncated: true,
		},
		{
			name:     "string content and top-level text redacted",
			in:       `[{"role":"user","content":"key ` + secret + `","text":"OPENAI_API_KEY=abc"}]`,
			want:     `[{"role":"user","content":"key sk-abc…wxyz","text":"OPENAI_API_KEY=***"}]`,
			redacted: true,
		},
		{
			name:     "text of any block type",
			in:       `[{"role":"assistant","content":[{"type":"text","text":"` + secret + `"},{"type":"custom","text":"TOKEN=x","other":"TOKEN=x"}]}]`,
			want:     `[{"role":"assistant","content":[{"type":"text","text":"sk-abc…wxyz"},{"type":"custom","text":"TOKEN=***","other":"TOKEN=x"}]}]`,
			redacted: true,
		},
		{
			name:      "thinking redacted, signature deleted, block kept",
			in:        `[{"role":"assistant","content":[{"type":"thinking","thinking":"PASSWORD=x","thinkingSignature":"AAAA"},{"type":"thinking","thinking":"ok"}]}]`,
			want:      `[{"role":"assistant","content":[{"type":"thinking","thinking":"PASSWORD=***"},{"type":"thinking","thinking":"ok"}]}]`,
			truncated: true, redacted: true,
		},
		{
			name: "thinkingSignature only stripped from thinking blocks",
			in:   `[{"role":"assistant","content":[{"type":"text","text":"t","thinkingSignature":"s","thinking":"TOKEN=x"}]}]`,
			want: `[{"role":"assistant","content":[{"type":"text","text":"t","thinkingSignature":"s","thinking":"TOKEN=x"}]}]`,
		},
		{
			name:     "partialJson redacted in any block",
			in:       `[{"role":"assistant","content":[{"type":"toolCall","partialJson":"{\"apiKey\": \"abc\"}","arguments":{"apiKey":"abc"}}]}]`,
			want:     `[{"role":"assistant","content":[{"type":"toolCall","partialJson":"{\"apiKey\": \"***\"}","arguments":{"apiKey":"abc"}}]}]`,
			redacted: true,
		},
		{
			name:      "image data omitted, bytes is the base64 length",
			in:        `[{"role":"user","content":[{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="}]}]`,
			want:      `[{"role":"user","content":[{"type":"image","mimeType":"image/png","omitted":true,"bytes":12}]}]`,
			truncated: true,
		},
		{
			name:      "image bytes counts UTF-16 units",
			in:        `[{"role":"user","content":[{"type":"image","data":"é😀"}]}]`,
			want:      `[{"role":"user","content":[{"type":"image","omitted":true,"bytes":3}]}]`,
			truncated: true,
		},
		{
			name:      "empty image data: deleted, no bytes",
			in:        `[{"role":"user","content":[{"type":"image","data":"","bytes":5}]}]`,
			want:      `[{"role":"user","content":[{"type":"image","omitted":true,"bytes":5}]}]`,
			truncated: true,
		},
		{
			name:      "non-string image data: deleted, no bytes",
			in:        `[{"role":"user","content":[{"type":"image","data":{"x":1}}]}]`,
			want:      `[{"role":"user","content":[{"type":"image","omitted":true}]}]`,
			truncated: true,
		},
		{
			name: "image without data: omitted set, not truncated",
			in:   `[{"role":"user","content":[{"type":"image","url":"https://x"}]}]`,
			want: `[{"role":"user","content":[{"type":"image","url":"https://x","omitted":true}]}]`,
		},
		{
			name: "non-object blocks kept, array block spread into an object",
			in:   `[{"role":"user","content":["TOKEN=x",null,7,["TOKEN=x",2]]}]`,
			want: `[{"role":"user","content":["TOKEN=x",null,7,{"0":"TOKEN=x","1":2}]}]`,
		},
		{
			name: "other content kinds untouched",
			in:   `[{"role":"user","content":{"text":"TOKEN=x"}},{"role":"user"},{"role":"user","content":null,"text":5}]`,
			want: `[{"role":"user","content":{"text":"TOKEN=x"}},{"role":"user"},{"role":"user","content":null,"text":5}]`,
		},
		{
			name: "null message kept",
			in:   `[null,{"role":"user","content":"a"}]`,
			want: `[null,{"role":"user","content":"a"}]`,
		},
		{
			name: "redaction off",
			in:   `[{"role":"user","content":"` + secret + `"}]`,
			opts: HistoryOptions{Redactor: NewRedactor(RedactOptions{Mode: RedactOff})},
			want: `[{"role":"user","content":"` + secret + `"}]`,
		},
		{
			name:     "custom patterns",
			in:       `[{"role":"user","content":"` + secret + ` internal-42"}]`,
			opts:     HistoryOptions{Redactor: NewRedactor(RedactOptions{Patterns: []string{`internal-\d+`}})},
			want:     `[{"role":"user","content":"` + secret + ` ***"}]`,
			redacted: true,
		},
		{
			name:      "truncation after redaction",
			in:        `[{"role":"user","content":"OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz"}]`,
			opts:      HistoryOptions{MaxChars: 20},
			want:      `[{"role":"user","content":"OPENAI_API_KEY=sk-ab\n…(truncated)…"}]`,
			truncated: true, redacted: true,
		},
		{
			name: "redaction can bring a text under the limit",
			in:   `[{"role":"user","content":"OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz"}]`,
			opts: HistoryOptions{MaxChars: 26},
			want: `[{"role":"user","content":"OPENAI_API_KEY=sk-abc…wxyz"}]`, redacted: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := decode[[]map[string]any](t, tt.in)
			orig := deepCopyMessages(in)
			res := SanitizeHistory(in, tt.opts)
			if diff := cmp.Diff(decode[[]map[string]any](t, tt.want), res.Messages); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
			if res.ContentTruncated != tt.truncated || res.Truncated != tt.truncated {
				t.Errorf("ContentTruncated, Truncated = %v, %v; want %v", res.ContentTruncated, res.Truncated, tt.truncated)
			}
			if res.ContentRedacted != tt.redacted {
				t.Errorf("ContentRedacted = %v, want %v", res.ContentRedacted, tt.redacted)
			}
			if res.DroppedMessages {
				t.Error("DroppedMessages = true")
			}
			if want := JSONSize(res.Messages); res.Bytes != want {
				t.Errorf("Bytes = %d, want %d", res.Bytes, want)
			}
			if diff := cmp.Diff(orig, in); diff != "" {
				t.Errorf("input modified (-before +after):\n%s", diff)
			}
		})
	}
}

func TestSanitizeHistoryTruncation(t *testing.T) {
	a := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name     string
		text     string
		maxChars int
		want     string
	}{
		{"exactly at the limit", a(4000), 0, a(4000)},
		{"one over", a(4001), 0, a(4000) + TruncatedSuffix},
		{"pair ending at the limit kept", a(3998) + "😀", 0, a(3998) + "😀"},
		{"pair crossing the limit not split", a(3999) + "😀", 0, a(3999) + TruncatedSuffix},
		{"pair after the limit", a(4000) + "😀", 0, a(4000) + TruncatedSuffix},
		{"all pairs", strings.Repeat("😀", 2001), 0, strings.Repeat("😀", 2000) + TruncatedSuffix},
		{"custom limit", "héllo wörld", 5, "héllo" + TruncatedSuffix},
		{"custom limit splits before a pair", "ab😀c", 3, "ab" + TruncatedSuffix},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []map[string]any{{"role": "user", "content": tt.text}}
			res := SanitizeHistory(in, HistoryOptions{MaxChars: tt.maxChars})
			got := res.Messages[0]["content"].(string)
			if got != tt.want {
				t.Errorf("content = %q… (%d units), want %q… (%d units)", head(got), utf16Len(got), head(tt.want), utf16Len(tt.want))
			}
			if res.ContentTruncated != (got != tt.text) {
				t.Errorf("ContentTruncated = %v", res.ContentTruncated)
			}
			if utf16Len(got) > max(tt.maxChars, DefaultMaxChars)+utf16Len(TruncatedSuffix) {
				t.Errorf("content is %d units", utf16Len(got))
			}
		})
	}
	if n := utf16Len(TruncatedSuffix); n != 14 {
		t.Errorf("suffix is %d units, want 14 (final length ≤ 4014)", n)
	}
}

func head(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// placeholderJSON is the hard-capped result as the reference writes it.
const placeholderJSON = `[{"role":"assistant","content":"[sessions_history omitted: message too large]"}]`

func TestSanitizeHistoryByteCap(t *testing.T) {
	msg := func(role, text string) map[string]any { return map[string]any{"role": role, "content": text} }
	// Sizes: {"role":"user","content":""} is 28 bytes plus the text.
	m1, m2, m3 := msg("user", strings.Repeat("x", 72)), msg("assistant", strings.Repeat("y", 67)), msg("user", strings.Repeat("z", 72))
	for _, m := range []map[string]any{m1, m2, m3} {
		if n := JSONSize(m); n != 100 {
			t.Fatalf("message size %d, want 100", n)
		}
	}
	all := []map[string]any{m1, m2, m3} // array: 2 + 300 + 2 = 304
	huge := msg("user", strings.Repeat("h", 300))
	placeholder := decode[[]map[string]any](t, placeholderJSON)
	if n := len(placeholderJSON); n != 80 || JSONSize(placeholder) != 80 {
		t.Fatalf("placeholder is %d bytes (JSONSize %d), want 80", n, JSONSize(placeholder))
	}

	tests := []struct {
		name             string
		msgs             []map[string]any
		maxBytes         int
		want             []map[string]any
		wantBytes        int
		dropped, trimmed bool
	}{
		{"no messages", nil, 0, []map[string]any{}, 2, false, false},
		{"under the default cap", all, 0, all, 304, false, false},
		{"exactly at the cap", all, 304, all, 304, false, false},
		{"one over drops the oldest", all, 303, all[1:], 203, true, false},
		{"drops until it fits", all, 203, all[1:], 203, true, false},
		{"one more", all, 202, all[2:], 102, true, false},
		{"newest alone exactly at the cap", all, 102, all[2:], 102, true, false},
		{"newest alone over the cap", all, 101, placeholder, 80, true, true},
		{"single huge message", []map[string]any{huge}, 200, placeholder, 80, true, true},
		{"huge newest after small ones", []map[string]any{m1, m2, huge}, 300, placeholder, 80, true, true},
		{"huge oldest is dropped", []map[string]any{huge, m1}, 200, []map[string]any{m1}, 102, true, false},
		{"placeholder may exceed a tiny cap", []map[string]any{m1}, 50, placeholder, 80, true, true},
		{"empty history over a tiny cap", nil, 1, placeholder, 80, true, true},
		{"null newest message counts as none", []map[string]any{m1, nil}, 5, []map[string]any{}, 2, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := SanitizeHistory(tt.msgs, HistoryOptions{MaxBytes: tt.maxBytes})
			if diff := cmp.Diff(tt.want, res.Messages); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
			if res.Messages == nil {
				t.Error("Messages is nil")
			}
			if res.Bytes != tt.wantBytes || JSONSize(res.Messages) != tt.wantBytes {
				t.Errorf("Bytes = %d (JSONSize %d), want %d", res.Bytes, JSONSize(res.Messages), tt.wantBytes)
			}
			if res.DroppedMessages != tt.dropped || res.Truncated != tt.dropped {
				t.Errorf("DroppedMessages, Truncated = %v, %v; want %v", res.DroppedMessages, res.Truncated, tt.dropped)
			}
			if res.ContentTruncated {
				t.Error("ContentTruncated = true")
			}
			hardCapped := len(res.Messages) == 1 && res.Messages[0]["content"] == OmittedPlaceholder
			if hardCapped != tt.trimmed && !(len(res.Messages) == 0 && tt.trimmed) {
				t.Errorf("placeholder = %v, want %v", hardCapped, tt.trimmed)
			}
		})
	}
}

func TestSanitizeHistoryCapMeasuresLikeJavaScript(t *testing.T) {
	// 60 "<" are 60 bytes to JSON.stringify but 360 to json.Marshal; the
	// message must fit a cap that only the JavaScript measure satisfies.
	m := map[string]any{"role": "user", "content": strings.Repeat("<", 60) + "\u2028"}
	marshalled, _ := json.Marshal([]any{m})
	size := 2 + 28 + 60 + 3
	res := SanitizeHistory([]map[string]any{m}, HistoryOptions{MaxBytes: size})
	if res.Bytes != size || res.DroppedMessages {
		t.Errorf("Bytes = %d, dropped = %v; want %d, false (json.Marshal would say %d)", res.Bytes, res.DroppedMessages, size, len(marshalled))
	}
}

func TestSanitizeHistoryDropsAfterFiltering(t *testing.T) {
	// droppedMessages compares with the messages left after tool filtering.
	msgs := []map[string]any{
		{"role": "toolResult", "content": strings.Repeat("r", 500)},
		{"role": "user", "content": "a"},
	}
	res := SanitizeHistory(msgs, HistoryOptions{MaxBytes: 100})
	if res.DroppedMessages || res.Truncated || len(res.Messages) != 1 {
		t.Errorf("got %+v", res)
	}
}

func TestSanitizeHistoryDefaultRedactor(t *testing.T) {
	msgs := []map[string]any{{"role": "user", "content": "TOKEN=abc"}}
	res := SanitizeHistory(msgs, HistoryOptions{})
	if got := res.Messages[0]["content"]; got != "TOKEN=***" || !res.ContentRedacted {
		t.Errorf("content = %q, redacted = %v", got, res.ContentRedacted)
	}
}

func TestSanitizeHistoryNoAliasing(t *testing.T) {
	in := decode[[]map[string]any](t, `[{"role":"assistant","content":[{"type":"text","text":"a"}],"meta":{"k":"v"}}]`)
	res := SanitizeHistory(in, HistoryOptions{})
	res.Messages[0]["role"] = "changed"
	res.Messages[0]["content"].([]any)[0].(map[string]any)["text"] = "changed"
	if in[0]["role"] != "assistant" || in[0]["content"].([]any)[0].(map[string]any)["text"] != "a" {
		t.Errorf("result aliases the input: %v", in)
	}
}

func TestSanitizeHistoryTypedContent(t *testing.T) {
	// Messages built in Go rather than decoded may hold []map[string]any.
	in := []map[string]any{{"role": "assistant", "content": []map[string]any{
		{"type": "text", "text": "TOKEN=abc"},
		{"type": "image", "data": "AAAA"},
	}}}
	res := SanitizeHistory(in, HistoryOptions{})
	want := []map[string]any{{"role": "assistant", "content": []any{
		map[string]any{"type": "text", "text": "TOKEN=***"},
		map[string]any{"type": "image", "omitted": true, "bytes": 4.0},
	}}}
	if diff := cmp.Diff(want, res.Messages); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if in[0]["content"].([]map[string]any)[0]["text"] != "TOKEN=abc" {
		t.Error("input modified")
	}
}
