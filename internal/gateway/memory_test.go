package gateway

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// nonReader connects and completes the handshake, then never reads.
func nonReader(t *testing.T, e *env) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, e.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	if _, _, err := ws.Read(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ws.Write(ctx, websocket.MessageText, []byte(reqJSON("c", "connect", connectParams(testToken, wire.ScopeRead)))); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ws.Read(ctx); err != nil {
		t.Fatal(err)
	}
	return ws
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// Connections that never read plus one 8 MB message: the big payload is
// queued once for all of them, the outbound budget (4 MB here) drops the
// stalled non-readers, the client that reads keeps its connection and gets
// the reply, and memory returns once they are gone.
func TestOutboundBudget(t *testing.T) {
	e := newEnv(t, envOptions{gateway: func(c *Config) { c.MaxQueuedBytes = 4 << 20 }})
	reader := e.operator()
	reader.wait = 2 * time.Minute
	base := heapInUse()
	var idle []*websocket.Conn
	for range 30 {
		idle = append(idle, nonReader(t, e))
	}
	msg := strings.Repeat("x", 8<<20)
	reader.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": msg, "idempotencyKey": "big-1"}, nil)
	evs := reader.runEventsWithin("big-1", 3*time.Minute)
	if last := payload(t, evs[len(evs)-1]); last["state"] != "final" {
		t.Fatalf("reader's last event = %v", last["state"])
	}
	// Stalled non-readers are dropped until the queued bytes fit the
	// budget again.
	deadline := time.Now().Add(30 * time.Second)
	for e.gw.queuedTotal.Load() > e.gw.cfg.MaxQueuedBytes && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if q := e.gw.queuedTotal.Load(); q > e.gw.cfg.MaxQueuedBytes {
		t.Errorf("%d bytes queued, over the %d-byte budget", q, e.gw.cfg.MaxQueuedBytes)
	}
	if n := e.gw.connCount(); n >= 31 {
		t.Errorf("no non-reader was dropped (%d connections)", n)
	}
	reader.ok(wire.MethodHealth, nil, nil) // still connected
	if grown := int64(heapInUse()) - int64(base); grown > 64<<20 {
		t.Errorf("heap in use grew by %d MB after the non-readers were dropped", grown>>20)
	}
	// Once every non-reader is gone, nothing is counted as queued: a shared
	// payload is released exactly once per connection, also when a write
	// fails.
	for _, ws := range idle {
		ws.CloseNow()
	}
	deadline = time.Now().Add(20 * time.Second)
	for (e.gw.connCount() > 1 || e.gw.queuedTotal.Load() != 0) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if q := e.gw.queuedTotal.Load(); q != 0 {
		t.Errorf("%d bytes counted as queued with only an idle reader left", q)
	}
}

// A single message just under the frame limit does not disconnect its
// sender, which reads normally: live previews are capped, the message is
// not. The limits are the defaults (25 MiB frames, 50 MiB buffered) cut
// by five, in the same ratio, so the test decodes 4 MB, not 20 MB, under
// -race.
func TestHugeMessageKeepsReaders(t *testing.T) {
	// Previews every second: under -race this test client decodes slowly.
	// Its reader answers pings only between frames, and decoding 20 MB
	// under -race on a loaded machine can take longer than the default
	// pong timeout: keepalive is not what this test is about.
	e := newEnv(t, envOptions{gateway: func(c *Config) {
		c.ChatDeltaInterval = time.Second
		c.PongTimeout = 10 * time.Minute
		c.MaxPayload = wire.DefaultMaxPayload / 5
		c.MaxBufferedBytes = wire.DefaultMaxBufferedBytes / 5
	}})
	c := e.operator()
	c.wait = 2 * time.Minute
	other := e.operator()
	msg := strings.Repeat(strings.Repeat("w", 999)+" ", 4<<10) // 4 MB in 4k model deltas, over 2×MaxLiveText
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": msg, "idempotencyKey": "huge-1"}, nil)
	evs := c.runEventsWithin("huge-1", 3*time.Minute) // megabytes of JSON are slow under -race
	final := payload(t, evs[len(evs)-1])
	if final["state"] != "final" {
		t.Fatalf("last event = %v", final["state"])
	}
	m, _ := final["message"].(map[string]any)
	content, _ := m["content"].([]any)
	if len(content) == 0 || len(content[0].(map[string]any)["text"].(string)) != len("echo: ")+len(strings.TrimSpace(msg)) {
		t.Errorf("the final message is not the whole reply")
	}
	for _, f := range evs {
		if len(f.Payload) > 2*MaxLiveText+(64<<10) && payload(t, f)["state"] != "final" {
			t.Errorf("a %s event of %d bytes: previews must be capped", f.Event, len(f.Payload))
			break
		}
	}
	other.ok(wire.MethodHealth, nil, nil)
	c.ok(wire.MethodHealth, nil, nil)
}
