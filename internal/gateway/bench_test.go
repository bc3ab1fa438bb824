package gateway

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// reportPercentiles reports the p50 and p99 of ds in microseconds.
func reportPercentiles(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	at := func(q float64) float64 {
		i := min(int(q*float64(len(ds))), len(ds)-1)
		return float64(ds[i].Microseconds())
	}
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

// BenchmarkConnectHandshake measures dial → connect.challenge → connect →
// hello-ok over loopback.
func BenchmarkConnectHandshake(b *testing.B) {
	e := newEnv(b, envOptions{})
	connect := []byte(reqJSON("c", wire.MethodConnect, connectParams(testToken, wire.ScopeRead, wire.ScopeWrite)))
	ctx := context.Background()
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		ws, _, err := websocket.Dial(ctx, e.url, nil)
		if err != nil {
			b.Fatal(err)
		}
		ws.SetReadLimit(1 << 20)
		if _, _, err := ws.Read(ctx); err != nil { // challenge
			b.Fatal(err)
		}
		if err := ws.Write(ctx, websocket.MessageText, connect); err != nil {
			b.Fatal(err)
		}
		_, data, err := ws.Read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
		if f, err := wire.Decode(data); err != nil || !f.OK {
			b.Fatalf("hello: %s", data)
		}
		ws.Close(websocket.StatusNormalClosure, "")
	}
	b.StopTimer()
	reportPercentiles(b, ds)
}

// BenchmarkChatSendRoundTrip measures chat.send → chat final on a warm
// connection and session with the instant scripted model and the default
// chat delta throttle.
func BenchmarkChatSendRoundTrip(b *testing.B) {
	e := newEnv(b, envOptions{gateway: func(c *Config) { c.ChatDeltaInterval = 0 }})
	c := e.operator()
	c.ok(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "warm up", "idempotencyKey": "warm"}, nil)
	c.runEvents("warm")
	ds := make([]time.Duration, 0, b.N)
	i := 0
	b.ResetTimer()
	for b.Loop() {
		i++
		id := "bench-" + strconv.Itoa(i)
		start := time.Now()
		_, ch := c.start(wire.MethodChatSend, map[string]any{"sessionKey": "main", "message": "ping " + id, "idempotencyKey": id})
		evs := c.runEvents(id)
		ds = append(ds, time.Since(start))
		if res := c.await(ch); !res.OK {
			b.Fatalf("chat.send: %v", res.Error)
		}
		if last := decodeAs[chatEv](b, evs[len(evs)-1]); last.State != wire.ChatStateFinal {
			b.Fatalf("run ended %q", last.State)
		}
	}
	b.StopTimer()
	reportPercentiles(b, ds)
}
