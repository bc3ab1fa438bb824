// Package browsertest drives the web UI in real headless Chromium
// (Debian's chromium) through the Chrome DevTools Protocol, against the
// real gateway answering through a fake OpenAI-compatible model server.
package browsertest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/fakellm"
)

const token = "browser-test-token"

// chromium finds the browser; without one the test skips locally and
// fails under CI=true (the test script installs Debian's chromium).
func chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{os.Getenv("SWITCHBOARD_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found (apt-get install chromium); CI=true: not skipping")
	}
	t.Skip("chromium not found (apt-get install chromium)")
	return ""
}

// startGateway runs the daemon in process on 127.0.0.1:0 with agents
// answering through the fake LLM over HTTP, and returns its http:// base.
func startGateway(t *testing.T) string {
	t.Helper()
	return startGatewayLLM(t, fakellm.Options{})
}

// startGatewayLLM is startGateway with the fake LLM's options (its API
// key is set here).
func startGatewayLLM(t *testing.T, o fakellm.Options) string {
	t.Helper()
	o.APIKey = "llm-key"
	llm := fakellm.Start(t, o)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`{
  gateway: { auth: { mode: "token", token: %q } },
  models: { mode: "replace", providers: { fake: { baseUrl: %q, apiKey: "llm-key", api: "openai-completions", models: [{ id: "fake-1" }] } } },
  agents: { defaults: { model: { primary: "fake/fake-1" } }, list: [{ id: "main", default: true }] },
}`, token, llm.URL())
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	port := 0
	d, err := daemon.Start(context.Background(), daemon.Options{
		Env:    config.MapEnv(map[string]string{"SWITCHBOARD_STATE_DIR": dir, "HOME": dir}),
		Port:   &port,
		Stdout: io.Discard,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return "http://" + d.Addrs[0].String()
}

// artifacts is where screenshots go: $SWITCHBOARD_TEST_ARTIFACTS, else a
// temp dir.
func artifacts(t *testing.T) string {
	if dir := os.Getenv("SWITCHBOARD_TEST_ARTIFACTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

// startBrowser starts headless Chromium (bin) with a window of w×h (0:
// the browser's default) and returns its context, the browser already
// running; it stops when the test ends.
func startBrowser(tb testing.TB, bin string, w, h int) context.Context {
	tb.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true))
	if w > 0 && h > 0 {
		opts = append(opts, chromedp.WindowSize(w, h))
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	tb.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	tb.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil { // start the browser (no timeout on this first call)
		tb.Fatal(err)
	}
	return ctx
}

func TestWebUI(t *testing.T) {
	bin := chromium(t)
	base := startGateway(t)
	ctx := startBrowser(t, bin, 1280, 860)
	ctx, cancelT := context.WithTimeout(ctx, 5*time.Minute) // a guard: the steps wait for what they show, and a loaded machine (CI runs packages side by side) took the whole test past 90 s
	defer cancelT()
	shots := artifacts(t)
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(shots, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	waitText := func(sel, want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
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
	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatal(err)
		}
	}
	eval := func(js string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](js))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	// Logging in by link: the token leaves the address bar.
	do(chromedp.Navigate(base + "/#token=" + token))
	waitText("#status", "connected")
	if href, err := chromedp.Run(ctx, chromedp.Location()); err != nil || strings.Contains(href, token) {
		t.Errorf("address bar %q (%v): the token should be gone", href, err)
	}

	if n := eval(`document.getElementById("login").getClientRects().length`); n != 0 {
		t.Error("the login form is still shown after connecting")
	}

	// Send with Enter; the streamed reply appears.
	do(chromedp.SendKeys(chromedp.CSS("#input"), "hello from the browser"), chromedp.SendKeys(chromedp.CSS("#input"), "\r"))
	waitText("#messages", "echo: hello from the browser")
	shot("chat.png")

	// Model output with markup is shown as text, never as HTML.
	xss := `/reply <img src=x onerror="document.title='pwned'"><script>document.title='pwned'</script> **bold**`
	do(chromedp.SetValue(chromedp.CSS("#input"), xss), chromedp.Click(chromedp.CSS("#send")))
	waitText("#messages", "<img src=x onerror=")
	if n := eval(`document.querySelectorAll("#messages img, #messages script").length`); n != 0 {
		t.Errorf("model markup became %d img/script elements", n)
	}
	if title, _ := chromedp.Run(ctx, chromedp.Title()); title == "pwned" {
		t.Error("model markup ran script")
	}
	if n := eval(`document.querySelectorAll("#messages strong").length`); n == 0 {
		t.Error("Markdown bold not rendered")
	}

	// A message sent while the session is busy shows as queued, with its
	// place, until its run starts; then it is answered.
	do(chromedp.SetValue(chromedp.CSS("#input"), "/sleep 2s\nslow one"), chromedp.Click(chromedp.CSS("#send")))
	do(chromedp.SetValue(chromedp.CSS("#input"), "queued behind"), chromedp.Click(chromedp.CSS("#send")))
	waitText("#messages .msg.queued", "queued #1")
	shot("queued.png")
	waitText("#messages", "echo: queued behind")
	if n := eval(`document.querySelectorAll("#messages .msg.queued").length`); n != 0 {
		t.Errorf("%d messages still marked queued after they ran", n)
	}

	// The sessions view lists the session; the switchboard view shows the
	// session's family rooted at it.
	do(chromedp.Click(chromedp.CSS(`button[data-view="sessions"]`)))
	waitText("#sessions-table", "agent:main:main")
	shot("sessions.png")
	// Two children spawned through the model appear in the switchboard
	// view, finish, and their announces are delivered.
	do(chromedp.Click(chromedp.CSS(`button[data-view="chat"]`)),
		chromedp.SetValue(chromedp.CSS("#input"), `/tool sessions_spawn {"task":"count the herons","label":"herons"}
/tool sessions_spawn {"task":"count the foxes","label":"foxes"}
/then two helpers are on it`),
		chromedp.Click(chromedp.CSS("#send")))
	waitText("#messages", "two helpers are on it")
	do(chromedp.Click(chromedp.CSS(`button[data-view="tree"]`)))
	waitText("#tree", "count the foxes")
	waitText("#tree", "count the herons")
	deadline := time.Now().Add(20 * time.Second)
	for eval(`document.querySelectorAll("#tree .node.ok").length`) < 2 || eval(`document.querySelectorAll("#announces .badge.delivered").length`) < 2 {
		if time.Now().After(deadline) {
			html, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#view-tree")))
			t.Fatalf("the children never showed as finished with delivered announces:\n%s", html)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The announces are edges between the sessions, answered.
	deadline = time.Now().Add(20 * time.Second)
	for eval(`[...document.querySelectorAll("#edges tbody tr")].filter((r) => r.textContent.includes("replied") && r.textContent.includes("agent:main:main")).length`) < 2 {
		if time.Now().After(deadline) {
			html, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#edges")))
			t.Fatalf("the announces never showed as replied edges:\n%s", html)
		}
		do(chromedp.Click(chromedp.CSS("#tree-refresh")))
		time.Sleep(200 * time.Millisecond)
	}
	shot("switchboard.png")
}
