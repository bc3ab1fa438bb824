package tools

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParams(t *testing.T) {
	p, err := ParseParams(json.RawMessage(`{
		"sessionKey": "  agent:main:x  ", "agent_id": "ops", "blank": "   ", "num": 5, "label": 7,
		"limit": 12.9, "neg": -3, "str_num": "5", "kinds": ["main", " group ", 3, ""], "one": "solo",
		"includeTools": true, "zero": 0, "runTimeoutSeconds": 4, "run_timeout_seconds": 9
	}`))
	if err != nil {
		t.Fatal(err)
	}
	strs := []struct{ key, want string }{
		{"sessionKey", "agent:main:x"},
		{"agentId", "ops"}, // snake_case fallback
		{"blank", ""},      // blank is absent
		{"label", ""},      // non-strings are absent
		{"missing", ""},
	}
	for _, s := range strs {
		if got := p.String(s.key); got != s.want {
			t.Errorf("String(%q) = %q, want %q", s.key, got, s.want)
		}
	}
	if _, err := p.RequiredString("message"); err == nil || err.Error() != "message required" {
		t.Errorf("RequiredString(message) error = %v", err)
	}
	if got := p.Strings("kinds"); !cmp.Equal(got, []string{"main", "group"}) {
		t.Errorf("Strings(kinds) = %q", got)
	}
	if got := p.Strings("one"); !cmp.Equal(got, []string{"solo"}) {
		t.Errorf("Strings(one) = %q", got)
	}
	ints := []struct {
		key  string
		min  int
		want int
		ok   bool
	}{
		{"limit", 1, 12, true}, // floored
		{"neg", 0, 0, true},    // clamped to the minimum
		{"str_num", 0, 0, false},
		{"runTimeoutSeconds", 0, 4, true},
		{"missing", 0, 0, false},
	}
	for _, c := range ints {
		if got, ok := p.Int(c.key, c.min); got != c.want || ok != c.ok {
			t.Errorf("Int(%q, %d) = %d, %v; want %d, %v", c.key, c.min, got, ok, c.want, c.ok)
		}
	}
	if _, ok := p.Number("run_timeout_seconds"); !ok {
		t.Error("Number reads the exact key")
	}
	if v, ok := p.Bool("includeTools"); !v || !ok {
		t.Error("Bool(includeTools)")
	}
	if p.Truthy("zero") || !p.Truthy("num") || p.Truthy("missing") {
		t.Error("Truthy")
	}
	for _, raw := range []string{``, `null`, `[1,2]`, `"str"`} {
		if p, err := ParseParams(json.RawMessage(raw)); err != nil || len(p) != 0 {
			t.Errorf("ParseParams(%q) = %v, %v", raw, p, err)
		}
	}
	if _, err := ParseParams(json.RawMessage(`{bad`)); err == nil {
		t.Error("ParseParams accepted invalid JSON")
	}
}

func TestSnakeCase(t *testing.T) {
	for in, want := range map[string]string{"sessionKey": "session_key", "agentId": "agent_id", "limit": "limit", "threadID": "thread_i_d"} {
		if got := SnakeCase(in); got != want {
			t.Errorf("SnakeCase(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResultEnvelope(t *testing.T) {
	r := JSONResult(map[string]any{"count": 1})
	if r.Text != "{\n  \"count\": 1\n}" {
		t.Errorf("JSONResult text = %q", r.Text)
	}
	e := ErrorResult("sessions_send", errString("message required"))
	want := "{\n  \"status\": \"error\",\n  \"tool\": \"sessions_send\",\n  \"error\": \"message required\"\n}"
	if e.Text != want || !e.IsError {
		t.Errorf("ErrorResult = %q", e.Text)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
