package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/provider"
)

// isFlushRequest reports whether req is a memory-flush turn.
func isFlushRequest(req *provider.Request) bool {
	return strings.Contains(req.System, compaction.FlushSystemMarker)
}

// requestKinds names the recorded model requests in order: "turn",
// "flush" or "summary".
func requestKinds(llm *fakellm.Server) []string {
	var out []string
	for _, r := range llm.Requests() {
		switch {
		case r.Request == nil:
		case fakellm.IsSummaryRequest(r.Request):
			out = append(out, "summary")
		case isFlushRequest(r.Request):
			out = append(out, "flush")
		default:
			out = append(out, "turn")
		}
	}
	return out
}

// TestMemoryFlushBeforeCompaction: before the session compacts, a silent
// flush turn with the reference's prompts lets the agent write a note into
// its workspace; the flush never enters the transcript or a later
// request, its NO_REPLY is not shown, and it runs once per compaction
// cycle.
func TestMemoryFlushBeforeCompaction(t *testing.T) {
	day := time.Now().UTC().Format("2006-01-02")
	note := "memory/" + day + ".md"
	opts := fakellm.Options{APIKey: "llm-key", ContextWindow: 100000, OnRequest: func(_ *http.Request, req *provider.Request) {
		if !isFlushRequest(req) {
			return
		}
		// The agent answers the flush prompt by writing its note.
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == provider.RoleUser {
				req.Messages[i].Text = fmt.Sprintf("/tool write {\"path\": %q, \"content\": \"- decided: ship TICKET-42\\n\", \"append\": true}\n/then NO_REPLY", note)
				break
			}
		}
	}}
	llm := fakellm.Start(t, opts)
	dir := t.TempDir()
	g := startModel(t, dir, llm, windowModel(100000), "", "")
	c := g.dial(t)
	for i := 1; i <= 9; i++ {
		if w := runTurn(t, c, "main", fmt.Sprintf("mf-%d", i), bigTurn(i, 72)); w["status"] != "ok" {
			t.Fatalf("turn %d: %v\n%s", i, w, g.stdio)
		}
	}
	kinds := requestKinds(llm)
	flushes := 0
	sinceSummary := 0
	for i, k := range kinds {
		switch k {
		case "flush":
			if i == 0 || kinds[i-1] != "flush" { // one flush turn may take several calls
				flushes++
				if sinceSummary++; sinceSummary > 1 {
					t.Errorf("two memory flushes in one compaction cycle: %v", kinds)
				}
			}
		case "summary":
			if sinceSummary == 0 && flushes == 0 {
				t.Errorf("compacted before any memory flush: %v", kinds)
			}
			sinceSummary = 0
		}
	}
	if flushes == 0 {
		t.Fatalf("no memory flush: %v", kinds)
	}
	var first *provider.Request
	for _, r := range llm.Requests() {
		if r.Request != nil && isFlushRequest(r.Request) {
			first = r.Request
			break
		}
	}
	_, wantSys := compaction.FlushPrompts("", "", time.Now(), nil)
	if !strings.HasSuffix(first.System, wantSys) {
		t.Errorf("flush system prompt = %q", first.System[max(0, len(first.System)-400):])
	}
	var body map[string]any
	for _, r := range llm.Requests() {
		if r.Request != nil && isFlushRequest(r.Request) {
			json.Unmarshal(r.Body, &body)
			break
		}
	}
	raw, _ := json.Marshal(body["messages"])
	if !strings.Contains(string(raw), "Pre-compaction memory flush. Store durable memories only in "+note) || !strings.Contains(string(raw), "Current time: ") {
		t.Errorf("the flush turn did not carry the reference's prompt: …%s", raw[max(0, len(raw)-600):])
	}
	b, err := os.ReadFile(filepath.Join(dir, "workspace", note))
	if err != nil || !strings.Contains(string(b), "TICKET-42") {
		t.Errorf("memory note = %q, %v", b, err)
	}
	for _, r := range llm.Requests() {
		if r.Request != nil && !isFlushRequest(r.Request) && strings.Contains(requestText(r.Request), "Pre-compaction memory flush") {
			t.Error("a later request carries the flush turn")
		}
	}
	got := strings.Join(texts(history(t, c, "main")), "|")
	if strings.Contains(got, "NO_REPLY") || strings.Contains(got, "memory flush") || strings.Contains(got, "tool write") {
		t.Errorf("the flush turn is in chat.history: …%s", got[max(0, len(got)-300):])
	}
	list := call(t, c, "sessions.list", map[string]any{})
	row := list["sessions"].([]any)[0].(map[string]any)
	t.Logf("requests: %v; session row: compactionCount=%v", kinds, row["compactionCount"])
}

