package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/daemon"
)

// TestUnreadEventsNeverBlockCalls: a client that never reads Events keeps
// getting responses; surplus events are dropped and counted.
func TestUnreadEventsNeverBlockCalls(t *testing.T) {
	url, tok := startGateway(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Without auth configured the gateway generated a token: a client
	// without it is refused.
	if _, err := client.Dial(ctx, client.Options{URL: url}); err == nil {
		t.Fatal("a client without the generated token got in")
	}
	c, err := client.Dial(ctx, client.Options{URL: url, Token: tok, EventBuffer: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Hello().Protocol != 4 {
		t.Errorf("protocol = %d", c.Hello().Protocol)
	}
	for i := range 5 {
		id := fmt.Sprint("run-", i)
		if err := c.Call(ctx, "chat.send", map[string]any{"sessionKey": "main", "message": "hi", "idempotencyKey": id}, nil); err != nil {
			t.Fatal(err)
		}
		var w map[string]any
		if err := c.Call(ctx, "agent.wait", map[string]any{"runId": id, "timeoutMs": 10000}, &w); err != nil || w["status"] != "ok" {
			t.Fatalf("agent.wait = %v, %v", w, err)
		}
	}
	if c.Dropped() == 0 {
		t.Error("no events were dropped with a 4-event buffer")
	}
	var gwErr *client.Error
	if err := c.Call(ctx, "no.such.method", nil, nil); !asError(err, &gwErr) || gwErr.Message != "unknown method: no.such.method" {
		t.Errorf("unknown method error = %v", err)
	}
}

func asError(err error, target **client.Error) bool {
	e, ok := err.(*client.Error)
	if ok {
		*target = e
	}
	return ok
}

// TestKeepEventFilters: events KeepEvent refuses never reach Events (and
// are not counted as dropped); the ones it keeps do, decoded; responses
// pass whatever it says.
func TestKeepEventFilters(t *testing.T) {
	url, tok := startGateway(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var seen atomic.Int64
	c, err := client.Dial(ctx, client.Options{URL: url, Token: tok,
		KeepEvent: func(frame []byte) bool {
			seen.Add(1)
			return bytes.Contains(frame, []byte(`"state":"final"`))
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 3 {
		id := fmt.Sprint("keep-", i)
		if err := c.Call(ctx, "chat.send", map[string]any{"sessionKey": "main", "message": "hi", "idempotencyKey": id}, nil); err != nil {
			t.Fatal(err)
		}
		var ev client.Event
		select {
		case ev = <-c.Events():
		case <-ctx.Done():
			t.Fatalf("no chat final of %s", id)
		}
		var p struct{ RunID, State string }
		if err := json.Unmarshal(ev.Payload, &p); err != nil || ev.Event != "chat" || p.RunID != id || p.State != "final" {
			t.Fatalf("event %d = %s %s (%v); want the chat final of %s", i, ev.Event, ev.Payload, err, id)
		}
	}
	if n := seen.Load(); n <= 3 {
		t.Errorf("KeepEvent saw %d frames; a run sends more events than its final", n)
	}
	if c.Dropped() != 0 {
		t.Errorf("Dropped = %d; refused events are not drops", c.Dropped())
	}
}

// startGateway starts a gateway on a fresh state dir with no auth
// configured, stopped when the test ends; it returns the gateway's
// WebSocket URL and the token it generated.
func startGateway(t *testing.T) (url, token string) {
	t.Helper()
	dir := t.TempDir()
	port := 0
	d, err := daemon.Start(context.Background(), daemon.Options{
		Env:    config.MapEnv(map[string]string{"SWITCHBOARD_STATE_DIR": dir, "HOME": dir}),
		Port:   &port,
		Stdout: io.Discard,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	tok, err := config.ReadGatewayToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	return "ws://" + d.Addrs[0].String(), tok
}
