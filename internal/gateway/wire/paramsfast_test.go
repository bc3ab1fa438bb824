package wire

import (
	"encoding/json"
	"reflect"
	"testing"
)

// chatSendCases are chat.send params as clients send them, and some that
// the members decoder leaves to json.Unmarshal.
var chatSendCases = []struct {
	raw  string
	fast bool // decodeMembers takes it
}{
	{`{"sessionKey":"agent:main:main","message":"hi","idempotencyKey":"k1"}`, true},
	{`{"sessionKey":"main","message":"h\u00e9llo \"q\" \\ \n","idempotencyKey":"k","thinking":"low","deliver":true,"timeoutMs":5000,"queueMode":"steer","agentId":"a","sessionId":"s"}`, true},
	{`{"sessionKey":"main","message":"é ✓ \ud83d\ude00","idempotencyKey":"k","deliver":false,"timeoutMs":0,"intent":{"x":1},"fastMode":true}`, true},
	{`{"sessionKey":"main","message":"hi","idempotencyKey":"k","timeoutMs":-0}`, true},
	{`{"sessionKey":"main","message":"hi","idempotencyKey":"k","timeoutMs":5.0}`, false},
	{`{"sessionKey":"main","message":"hi","idempotencyKey":"k","timeoutMs":1e3}`, false},
	{`{"sessionKey":"main","message":"hi","idempotencyKey":"k","timeoutMs":99999999999999999999}`, false},
	{`{"sessionKey":"main","message":"hi","idempotencyKey":"k","attachments":[{"type":"image"}]}`, false},
	{`{"sessionKey":"main","message":"hi","idempotencyKey":"k","sessionKey":"last"}`, true},
}

// TestChatSendMembersMatchUnmarshal checks that chat.send's params decode
// from their members (no second parse) exactly as json.Unmarshal decodes
// them, and that the cases it leaves go to json.Unmarshal unchanged.
func TestChatSendMembersMatchUnmarshal(t *testing.T) {
	for _, c := range chatSendCases {
		m, ok := object([]byte(c.raw))
		if !ok {
			t.Fatalf("%s: not an object", c.raw)
		}
		var fast ChatSendParams
		took := fast.decodeMembers(m)
		if took != c.fast {
			t.Errorf("%s: decodeMembers took it: %v, want %v", c.raw, took, c.fast)
		}
		if !took && !reflect.DeepEqual(fast, ChatSendParams{}) {
			t.Errorf("%s: declined, but changed the params to %+v", c.raw, fast)
		}
		checkChatSend(t, []byte(c.raw))
	}
}

// checkChatSend compares DecodeParams (which takes the members path when
// it can) with json.Unmarshal for params the schema accepts.
func checkChatSend(t *testing.T, raw []byte) {
	t.Helper()
	var got ChatSendParams
	if err := DecodeParams(MethodChatSend, raw, &got); err != nil {
		return // refused by the schema or by json.Unmarshal: not this path
	}
	var want ChatSendParams
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatalf("%s: DecodeParams accepted what json.Unmarshal refuses: %v", raw, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\nDecodeParams   %+v\njson.Unmarshal %+v", raw, got, want)
	}
}

func FuzzChatSendParams(f *testing.F) {
	for _, c := range chatSendCases {
		f.Add([]byte(c.raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkChatSend(t, raw) })
}
