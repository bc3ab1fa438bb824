package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/interop"
)

// startOfflineGatewayFor runs the daemon with no model provider (the
// built-in offline model answers), its log file on, admitting the
// browser origin origin, with one skill in the state dir's skills/ (the
// Skills view lists it); it returns the http:// base.
func startOfflineGatewayFor(t *testing.T, origin string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "skills", "release-notes"), 0o700); err != nil {
		t.Fatal(err)
	}
	skill := "---\nname: release-notes\ndescription: Write release notes from merged changes\n---\nSteps.\n"
	if err := os.WriteFile(filepath.Join(dir, "skills", "release-notes", "SKILL.md"), []byte(skill), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`{ gateway: { auth: { mode: "token", token: %q }, controlUi: { allowedOrigins: [%q] } } }`, token, origin)
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	port := 0
	d, err := daemon.Start(context.Background(), daemon.Options{
		Env:    config.MapEnv(map[string]string{"SWITCHBOARD_STATE_DIR": dir, "HOME": dir}),
		Port:   &port,
		Stdout: io.Discard,
		Stderr: io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return "http://" + d.Addrs[0].String()
}

// pageWatch records what a view must not show: uncaught page errors,
// the gateway's request/response frames, and HTTP requests to the
// gateway (gateway: its http:// base) that fail or get an error status.
type pageWatch struct {
	mu         sync.Mutex
	gateway    string
	exceptions []string
	sent       map[string]string // request id → method
	answered   map[string]bool
	failures   []string // error responses: method and message
	fetches    map[network.RequestID]string
	// avatars counts agent images the gateway served (/avatar/<agent>).
	avatars int
}

func (w *pageWatch) add(ev any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch e := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		w.exceptions = append(w.exceptions, msg)
	case *network.EventRequestWillBeSent:
		if w.gateway != "" && strings.HasPrefix(e.Request.URL, w.gateway+"/") {
			w.fetches[e.RequestID] = e.Request.Method + " " + strings.TrimPrefix(e.Request.URL, w.gateway)
		}
	case *network.EventResponseReceived:
		if f, ok := w.fetches[e.RequestID]; ok && e.Response.Status >= 400 {
			w.failures = append(w.failures, fmt.Sprintf("%s: HTTP %d", f, e.Response.Status))
		}
		// Counted by URL, not through fetches: reset clears that map
		// between views, and the image may arrive just after one.
		if w.gateway != "" && strings.HasPrefix(e.Response.URL, w.gateway+"/avatar/") && e.Response.Status < 400 {
			w.avatars++
		}
	case *network.EventLoadingFailed:
		if f, ok := w.fetches[e.RequestID]; ok && !e.Canceled {
			msg := f + ": " + e.ErrorText
			if e.CorsErrorStatus != nil {
				msg += " " + e.CorsErrorStatus.CorsError.String()
			}
			w.failures = append(w.failures, msg)
		}
	case *network.EventWebSocketFrameSent:
		var f struct {
			Type, ID, Method string
			Params           json.RawMessage
		}
		if json.Unmarshal([]byte(e.Response.PayloadData), &f) == nil && f.Type == "req" {
			w.sent[f.ID] = f.Method + " " + string(f.Params) // the params name what failed
		}
	case *network.EventWebSocketFrameReceived:
		var f struct {
			Type, ID string
			OK       bool
			Error    struct{ Code, Message string }
		}
		if json.Unmarshal([]byte(e.Response.PayloadData), &f) == nil && f.Type == "res" {
			w.answered[f.ID] = true
			if !f.OK {
				w.failures = append(w.failures, w.sent[f.ID]+": "+f.Error.Code+" "+f.Error.Message)
			}
		}
	}
}

// reset forgets what was seen so far.
func (w *pageWatch) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.exceptions, w.failures = nil, nil
	w.sent, w.answered, w.fetches = map[string]string{}, map[string]bool{}, map[network.RequestID]string{}
}

// settled reports whether every request sent since reset was answered,
// and the methods called.
func (w *pageWatch) settled() (bool, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var methods []string
	done := true
	for id, m := range w.sent {
		methods = append(methods, m)
		if !w.answered[id] {
			done = false
		}
	}
	return done, methods
}

func (w *pageWatch) problems() (exceptions, failures []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.exceptions...), append([]string(nil), w.failures...)
}

// errorBanners is JS listing the visible error banners and callouts of
// the reference's Control UI, searching shadow roots too.
var errorBanners = fmt.Sprintf(`(() => { %s; const out = []; const walk = (root) => {
  for (const el of root.querySelectorAll(".callout.danger, .oc-banner-error, .cron-error-banner, .settings-status--error, .provider-usage-error, .chat-error__content"))
    if (el.getClientRects().length) out.push(el.innerText.trim());
  for (const el of root.querySelectorAll("*")) if (el.shadowRoot) walk(el.shadowRoot);
}; walk(document); return out; })()`, deepQuery)

