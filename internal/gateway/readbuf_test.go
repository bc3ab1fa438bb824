package gateway

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// TestReadBufferReused: a connection reads each frame into the buffer it
// read the last one into, so nothing may keep a frame's bytes past its
// handling. Requests sent back to back, small and larger than the buffer
// kept between frames, each get their own message's reply.
func TestReadBufferReused(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	msgs := []string{"short one", "long " + strings.Repeat("l", 100<<10), "x", "mid " + strings.Repeat("m", 20<<10), "short two"}
	var calls []<-chan *wire.Frame
	for i, m := range msgs {
		_, ch := c.start(wire.MethodChatSend, map[string]any{"sessionKey": "s" + strconv.Itoa(i), "message": m, "idempotencyKey": "r" + strconv.Itoa(i)})
		calls = append(calls, ch)
	}
	for i, ch := range calls {
		if res := c.await(ch); !res.OK {
			t.Fatalf("chat.send %d: %v", i, res.Error)
		}
	}
	finals := map[string]string{} // run id → final message text
	for len(finals) < len(msgs) {
		f := c.expectEvent(wire.EventChat)
		var p chatEv
		if err := json.Unmarshal(f.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if p.State == wire.ChatStateDelta {
			continue
		}
		if p.State != wire.ChatStateFinal {
			t.Fatalf("run %s ended %s", p.RunID, p.State)
		}
		finals[p.RunID] = messageText(t, p.Message)
	}
	for i, m := range msgs {
		if got, want := finals["r"+strconv.Itoa(i)], "echo: "+m; got != want {
			t.Errorf("run %d replied %.40q…, want %.40q…", i, got, want)
		}
	}
}
