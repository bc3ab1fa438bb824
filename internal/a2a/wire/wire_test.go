package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestResolveMethod(t *testing.T) {
	cases := map[string]Method{
		"SendMessage": MethodSendMessage, "message/send": MethodSendMessage,
		"GetTask": MethodGetTask, "tasks/get": MethodGetTask,
		"tasks/cancel": MethodCancelTask, "message/stream": MethodSendStreamingMessage,
		"tasks/resubscribe": MethodSubscribeToTask, "ListTasks": MethodListTasks,
	}
	for name, want := range cases {
		if got, ok := ResolveMethod(name); !ok || got != want {
			t.Errorf("ResolveMethod(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	if _, ok := ResolveMethod("sendMessage"); ok {
		t.Error("method names are case-sensitive")
	}
}

func TestDecodeBody(t *testing.T) {
	big := "[" + strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"GetTask"},`, MaxBatch) + `{"jsonrpc":"2.0","id":1,"method":"GetTask"}]`
	cases := []struct {
		name    string
		body    string
		entries int
		batch   bool
		err     error
		code    int
	}{
		{"single", `{"jsonrpc":"2.0","id":1,"method":"GetTask"}`, 1, false, nil, 0},
		{"batch", `[{"a":1},{"b":2}]`, 2, true, nil, 0},
		{"padded batch", " \n [1]", 1, true, nil, 0},
		{"not json", `{"jsonrpc":`, 0, false, nil, CodeParseError},
		{"empty", ``, 0, false, nil, CodeParseError},
		{"empty batch", `[]`, 0, true, ErrEmptyBatch, 0},
		{"too large", big, 0, true, ErrBatchTooLarge, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := DecodeBody([]byte(c.body))
			var we *Error
			switch {
			case c.code != 0:
				if !errors.As(err, &we) || we.Code != c.code {
					t.Fatalf("err = %v, want code %d", err, c.code)
				}
			case c.err != nil:
				if !errors.Is(err, c.err) {
					t.Fatalf("err = %v, want %v", err, c.err)
				}
			default:
				if err != nil || len(b.Entries) != c.entries || b.Batch != c.batch {
					t.Fatalf("got %+v, %v", b, err)
				}
			}
		})
	}
}

func TestDecodeRequest(t *testing.T) {
	cases := []struct {
		name   string
		raw    string
		code   int
		hasID  bool
		id     string
		method Method
	}{
		{"ok", `{"jsonrpc":"2.0","id":"a","method":"message/send","params":{}}`, 0, true, `"a"`, MethodSendMessage},
		{"notification", `{"jsonrpc":"2.0","method":"GetTask"}`, 0, false, ``, MethodGetTask},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"GetTask"}`, 0, true, `null`, MethodGetTask},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"GetTask"}`, CodeInvalidRequest, true, ``, ""},
		{"wrong version", `{"jsonrpc":"1.0","id":3,"method":"GetTask"}`, CodeInvalidRequest, true, `3`, ""},
		{"no method", `{"jsonrpc":"2.0","id":3}`, CodeInvalidRequest, true, `3`, ""},
		{"empty method", `{"jsonrpc":"2.0","id":3,"method":""}`, CodeInvalidRequest, true, `3`, ""},
		{"unknown", `{"jsonrpc":"2.0","id":3,"method":"Nope"}`, CodeMethodNotFound, true, `3`, ""},
		{"array", `[1]`, CodeInvalidRequest, false, ``, ""},
		{"null", `null`, CodeInvalidRequest, false, ``, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := DecodeRequest(json.RawMessage(c.raw))
			if c.code != 0 {
				if err == nil || err.Code != c.code {
					t.Fatalf("err = %v, want code %d", err, c.code)
				}
			} else if err != nil {
				t.Fatalf("unexpected %v", err)
			}
			if req.HasID != c.hasID || string(req.ID) != c.id || req.Method != c.method {
				t.Fatalf("got %+v", req)
			}
		})
	}
}

func TestFailResponseShape(t *testing.T) {
	b, _ := json.Marshal(Fail(nil, Errorf(CodeTaskNotFound, "Task not found")))
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Task not found"}}`
	if string(b) != want {
		t.Fatalf("got %s", b)
	}
}

