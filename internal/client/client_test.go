package client_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/daemon"
)

// TestUnreadEventsNeverBlockCalls: a client that never reads Events keeps
// getting responses; surplus events are dropped and counted.
func TestUnreadEventsNeverBlockCalls(t *testing.T) {
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
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tok, err := config.ReadGatewayToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Without auth configured the gateway generated a token: a client
	// without it is refused.
	if _, err := client.Dial(ctx, client.Options{URL: "ws://" + d.Addrs[0].String()}); err == nil {
		t.Fatal("a client without the generated token got in")
	}
	c, err := client.Dial(ctx, client.Options{URL: "ws://" + d.Addrs[0].String(), Token: tok, EventBuffer: 4})
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
