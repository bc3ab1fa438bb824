package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stdObject is object as encoding/json alone answers it.
func stdObject(raw []byte) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if kindOf(raw) != kindObject || json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	return m, true
}

// objectCases are inputs whose split object must match encoding/json's.
var objectCases = []string{
	`{}`, ` { } `, `{"a":1}`, "\t{\"a\" : 1 ,\n\"b\":[1,2,{\"c\":null}]}\r\n",
	`{"type":"req","id":"1","method":"chat.send","params":{"sessionKey":"main","message":"hi","idempotencyKey":"k"}}`,
	`{"a":1,"a":2}`, `{"a":"x\"y\\z\u00e9\/"}`, `{"a":-0.5e+10,"b":0,"c":1E3,"d":-12.25}`,
	`{"a":true,"b":false,"c":null,"d":"","e":[],"f":{}}`, `{"é":1}`, `{"a\u0062":1}`, `{"\u0000":1}`,
	"{\"a\":\"\xff\xfe\"}", "{\"\xff\":1}",
	strings.Repeat(`{"a":`, 70) + `1` + strings.Repeat(`}`, 70),
	strings.Repeat(`{"a":`, 63) + `1` + strings.Repeat(`}`, 63),
	// Not objects, or not JSON.
	``, ` `, `[]`, `"x"`, `1`, `null`, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{,}`, `{"a":1}x`, `{"a":1}{}`,
	`{a:1}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":-}`, `{"a":+1}`, `{"a":tru}`, `{"a":truex}`,
	`{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\u12g4"}`, "{\"a\":\"\x01\"}", `{"a":"x`, `{"a":[1,2}`, `{"a":{"b"}}`,
	`{"a":[1 2]}`, `{"a":{"b":1 "c":2}}`, `{"a":NaN}`, `{"a":1}}`,
}

func TestObjectMatchesEncodingJSON(t *testing.T) {
	for _, in := range objectCases {
		checkObject(t, []byte(in))
	}
}

func checkObject(t *testing.T, raw []byte) {
	t.Helper()
	want, wantOK := stdObject(raw)
	got, ok := object(raw)
	if ok != wantOK || !cmp.Equal(got, want) {
		t.Errorf("object(%q) = %q, %v; encoding/json: %q, %v", raw, got, ok, want, wantOK)
	}
}

// TestObjectValuesAreCopies checks that the members do not alias the
// input, and that appending to one member leaves the next as it was.
func TestObjectValuesAreCopies(t *testing.T) {
	raw := []byte(`{"a":"x","b":"y"}`)
	m, ok := object(raw)
	if !ok {
		t.Fatal("not an object")
	}
	_ = append(m["a"], '!')
	for i := range raw {
		raw[i] = ' '
	}
	if string(m["a"]) != `"x"` || string(m["b"]) != `"y"` {
		t.Errorf("members = %q", m)
	}
}

func FuzzObject(f *testing.F) {
	for _, in := range objectCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkObject(t, raw) })
}

// BenchmarkDecodeChatSend is a chat.send request frame as a client sends
// each turn: the frame split, then its params validated and decoded.
func BenchmarkDecodeChatSend(b *testing.B) {
	frame := []byte(`{"type":"req","id":"c0-1234","method":"chat.send","params":{"sessionKey":"agent:main:load-0","message":"warm turn","idempotencyKey":"c0-1234"}}`)
	var p ChatSendParams
	b.ReportAllocs()
	for b.Loop() {
		f, err := Decode(frame)
		if err != nil {
			b.Fatal(err)
		}
		if err := DecodeParams(f.Method, f.Params, &p); err != nil {
			b.Fatal(err)
		}
	}
}

// strCases are JSON values whose text str must decode as encoding/json does.
var strCases = []string{`""`, `"abc"`, `"a b-c:d"`, `"\u00e9"`, `"é"`, `"a\"b"`, `"a\\b"`, `"\n"`, "\"\x01\"", `"`, `"a"b"`, ` "a"`, `"a" `, `1`, `null`}

func TestStrMatchesEncodingJSON(t *testing.T) {
	for _, in := range strCases {
		checkStr(t, []byte(in))
	}
}