func TestDecodeSend(t *testing.T) {
	cases := []struct {
		name      string
		params    string
		code      int
		immediate bool
	}{
		{"ok", `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}`, 0, false},
		{"0.3 role", `{"message":{"messageId":"m","role":"user","parts":[{"text":"hi"}]}}`, 0, false},
		{"immediate", `{"message":{"role":"ROLE_USER","parts":[]},"configuration":{"returnImmediately":true}}`, 0, true},
		{"0.3 non-blocking", `{"message":{"role":"user","parts":[]},"configuration":{"blocking":false}}`, 0, true},
		{"no parts", `{"message":{"role":"ROLE_USER"}}`, CodeInvalidParams, false},
		{"bad role", `{"message":{"role":"boss","parts":[]}}`, CodeInvalidParams, false},
		{"bad context", `{"message":{"role":"user","parts":[],"contextId":"a b"}}`, CodeInvalidParams, false},
		{"missing", ``, CodeInvalidParams, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := DecodeSend(json.RawMessage(c.params))
			if c.code != 0 {
				if err == nil || err.Code != c.code {
					t.Fatalf("err = %v, want %d", err, c.code)
				}
				return
			}
			if err != nil || p.Immediate() != c.immediate || !strings.HasPrefix(p.Message.Role, "ROLE_") {
				t.Fatalf("got %+v, %v", p, err)
			}
		})
	}
}

