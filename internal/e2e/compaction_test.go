package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/provider"
)

// windowModel is the fake-1 catalogue entry advertising a window.
func windowModel(tokens int) string {
	return fmt.Sprintf(`{ id: "fake-1", contextWindow: %d }`, tokens)
}

// bigTurn is a user message of about kb kilobytes that the scripted
// model answers "answer-<n>".
func bigTurn(n, kb int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "turn-%d: please keep this in mind\n/reply answer-%d\n", n, n)
	line := fmt.Sprintf("filler line of turn %d with some words to be summarised later on\n", n)
	for b.Len() < kb*1024 {
		b.WriteString(line)
	}
	return b.String()
}

// runTurn sends message to key and waits for the run's final status.
func runTurn(t *testing.T, c *client.Client, key, id, message string) map[string]any {
	t.Helper()
	call(t, c, "chat.send", map[string]any{"sessionKey": key, "message": message, "idempotencyKey": id})
	return call(t, c, "agent.wait", map[string]any{"runId": id, "timeoutMs": 60000})
}

// modelRequests returns the model requests of llm that are turns (not
// summaries, not memory flushes), and how many summary requests it got.
func modelRequests(llm *fakellm.Server) (turns []*provider.Request, summaries int) {
	for _, r := range llm.Requests() {
		if r.Request == nil {
			continue
		}
		if fakellm.IsSummaryRequest(r.Request) {
			summaries++
			continue
		}
		if isFlushRequest(r.Request) {
			continue
		}
		turns = append(turns, r.Request)
	}
	return turns, summaries
}

func lastUser(req *provider.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == provider.RoleUser {
			return req.Messages[i].Text
		}
	}
	return ""
}

func requestText(req *provider.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		b.WriteString(m.Text)
		b.WriteString("\n")
	}
	return b.String()
}

// boundaryRows returns the synthetic chat.history rows of kind.
func boundaryRows(msgs []map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, m := range msgs {
		if meta, _ := m["__openclaw"].(map[string]any); meta != nil && meta["kind"] == kind && m["role"] == "system" {
			out = append(out, m)
		}
	}
	return out
}

// TestLongSessionKeepsAnswering pushes twelve large turns, about three
// windows' worth, into one session of a model whose provider enforces its
// advertised 100,000-token window with OpenAI's context_length_exceeded.
func TestLongSessionKeepsAnswering(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key", ContextWindow: 100000})
	g := startModel(t, "", llm, windowModel(100000), "", "")
	c := g.dial(t)
	for i := 1; i <= 12; i++ {
		w := runTurn(t, c, "main", fmt.Sprintf("long-%d", i), bigTurn(i, 72)) // ≈ 24,600 tokens each
		if w["status"] != "ok" {
			t.Fatalf("turn %d: %v\n%s", i, w, g.stdio)
		}
	}
	turns, summaries := modelRequests(llm)
	if len(turns) != 12 {
		t.Errorf("model turns = %d, want 12 (refused: %d)", len(turns), llm.Overflows())
	}
	if summaries == 0 {
		t.Fatal("no summary request: the session never compacted")
	}
	for i, req := range turns {
		if want := fmt.Sprintf("turn-%d:", i+1); !strings.Contains(lastUser(req), want) {
			t.Errorf("request %d does not end with its turn's message", i+1)
		}
		if n := fakellm.CountTokens(req); n > 100000 {
			t.Errorf("request %d has %d tokens, over the window", i+1, n)
		}
	}
	last := turns[len(turns)-1]
	text := requestText(last)
	if !strings.HasPrefix(last.Messages[0].Text, compaction.SummaryPrefix) || !strings.Contains(text, "## Latest unresolved user request") {
		t.Errorf("last request does not open with the summary: %.200q", last.Messages[0].Text)
	}
	if strings.Contains(text, "turn-1: please") {
		t.Error("the first turn is still sent verbatim after compaction")
	}
	msgs := history(t, c, "main")
	rows := boundaryRows(msgs, "compaction")
	if len(rows) == 0 {
		t.Fatalf("chat.history has no compaction row")
	}
	b, _ := json.Marshal(rows[0])
	if !strings.Contains(string(b), `"content":[{"text":"Compaction","type":"text"}]`) || !strings.Contains(string(b), `"tokensBefore"`) {
		t.Errorf("compaction row = %s", b)
	}
	got := texts(msgs)
	if !strings.Contains(strings.Join(got, "|"), "answer-12") {
		t.Errorf("no answer to the last turn in history")
	}
	list := call(t, c, "sessions.list", map[string]any{})
	rowsList, _ := list["sessions"].([]any)
	if len(rowsList) != 1 || rowsList[0].(map[string]any)["compactionCount"] == nil {
		t.Errorf("session row has no compactionCount: %v", list)
	}
	t.Logf("turns=%d compactions=%d summary calls=%d refused=%d last request tokens=%d", len(turns), len(rows), summaries, llm.Overflows(), fakellm.CountTokens(last))
}

