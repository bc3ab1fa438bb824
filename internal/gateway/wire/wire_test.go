package wire

import (
	"encoding/json"
	"errors"
	"github.com/switchboardhq/switchboard/internal/jsonenc"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeParamsMessages(t *testing.T) {
	tests := []struct {
		method string
		params string
		want   string // "" = valid
	}{
		// Fixtures observed on the reference (docs/spec/gateway-protocol.md §2).
		{MethodSessionsPatch, `{"key":"main","bogusField":1}`, "invalid sessions.patch params: at root: unexpected property 'bogusField'"},
		{MethodChatSend, `{"sessionKey":"main","message":"hi"}`, "invalid chat.send params: must have required property 'idempotencyKey'"},
		{MethodConnect, `{"minProtocol":4,"maxProtocol":4,"client":{"id":"nope","version":"1","platform":"linux","mode":"cli"}}`,
			"invalid connect params: at /client/id: must be equal to one of the allowed values"},
		// AJV order: required before additionalProperties.
		{MethodChatSend, `{"bogus":1}`, "invalid chat.send params: must have required property 'sessionKey'"},
		{MethodChatSend, `{"sessionKey":"main","message":"hi","idempotencyKey":""}`, "invalid chat.send params: at /idempotencyKey: must NOT have fewer than 1 characters"},
		{MethodChatSend, `{"sessionKey":"main","message":1,"idempotencyKey":"k"}`, "invalid chat.send params: at /message: must be string"},
		{MethodChatSend, `{"sessionKey":"main","message":"hi","idempotencyKey":"k"}`, ""},
		{MethodChatSend, `null`, "invalid chat.send params: must be object"},
		{MethodChatSend, ``, "invalid chat.send params: must have required property 'sessionKey'"},
		{MethodChatHistory, `{"sessionKey":"main","limit":1001}`, "invalid chat.history params: at /limit: must be <= 1000"},
		{MethodChatHistory, `{"sessionKey":"main","limit":0}`, "invalid chat.history params: at /limit: must be >= 1"},
		{MethodChatHistory, `{"sessionKey":"main","limit":1.5}`, "invalid chat.history params: at /limit: must be integer"},
		{MethodChatHistory, `{"sessionKey":"main","limit":10.0}`, ""},
		{MethodSessionsPatch, `{"key":"main","label":null}`, ""},
		{MethodSessionsPatch, `{"key":"main","label":5}`, "invalid sessions.patch params: at /label: must be string; at /label: must be null; at /label: must match a schema in anyOf"},
		{MethodSessionsPatch, `{"key":"main","spawnDepth":-1}`, "invalid sessions.patch params: at /spawnDepth: must be >= 0; at /spawnDepth: must be null; at /spawnDepth: must match a schema in anyOf"},
		{MethodAgent, `{"message":"","idempotencyKey":"k"}`, "invalid agent params: at /message: must NOT have fewer than 1 characters"},
		{MethodAgent, `{"message":"m","idempotencyKey":"k","inputProvenance":{"kind":"x","extra":1}}`, "invalid agent params: at /inputProvenance: unexpected property 'extra'"},
		{MethodAgentsList, `{}`, ""},
		{MethodAgentsList, `{"x":1}`, "invalid agents.list params: at root: unexpected property 'x'"},
		{MethodConnect, `{"minProtocol":4,"maxProtocol":4,"client":{"id":"cli","version":"1","platform":"linux","mode":"cli"},"scopes":["a",1]}`,
			"invalid connect params: at /scopes/1: must be string"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.params, func(t *testing.T) {
			err := DecodeParams(tt.method, json.RawMessage(tt.params), nil)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestDecodeParamsValues(t *testing.T) {
	var p SessionsPatchParams
	err := DecodeParams(MethodSessionsPatch, json.RawMessage(`{"key":"k","label":null,"model":"a/b","sendPolicy":"deny"}`), &p)
	if err != nil {
		t.Fatal(err)
	}
	want := SessionsPatchParams{Key: "k", Label: Null[string](), Model: Of("a/b"), SendPolicy: Of[any]("deny")}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("params (-want +got):\n%s", diff)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != `{"key":"k","label":null,"model":"a/b","sendPolicy":"deny"}` {
		t.Errorf("marshal = %s", got)
	}
}

func TestDecodeFrame(t *testing.T) {
	seq := int64(7)
	tests := []struct {
		in      string
		want    *Frame
		wantErr string
		unknown bool
	}{
		{in: `{"type":"req","id":"1","method":"health"}`, want: &Frame{Type: "req", ID: "1", Method: "health"}},
		{in: ` {"type":"req","id":"1","method":"x","params":{ "a" : [1, 2] }} `, want: &Frame{Type: "req", ID: "1", Method: "x", Params: json.RawMessage(`{"a":[1,2]}`)}},
		{in: `{"type":"res","id":"1","ok":false,"error":{"code":"X","message":"m","details":{"code":"D"},"retryable":true,"retryAfterMs":5}}`,
			want: &Frame{Type: "res", ID: "1", Error: &Error{Code: "X", Message: "m", Details: json.RawMessage(`{"code":"D"}`), Retryable: ptr(true), RetryAfterMs: ptr(int64(5))}}},
		{in: `{"type":"event","event":"tick","payload":{"ts":1},"seq":7}`, want: &Frame{Type: "event", Event: "tick", Payload: json.RawMessage(`{"ts":1}`), Seq: &seq}},
		{in: `{"type":"cancel","id":"9"}`, want: &Frame{Type: "cancel", ID: "9"}},
		{in: `{"type":"req","id":"","method":"x"}`, wantErr: "invalid frame: at /id: must NOT have fewer than 1 characters"},
		{in: `{"type":"req","id":"1"}`, wantErr: "invalid frame: must have required property 'method'"},
		{in: `{"type":"req","id":"1","method":"x","extra":true}`, wantErr: "invalid frame: at root: unexpected property 'extra'"},
		{in: `{"type":"hello","id":"1"}`, wantErr: `invalid frame: unknown frame type "hello"`, unknown: true},
		{in: `[1]`, wantErr: "invalid frame: must be object"},
		{in: `{"type":"req","id":"1","method":"x"} {}`, wantErr: "invalid frame: not JSON: invalid character '{' after top-level value"},
		{in: `{"id":"1"}`, wantErr: "invalid frame: must have required property 'type'"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Decode([]byte(tt.in))
			if tt.wantErr != "" {
				var de *DecodeError
				if !errors.As(err, &de) || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if de.UnknownType != tt.unknown {
					t.Errorf("UnknownType = %v", de.UnknownType)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("frame (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAppendHelpersMatchFrame(t *testing.T) {
	e := NewError(CodeInvalidRequest, "bad <thing>").WithDetails(map[string]any{"code": "X"})
	got := string(AppendErrorResponse(nil, "id\"1", nil, e))
	want := `{"type":"res","id":"id\"1","ok":false,"error":{"code":"INVALID_REQUEST","message":"bad <thing>","details":{"code":"X"}}}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	f, err := Decode([]byte(got))
	if err != nil {
		t.Fatal(err)
	}
	if f.Error.detailCode() != "X" {
		t.Errorf("detailCode = %q", f.Error.detailCode())
	}
	ev := string(AppendEvent(nil, "tick", json.RawMessage(`{"ts":1}`), 3))
	if ev != `{"type":"event","event":"tick","payload":{"ts":1},"seq":3}` {
		t.Errorf("event = %s", ev)
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\", "\x00\x1f\n\t\r", "héllo ☃", "\u2028\u2029", "bad\xffutf8", "<>&"} {
		b := jsonenc.AppendString(nil, s)
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q: %s: %v", s, b, err)
		}
		want := strings.ToValidUTF8(s, "\uFFFD")
		if back != want {
			t.Errorf("%q: round trip %q", s, back)
		}
	}
}

func ptr[T any](v T) *T { return &v }
