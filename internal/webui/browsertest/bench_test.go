package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/store"
)

// BenchmarkWebUI measures the web UI's figures in headless Chromium
// against the real gateway (a benchmark, not a timed test):
//
//   - first-paint: first contentful paint of a fresh load, logged in by
//     link;
//   - sessions-page-100k: one page of the sessions view with 100,000
//     sessions in the store, from the click to the next frame after the
//     rows are in;
//   - tree-1000-children: the switchboard view of a session that spawned
//     1,000 children through the model (all finished, announces
//     delivered), from the click to the next frame after every node is in.
//
// go test -run '^$' -bench WebUI -benchtime 20x ./internal/webui/browsertest/
func BenchmarkWebUI(b *testing.B) {
	bin := chromium(b)
	llm := fakellm.Start(b, fakellm.Options{APIKey: "llm-key"})
	dir := b.TempDir()
	cfg := fmt.Sprintf(`{
  gateway: { auth: { mode: "token", token: %q } },
  models: { mode: "replace", providers: { fake: { baseUrl: %q, apiKey: "llm-key", api: "openai-completions", models: [{ id: "fake-1" }] } } },
  agents: { defaults: { model: { primary: "fake/fake-1" }, subagents: { maxChildrenPerAgent: 2000, maxConcurrent: 64 } },
            list: [{ id: "main", default: true }] },
  // Announces wait for the spawning turn instead of steering into it
  // (which would skip its remaining spawns, as the reference does).
  messages: { queue: { mode: "followup", cap: 2000 } },
}`, token, llm.URL())
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	port := 0
	d, err := daemon.Start(context.Background(), daemon.Options{
		Env:    config.MapEnv(map[string]string{"SWITCHBOARD_STATE_DIR": dir, "HOME": dir}),
		Port:   &port,
		Stdout: io.Discard,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	base := "http://" + d.Addrs[0].String()
	ctx := context.Background()

	// 1,000 children spawned by one turn of the model, all finished.
	c, err := client.Dial(ctx, client.Options{URL: "ws://" + d.Addrs[0].String(), Token: token})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var spawn strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&spawn, "/tool sessions_spawn {\"task\":\"child task %d\",\"label\":\"c%d\"}\n", i, i)
	}
	spawn.WriteString("/then spawned")
	if err := c.Call(ctx, "chat.send", map[string]any{"sessionKey": "main", "message": spawn.String(), "idempotencyKey": "spawn-1000"}, nil); err != nil {
		b.Fatal(err)
	}
	if err := c.Call(ctx, "agent.wait", map[string]any{"runId": "spawn-1000", "timeoutMs": 600000}, nil); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		runs, err := d.Store.ListRuns(ctx, store.RunFilter{Statuses: []store.RunStatus{store.RunRunning, store.RunQueued}})
		if err != nil {
			b.Fatal(err)
		}
		subs, err := d.Store.ListSubagents(ctx, store.SubagentFilter{Limit: 2000})
		if err != nil {
			b.Fatal(err)
		}
		if len(runs) == 0 && len(subs) >= 1000 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("children not done: %d runs left, %d children", len(runs), len(subs))
		}
		time.Sleep(200 * time.Millisecond)
	}
	// 100,000 sessions besides.
	now := time.Now().Add(-time.Hour)
	for i := range 100_000 {
		if err := d.Store.CreateSession(ctx, &store.Session{Key: "agent:main:chat:bench-" + strconv.Itoa(i), SessionID: "bench-" + strconv.Itoa(i),
			AgentID: "main", UpdatedAt: now.Add(time.Duration(i) * time.Millisecond)}); err != nil {
			b.Fatal(err)
		}
	}

	bctx := startBrowser(b, bin, 1280, 860)
	// measure runs js, a promise of milliseconds, b.N times and reports
	// the median and the p99.
	measure := func(b *testing.B, before func(), js string) {
		var ms []float64
		for b.Loop() {
			if before != nil {
				before()
			}
			v, err := chromedp.Run(bctx, chromedp.Evaluate[float64](js, chromedp.EvalAwaitPromise))
			if err != nil {
				b.Fatal(err)
			}
			ms = append(ms, v)
		}
		slices.Sort(ms)
		b.ReportMetric(ms[len(ms)/2], "p50-ms")
		b.ReportMetric(ms[min(len(ms)-1, len(ms)*99/100)], "p99-ms")
	}
	connected := func() {
		deadline := time.Now().Add(20 * time.Second)
		for {
			s, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("#status")))
			if err == nil && strings.Contains(s, "connected") {
				return
			}
			if time.Now().After(deadline) {
				b.Fatalf("never connected (%q, %v)", s, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	b.Run("first-paint", func(b *testing.B) {
		measure(b, func() {
			if err := chromedp.Do(bctx, chromedp.Navigate("about:blank"), chromedp.Navigate(base+"/#token="+token)); err != nil {
				b.Fatal(err)
			}
		}, `new Promise((res) => {
  const look = () => {
    const p = performance.getEntriesByName("first-contentful-paint")[0];
    if (p) res(p.startTime); else setTimeout(look, 5);
  };
  look();
})`)
	})
	connected()
	// untilFrame clicks button and resolves, at the next frame after
	// target's content holds n elements of sel, with the milliseconds
	// since the click.
	untilFrame := func(button, target, sel string, n int) string {
		return fmt.Sprintf(`new Promise((res) => {
  const target = document.getElementById(%q);
  const t0 = performance.now();
  const done = () => target.querySelectorAll(%q).length >= %d;
  const mo = new MutationObserver(() => {
    if (done()) { mo.disconnect(); requestAnimationFrame(() => res(performance.now() - t0)); }
  });
  mo.observe(target, { childList: true, subtree: true });
  document.getElementById(%q).click();
})`, target, sel, n, button)
	}
	b.Run("sessions-page-100k", func(b *testing.B) {
		if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`button[data-view="sessions"]`))); err != nil {
			b.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond) // the view's own first load
		measure(b, nil, untilFrame("sessions-refresh", "sessions-table", "tbody tr", 50))
	})
	// What the switchboard view asks for, without the browser.
	b.Run("subagents-list-1000", func(b *testing.B) {
		var ms []float64
		for b.Loop() {
			t0 := time.Now()
			var res struct{ Subagents []json.RawMessage }
			if err := c.Call(ctx, "subagents.list", map[string]any{"limit": 1000}, &res); err != nil || len(res.Subagents) < 1000 {
				b.Fatalf("subagents.list: %d rows, %v", len(res.Subagents), err)
			}
			ms = append(ms, float64(time.Since(t0).Microseconds())/1000)
		}
		slices.Sort(ms)
		b.ReportMetric(ms[len(ms)/2], "p50-ms")
	})
	b.Run("tree-1000-children", func(b *testing.B) {
		if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`button[data-view="tree"]`))); err != nil {
			b.Fatal(err)
		}
		time.Sleep(time.Second)
		measure(b, nil, untilFrame("tree-refresh", "tree", ".node", 1001))
	})
}
