package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

func (s *Server) connCount() int { return len(*s.connList.Load()) }

// TestSlowConsumerDisconnected: a client that stops reading is dropped once
// its queue passes maxBufferedBytes, while broadcasting to everyone else
// (and the runner) never waits for it.
func TestSlowConsumerDisconnected(t *testing.T) {
	e := newEnv(t, envOptions{gateway: func(c *Config) { c.MaxBufferedBytes = 2 << 20 }})
	fast := e.operator()

	// The slow client completes the handshake, then never reads again.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, e.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if _, _, err := ws.Read(ctx); err != nil { // connect.challenge
		t.Fatal(err)
	}
	if err := ws.Write(ctx, websocket.MessageText, []byte(reqJSON("c", "connect", connectParams(testToken, wire.ScopeRead)))); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ws.Read(ctx); err != nil { // hello-ok
		t.Fatal(err)
	}
	if n := e.gw.connCount(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}

	// Broadcast big events, as the runner's subscription does, until the
	// slow client is dropped. No broadcast may wait for it.
	big, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", 256<<10)})
	deadline := time.Now().Add(20 * time.Second)
	sent := 0
	for e.gw.connCount() > 1 {
		if time.Now().After(deadline) {
			t.Fatalf("slow client still connected after %d broadcasts", sent)
		}
		start := time.Now()
		e.gw.broadcast(wire.EventChat, big, false)
		if d := time.Since(start); d > time.Second {
			t.Fatalf("a broadcast took %v", d)
		}
		sent++
		fast.expectEvent(wire.EventChat) // the fast client keeps up
	}
	t.Logf("slow client dropped after %d broadcasts of %d KiB", sent, len(big)>>10)
	fast.ok(wire.MethodHealth, nil, nil)
}

func TestEnqueueBound(t *testing.T) {
	e := newEnv(t, envOptions{gateway: func(c *Config) { c.MaxBufferedBytes = 100 }})
	c := newConn(e.gw, nil, "test", nil)
	defer c.cancel(nil)
	if !c.enqueue(make([]byte, 60), false) {
		t.Fatal("first frame refused")
	}
	if c.enqueue(make([]byte, 60), true) {
		t.Fatal("droppable frame over the bound was queued")
	}
	if c.ctx.Err() != nil {
		t.Fatal("dropping a droppable frame closed the connection")
	}
	if c.enqueue(make([]byte, 60), false) {
		t.Fatal("frame over the bound was queued")
	}
	if !errors.Is(context.Cause(c.ctx), errSlowConsumer) {
		t.Fatalf("cause = %v, want slow consumer", context.Cause(c.ctx))
	}
	if c.enqueue([]byte("x"), false) {
		t.Fatal("frame queued after the disconnect")
	}
	// The skipped frame, the refused one and the one still queued when
	// the connection closed never reached the client.
	if st := e.gw.Stats(); st.EventsDropped != 3 || st.SlowConsumers != 1 {
		t.Fatalf("stats = %+v, want 3 events dropped and 1 slow consumer", st)
	}
	// Events before hello-ok are dropped.
	c2 := newConn(e.gw, nil, "test", nil)
	defer c2.cancel(nil)
	c2.sendEvent("tick", json.RawMessage(`{}`), false)
	if len(c2.queue) != 0 {
		t.Fatal("event queued before hello-ok")
	}
}
