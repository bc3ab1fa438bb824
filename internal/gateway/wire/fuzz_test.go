package wire

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzDecode checks that the decoder never panics and that every frame it
// accepts re-encodes to bytes that decode to an equal frame, which encode
// to the same bytes again.
func FuzzDecode(f *testing.F) {
	seeds := []string{
		`{"type":"req","id":"1","method":"connect","params":{"minProtocol":4,"maxProtocol":4,"client":{"id":"cli","version":"1","platform":"linux","mode":"cli"}}}`,
		`{"type":"req","id":"2","method":"chat.send","params":{"sessionKey":"main","message":"héllo\u2028<>","idempotencyKey":"k"},"traceparent":"00-abc"}`,
		`{"type":"res","id":"1","ok":true,"payload":{"type":"hello-ok","protocol":4}}`,
		`{"type":"res","id":"1","ok":false,"error":{"code":"INVALID_REQUEST","message":"m","details":{"code":"X"},"retryable":false,"retryAfterMs":0}}`,
		`{"type":"event","event":"tick","payload":{"ts":1},"seq":1,"stateVersion":{"presence":0,"health":0}}`,
		`{"type":"event","event":"chat","payload":null,"recipientProfileId":"p"}`,
		`{"type":"cancel","id":"x"}`,
		`{"type":"req","id":"1","method":"m","params":[1e3, -0.5, "\ud83d\ude00", null, true]}`,
		`{"type":"req","type":"req","id":"a","id":"b","method":"m"}`,
		`{"type":"event","event":"e","seq":1.0}`,
		`[]`, `"x"`, `{`, `{"type":1}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	// The captured reference frames are seeds too.
	if fh, err := os.Open("../../../../shared/spec/frames-sample.jsonl"); err == nil {
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var line struct {
				Frame json.RawMessage `json:"frame"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Frame != nil {
				f.Add([]byte(line.Frame))
			}
		}
		fh.Close()
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := Decode(data)
		if err != nil {
			return
		}
		enc, err := fr.AppendJSON(nil)
		if err != nil {
			t.Fatalf("encode %#v: %v", fr, err)
		}
		if !json.Valid(enc) {
			t.Fatalf("encoded frame is not valid JSON: %s", enc)
		}
		back, err := Decode(enc)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", enc, err)
		}
		if diff := cmp.Diff(fr, back); diff != "" {
			t.Fatalf("round trip changed the frame (-first +second):\n%s\nencoded: %s", diff, enc)
		}
		enc2, _ := back.AppendJSON(nil)
		if string(enc2) != string(enc) {
			t.Fatalf("encoding not stable:\n%s\n%s", enc, enc2)
		}
	})
}

// FuzzValidateParams checks that params validation never panics on any
// method's schema.
func FuzzValidateParams(f *testing.F) {
	f.Add("chat.send", []byte(`{"sessionKey":"main","message":"hi","idempotencyKey":"k"}`))
	f.Add("sessions.patch", []byte(`{"key":"k","label":null,"spawnDepth":2}`))
	f.Add("connect", []byte(`{"minProtocol":3,"maxProtocol":4,"client":{"id":"cli","version":"1","platform":"p","mode":"cli"},"device":{"id":"d","publicKey":"k","signature":"s","signedAt":1}}`))
	f.Fuzz(func(t *testing.T, method string, data []byte) {
		_ = DecodeParams(method, data, nil)
	})
}
