package fakellm

import (
	"bytes"
	"encoding/json"
	"github.com/switchboardhq/switchboard/internal/jsonenc"
	"testing"
	"unicode/utf8"
)

// marshalString is the reference: encoding/json without HTML escaping.
func marshalString(t testing.TB, s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

var stringSeeds = []string{
	"",
	"echo: hello",
	`quote " backslash \ slash /`,
	"line\nbreak\r\ttab\b\f",
	"\x00\x01\x1f\x7f",
	"<html> & 'apostrophe'",
	"héllo wörld, 日本語, 🙂",
	"sep\u2028para\u2029end",
	"bad \xff utf8 \xc3 end \xed\xa0\x80",
	"/tool get_weather {\"city\":\"Paris\"}",
}

func FuzzAppendString(f *testing.F) {
	for _, s := range stringSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := string(jsonenc.AppendString(nil, s))
		if want := marshalString(t, s); got != want {
			t.Fatalf("jsonenc.AppendString(%q) = %s, want %s", s, got, want)
		}
	})
}

func TestSplitArgs(t *testing.T) {
	for _, s := range []string{"", "{", "{}", `{"city":"Paris"}`, "é", "{é}", "日本"} {
		first, second := splitArgs(s)
		if first+second != s {
			t.Errorf("splitArgs(%q) = %q, %q: does not rebuild the input", s, first, second)
		}
		if !utf8.ValidString(first) || !utf8.ValidString(second) {
			t.Errorf("splitArgs(%q) = %q, %q: cut inside a rune", s, first, second)
		}
		if len(s) >= 2 && utf8.RuneCountInString(s) >= 2 && (first == "" || second == "") {
			t.Errorf("splitArgs(%q) = %q, %q: want two fragments", s, first, second)
		}
	}
}