// TestOverflowCompactsAndRetries: the provider's real limit is 70% of the
// advertised window, so turns are refused before the threshold; each
// refused turn is compacted, retried and answered.
func TestOverflowCompactsAndRetries(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key", ContextWindow: 70000})
	g := startModel(t, "", llm, windowModel(100000), "", "")
	c := g.dial(t)
	for i := 1; i <= 8; i++ {
		w := runTurn(t, c, "main", fmt.Sprintf("ovf-%d", i), bigTurn(i, 72))
		if w["status"] != "ok" {
			t.Fatalf("turn %d: %v\n%s", i, w, g.stdio)
		}
	}
	if llm.Overflows() == 0 {
		t.Fatal("the provider never refused a turn; the test does not exercise recovery")
	}
	msgs := history(t, c, "main")
	if !strings.Contains(strings.Join(texts(msgs), "|"), "answer-8") {
		t.Error("the last turn was not answered")
	}
	if len(boundaryRows(msgs, "compaction")) == 0 {
		t.Error("no compaction row after recovery")
	}
	t.Logf("refused=%d", llm.Overflows())
}

// TestCompactCommandAndMethod: /compact is handled by the gateway (only the
// summary call reaches the model) and sessions.compact compacts; the next
// request is smaller and carries the summary.
func TestCompactCommandAndMethod(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := startModel(t, "", llm, windowModel(100000), "", "")
	c := g.dial(t)
	for i := 1; i <= 6; i++ {
		if w := runTurn(t, c, "main", fmt.Sprintf("cmp-%d", i), bigTurn(i, 24)); w["status"] != "ok" {
			t.Fatalf("turn %d: %v", i, w)
		}
	}
	before, _ := modelRequests(llm)
	sizeBefore := fakellm.CountTokens(before[len(before)-1])

	res := call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "/compact Focus on TICKET-9", "idempotencyKey": "cmd-1"})
	if res["status"] != "ok" {
		t.Errorf("/compact chat.send = %v", res)
	}
	turns, summaries := modelRequests(llm)
	if len(turns) != len(before) || summaries != 1 {
		t.Errorf("/compact reached the model: turns %d→%d, summaries %d", len(before), len(turns), summaries)
	}
	all := llm.Requests()
	if sum := all[len(all)-1].Request; !strings.Contains(sum.Messages[0].Text, "Focus on TICKET-9") {
		t.Error("the /compact instructions are not in the summary prompt")
	}
	got := strings.Join(texts(history(t, c, "main")), "|")
	if !strings.Contains(got, "⚙️ Compacted (") || !strings.Contains(got, "• Context ") {
		t.Errorf("no /compact reply in history: %s", got[max(0, len(got)-300):])
	}
	if w := runTurn(t, c, "main", "cmp-7", "/reply after\nshort question"); w["status"] != "ok" {
		t.Fatalf("turn after /compact: %v", w)
	}
	turns, _ = modelRequests(llm)
	next := turns[len(turns)-1]
	if n := fakellm.CountTokens(next); n >= sizeBefore || !strings.HasPrefix(next.Messages[0].Text, compaction.SummaryPrefix) {
		t.Errorf("request after /compact: %d tokens (before %d), starts %.80q", n, sizeBefore, next.Messages[0].Text)
	}

	// /context shows the breakdown against the window, without a model call.
	n := llm.Count()
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "/context", "idempotencyKey": "ctx-1"})
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "/context json", "idempotencyKey": "ctx-2"})
	if llm.Count() != n {
		t.Errorf("/context reached the model")
	}
	ctxMsgs := texts(history(t, c, "main"))
	list, js := ctxMsgs[len(ctxMsgs)-2], strings.TrimPrefix(ctxMsgs[len(ctxMsgs)-1], "assistant: ")
	for _, want := range []string{"🧠 Context breakdown", "Model: fake/fake-1 • window 100k • compacts at 80k", "Tool schemas (JSON): ", "Compaction summary: ", "History: ", "Context "} {
		if !strings.Contains(list, want) {
			t.Errorf("/context lacks %q:\n%s", want, list)
		}
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(js), &rep); err != nil || rep["window"] != 100000.0 || rep["summaryChars"].(float64) == 0 {
		t.Errorf("/context json = %v (%v)", js, err)
	}
	// /context map answers with a PNG treemap of the same contributors.
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "/context map", "idempotencyKey": "ctx-3"})
	if llm.Count() != n {
		t.Errorf("/context map reached the model")
	}
	msgs := history(t, c, "main")
	last := msgs[len(msgs)-1]
	var img map[string]any
	for _, b := range last["content"].([]any) {
		if bm, _ := b.(map[string]any); bm["type"] == "image" {
			img = bm
		}
	}
	if img == nil || img["mimeType"] != "image/png" {
		t.Fatalf("/context map reply = %v", last)
	}
	if raw, derr := base64.StdEncoding.DecodeString(img["data"].(string)); derr != nil || !bytes.HasPrefix(raw, []byte("\x89PNG")) {
		t.Errorf("/context map image: %v, %d bytes", derr, len(raw))
	}

	// sessions.compact on another session.
	for i := 1; i <= 6; i++ {
		runTurn(t, c, "other", fmt.Sprintf("oth-%d", i), bigTurn(i, 24))
	}
	out := call(t, c, "sessions.compact", map[string]any{"key": "other"})
	r, _ := out["result"].(map[string]any)
	if out["ok"] != true || out["compacted"] != true || r == nil || r["tokensAfter"].(float64) >= r["tokensBefore"].(float64) ||
		!strings.HasPrefix(r["summary"].(string), "## Latest unresolved user request") || r["firstKeptEntryId"] == "" {
		t.Errorf("sessions.compact = %v", out)
	}
	tr := call(t, c, "sessions.compact", map[string]any{"key": "other", "maxLines": 2})
	if tr["compacted"] != true || tr["kept"] != 2.0 {
		t.Errorf("sessions.compact maxLines = %v", tr)
	}
	runTurn(t, c, "other", "oth-7", "/reply fine\nnext")
	turns, _ = modelRequests(llm)
	if last := turns[len(turns)-1]; len(last.Messages) > 3 {
		t.Errorf("after maxLines 2 the model got %d messages", len(last.Messages))
	}
	var werr *wire.Error
	err := c.Call(context.Background(), "sessions.compact", map[string]any{"key": "nope"}, nil)
	if !errors.As(err, &werr) || werr.Code != wire.CodeInvalidRequest {
		t.Errorf("sessions.compact on a missing session: %v", err)
	}
	hello := c.Hello()
	if hello == nil || !strings.Contains(strings.Join(hello.Features.Methods, ","), "sessions.compact") {
		t.Error("sessions.compact not in features.methods")
	}
}