func TestDecodeTask(t *testing.T) {
	if p, err := DecodeTask(json.RawMessage(`{"id":"t1"}`)); err != nil || p.ID != "t1" {
		t.Fatalf("got %+v %v", p, err)
	}
	for _, bad := range []string{``, `{}`, `{"id":""}`, `{"id":3}`} {
		if _, err := DecodeTask(json.RawMessage(bad)); err == nil || err.Code != CodeInvalidParams {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}

func TestMessageText(t *testing.T) {
	hi, blank := "hi", "  "
	cases := []struct {
		parts []Part
		want  string
	}{
		{[]Part{{Text: &hi}, {Data: json.RawMessage(`{"a":1}`)}}, "hi\n{\"a\":1}"},
		{[]Part{{Text: &blank}}, ""},
		{[]Part{{URL: "http://x"}}, ""},
		{nil, ""},
	}
	for _, c := range cases {
		if got := MessageText(c.parts); got != c.want {
			t.Errorf("MessageText = %q, want %q", got, c.want)
		}
	}
}

func TestCapText(t *testing.T) {
	long := strings.Repeat("é", MaxTextBytes)
	got := CapText(long)
	if len(got) > MaxTextBytes || !strings.HasSuffix(got, TruncationMarker) || !utf8.ValidString(got) {
		t.Fatalf("len %d, valid %v", len(got), utf8.ValidString(got))
	}
	if CapText("short") != "short" {
		t.Fatal("short text changed")
	}
}

func TestValidContextID(t *testing.T) {
	for id, want := range map[string]bool{"ctx-1:a.b_c": true, "": false, "a/b": false, strings.Repeat("a", 129): false, strings.Repeat("a", 128): true} {
		if ValidContextID(id) != want {
			t.Errorf("ValidContextID(%q) != %v", id, want)
		}
	}
}

func TestTerminal(t *testing.T) {
	if Terminal(StateWorking) || Terminal(StateSubmitted) || !Terminal(StateCanceled) || !Terminal(StateCompleted) {
		t.Fatal("Terminal wrong")
	}
}

// FuzzDecode feeds arbitrary bodies through every decoder a peer reaches:
// no panic, and every error is a well-formed JSON-RPC error.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","parts":[{"text":"hi"}]}}}`,
		`[{"jsonrpc":"2.0","id":"x","method":"tasks/get","params":{"id":"t"}}]`,
		`{"jsonrpc":"2.0","method":"message/send","params":{"message":{"role":"user","parts":[{"data":{"a":1}}],"contextId":"c"}}}`,
		`[]`, `{`, `null`, `[1,2]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		b, err := DecodeBody(body)
		if err != nil {
			return
		}
		if len(b.Entries) == 0 || len(b.Entries) > MaxBatch {
			t.Fatalf("%d entries", len(b.Entries))
		}
		for _, e := range b.Entries {
			req, rerr := DecodeRequest(e)
			if rerr != nil {
				if rerr.Code >= 0 || rerr.Message == "" {
					t.Fatalf("bad error %+v", rerr)
				}
				if _, merr := json.Marshal(Fail(req.ID, rerr)); merr != nil {
					t.Fatal(merr)
				}
				continue
			}
			if p, serr := DecodeSend(req.Params); serr == nil {
				if text := MessageText(p.Message.Parts); len(text) > MaxTextBytes {
					t.Fatalf("text %d bytes", len(text))
				}
			}
			_, _ = DecodeTask(req.Params)
		}
	})
}

func TestChooseVersion(t *testing.T) {
	for _, tt := range []struct {
		card, want string
		ok         bool
	}{
		{`{"supportedInterfaces":[{"url":"u","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`, Version10, true},
		{`{"supportedInterfaces":[{"url":"u","protocolBinding":"JSONRPC","protocolVersion":"0.3"},{"url":"u","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`, Version10, true},
		{`{"supportedInterfaces":[{"url":"u","protocolBinding":"JSONRPC","protocolVersion":"0.3"}]}`, Version03, true},
		{`{"supportedInterfaces":[{"url":"u","protocolBinding":"GRPC","protocolVersion":"1.0"},{"url":"u","protocolBinding":"JSONRPC","protocolVersion":"0.3"}]}`, Version03, true},
		{`{"url":"u","preferredTransport":"JSONRPC","protocolVersion":"0.3.0"}`, Version03, true},
		{`{"url":"u","protocolVersion":"0.2.5"}`, Version03, true},
		{`{"url":"u","preferredTransport":"GRPC","protocolVersion":"0.3.0","additionalInterfaces":[{"url":"u2","transport":"JSONRPC"}]}`, Version03, true},
		{`{"url":"u","preferredTransport":"GRPC","protocolVersion":"0.3.0"}`, "", false},
		{`{"supportedInterfaces":[{"url":"u","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"}]}`, "", false},
		{`not json`, "", false},
	} {
		if got, ok := ChooseVersion([]byte(tt.card)); got != tt.want || ok != tt.ok {
			t.Errorf("ChooseVersion(%s) = %q, %v; want %q, %v", tt.card, got, ok, tt.want, tt.ok)
		}
	}
}

// TestChooseInterface: the chosen interface comes with the URL the card
// declares for it (not the first interface's when that one is skipped).
func TestChooseInterface(t *testing.T) {
	for _, tt := range []struct {
		card string
		want Interface
	}{
		{`{"supportedInterfaces":[{"url":"http://a/grpc","protocolBinding":"GRPC","protocolVersion":"1.0"},{"url":"http://a/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`, Interface{Version10, "http://a/rpc"}},
		{`{"supportedInterfaces":[{"url":"http://a/v03","protocolBinding":"JSONRPC","protocolVersion":"0.3"},{"url":"http://a/v1","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`, Interface{Version10, "http://a/v1"}},
		{`{"supportedInterfaces":[{"url":"/old","protocolBinding":"JSONRPC","protocolVersion":"0.3"},{"url":"/older","protocolBinding":"JSONRPC","protocolVersion":"0.2"}]}`, Interface{Version03, "/old"}},
		{`{"url":"http://a/main","preferredTransport":"JSONRPC","protocolVersion":"0.3.0"}`, Interface{Version03, "http://a/main"}},
		{`{"url":"http://a/grpc","preferredTransport":"GRPC","protocolVersion":"0.3.0","additionalInterfaces":[{"url":"http://a/jsonrpc","transport":"JSONRPC"}]}`, Interface{Version03, "http://a/jsonrpc"}},
	} {
		if got, ok := ChooseInterface([]byte(tt.card)); got != tt.want || !ok {
			t.Errorf("ChooseInterface(%s) = %+v, %v; want %+v", tt.card, got, ok, tt.want)
		}
	}
}

func TestV03RoundTrip(t *testing.T) {
	task := &Task{ID: "t", ContextID: "c", Status: TaskStatus{State: StateCanceled, Message: &Message{MessageID: "m", ContextID: "c", TaskID: "t", Role: RoleAgent, Parts: []Part{TextPart("why")}}},
		Artifacts: []Artifact{{ArtifactID: "a", Parts: []Part{TextPart("x"), {Data: json.RawMessage(`{"k":1}`)}, {URL: "https://f", MediaType: "text/plain", Filename: "f.txt"}}}}}
	b, _ := json.Marshal(ToV03Result(task))
	for _, want := range []string{`"kind":"task"`, `"state":"canceled"`, `"role":"agent"`, `"kind":"text","text":"x"`, `"kind":"data"`, `"kind":"file","file":{"uri":"https://f","mimeType":"text/plain","name":"f.txt"}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("0.3 task %s lacks %s", b, want)
		}
	}
	back, err := DecodeTaskResult(Version03, b)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(back); string(got) != string(must(json.Marshal(task))) {
		t.Errorf("round trip = %s, want %s", got, must(json.Marshal(task)))
	}
	if MethodName(Version03, MethodCancelTask) != "tasks/cancel" || MethodName(Version10, MethodCancelTask) != "CancelTask" ||
		!IsV03Name("message/send") || IsV03Name("SendMessage") || IsV03Name("nope/x") {
		t.Error("method names")
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TruncationMarker is a constant (no init-time work); it must still name
// MaxTextBytes.
func TestTruncationMarkerNamesLimit(t *testing.T) {
	if want := fmt.Sprintf("\n[message truncated at %d bytes]", MaxTextBytes); TruncationMarker != want {
		t.Fatalf("TruncationMarker = %q, want %q", TruncationMarker, want)
	}
	if want := fmt.Sprintf("A2A batch exceeds the %d request limit", MaxBatch); ErrBatchTooLarge.Error() != want {
		t.Fatalf("ErrBatchTooLarge = %q, want %q", ErrBatchTooLarge, want)
	}
}

// Every method name resolves through the table, and unknown names do not.
func TestResolveMethodTable(t *testing.T) {
	for _, m := range methods {
		if got, ok := ResolveMethod(m.name); !ok || got != m.method {
			t.Errorf("ResolveMethod(%q) = %q, %v", m.name, got, ok)
		}
	}
	for _, m := range []Method{MethodSendMessage, MethodSendStreamingMessage, MethodGetTask, MethodCancelTask, MethodSubscribeToTask} {
		n := MethodName(Version03, m)
		if got, ok := ResolveMethod(n); !ok || got != m || !IsV03Name(n) || MethodName("1.0", m) != string(m) {
			t.Errorf("0.3 name %q of %q does not resolve back", n, m)
		}
	}
	if _, ok := ResolveMethod("tasks/nope"); ok {
		t.Error("ResolveMethod accepted an unknown name")
	}
	for _, st := range states {
		if stateFromV03(stateToV03(st.v10)) != st.v10 {
			t.Errorf("state %q does not round-trip through 0.3", st.v10)
		}
	}
}

// ValidContextID is a byte loop; it must agree with the reference's pattern.
func TestValidContextIDMatchesPattern(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)
	for _, id := range []string{"", "a", "Z9._:-", "a b", "é", "a\n", "ctx/1", "[x]", "a\x00", strings.Repeat("z", 128), strings.Repeat("z", 129), "@", "`", "{"} {
		if got, want := ValidContextID(id), re.MatchString(id); got != want {
			t.Errorf("ValidContextID(%q) = %v, pattern says %v", id, got, want)
		}
	}
}
