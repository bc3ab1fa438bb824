package fakellm

import (
	"encoding/json"
	"testing"
)

// documentSeeds are request bodies for FuzzDecode: valid ones of both
// dialects and broken JSON.
var documentSeeds = []string{
	`{}`, `[]`, `null`, `"s"`,
	`{"model":"echo-1","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`,
	`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"a","arguments":"{\"x\":1}"}}]},{"role":"tool","tool_call_id":"c","content":[{"type":"text","text":"r"}]}],"tools":[{"type":"function","function":{"name":"a","parameters":{"type":"object"}}}]}`,
	`{"model":"m","max_tokens":5,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x","is_error":true}]}],"thinking":{"type":"enabled","budget_tokens":2048}}`,
	``, `{`, `{"a":1,}`, `{"model":5}`, `{"messages":[{"role":"user","content":7}]}`, `{"system":[1]}`,
}

// FuzzDecode: a body is accepted only if it is valid JSON, and an accepted
// body always gives a request and a reply.
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