// TestNewAndReset: /new and /reset are answered by the gateway with no
// model call, the next request carries no old turn, and chat.history shows
// the Reset row; sessions.reset honours expectedSessionId.
func TestNewAndReset(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := start(t, "", llm)
	c := g.dial(t)
	runTurn(t, c, "main", "nr-1", "/reply one\nremember OLD-1")
	n := llm.Count()
	for _, tc := range []struct{ cmd, reply string }{{"/new", "✅ New session started."}, {"/reset", "✅ Session reset."}} {
		res := call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": tc.cmd, "idempotencyKey": "cmd" + tc.cmd})
		if res["status"] != "ok" || llm.Count() != n {
			t.Errorf("%s: %v, model requests %d→%d", tc.cmd, res, n, llm.Count())
		}
		msgs := history(t, c, "main")
		if len(msgs) != 2 || len(boundaryRows(msgs[:1], "reset")) != 1 || texts(msgs[1:])[0] != "assistant: "+tc.reply {
			t.Errorf("%s: history = %v", tc.cmd, msgs)
		}
	}
	// Text after /new runs as the first turn and carries no old turn.
	w := runTurn(t, c, "main", "nr-2", "/new /reply fresh\nhello")
	if w["status"] != "ok" {
		t.Fatalf("/new with text: %v", w)
	}
	turns, _ := modelRequests(llm)
	last := turns[len(turns)-1]
	if strings.Contains(requestText(last), "OLD-1") || !strings.Contains(lastUser(last), "hello") {
		t.Errorf("request after /new = %q", requestText(last))
	}
	// sessions.reset with and without expectedSessionId.
	hist := call(t, c, "chat.history", map[string]any{"sessionKey": "main"})
	id, _ := hist["sessionId"].(string)
	var werr *wire.Error
	err := c.Call(context.Background(), "sessions.reset", map[string]any{"key": "main", "expectedSessionId": "stale"}, nil)
	if !errors.As(err, &werr) || werr.Code != wire.CodeInvalidRequest || !strings.Contains(string(werr.Details), `"reason":"session-changed"`) {
		t.Errorf("stale expectedSessionId: %v", err)
	}
	out := call(t, c, "sessions.reset", map[string]any{"key": "main", "expectedSessionId": id})
	entry, _ := out["entry"].(map[string]any)
	if entry["sessionId"] == id || entry["previousSessionId"] != id {
		t.Errorf("sessions.reset = %v", out)
	}
	msgs := history(t, c, "main")
	if len(msgs) != 1 || len(boundaryRows(msgs, "reset")) != 1 {
		t.Errorf("history after sessions.reset = %v", msgs)
	}
	runTurn(t, c, "main", "nr-3", "/reply clean\nafter reset")
	turns, _ = modelRequests(llm)
	if last := turns[len(turns)-1]; len(last.Messages) != 1 {
		t.Errorf("request after sessions.reset has %d messages: %q", len(last.Messages), requestText(last))
	}
}

