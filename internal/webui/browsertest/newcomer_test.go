package browsertest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/provider"
)

// TestWebUIShowsWhatTheAgentDoes covers what a newcomer missed in the
// chat: where the token is, the icon, a working indicator before the
// first token, times on live messages, tool-only messages and aborted
// runs after a reload, the default model, and a session opening at its
// end.
func TestWebUIShowsWhatTheAgentDoes(t *testing.T) {
	bin := chromium(t)
	// A user message containing "hold" keeps the model from answering
	// until release is closed (or the request is cancelled: an abort);
	// one containing "stall" until it is aborted.
	release := make(chan struct{})
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) })
	base := startGatewayLLM(t, fakellm.Options{OnRequest: func(r *http.Request, req *provider.Request) {
		last := ""
		for _, m := range req.Messages {
			if m.Role == provider.RoleUser {
				last = m.Text
			}
		}
		switch {
		case strings.Contains(last, "hold"):
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case strings.Contains(last, "stall"): // until aborted
			<-r.Context().Done()
		}
	}})
	ctx := startBrowser(t, bin, 1280, 860)
	ctx, cancelT := context.WithTimeout(ctx, 120*time.Second)
	defer cancelT()
	do := func(t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		doIn(t, ctx, steps...)
	}
	until := func(t *testing.T, what, js string) {
		t.Helper()
		untilIn(t, ctx, 30*time.Second, what, js)
	}
	evalBool := func(t *testing.T, js string) bool {
		t.Helper()
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	send := func(t *testing.T, text string) {
		t.Helper()
		do(t, chromedp.SetValue(chromedp.CSS("#input"), text), chromedp.Click(chromedp.CSS("#send")))
	}
	loads := 0
	login := func(t *testing.T) {
		t.Helper()
		loads++ // a new query: a page load, not a jump within the page
		do(t, chromedp.Navigate(fmt.Sprintf("%s/?load=%d#token=%s", base, loads, token)))
		until(t, "connected", `document.getElementById("status").classList.contains("on") && !document.getElementById("app").hidden`)
	}

	t.Run("login page says where the token is", func(t *testing.T) {
		do(t, chromedp.Navigate(base+"/"))
		until(t, "the login form", `!document.getElementById("login").hidden`)
		help, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#login-help")))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"switchboard dashboard", "gateway.auth.token", "switchboard.json5", "gateway.token"} {
			if !strings.Contains(help, want) {
				t.Errorf("login help lacks %q: %q", want, help)
			}
		}
	})

	t.Run("favicon.ico is served", func(t *testing.T) {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const x = new XMLHttpRequest();
			x.open("GET", "/favicon.ico", false); x.send(); return x.status + " " + x.getResponseHeader("Content-Type"); })()`))
		if err != nil || got != "200 image/x-icon" {
			t.Errorf("GET /favicon.ico from the page: %q (%v)", got, err)
		}
	})

	login(t)
	t.Run("thinking between send and the first token", func(t *testing.T) {
		send(t, "hold on, think first")
		until(t, "the working indicator", `document.querySelectorAll("#messages .msg.assistant.thinking").length === 1 &&
			document.getElementById("chat-run").textContent.includes("thinking")`)
		releaseOnce.Do(func() { close(release) })
		until(t, "the reply", `document.getElementById("messages").textContent.includes("echo: hold on, think first")`)
		if n := evalBool(t, `document.querySelectorAll("#messages .msg.thinking").length === 0`); !n {
			t.Error("still marked thinking after the reply came")
		}
	})

	t.Run("live messages have a time", func(t *testing.T) {
		// "assistant · <time>", "user · <time>": something after the dot.
		if !evalBool(t, `[...document.querySelectorAll("#messages .msg.user, #messages .msg.assistant")].slice(-2)
			.every((b) => /· \S/.test(b.querySelector(".who").textContent))`) {
			who, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("#messages .who")].map((w) => w.textContent).join(" | ")`))
			t.Errorf("the live messages have no time: %s", who)
		}
	})

	t.Run("an aborted run says aborted", func(t *testing.T) {
		send(t, "stall this one, then abort")
		until(t, "the run to start", `document.querySelectorAll("#messages .msg.assistant.thinking").length === 1`)
		do(t, chromedp.Click(chromedp.CSS("#abort")))
		until(t, "the aborted reply", `[...document.querySelectorAll("#messages .msg.assistant.aborted")].some((b) => b.textContent.includes("aborted"))`)
		if !evalBool(t, `document.querySelectorAll("#messages .msg.streaming").length === 0`) {
			t.Error("a bubble still streams after the abort")
		}
	})

	t.Run("a tool-only message is no streaming bubble after a reload", func(t *testing.T) {
		send(t, "/tool agents_list {}\n/then listed the agents")
		until(t, "the reply after the tool", `document.getElementById("messages").textContent.includes("listed the agents")`)
		login(t) // a reload
		until(t, "the history", `document.getElementById("messages").textContent.includes("listed the agents")`)
		if !evalBool(t, `document.querySelectorAll("#messages .msg.streaming").length === 0`) {
			t.Error("a stored message shows as streaming after the reload")
		}
		if !evalBool(t, `document.getElementById("messages").textContent.includes("called agents_list")`) {
			t.Error("the tool-only message does not say which tool it called")
		}
	})

	t.Run("the default model is shown", func(t *testing.T) {
		do(t, chromedp.Click(chromedp.CSS(`button[data-view="sessions"]`)))
		until(t, "the session's model", `[...document.querySelectorAll("#sessions-table tbody tr")].some((r) => r.textContent.includes("fake/fake-1 (default)"))`)
		do(t, chromedp.Click(chromedp.CSS(`button[data-view="agents"]`)))
		until(t, "the agent's model", `[...document.querySelectorAll("#agents .card")].some((c) => c.textContent.includes("model: fake/fake-1"))`)
		do(t, chromedp.Click(chromedp.CSS(`button[data-view="chat"]`)))
	})

	t.Run("a session opens scrolled to its end", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := client.Dial(cctx, client.Options{URL: strings.Replace(base, "http://", "ws://", 1), Token: token})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for i := range 40 {
			if err := c.Call(cctx, "chat.inject", map[string]any{"sessionKey": "main",
				"message": "note " + strings.Repeat("line\n\n", 3) + "number " + string(rune('A'+i%26))}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Call(cctx, "chat.inject", map[string]any{"sessionKey": "main", "message": "the very last note"}, nil); err != nil {
			t.Fatal(err)
		}
		login(t)
		until(t, "the history", `document.getElementById("messages").textContent.includes("the very last note")`)
		until(t, "the view at its end", `(() => { const m = document.getElementById("messages");
			return m.scrollHeight > m.clientHeight + 100 && m.scrollTop + m.clientHeight >= m.scrollHeight - 4; })()`)
		// And the last message is on screen.
		if !evalBool(t, `(() => { const r = [...document.querySelectorAll("#messages .msg")].at(-1).getBoundingClientRect();
			return r.bottom <= window.innerHeight && r.top >= 0; })()`) {
			t.Error("the last message is not on screen")
		}
	})
}

// doIn runs browser steps in ctx, failing t on an error.
func doIn(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// untilIn polls the JavaScript condition js in the page until it is true,
// failing t with the page's text after limit.
func untilIn(t *testing.T, ctx context.Context, limit time.Duration, what, js string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			html, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
			t.Fatalf("never: %s (%v)\npage:\n%s", what, err, html)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