func checkStr(t *testing.T, raw []byte) {
	t.Helper()
	var want string
	json.Unmarshal(raw, &want)
	if got := str(raw); got != want {
		t.Errorf("str(%q) = %q, encoding/json: %q", raw, got, want)
	}
}

func FuzzStr(f *testing.F) {
	for _, in := range strCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkStr(t, raw) })
}

// TestValidMembersMakeNoPath checks that validating a valid object makes
// nothing of the JSON pointers that issues would carry (each member
// checked was a path node), and that an issue names where it is, escaped,
// in arrays, and deeper than the path's first array.
func TestValidMembersMakeNoPath(t *testing.T) {
	s := Object([]string{"sessionKey", "message"},
		P("sessionKey", Str()), P("message", Str()), P("idempotencyKey", Str()), P("thinking", Str()),
		P("deliver", Bool()), P("timeoutMs", Int(0)))
	raw := []byte(`{"sessionKey":"agent:main:main","message":"hi","idempotencyKey":"k1","thinking":"low","deliver":false,"timeoutMs":5}`)
	members, ok := object(raw)
	if !ok {
		t.Fatal("test object does not decode")
	}
	var buf [8]string
	if issues := s.checkMembers(members, raw, rootPath(&buf)); len(issues) > 0 {
		t.Fatalf("valid object: %v", issues)
	}
	if n := testing.AllocsPerRun(50, func() { s.checkMembers(members, raw, rootPath(&buf)) }); n != 0 {
		t.Errorf("validating a valid object made %v allocations, want 0 (a path node for each member was 6)", n)
	}

	deep := Int(0)
	want := ""
	for _, name := range []string{"i", "h", "g", "f", "e", "d", "c", "b~", "a/"} {
		deep = Object(nil, P(name, deep))
		want = "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(name) + want
	}
	err := deep.Validate([]byte(`{"a/":{"b~":{"c":{"d":{"e":{"f":{"g":{"h":{"i":"no"}}}}}}}}}`))
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Issues[0].Path != want {
		t.Errorf("issue = %v, want one at %s", err, want)
	}
	err = Object(nil, P("list", Array()), P("items", &Schema{Type: JSONArray, Items: Object(nil, P("n", Int(0)))})).
		Validate([]byte(`{"list":[1],"items":[{"n":1},{"n":-1}]}`))
	if !errors.As(err, &ve) || ve.Issues[0].Path != "/items/1/n" {
		t.Errorf("issue = %v, want one at /items/1/n", err)
	}
}

// TestObjectNamesNotCopied: splitting a chat.send frame and its params
// allocates their values' copy and their maps, not their member names, and
// a request's type is not copied either.
func TestObjectNamesNotCopied(t *testing.T) {
	frame := []byte(`{"type":"req","id":"c0-1234","method":"chat.send","params":{"sessionKey":"agent:main:load-0","message":"warm turn","idempotencyKey":"c0-1234"}}`)
	params := []byte(`{"sessionKey":"agent:main:load-0","message":"warm turn","idempotencyKey":"c0-1234","thinking":"low","deliver":false,"timeoutMs":5,"attachments":[]}`)
	for _, raw := range [][]byte{frame, params} {
		// The values' copy, the map and its table.
		if n := testing.AllocsPerRun(50, func() { _, _ = object(raw) }); n > 3 {
			t.Errorf("object(%s): %v allocations, want at most 3", raw, n)
		}
	}
	other := []byte(`{"x-member":1}`)
	if m, ok := object(other); !ok || string(m["x-member"]) != "1" {
		t.Errorf("object(%s) = %q, %v", other, m, ok)
	}
	for _, typ := range []string{FrameRequest, FrameResponse, FrameEvent, FrameCancel, "other", `a\"b`} {
		raw := []byte(`"` + typ + `"`)
		if got := frameType(raw); got != str(raw) {
			t.Errorf("frameType(%s) = %q, str: %q", raw, got, str(raw))
		}
	}
	req := []byte(`"req"`)
	if n := testing.AllocsPerRun(50, func() { _ = frameType(req) }); n != 0 {
		t.Errorf("frameType: %v allocations, want 0", n)
	}
}
