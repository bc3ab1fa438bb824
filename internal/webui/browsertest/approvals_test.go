package browsertest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// TestWebUIApprovals: a command waiting for approval shows in the UI with
// its decisions; Allow once runs it, Deny refuses it and the chat shows the
// denial.
func TestWebUIApprovals(t *testing.T) {
	bin := chromium(t)
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	dir := t.TempDir()
	cfg := fmt.Sprintf(`{
  gateway: { auth: { mode: "token", token: %q } },
  models: { mode: "replace", providers: { fake: { baseUrl: %q, apiKey: "llm-key", api: "openai-completions", models: [{ id: "fake-1" }] } } },
  agents: { defaults: { model: { primary: "fake/fake-1" } }, list: [{ id: "main", default: true }] },
  tools: { exec: { security: "allowlist", ask: "on-miss" } },
}`, token, llm.URL())
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	port := 0
	d, err := daemon.Start(context.Background(), daemon.Options{
		Env: config.MapEnv(map[string]string{"SWITCHBOARD_STATE_DIR": dir, "HOME": dir}), Port: &port,
		Stdout: io.Discard, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	base := "http://" + d.Addrs[0].String()

	ctx := startBrowser(t, bin, 1280, 860)
	ctx, cancelT := context.WithTimeout(ctx, 5*time.Minute) // a guard: the steps wait for what they show, and a loaded machine (CI runs packages side by side) took the whole test past 90 s
	defer cancelT()
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
	do(chromedp.Navigate(base + "/#token=" + token))
	waitText("#status", "connected")

	do(chromedp.SetValue(chromedp.CSS("#input"), "/tool exec {\"command\":\"echo from-the-ui\"}\n/then ran it"), chromedp.Click(chromedp.CSS("#send")))
	waitText("#approvals", "echo from-the-ui")
	waitText("#approvals", "Allow always")
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		_ = os.WriteFile(filepath.Join(artifacts(t), "approval.png"), png, 0o644)
	}
	do(chromedp.Click(chromedp.CSS(`#approvals button[data-decision="allow-once"]`)))
	waitExec(t, base, "from-the-ui")

	do(chromedp.SetValue(chromedp.CSS("#input"), "/tool exec {\"command\":\"rm -rf nothing-here\"}\n/then was refused"), chromedp.Click(chromedp.CSS("#send")))
	waitText("#approvals", "rm -rf nothing-here")
	do(chromedp.Click(chromedp.CSS(`#approvals button[data-decision="deny"]`)))
	waitExec(t, base, "user-denied): rm -rf nothing-here")
	waitHidden := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("approvals").hidden`))
			if err == nil && hidden {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the approvals panel is still shown %s (%v)", what, err)
			}
		}
	}
	waitHidden("after the decisions")

	// Aborting the waiting run takes its approval off the panel.
	do(chromedp.SetValue(chromedp.CSS("#input"), "/tool exec {\"command\":\"rm -rf abandoned\"}\n/then never"), chromedp.Click(chromedp.CSS("#send")))
	waitText("#approvals", "rm -rf abandoned")
	do(chromedp.Click(chromedp.CSS("#abort")))
	waitHidden("after the run was aborted")
}

// waitExec waits for the main session's last exec result to contain want.
func waitExec(t *testing.T, base, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := lastExecResult(t, base)
		if strings.Contains(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("last exec result = %q, want %q in it", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lastExecResult reads the main session's last exec result over the
// protocol.
func lastExecResult(t *testing.T, base string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{URL: strings.Replace(base, "http://", "ws://", 1), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var hist struct {
		Messages []struct {
			Role     string `json:"role"`
			ToolName string `json:"toolName"`
			Content  []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := c.Call(ctx, "chat.history", map[string]any{"sessionKey": "agent:main:main", "limit": 100}, &hist); err != nil {
		t.Fatal(err)
	}
	for i := len(hist.Messages) - 1; i >= 0; i-- {
		if m := hist.Messages[i]; m.Role == "toolResult" && m.ToolName == "exec" {
			var b strings.Builder
			for _, c := range m.Content {
				b.WriteString(c.Text)
			}
			return b.String()
		}
	}
	return ""
}