// TestMemoryFlushDisabled: memoryFlush.enabled false runs no flush turn.
func TestMemoryFlushDisabled(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key", ContextWindow: 100000})
	g := startDefaults(t, "", llm, windowModel(100000), `compaction: { memoryFlush: { enabled: false } },`, "", "")
	c := g.dial(t)
	for i := 1; i <= 5; i++ {
		if w := runTurn(t, c, "main", fmt.Sprintf("nf-%d", i), bigTurn(i, 72)); w["status"] != "ok" {
			t.Fatalf("turn %d: %v", i, w)
		}
	}
	kinds := strings.Join(requestKinds(llm), ",")
	if strings.Contains(kinds, "flush") || !strings.Contains(kinds, "summary") {
		t.Errorf("requests = %s", kinds)
	}
}

// maintEvent is one event of a run as the test sees it.
type maintEvent struct {
	kind string // "compaction", "notice", "final"
	data map[string]any
	text string
}

// collectRun reads the events of runID, and the notices posted into key
// while it runs, until the run's chat final.
func collectRun(t *testing.T, c *client.Client, key, runID string) []maintEvent {
	t.Helper()
	var out []maintEvent
	deadline := time.After(60 * time.Second)
	for {
		select {
		case ev, ok := <-c.Events():
			if !ok {
				t.Fatal("connection closed")
			}
			var p map[string]any
			json.Unmarshal(ev.Payload, &p)
			id, _ := p["runId"].(string)
			switch {
			case ev.Event == "agent" && id == runID && p["stream"] == "compaction":
				d, _ := p["data"].(map[string]any)
				out = append(out, maintEvent{kind: "compaction", data: d})
			case ev.Event == "chat" && strings.HasPrefix(id, "notice-") && strings.HasSuffix(fmt.Sprint(p["sessionKey"]), key):
				b, _ := json.Marshal(p["message"])
				var m struct {
					Content []struct{ Text string } `json:"content"`
				}
				json.Unmarshal(b, &m)
				if len(m.Content) > 0 {
					out = append(out, maintEvent{kind: "notice", text: m.Content[0].Text})
				}
			case ev.Event == "chat" && id == runID && p["state"] == "final":
				return append(out, maintEvent{kind: "final"})
			}
		case <-deadline:
			t.Fatalf("run %s: no chat final", runID)
		}
	}
}

// TestCompactionNoticesAndEvents: with notifyUser the user sees the
// reference's "🧹 Compacting context..." and "🧹 Compaction complete"
// around the compaction, which clients also get as "compaction" agent
// events (phase start, then end with completed); the notices never reach
// the model or the stored history. Without notifyUser only the events
// are sent.
func TestCompactionNoticesAndEvents(t *testing.T) {
	for _, notify := range []bool{true, false} {
		t.Run(fmt.Sprint("notifyUser=", notify), func(t *testing.T) {
			llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key", ContextWindow: 100000})
			g := startDefaults(t, "", llm, windowModel(100000),
				fmt.Sprintf(`compaction: { notifyUser: %v, memoryFlush: { enabled: false }, background: { enabled: false } },`, notify), "", "")
			c := g.dial(t)
			// Two turns fill about 61k of the 80k threshold; the third,
			// as big, compacts before it is sent.
			for i := 1; i <= 2; i++ {
				if w := runTurn(t, c, "main", fmt.Sprintf("nt-%d", i), bigTurn(i, 90)); w["status"] != "ok" {
					t.Fatalf("turn %d: %v", i, w)
				}
			}
			call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": bigTurn(3, 90), "idempotencyKey": "nt-3"})
			evs := collectRun(t, c, "main", "nt-3")
			var seq []string
			for _, e := range evs {
				switch e.kind {
				case "compaction":
					seq = append(seq, "event:"+fmt.Sprint(e.data["phase"]))
					if e.data["phase"] == "end" && (e.data["completed"] != true || e.data["willRetry"] != false || e.data["outcome"] != "completed" ||
						e.data["trigger"] != "threshold" || e.data["tokensAfter"].(float64) >= e.data["tokensBefore"].(float64)) {
						t.Errorf("compaction end = %v", e.data)
					}
				case "notice":
					seq = append(seq, "notice:"+e.text)
				default:
					seq = append(seq, e.kind)
				}
			}
			// The notices are chat messages of their own, delivered apart
			// from the run's agent events: each kind is in order, and both
			// come before the turn's final.
			var events, notices []string
			for _, e := range seq {
				if strings.HasPrefix(e, "notice:") {
					notices = append(notices, e)
				} else {
					events = append(events, e)
				}
			}
			var wantNotices []string
			if notify {
				wantNotices = []string{"notice:" + compaction.NoticeStart, "notice:" + compaction.NoticeEnd}
			}
			if strings.Join(events, "|") != "event:start|event:end|final" || strings.Join(notices, "|") != strings.Join(wantNotices, "|") || seq[len(seq)-1] != "final" {
				t.Errorf("events of the compacting turn = %q\nwant event:start, event:end and the notices %q before final", seq, wantNotices)
			}
			got := strings.Join(texts(history(t, c, "main")), "|")
			if strings.Contains(got, "🧹") {
				t.Error("a notice was stored in the transcript")
			}
			for _, r := range llm.Requests() {
				if r.Request != nil && strings.Contains(requestText(r.Request), "🧹") {
					t.Error("a notice reached the model")
				}
			}
		})
	}
}

