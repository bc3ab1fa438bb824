package browsertest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/interop"
)

// serveControlUI serves the reference's Control UI build as its own
// gateway does: files by path, index.html for app routes, and
// control-ui-config.json taken from the gateway.
func serveControlUI(t *testing.T, dir string, gateway *atomic.Pointer[string]) *httptest.Server {
	t.Helper()
	files := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/control-ui-config.json") {
			resp, err := http.Get(*gateway.Load() + "/control-ui-config.json")
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
			w.WriteHeader(resp.StatusCode)
			io.Copy(w, resp.Body)
			return
		}
		// index.html names its assets relative ("./assets/…"): under an app
		// route such as /agents/main/chat they are asked for below it.
		segs := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
		for i := range segs {
			name := filepath.Join(dir, filepath.FromSlash(strings.Join(segs[i:], "/")))
			if st, err := os.Stat(name); err == nil && !st.IsDir() {
				http.ServeFile(w, r, name)
				return
			}
		}
		if r.URL.Path == "/" {
			files.ServeHTTP(w, r)
			return
		}
		http.ServeFile(w, r, filepath.Join(dir, "index.html"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// startGatewayFor runs the daemon as startGateway does, admitting the
// browser origin origin.
func startGatewayFor(t *testing.T, origin string) string {
	t.Helper()
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	dir := t.TempDir()
	cfg := fmt.Sprintf(`{
  gateway: { auth: { mode: "token", token: %q }, controlUi: { allowedOrigins: [%q] } },
  models: { mode: "replace", providers: { fake: { baseUrl: %q, apiKey: "llm-key", api: "openai-completions", models: [{ id: "fake-1" }] } } },
  agents: { defaults: { model: { primary: "fake/fake-1" } }, list: [{ id: "main", default: true }] },
}`, token, origin, llm.URL())
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

// frameLog keeps the WebSocket frames the page sent and received.
type frameLog struct {
	mu     sync.Mutex
	frames []string
}

func (l *frameLog) add(ev any) {
	var line string
	switch e := ev.(type) {
	case *network.EventWebSocketFrameSent:
		line = "> " + string(e.Response.PayloadData)
	case *network.EventWebSocketFrameReceived:
		line = "< " + string(e.Response.PayloadData)
	default:
		return
	}
	l.mu.Lock()
	l.frames = append(l.frames, line)
	l.mu.Unlock()
}

func (l *frameLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.frames, "\n")
}

// TestReferenceControlUI loads the reference's Control UI (npm openclaw)
// from its own origin, points it at Switchboard with the token, sends a
// chat message and sees the model's reply.
func TestReferenceControlUI(t *testing.T) {
	bin := chromium(t)
	uiDir := interop.ControlUIDir(t)
	// The UI's origin must be known before the gateway's config is
	// written, and the UI server asks the gateway for its config.
	var gwp atomic.Pointer[string]
	ui := serveControlUI(t, uiDir, &gwp)
	gw := startGatewayFor(t, ui.URL)
	gwp.Store(&gw)

	ctx := startBrowser(t, bin, 1400, 900)
	var frames frameLog
	if err := chromedp.Listen(ctx, frames.add); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancelT := context.WithTimeout(ctx, 120*time.Second)
	defer cancelT()
	defer func() {
		if t.Failed() {
			t.Logf("WebSocket frames:\n%s", frames.String())
		}
	}()
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
	wsURL := "ws" + strings.TrimPrefix(gw, "http")
	if err := chromedp.Do(ctx, chromedp.Navigate(ui.URL+"/chat?gatewayUrl="+wsURL+"#token="+token)); err != nil {
		t.Fatal(err)
	}
	// The link names another gateway than the UI's own origin: the UI asks
	// before switching.
	clickText(t, ctx, "button", "Switch to ")
	pageText := func() string {
		txt, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		return txt
	}
	waitPage := func(want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(pageText(), want) {
			if time.Now().After(deadline) {
				shot("controlui-failed.png")
				t.Fatalf("the page never showed %q; it shows:\n%s", want, pageText())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitPage("Connected")
	// The composer takes the message; Enter sends it.
	composer := fmt.Sprintf(`(() => { %s; return find("textarea", e => e.getClientRects().length > 0); })()`, deepQuery)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](composer+` != null`))
		if err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			shot("controlui-failed.png")
			t.Fatalf("no chat composer (%v); the page shows:\n%s", err, pageText())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := chromedp.Do(ctx, chromedp.Focus(chromedp.CSS("textarea")), chromedp.SendKeys(chromedp.CSS("textarea"), "hello from the control ui"), chromedp.SendKeys(chromedp.CSS("textarea"), "\r")); err != nil {
		t.Fatal(err)
	}
	waitPage("echo: hello from the control ui")
	shot("controlui-chat.png")

	// A second session, made by another client, has a row in the
	// sidebar's session list (the main session has none there).
	c, err := client.Dial(ctx, client.Options{URL: wsURL, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Call(ctx, "chat.send", map[string]any{"sessionKey": sidebarKey, "message": "hello sidebar", "idempotencyKey": "sidebar-1"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(ctx, "agent.wait", map[string]any{"runId": "sidebar-1", "timeoutMs": 30000}, nil); err != nil {
		t.Fatal(err)
	}
	waitSidebarRow(t, ctx, sidebarKey)

	// Reloaded (on the app route it moved to), the page keeps its login
	// for the tab and shows the transcript again (chat.startup).
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	waitPage("Connected")
	waitPage("hello from the control ui")
	waitPage("echo: hello from the control ui")
	waitSidebarRow(t, ctx, sidebarKey)
	shot("controlui-reload.png")

	// A message another client posts into the open chat shows up live.
	if err := c.Call(ctx, "chat.inject", map[string]any{"sessionKey": "agent:main:main", "message": "a note from another client"}, nil); err != nil {
		t.Fatal(err)
	}
	waitPage("a note from another client")

	// The agents view lists the agent with its model and its main chat's
	// last message.
	clickText(t, ctx, "a", "Agents")
	waitPage("fake/fake-1")
	waitPage("a note from another client")
	shot("controlui-agents.png")

	// The Systems page lists the gateway's host (environments.list,
	// node.list and system.info).
	clickText(t, ctx, "a", "Systems")
	waitPage("Gateway host")
	shot("controlui-systems.png")

	// A session started from the UI's own "New conversation" page
	// (sessions.create with the first message) runs, and the sidebar
	// lists it.
	clickLabel(t, ctx, "a", "New conversation")
	first := "textarea.new-session-page__message"
	if err := chromedp.Do(ctx, chromedp.WaitVisible(first), chromedp.Focus(first), chromedp.SendKeys(first, "hello from a new session"), chromedp.SendKeys(first, "\r")); err != nil {
		t.Fatal(err)
	}
	waitPage("echo: hello from a new session")
	waitSidebarRowWhere(t, ctx, "a new agent:main:chat: session", `k.startsWith("agent:main:chat:")`)
	shot("controlui-new-session.png")
}

// sidebarKey is the session TestReferenceControlUI makes besides main.
const sidebarKey = "agent:main:sidebar-check"

// waitSidebarRow waits up to 20s for the sidebar's session list to show
// a row for key.
func waitSidebarRow(t *testing.T, ctx context.Context, key string) {
	t.Helper()
	waitSidebarRowWhere(t, ctx, key, fmt.Sprintf("k === %q", key))
}

// waitSidebarRowWhere waits up to 20s for a sidebar row whose session key
// k makes the JS expression cond true; what names the row in failures.
func waitSidebarRowWhere(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	key := what
	js := fmt.Sprintf(`(() => { %s; return find(".sidebar-recent-session", e => { const k = e.dataset.sessionKey || ""; return %s; }) != null; })()`, deepQuery, cond)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			txt, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
			t.Fatalf("the sidebar never listed session %s (%v); the page shows:\n%s", key, err, txt)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// deepQuery is JS defining find(sel, pred): the first element matching sel,
// searching open shadow roots too, for which pred is true.
const deepQuery = `function find(sel, pred) {
  const walk = (root) => {
    for (const el of root.querySelectorAll(sel)) if (pred(el)) return el;
    for (const el of root.querySelectorAll("*")) if (el.shadowRoot) { const f = walk(el.shadowRoot); if (f) return f; }
    return null;
  };
  return walk(document);
}`

// clickLabel clicks the first sel element whose aria-label is label,
// waiting up to 20s for it.
func clickLabel(t *testing.T, ctx context.Context, sel, label string) {
	t.Helper()
	js := fmt.Sprintf(`(() => { %s; const el = find(%q, e => e.getAttribute("aria-label") === %q); if (!el) return false; el.click(); return true; })()`, deepQuery, sel, label)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s labelled %q (%v)", sel, label, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// clickText clicks the first sel element whose text starts with prefix,
// waiting up to 20s for it.
func clickText(t *testing.T, ctx context.Context, sel, prefix string) {
	t.Helper()
	js := fmt.Sprintf(`(() => { %s; const el = find(%q, e => e.innerText.trim().startsWith(%q)); if (!el) return false; el.click(); return true; })()`, deepQuery, sel, prefix)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s starting with %q (%v)", sel, prefix, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
