// Package telegramtest runs the Telegram connector inside the real gateway
// against the fake Bot API server (package tgfake, on a loopback port via
// the connector's configurable API root), with the fake LLM over the
// OpenAI wire format. No network is needed.
package telegramtest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/channel/telegram/tgfake"
	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

const (
	gatewayToken = "tg-test-gateway-token"
	botToken     = "987654:fake-bot-token"
)

// startGateway runs the daemon in-process with the fake LLM, the given
// channels.telegram members (apiRoot and botToken are added) and extra
// top-level members, and returns it with a connected client.
func startGateway(t *testing.T, fake *tgfake.Server, tgConfig, extra string) (*daemon.Daemon, *client.Client, *logBuffer) {
	t.Helper()
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	dir := t.TempDir()
	cfg := fmt.Sprintf(`{
  gateway: { auth: { mode: "token", token: %q } },
  models: { mode: "replace", providers: { fake: { baseUrl: %q, apiKey: "llm-key", api: "openai-completions", models: [{ id: "fake-1" }] } } },
  agents: { defaults: { model: { primary: "fake/fake-1" } } },
  channels: { telegram: { botToken: %q, apiRoot: %q, %s } },
  %s
}`, gatewayToken, llm.URL(), botToken, fake.URL(), tgConfig, extra)
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	port := 0
	var out bytes.Buffer
	logs := &logBuffer{}
	d, err := daemon.Start(context.Background(), daemon.Options{
		Env:    config.MapEnv(map[string]string{"SWITCHBOARD_STATE_DIR": dir, "HOME": dir}),
		Port:   &port,
		Stdout: &out,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	if err != nil {
		t.Fatalf("daemon.Start: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{URL: "ws://" + d.Addrs[0].String(), Token: gatewayToken})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return d, c, logs
}

// logBuffer is the gateway's log sink, safe for concurrent writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// status calls channels.status and returns the result and the Telegram
// account.
func status(t *testing.T, c *client.Client) (wire.ChannelsStatusResult, wire.ChannelAccount) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var res wire.ChannelsStatusResult
	if err := c.Call(ctx, "channels.status", map[string]any{"probe": true}, &res); err != nil {
		t.Fatalf("channels.status: %v", err)
	}
	accts := res.ChannelAccounts["telegram"]
	if len(accts) != 1 {
		t.Fatalf("channels.status = %+v", res)
	}
	return res, accts[0]
}

// waitConnected waits until channels.status shows the bot connected.
func waitConnected(t *testing.T, c *client.Client) wire.ChannelAccount {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, a := status(t, c); a.Connected {
			return a
		}
		if time.Now().After(deadline) {
			_, a := status(t, c)
			t.Fatalf("bot not connected: %+v", a)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