// controlUIViews are the reference Control UI's views checked against
// Switchboard, each with a text that shows it loaded its data and, for
// some, a text it showed when it could not (it must not any more).
var controlUIViews = []struct{ route, want, not string }{
	{"/usage", "REPORTING RANGE", "Loading"},
	{"/automations", "Run history", "id required"},
	{"/skills", "release-notes", "No skills found."},
	{"/settings/advanced", "ADVANCED SETTINGS", "Schema unavailable"},
	{"/settings/approvals", "No standing grants.", ""},
	{"/settings/appearance", "Manuscript", ""},
	{"/settings/devices", "Devices", ""},
	{"/activity", "Recent sessions", ""},
	{"/sessions", "Done", "Unknown"},
	{"/agents", "scripted/echo-1", ""},
	{"/systems", "Gateway host", ""},
	{"/logs", "Logs", ""},
	{"/dashboards", "Dashboards", "Could not load dashboards"},
	{"/settings/channels", "Channels", ""},
	{"/settings/mcp", "MCP", ""},
	{"/settings/memory", "Memory", ""},
}

// TestReferenceControlUIViews opens every view of the reference's Control
// UI (npm openclaw) against Switchboard running the offline model, in
// one browser: the chat can send (the offline model is a usable
// provider) and no view shows a page error, an error banner or gets an
// error answer ("unknown method" included) from the gateway.
func TestReferenceControlUIViews(t *testing.T) {
	bin := chromium(t)
	uiDir := interop.ControlUIDir(t)
	var gwp atomic.Pointer[string]
	ui := serveControlUI(t, uiDir, &gwp)
	gw := startOfflineGatewayFor(t, ui.URL)
	gwp.Store(&gw)

	ctx := startBrowser(t, bin, 1400, 900)
	w := &pageWatch{gateway: gw}
	w.reset()
	if err := chromedp.Listen(ctx, w.add); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancelT := context.WithTimeout(ctx, 240*time.Second)
	defer cancelT()
	shots := artifacts(t)
	shot := func(name string) {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(80))
		if err == nil {
			os.WriteFile(filepath.Join(shots, name), png, 0o644)
		}
	}
	pageText := func() string {
		txt, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		return txt
	}
	// check fails on what the page showed or was answered since reset.
	check := func(t *testing.T, view string) {
		t.Helper()
		exceptions, failures := w.problems()
		for _, e := range exceptions {
			t.Errorf("%s: page error: %s", view, e)
		}
		for _, f := range failures {
			t.Errorf("%s: error answer: %s", view, f)
		}
		if banners, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](errorBanners)); len(banners) > 0 {
			t.Errorf("%s: error banners: %q", view, banners)
		}
	}
	// settle waits up to 30s for want on the page and every request
	// answered.
	settle := func(t *testing.T, view, want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			done, _ := w.settled()
			if done && strings.Contains(pageText(), want) {
				return
			}
			if time.Now().After(deadline) {
				_, methods := w.settled()
				shot("controlui-view-failed.png")
				t.Fatalf("%s never showed %q with every request answered (methods %q); it shows:\n%s", view, want, methods, pageText())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	wsURL := "ws" + strings.TrimPrefix(gw, "http")
	if err := chromedp.Do(ctx, chromedp.Navigate(ui.URL+"/chat?gatewayUrl="+wsURL+"#token="+token)); err != nil {
		t.Fatal(err)
	}
	clickText(t, ctx, "button", "Switch to ")
	t.Run("chat with the offline model", func(t *testing.T) {
		settle(t, "chat", "Connected")
		if strings.Contains(pageText(), "Connect a provider and choose a model") {
			t.Fatalf("the chat asks for a provider with the offline model on:\n%s", pageText())
		}
		if err := chromedp.Do(ctx, chromedp.WaitVisible("textarea"), chromedp.Focus(chromedp.CSS("textarea")),
			chromedp.SendKeys(chromedp.CSS("textarea"), "hello offline"), chromedp.SendKeys(chromedp.CSS("textarea"), "\r")); err != nil {
			t.Fatal(err)
		}
		settle(t, "chat", "echo: hello offline")
		check(t, "chat")
	})
	for _, v := range controlUIViews {
		t.Run(v.route, func(t *testing.T) {
			w.reset()
			// In-app navigation, as the sidebar's links do.
			js := fmt.Sprintf(`(() => { history.pushState({}, "", %q); dispatchEvent(new PopStateEvent("popstate")); return true; })()`, v.route)
			if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err != nil {
				t.Fatal(err)
			}
			settle(t, v.route, v.want)
			check(t, v.route)
			if v.not != "" && strings.Contains(pageText(), v.not) {
				t.Errorf("%s shows %q:\n%s", v.route, v.not, pageText())
			}
			if t.Failed() {
				shot("controlui-view" + strings.ReplaceAll(v.route, "/", "-") + ".png")
			}
		})
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.avatars == 0 {
		t.Error("no view loaded an agent image from /avatar/<agent>")
	}
}
