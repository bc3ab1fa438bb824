package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/a2a"
	"github.com/switchboardhq/switchboard/internal/a2a/bridge"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store/sqlite"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/tools/sessions"
)

// timedPeer is the remote peer's agent: each turn takes think, and the
// time its turns took is summed, as the peer sees its own work.
type timedPeer struct {
	think time.Duration
	own   atomic.Int64 // nanoseconds
}

func (p *timedPeer) Run(ctx context.Context, turn a2a.Turn, _ func(string)) (string, error) {
	start := time.Now()
	defer func() { p.own.Add(int64(time.Since(start))) }()
	if p.think > 0 {
		select {
		case <-time.After(p.think):
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return "echo: " + turn.Text, nil
}

func (p *timedPeer) Outcome(context.Context, string) (string, bool, error) { return "", false, nil }

// BenchmarkSessionsSendA2A is sessions_send (the tool, through the
// gateway's A2A client) to a peer on loopback: the peer is the real A2A
// channel server with its tasks in SQLite, its agent taking a fixed time.
// overhead-ms/op is what the send adds to the peer's own time for the
// turn (issue target: 2 ms or less).
func BenchmarkSessionsSendA2A(b *testing.B) {
	for _, think := range []time.Duration{0, 5 * time.Millisecond} {
		b.Run(fmt.Sprintf("think=%v", think), func(b *testing.B) { benchSessionsSendA2A(b, think) })
	}
}

func benchSessionsSendA2A(b *testing.B, think time.Duration) {
	ctx := context.Background()
	dir := b.TempDir()
	peerStore, err := sqlite.Open(ctx, filepath.Join(dir, "peer.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer peerStore.Close()
	peer := &timedPeer{think: think}
	srv, err := a2a.New(a2a.Config{ReplyTimeout: time.Minute, Peers: []a2a.Peer{{Name: "gw", Token: "to-peer"}}},
		peer, bridge.NewTasks(peerStore))
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer func() { hs.Close(); srv.Close() }()

	cfg, _, err := config.Parse("bench.json5", fmt.Appendf(nil, `{
  tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true } },
  channels: { a2a: { peers: { peer: { token: "from-peer", url: %q, outboundToken: "to-peer" } } } } }`, hs.URL+"/a2a/v1"),
		config.MapEnv(map[string]string{config.EnvStateDir: dir}))
	if err != nil {
		b.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(dir, "gw.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	log := slog.New(slog.DiscardHandler)
	remote := New(settings.Resolve(cfg), st, nil, nil, nil, log)
	var send tools.Tool
	for _, tl := range sessions.New(sessions.Deps{Store: st, Settings: settings.Resolve(cfg), Logger: log, Remote: remote}).All() {
		if tl.Name() == sessions.SendToolName {
			send = tl
		}
	}
	callCtx := tools.WithCaller(ctx, tools.Caller{SessionKey: "agent:main:main"})
	args, _ := json.Marshal(map[string]any{"sessionKey": "a2a:peer", "message": "ping", "timeoutSeconds": 30})
	call := func() {
		res, err := send.Call(callCtx, args)
		if err != nil {
			b.Fatal(err)
		}
		if d, _ := json.Marshal(res.Details); !json.Valid(d) || !containsOK(d) {
			b.Fatalf("sessions_send = %s", d)
		}
	}
	call() // connections and statements warm
	peer.own.Store(0)
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		call()
	}
	elapsed := time.Since(start)
	n := float64(b.N)
	own := float64(peer.own.Load()) / n / 1e6
	total := float64(elapsed.Nanoseconds()) / n / 1e6
	b.ReportMetric(own, "peer-ms/op")
	b.ReportMetric(total-own, "overhead-ms/op")
	b.Logf("sessions_send to an A2A peer on loopback: %.3f ms/op, the peer's own time %.3f ms, overhead %.3f ms (target <= 2 ms; n=%d)",
		total, own, total-own, b.N)
}

func containsOK(details []byte) bool {
	var d struct{ Status string }
	return json.Unmarshal(details, &d) == nil && d.Status == "ok"
}