// blockSummaries returns fakellm options whose first summary request
// blocks until release is closed (or the request ends); started is closed
// when it arrives.
func blockSummaries(window int) (opts fakellm.Options, started, release chan struct{}) {
	started, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	opts = fakellm.Options{APIKey: "llm-key", ContextWindow: window, OnRequest: func(r *http.Request, req *provider.Request) {
		if !fakellm.IsSummaryRequest(req) {
			return
		}
		first := false
		once.Do(func() { first = true })
		if !first {
			return
		}
		close(started)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}}
	return opts, started, release
}

// TestQueuedMessageAcrossCompaction: a message accepted while the summary
// is being written runs after it, once, with the summary in its request.
func TestQueuedMessageAcrossCompaction(t *testing.T) {
	opts, started, release := blockSummaries(100000)
	llm := fakellm.Start(t, opts)
	g := startModel(t, "", llm, windowModel(100000), "", "")
	c := g.dial(t)
	// Two turns fill about 61k of the 80k threshold; the third, as big,
	// compacts before it is sent.
	for i := 1; i <= 2; i++ {
		if w := runTurn(t, c, "main", fmt.Sprintf("q-%d", i), bigTurn(i, 90)); w["status"] != "ok" {
			t.Fatalf("turn %d: %v", i, w)
		}
	}
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "/reply four\nquestion four\n" + bigTurn(4, 90), "idempotencyKey": "q-4"})
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("turn 4 did not compact first")
	}
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "/reply five\nquestion five", "idempotencyKey": "q-5", "queueMode": "followup"})
	close(release)
	for _, id := range []string{"q-4", "q-5"} {
		if w := call(t, c, "agent.wait", map[string]any{"runId": id, "timeoutMs": 60000}); w["status"] != "ok" {
			t.Fatalf("%s: %v", id, w)
		}
	}
	turns, _ := modelRequests(llm)
	var four, five int
	for _, req := range turns {
		switch lu := lastUser(req); {
		case strings.HasPrefix(lu, "/reply four\nquestion four"):
			four++
		case strings.Contains(lu, "question five"):
			five++
			if !strings.HasPrefix(req.Messages[0].Text, compaction.SummaryPrefix) {
				t.Error("the queued message's request does not carry the summary")
			}
		}
	}
	if four != 1 || five != 1 {
		t.Errorf("requests for turn 4: %d, turn 5: %d; want 1 each", four, five)
	}
	got := strings.Join(texts(history(t, c, "main")), "|")
	if !strings.Contains(got, "question five") || !strings.Contains(got, "assistant: five") {
		t.Errorf("history lost the queued turn: …%s", got[max(0, len(got)-400):])
	}
}

