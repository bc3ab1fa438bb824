package browsertest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestWebUISessionsEditExportAgents: the sessions view edits a session's
// label, model and send policy (sessions.patch), filters by agent and
// label, exports a transcript, and the agents view lists each agent's
// recent sessions.
func TestWebUISessionsEditExportAgents(t *testing.T) {
	bin := chromium(t)
	base := startGateway(t)
	ctx := startBrowser(t, bin, 1280, 860)
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	defer cancelT()
	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		doIn(t, ctx, steps...)
	}
	until := func(what, js string) {
		t.Helper()
		untilIn(t, ctx, 20*time.Second, what, js)
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	row := `[...document.querySelectorAll("#sessions-table tbody tr")].find((r) => r.textContent.includes("agent:main:main"))`

	do(chromedp.Navigate(base + "/#token=" + token))
	until("connected", `document.getElementById("status").textContent.includes("connected")`)
	do(chromedp.SendKeys(chromedp.CSS("#input"), "hello\r"))
	until("the reply", `document.getElementById("messages").textContent.includes("echo: hello")`)

	// Edit: label, model and send policy are patched.
	do(chromedp.Click(chromedp.CSS(`button[data-view="sessions"]`)))
	until("the session row", row+` !== undefined`)
	do(chromedp.Evaluate[chromedp.Void](row + `.querySelector("button.edit").click()`))
	until("the editor", `!document.getElementById("session-edit").hidden`)
	do(chromedp.SetValue(chromedp.CSS("#edit-label"), "triage"),
		chromedp.SetValue(chromedp.CSS("#edit-model"), "fake/fake-1"),
		chromedp.SetValue(chromedp.CSS("#edit-send"), "deny"),
		chromedp.Click(chromedp.CSS("#edit-save")))
	until("saved", `document.getElementById("sessions-note").textContent.includes("saved")`)
	until("the label in the row", row+`?.querySelector(".label")?.textContent === "triage"`)

	// The editor opens with what was saved.
	do(chromedp.Evaluate[chromedp.Void](row + `.querySelector("button.edit").click()`))
	until("the editor again", `!document.getElementById("session-edit").hidden`)
	for sel, want := range map[string]string{"#edit-label": "triage", "#edit-model": "fake/fake-1", "#edit-send": "deny"} {
		got, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(sel)))
		if err != nil || got != want {
			t.Errorf("%s = %q (%v), want %q", sel, got, err, want)
		}
	}
	// A patch the gateway refuses shows its reason and changes nothing.
	do(chromedp.SetValue(chromedp.CSS("#edit-label"), strings.Repeat("x", 600)), chromedp.Click(chromedp.CSS("#edit-save")))
	until("the refusal", `document.getElementById("edit-status").textContent !== ""`)
	do(chromedp.Click(chromedp.CSS("#edit-cancel")), chromedp.Click(chromedp.CSS("#sessions-refresh")))
	until("the label kept", row+`?.querySelector(".label")?.textContent === "triage"`)

	// Filters: by label, and by agent (the list comes from agents.list).
	do(chromedp.SetValue(chromedp.CSS("#sessions-label"), "nothing-has-this"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("sessions-label").dispatchEvent(new Event("change"))`))
	until("no rows for an unknown label", `document.querySelectorAll("#sessions-table tbody tr").length === 0`)
	do(chromedp.SetValue(chromedp.CSS("#sessions-label"), "triage"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("sessions-label").dispatchEvent(new Event("change"))`))
	until("the labelled row", row+` !== undefined`)
	until("the agent filter filled", `[...document.getElementById("sessions-agent").options].some((o) => o.value === "main")`)
	do(chromedp.SetValue(chromedp.CSS("#sessions-agent"), "main"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("sessions-agent").dispatchEvent(new Event("change"))`))
	until("the row under its agent", row+` !== undefined`)

	// Export writes the transcript on the gateway and says where.
	do(chromedp.Evaluate[chromedp.Void](row + `.querySelector("button.export").click()`))
	until("exported", `document.getElementById("sessions-note").textContent.includes("exported to")`)
	note := text("#sessions-note")
	path := note[strings.Index(note, "exported to ")+len("exported to "):]
	if fi, err := os.Stat(strings.TrimSpace(path)); err != nil || fi.Size() == 0 {
		t.Errorf("export %q: %v", path, err)
	}

	// Agents: each card lists the agent's recent sessions.
	do(chromedp.Click(chromedp.CSS(`button[data-view="agents"]`)))
	until("recent sessions", `document.querySelector('#agents li.card[data-agent="main"] .recent')?.textContent.includes("agent:main:main")`)
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err == nil {
		_ = os.WriteFile(filepath.Join(artifacts(t), "agents.png"), png, 0o644)
	}
}