// TestBackgroundSummary: a turn that ends past the soft threshold starts
// the summary in the background. The next turn, sent while the summary is
// still being written, is answered without waiting for it and without a
// summary call of its own; the turn after applies the summary at its
// start, with the message accepted meanwhile kept verbatim in the tail.
func TestBackgroundSummary(t *testing.T) {
	opts, started, release := blockSummaries(100000)
	llm := fakellm.Start(t, opts)
	g := startDefaults(t, "", llm, windowModel(100000),
		`compaction: { memoryFlush: { enabled: false }, background: { enabled: true, softThresholdTokens: 55000, maxConcurrent: 2 } },`, "", "")
	c := g.dial(t)
	// Soft threshold 80k-55k = 25k: turn 1 (≈15k) stays below, turn 2
	// (≈31k) passes it.
	for i := 1; i <= 2; i++ {
		if w := runTurn(t, c, "main", fmt.Sprintf("bg-%d", i), bigTurn(i, 60)); w["status"] != "ok" {
			t.Fatalf("turn %d: %v", i, w)
		}
	}
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatalf("no background summary after turn 2: %v\n%s", requestKinds(llm), g.stdio)
	}
	// Turn 3 while the summary is blocked: answered at once.
	w := runTurn(t, c, "main", "bg-3", "/reply three\nquestion three")
	if w["status"] != "ok" {
		t.Fatalf("turn 3: %v", w)
	}
	turns, summaries := modelRequests(llm)
	if len(turns) != 3 || summaries != 0 || strings.HasPrefix(turns[2].Messages[0].Text, compaction.SummaryPrefix) {
		t.Fatalf("turn 3 waited for or carried a summary: %v", requestKinds(llm))
	}
	close(release)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(g.stdio.String(), "background summary ready") {
		if time.Now().After(deadline) {
			t.Fatalf("the background summary never finished\n%s", g.stdio)
		}
		time.Sleep(20 * time.Millisecond)
	}
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "/reply four\nquestion four", "idempotencyKey": "bg-4"})
	evs := collectRun(t, c, "main", "bg-4")
	if len(evs) != 3 || evs[0].data["phase"] != "start" || evs[1].data["trigger"] != "background" || evs[1].data["completed"] != true {
		t.Errorf("events of turn 4 = %+v", evs)
	}
	// The summary (one or more chunk calls, one after the other) comes
	// after turn 3's request and before turn 4's: neither turn made a
	// summary call of its own.
	order := strings.Join(requestKinds(llm), ",")
	for strings.Contains(order, "summary,summary") {
		order = strings.ReplaceAll(order, "summary,summary", "summary")
	}
	if want := "turn,turn,turn,summary,turn"; !strings.HasPrefix(order, want) {
		t.Errorf("request order = %s, want %s first\n%s", order, want, g.stdio)
	}
	turns, _ = modelRequests(llm)
	four := turns[3]
	text := requestText(four)
	if !strings.HasPrefix(four.Messages[0].Text, compaction.SummaryPrefix) || strings.Contains(text, "turn-1: please") {
		t.Errorf("turn 4 does not carry the background summary: %.120q", four.Messages[0].Text)
	}
	if !strings.Contains(text, "question three") || !strings.Contains(text, "three\n") || !strings.Contains(lastUser(four), "question four") {
		t.Errorf("turn 4 lost the turn accepted while the summary was written:\n%s", text[max(0, len(text)-400):])
	}
	msgs := history(t, c, "main")
	if n := len(boundaryRows(msgs, "compaction")); n != 1 {
		t.Errorf("%d compaction rows, want 1", n)
	}
	if got := strings.Join(texts(msgs), "|"); !strings.Contains(got, "question three") || !strings.Contains(got, "assistant: three") {
		t.Errorf("history lost turn 3")
	}
}

