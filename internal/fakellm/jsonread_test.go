package fakellm

import (
	"encoding/json"
	"strings"
	"testing"
)

var documentSeeds = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `12`, `-1.5e+3`, `1E2`, `"s"`, ` {"a" : [1, 2.5, "x", null, true, {"b": {}}]} `,
	`{"model":"echo-1","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`,
	`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"a","arguments":"{\"x\":1}"}}]},{"role":"tool","tool_call_id":"c","content":[{"type":"text","text":"r"}]}],"tools":[{"type":"function","function":{"name":"a","parameters":{"type":"object"}}}]}`,
	`{"model":"m","max_tokens":5,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x","is_error":true}]}],"thinking":{"type":"enabled","budget_tokens":2048}}`,
	// Invalid documents.
	``, ` `, `{`, `}`, `[1,]`, `{"a":1,}`, `{,}`, `[,1]`, `{"a" 1}`, `{"a":}`, `01`, `1.`, `.5`, `1e`, `-`, `--1`, `+1`,
	`tru`, `nul`, `"\x"`, `"\u12"`, "\"a\x01\"", `"abc`, `{"a":1}x`, `[1 2]`, `{"a":1 "b":2}`, `{1:2}`, "\x00",
}

func FuzzReaderValid(f *testing.F) {
	for _, s := range documentSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := reader{b: b}
		r.skip()
		r.end()
		if got, want := r.err == nil, json.Valid(b); got != want {
			t.Fatalf("reader accepts %q: %v (err %v), json.Valid: %v", b, got, r.err, want)
		}
	})
}

func FuzzDecode(f *testing.F) {
	for _, s := range documentSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, d := range []dialect{openAI{}, anthropicAPI{}} {
			req, rep, err := d.decode(b, meta{n: 1})
			if err == nil && !json.Valid(b) {
				t.Fatalf("%T.decode accepted invalid JSON %q", d, b)
			}
			if err == nil && (req == nil || rep == nil) {
				t.Fatalf("%T.decode(%q) returned nil without an error", d, b)
			}
		}
	})
}

func TestReaderDepth(t *testing.T) {
	for _, depth := range []int{maxDepth, maxDepth + 1} {
		doc := []byte(strings.Repeat("[", depth) + strings.Repeat("]", depth))
		r := reader{b: doc}
		r.skip()
		r.end()
		if got, want := r.err == nil, json.Valid(doc); got != want {
			t.Errorf("depth %d: reader accepts %v (%v), json.Valid %v", depth, got, r.err, want)
		}
	}
}

func TestReaderValues(t *testing.T) {
	r := reader{b: []byte(`[" a\u00e9\n\ud83d\ude42", null, 42, -7, null, true, false, null, {"x" : [1]}]`)}
	a := r.open('[')
	var got []any
	for _, read := range []func() any{
		func() any { return r.str() },
		func() any { return r.str() },
		func() any { return r.integer() },
		func() any { return r.integer() },
		func() any { return r.integer() },
		func() any { return r.boolean() },
		func() any { return r.boolean() },
		func() any { return r.boolean() },
		func() any { return string(r.raw()) },
	} {
		if !r.more(&a) {
			t.Fatalf("array ended early: %v", r.err)
		}
		got = append(got, read())
	}
	if r.more(&a) {
		t.Fatal("array did not end")
	}
	r.end()
	if r.err != nil {
		t.Fatal(r.err)
	}
	want := []any{" aé\n🙂", "", 42, -7, 0, true, false, false, `{"x" : [1]}`}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("value %d = %#v, want %#v", i, got[i], want[i])
		}
	}

	for _, tt := range []struct {
		doc  string
		read func(r *reader)
		err  string
	}{
		{`1.5`, func(r *reader) { r.integer() }, "number 1.5 at offset 0 is not an integer"},
		{`99999999999999999999`, func(r *reader) { r.integer() }, "number 99999999999999999999 at offset 0 overflows an int"},
		{`"x"`, func(r *reader) { r.integer() }, "unexpected string at offset 0, want integer"},
		{`{}`, func(r *reader) { r.str() }, "unexpected object at offset 0, want string"},
		{`[]`, func(r *reader) { r.open('{') }, "unexpected array at offset 0, want object"},
		{`1`, func(r *reader) { r.boolean() }, "unexpected number at offset 0, want boolean"},
		{`"a`, func(r *reader) { r.str() }, "unexpected end of JSON input"},
		{`?`, func(r *reader) { r.str() }, "invalid character '?' at offset 0"},
	} {
		r := reader{b: []byte(tt.doc)}
		tt.read(&r)
		if r.err == nil || r.err.Error() != tt.err {
			t.Errorf("%s: err %v, want %q", tt.doc, r.err, tt.err)
		}
	}
}
