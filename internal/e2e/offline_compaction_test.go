package e2e

import (
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/provider"
)

// compactCLI runs "switchboard sessions send KEY /compact --wait" against g.
func compactCLI(g *gateway, key string) (string, error) {
	out, err := exec.Command(binPath, "sessions", "send", key, "/compact", "--wait", "--url", g.url, "--token", token).CombinedOutput()
	return string(out), err
}

// TestOfflineCompaction: with no API key, the built-in scripted/echo-1
// takes the context window configured under models.providers.scripted
// (no baseUrl), compacts automatically when long turns fill it, and a
// manual /compact passes the safeguard quality audit; the CLI reports it
// and exits 0.
func TestOfflineCompaction(t *testing.T) {
	cfg := fmt.Sprintf(`{
  gateway: { auth: { mode: "token", token: %q } },
  models: { providers: { scripted: { models: [{ id: "echo-1", contextWindow: 16000 }] } } },
  agents: { defaults: { model: { primary: "scripted/echo-1" }, compaction: { keepRecentTokens: 2000, qualityGuard: { enabled: true } } } },
}`, token)
	g := startConfig(t, 0, t.TempDir(), cfg, nil)
	c := g.dial(t)
	// The manual /compact first, while five turns (≈ 6,000 tokens of a
	// 16,000-token window, as the gateway counts them) are far from any
	// automatic compaction, so there is always something older than the
	// kept tail to summarise.
	for i := 1; i <= 5; i++ {
		if w := runTurn(t, c, "main", fmt.Sprintf("off-%d", i), bigTurn(i, 8)); w["status"] != "ok" { // ≈ 2,000 tokens each
			t.Fatalf("turn %d: %v\n%s", i, w, g.stdio)
		}
	}
	if n := len(boundaryRows(history(t, c, "main"), "compaction")); n != 0 {
		t.Fatalf("%d compactions after five turns", n)
	}
	out, err := compactCLI(g, "main")
	if err != nil || !strings.Contains(out, "⚙️ Compacted (") {
		t.Fatalf("switchboard sessions send main /compact --wait: %v\n%s", err, out)
	}
	if n := len(boundaryRows(history(t, c, "main"), "compaction")); n != 1 {
		t.Errorf("compaction rows after /compact: %d, want 1", n)
	}
	// Then long turns fill the window: it compacts by itself.
	for i := 6; i <= 14 && len(boundaryRows(history(t, c, "main"), "compaction")) < 2; i++ {
		if w := runTurn(t, c, "main", fmt.Sprintf("off-%d", i), bigTurn(i, 8)); w["status"] != "ok" {
			t.Fatalf("turn %d: %v\n%s", i, w, g.stdio)
		}
	}
	eventually(t, "an automatic compaction", func() bool { return len(boundaryRows(history(t, c, "main"), "compaction")) >= 2 })
	if w := runTurn(t, c, "main", "off-11", "/reply still here\nnext"); w["status"] != "ok" {
		t.Errorf("turn after /compact: %v", w)
	}
}

// TestFailedCompactExitsNonZero: a /compact whose summary call fails (it
// never answers within compaction.timeoutSeconds) ends its run in error,
// and the CLI exits non-zero with the reason.
func TestFailedCompactExitsNonZero(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key", OnRequest: func(r *http.Request, req *provider.Request) {
		if fakellm.IsSummaryRequest(req) {
			<-r.Context().Done() // until the gateway gives up on it
		}
	}})
	g := startDefaults(t, "", llm, windowModel(100000), `compaction: { timeoutSeconds: 1 },`, "", "")
	c := g.dial(t)
	for i := 1; i <= 6; i++ {
		if w := runTurn(t, c, "main", fmt.Sprintf("fail-%d", i), bigTurn(i, 24)); w["status"] != "ok" {
			t.Fatalf("turn %d: %v", i, w)
		}
	}
	out, err := compactCLI(g, "main")
	if err == nil || !strings.Contains(out, "failed") || !strings.Contains(out, "summary call") {
		t.Errorf("a failed /compact: exit %v\n%s", err, out)
	}
}