// TestMemoryFlushFailureNotice: a flush the model fails leaves the session
// as it was, the turn still compacts and answers, and with notifyUser the
// user gets the reference's degraded notice first.
func TestMemoryFlushFailureNotice(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key", ContextWindow: 100000, OnRequest: func(_ *http.Request, req *provider.Request) {
		if isFlushRequest(req) {
			req.Messages[len(req.Messages)-1].Text = "/error 400 flush refused"
		}
	}})
	g := startDefaults(t, "", llm, windowModel(100000), `compaction: { notifyUser: true },`, "", "")
	c := g.dial(t)
	for i := 1; i <= 2; i++ {
		if w := runTurn(t, c, "main", fmt.Sprintf("ff-%d", i), bigTurn(i, 90)); w["status"] != "ok" {
			t.Fatalf("turn %d: %v", i, w)
		}
	}
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": bigTurn(3, 90), "idempotencyKey": "ff-3"})
	var seq []string
	for _, e := range collectRun(t, c, "main", "ff-3") {
		if e.kind == "notice" {
			seq = append(seq, e.text)
		}
	}
	want := []string{compaction.NoticeFlushDegraded, compaction.NoticeStart, compaction.NoticeEnd}
	if strings.Join(seq, "|") != strings.Join(want, "|") {
		t.Errorf("notices = %q, want %q", seq, want)
	}
	if w := call(t, c, "agent.wait", map[string]any{"runId": "ff-3", "timeoutMs": 10000}); w["status"] != "ok" {
		t.Errorf("turn 3 = %v", w)
	}
	if !strings.Contains(strings.Join(requestKinds(llm), ","), "flush") {
		t.Error("no flush was tried")
	}
}

// TestManualCompactionEvents: /compact and sessions.compact are bracketed
// by "compaction" agent events (trigger "manual") that every client of the
// session sees.
func TestManualCompactionEvents(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := startModel(t, "", llm, windowModel(100000), "", "")
	c, other := g.dial(t), g.dial(t)
	for i := 1; i <= 6; i++ {
		if w := runTurn(t, c, "main", fmt.Sprintf("mc-%d", i), bigTurn(i, 24)); w["status"] != "ok" {
			t.Fatalf("turn %d: %v", i, w)
		}
	}
	compactEvents := func(want int) []map[string]any {
		var out []map[string]any
		deadline := time.After(30 * time.Second)
		for len(out) < want {
			select {
			case ev := <-other.Events():
				var p map[string]any
				json.Unmarshal(ev.Payload, &p)
				if ev.Event == "agent" && p["stream"] == "compaction" {
					out = append(out, p)
				}
			case <-deadline:
				t.Fatalf("compaction events: got %v", out)
			}
		}
		return out
	}
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "/compact", "idempotencyKey": "mc-cmd"})
	evs := compactEvents(2)
	start, _ := evs[0]["data"].(map[string]any)
	end, _ := evs[1]["data"].(map[string]any)
	if evs[0]["runId"] != "mc-cmd" || start["phase"] != "start" || start["trigger"] != "manual" ||
		end["phase"] != "end" || end["completed"] != true || end["outcome"] != "completed" {
		t.Errorf("/compact events = %v", evs)
	}
	for i := 7; i <= 10; i++ {
		runTurn(t, c, "main", fmt.Sprintf("mc-%d", i), bigTurn(i, 24))
	}
	call(t, c, "sessions.compact", map[string]any{"key": "main"})
	evs = compactEvents(2)
	if id, _ := evs[0]["runId"].(string); !strings.HasPrefix(id, "compact-") || evs[1]["runId"] != id ||
		evs[1]["data"].(map[string]any)["completed"] != true {
		t.Errorf("sessions.compact events = %v", evs)
	}
}