// TestKillDuringCompaction: kill -9 while the summary is being written
// leaves the transcript whole (no half compaction); after a restart the
// session answers.
func TestKillDuringCompaction(t *testing.T) {
	dir := t.TempDir()
	opts, started, _ := blockSummaries(100000)
	llm := fakellm.Start(t, opts)
	// Background summaries off: the summary the test kills must be turn
	// 4's own, not one started in the background after turn 2 (then turn
	// 4 could still be queued at the kill, and would rightly run after
	// the restart).
	noBackground := `compaction: { background: { enabled: false } },`
	g := startDefaults(t, dir, llm, windowModel(100000), noBackground, "", "")
	c := g.dial(t)
	// Two turns fill about 61k of the 80k threshold; the third, as big,
	// compacts before it is sent.
	for i := 1; i <= 2; i++ {
		if w := runTurn(t, c, "main", fmt.Sprintf("k-%d", i), bigTurn(i, 90)); w["status"] != "ok" {
			t.Fatalf("turn %d: %v", i, w)
		}
	}
	call(t, c, "chat.send", map[string]any{"sessionKey": "main", "message": "/reply four\nquestion four\n" + bigTurn(4, 90), "idempotencyKey": "k-4"})
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("turn 4 did not compact first")
	}
	c.Close()
	g.kill()

	llm2 := fakellm.Start(t, fakellm.Options{APIKey: "llm-key", ContextWindow: 100000})
	g2 := startDefaults(t, dir, llm2, windowModel(100000), noBackground, "", "")
	c2 := g2.dial(t)
	msgs := history(t, c2, "main")
	if n := len(boundaryRows(msgs, "compaction")); n != 0 {
		t.Errorf("%d compaction rows after a kill before the summary was written", n)
	}
	got := strings.Join(texts(msgs), "|")
	if !strings.Contains(got, "question four") {
		t.Error("the message accepted before the kill is gone")
	}
	if w := call(t, c2, "agent.wait", map[string]any{"runId": "k-4", "timeoutMs": 5000}); w["status"] == "ok" {
		t.Errorf("k-4 = %v, want it recorded as interrupted", w)
	}
	if w := runTurn(t, c2, "main", "k-5", "/reply five\nquestion five"); w["status"] != "ok" {
		t.Fatalf("turn after restart: %v\n%s", w, g2.stdio)
	}
	turns, summaries := modelRequests(llm2)
	if summaries == 0 || len(turns) != 1 || !strings.HasPrefix(turns[0].Messages[0].Text, compaction.SummaryPrefix) {
		t.Errorf("after restart: %d turns, %d summaries", len(turns), summaries)
	}
	if len(boundaryRows(history(t, c2, "main"), "compaction")) != 1 {
		t.Error("the compaction after restart is not in chat.history")
	}
}
