package gateway

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/store"
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
	b.ReportAllocs() // the client's and the gateway's
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

// BenchmarkSessionsList measures sessions.list {limit: 100} through the
// gateway as the store grows: the page is the store's, so the time should
// not grow with the number of sessions.
func BenchmarkSessionsList(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run("sessions="+strconv.Itoa(n), func(b *testing.B) {
			e := newEnv(b, envOptions{})
			ctx := context.Background()
			base := time.Now().Add(-time.Hour)
			for i := range n {
				key := "agent:main:chat:" + strconv.Itoa(i)
				if i%10 == 0 {
					key = "agent:main:subagent:" + strconv.Itoa(i)
				}
				if err := e.store.CreateSession(ctx, &store.Session{Key: key, SessionID: "sid-" + strconv.Itoa(i), AgentID: "main",
					UpdatedAt: base.Add(time.Duration(i) * time.Millisecond)}); err != nil {
					b.Fatal(err)
				}
			}
			c := e.operator()
			params := map[string]any{"limit": 100, "excludeSubagents": true}
			ds := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				f := c.call(wire.MethodSessionsList, params)
				ds = append(ds, time.Since(start))
				if !f.OK {
					b.Fatal(f.Error)
				}
			}
			b.StopTimer()
			reportPercentiles(b, ds)
		})
	}
}
