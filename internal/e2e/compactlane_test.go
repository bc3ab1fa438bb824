package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// TestManualCompactionOfAShortSession: in mode default, /compact of a
// three-turn session summarises what lies before keepRecentTokens
// (recentTurnsPreserve belongs to the safeguard summariser), agent.wait
// on the run id chat.send acknowledged reports it final, and the next
// request carries the summary instead of turn 1. A session with nothing
// to summarise is told why.
func TestManualCompactionOfAShortSession(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key", ContextWindow: 100000})
	g := startDefaults(t, "", llm, windowModel(100000), `compaction: { mode: "default", keepRecentTokens: 1000 },`, "", "")
	c := g.dial(t)
	for i := 1; i <= 3; i++ {
		if w := runTurn(t, c, "main", fmt.Sprintf("short-%d", i), bigTurn(i, 6)); w["status"] != "ok" { // ≈ 1,500 tokens each
			t.Fatalf("turn %d: %v", i, w)
		}
	}
	res := call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "/compact", "idempotencyKey": "short-cmd"})
	if res["runId"] != "short-cmd" {
		t.Errorf("/compact chat.send = %v", res)
	}
	if w := call(t, c, "agent.wait", map[string]any{"runId": "short-cmd", "timeoutMs": 10000}); w["status"] != "ok" {
		t.Errorf("agent.wait on /compact's run id = %v", w)
	}
	if _, summaries := modelRequests(llm); summaries != 1 {
		t.Fatalf("/compact made %d summary calls, want 1", summaries)
	}
	if w := runTurn(t, c, "main", "short-4", "/reply four\nquestion four"); w["status"] != "ok" {
		t.Fatalf("turn after /compact: %v", w)
	}
	turns, _ := modelRequests(llm)
	next := turns[len(turns)-1]
	if !strings.HasPrefix(next.Messages[0].Text, compaction.SummaryPrefix) || strings.Contains(requestText(next), "turn-1: please") {
		t.Errorf("the request after /compact does not replace turn 1 by the summary: %.200q", next.Messages[0].Text)
	}
	if len(boundaryRows(history(t, c, "main"), "compaction")) != 1 {
		t.Error("chat.history has no compaction row")
	}

	// One short turn: nothing lies before the kept tail, and the answer
	// says so.
	runTurn(t, c, "tiny", "tiny-1", "/reply ok\nhello")
	out := call(t, c, "sessions.compact", map[string]any{"key": "tiny"})
	if reason, _ := out["reason"].(string); out["compacted"] != false || !strings.HasPrefix(reason, "nothing to compact: ") ||
		!strings.Contains(reason, "keepRecentTokens 1000") {
		t.Errorf("sessions.compact of one short turn = %v", out)
	}
}

// TestMessageDuringCompactionWaits: a message sent while sessions.compact
// writes its summary (queue mode steer, the default) waits for it: its
// model call runs once, after the summary, on the compacted history.
func TestMessageDuringCompactionWaits(t *testing.T) {
	opts, started, release := blockSummaries(100000)
	llm := fakellm.Start(t, opts)
	g := startModel(t, "", llm, windowModel(100000), "", "")
	c := g.dial(t)
	for i := 1; i <= 5; i++ {
		if w := runTurn(t, c, "main", fmt.Sprintf("lane-%d", i), bigTurn(i, 24)); w["status"] != "ok" {
			t.Fatalf("turn %d: %v", i, w)
		}
	}
	compacted := make(chan map[string]any, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var out map[string]any
		if err := c.Call(ctx, "sessions.compact", map[string]any{"key": "main"}, &out); err != nil {
			out = map[string]any{"error": err.Error()}
		}
		compacted <- out
	}()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("sessions.compact made no summary call")
	}
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "/reply bee\nquestion B", "idempotencyKey": "lane-b"})
	close(release)
	if out := <-compacted; out["compacted"] != true {
		t.Fatalf("sessions.compact = %v", out)
	}
	if w := call(t, c, "agent.wait", map[string]any{"runId": "lane-b", "timeoutMs": 60000}); w["status"] != "ok" {
		t.Fatalf("message B: %v", w)
	}
	turns, _ := modelRequests(llm)
	n := 0
	for _, req := range turns {
		if !strings.Contains(lastUser(req), "question B") {
			continue
		}
		n++
		if !strings.HasPrefix(req.Messages[0].Text, compaction.SummaryPrefix) || strings.Contains(requestText(req), "turn-1: please") {
			t.Errorf("message B ran on the uncompacted history: %.120q", req.Messages[0].Text)
		}
	}
	if n != 1 {
		t.Errorf("message B reached the model %d times, want once", n)
	}
}
