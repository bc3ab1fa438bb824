package gateway

import (
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// A request nested 10k levels deep is answered INVALID_REQUEST (it used to
// get no answer at all), and the connection goes on working.
func TestDeepRequestAnswered(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.operator()
	for _, depth := range []int{10_000, 100_000} {
		ch := make(chan *wire.Frame, 1)
		c.mu.Lock()
		c.waiters["deep"] = ch
		c.mu.Unlock()
		c.sendRaw(`{"type":"req","id":"deep","method":"chat.send","params":{"sessionKey":"main","message":` +
			strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}}`)
		f := c.await(ch)
		if f.OK || f.Error == nil || f.Error.Code != wire.CodeInvalidRequest || !strings.Contains(f.Error.Message, "nested more than") {
			t.Fatalf("deep request (%d) answered %+v", depth, f)
		}
	}
	c.ok(wire.MethodHealth, nil, nil)
}
