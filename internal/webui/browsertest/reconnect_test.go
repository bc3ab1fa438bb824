package browsertest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// gatewayAt runs the daemon on state dir and port (a second call on the
// same ones is a restart); it returns the daemon for Close.
func gatewayAt(t *testing.T, dir string, port int, llm *fakellm.Server) *daemon.Daemon {
	t.Helper()
	cfg := fmt.Sprintf(`{
  gateway: { auth: { mode: "token", token: %q } },
  models: { mode: "replace", providers: { fake: { baseUrl: %q, apiKey: "llm-key", api: "openai-completions", models: [{ id: "fake-1" }] } } },
  agents: { defaults: { model: { primary: "fake/fake-1" } }, list: [{ id: "main", default: true }] },
}`, token, llm.URL())
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var d *daemon.Daemon
	var err error
	// The port the first gateway left can take a moment to free.
	for deadline := time.Now().Add(10 * time.Second); ; {
		p := port
		d, err = daemon.Start(context.Background(), daemon.Options{
			Env:  config.MapEnv(map[string]string{"SWITCHBOARD_STATE_DIR": dir, "HOME": dir}),
			Port: &p, Stdout: io.Discard, Logger: slog.New(slog.DiscardHandler),
		})
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestWebUIReconnectsAfterRestart: when the gateway restarts, the page
// says it lost the link, reconnects by itself, and the chat works again.
func TestWebUIReconnectsAfterRestart(t *testing.T) {
	bin := chromium(t)
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	d := gatewayAt(t, dir, port, llm)
	base := "http://" + d.Addrs[0].String()

	ctx := startBrowser(t, bin, 0, 0)
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	defer cancelT()
	waitText := func(sel, want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		var got string
		for {
			var err error
			if got, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel))); err == nil && strings.Contains(got, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never showed %q (last: %q, %v)", sel, want, got, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// connected waits for the status to be exactly "connected" (not
	// "disconnected — retrying…").
	connected := func() {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			if got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#status"))); err == nil && strings.TrimSpace(got) == "connected" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the page never reconnected")
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatal(err)
		}
	}
	do(chromedp.Navigate(base + "/#token=" + token))
	connected()
	do(chromedp.SetValue(chromedp.CSS("#input"), "before the restart"), chromedp.Click(chromedp.CSS("#send")))
	waitText("#messages", "echo: before the restart")

	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	waitText("#status", "disconnected")
	d = gatewayAt(t, dir, port, llm)
	defer d.Close()
	connected()
	// The history is read again, and a new message is answered.
	waitText("#messages", "echo: before the restart")
	do(chromedp.SetValue(chromedp.CSS("#input"), "after the restart"), chromedp.Click(chromedp.CSS("#send")))
	waitText("#messages", "echo: after the restart")
}
