package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

func TestBackgroundStateOnePerSession(t *testing.T) {
	var b backgroundState
	if !b.start("s1") || b.start("s1") {
		t.Fatal("a second summary of one session started while one is in flight")
	}
	if !b.start("s2") {
		t.Fatal("another session's summary was refused")
	}
	b.done("s1", nil) // failed: nothing waits
	if b.has("s1") || !b.start("s1") {
		t.Fatal("a failed summary blocks the next one")
	}
	b.done("s1", &readySummary{})
	if !b.has("s1") || b.start("s1") {
		t.Fatal("a ready summary must be applied before the next starts")
	}
	if b.take("s1") == nil || b.has("s1") || b.take("s1") != nil {
		t.Fatal("take must hand the summary out once")
	}
}

// bgHarness is a runner with background summaries over a transcript of
// about 200,000 estimated tokens.
func bgHarness(t *testing.T) (*harness, *store.Session, Model, *budget) {
	t.Helper()
	h := newHarness(t, summariser(echo), func(c *Config) {
		c.Models = windowModels{c.Models.(staticModels).p, 1 << 20}
		c.HistoryLimit = 1000
		c.Compaction.Background.Enabled = true
	})
	sess := fillTranscript(t, h, "agent:main:main", 800, 1000)
	m, _ := h.runner.cfg.Models.ResolveModel("main", "")
	bud, _ := h.runner.newBudget(m)
	return h, sess, m, bud
}

// TestBackgroundSummaryKeepsLaterMessages: messages appended while the
// summary was written stay in the view after it is applied, and the
// compaction is one entry.
func TestBackgroundSummaryKeepsLaterMessages(t *testing.T) {
	h, sess, m, bud := bgHarness(t)
	ctx := context.Background()
	ready := h.runner.backgroundSummary(ctx, &bgTrigger{sess: sess, model: m, budget: bud})
	if ready == nil {
		t.Fatal("no summary")
	}
	before, _ := h.store.CountMessages(ctx, sess.SessionID)
	now := time.Now()
	late := transcript.NewUserMessage("LATE-7 arrived while the summary was written", now)
	if _, err := h.store.AppendMessages(ctx, sess.SessionID, []store.Message{{SessionID: sess.SessionID, Entry: transcript.MessageEntry(late, now), Role: late.Role}}); err != nil {
		t.Fatal(err)
	}
	h.runner.bg.start(sess.SessionID)
	h.runner.bg.done(sess.SessionID, ready)
	h.runner.applyReady(ctx, nil, sess, m)
	after, _ := h.store.CountMessages(ctx, sess.SessionID)
	if after != before+2 {
		t.Errorf("entries %d → %d, want the late message and one compaction entry", before, after)
	}
	v, err := h.runner.view(ctx, sess.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	msgs := v.messages()
	if !v.compacted || !strings.HasPrefix(msgs[0].Text, compaction.SummaryPrefix) || msgs[len(msgs)-1].Text != late.Content.Text() {
		t.Errorf("view after apply: compacted=%v first=%.60q last=%.60q", v.compacted, msgs[0].Text, msgs[len(msgs)-1].Text)
	}
	if n := h.runner.viewTokens(m, msgs); n > 40000 {
		t.Errorf("view after apply = %d tokens", n)
	}
}

// TestBackgroundSummaryDiscardedAfterReset: a summary written before the
// session was reset (or compacted otherwise) is never applied.
func TestBackgroundSummaryDiscardedAfterReset(t *testing.T) {
	h, sess, m, bud := bgHarness(t)
	ctx := context.Background()
	ready := h.runner.backgroundSummary(ctx, &bgTrigger{sess: sess, model: m, budget: bud})
	if ready == nil {
		t.Fatal("no summary")
	}
	reset := transcript.Entry{Type: transcript.TypeReset, Timestamp: transcript.FormatTime(time.Now())}
	if _, err := h.store.AppendMessages(ctx, sess.SessionID, []store.Message{{SessionID: sess.SessionID, Entry: reset}}); err != nil {
		t.Fatal(err)
	}
	before, _ := h.store.CountMessages(ctx, sess.SessionID)
	h.runner.bg.start(sess.SessionID)
	h.runner.bg.done(sess.SessionID, ready)
	h.runner.applyReady(ctx, nil, sess, m)
	if after, _ := h.store.CountMessages(ctx, sess.SessionID); after != before || h.runner.bg.has(sess.SessionID) {
		t.Errorf("a stale summary was applied (entries %d → %d)", before, after)
	}
}

func TestWithoutPendingInput(t *testing.T) {
	u := provider.Message{Role: provider.RoleUser, Text: "u"}
	a := provider.Message{Role: provider.RoleAssistant, Text: "a"}
	for _, tc := range []struct {
		in   []provider.Message
		want int
	}{{nil, 0}, {[]provider.Message{u}, 0}, {[]provider.Message{u, a}, 2}, {[]provider.Message{u, a, u, u}, 2}} {
		if got := withoutPendingInput(tc.in); len(got) != tc.want {
			t.Errorf("withoutPendingInput(%d msgs) = %d msgs, want %d", len(tc.in), len(got), tc.want)
		}
	}
}

// TestManySessionsBackgroundSummaries: many sessions past the soft
// threshold at once each get exactly one background summary, at most
// MaxConcurrent run at the same time, no turn waits for one, and each
// session's next turn applies its own.
func TestManySessionsBackgroundSummaries(t *testing.T) {
	const sessions, limit = 40, 3
	var mu sync.Mutex
	active, peak, calls := 0, 0, 0
	h := newHarness(t, summariser(func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		return textReply("ok"), nil
	}), func(c *Config) {
		c.Models = windowModels{c.Models.(staticModels).p, 100000}
		c.Compaction = CompactionConfig{MaxConcurrent: limit, Background: BackgroundConfig{Enabled: true, SoftThresholdTokens: 70000}}
	})
	inner := h.prov.fn
	h.prov.fn = func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		if req.System == compaction.SystemPrompt {
			mu.Lock()
			active++
			calls++
			peak = max(peak, active)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			defer func() { mu.Lock(); active--; mu.Unlock() }()
		}
		return inner(ctx, req)
	}
	keys := make([]string, sessions)
	for i := range keys {
		keys[i] = fmt.Sprint("agent:main:bg", i)
		// About 40k estimated tokens: past the 10k soft threshold, below
		// the 80k compaction threshold whatever the calibration.
		fillTranscript(t, h, keys[i], 40, 4000)
	}
	ctx := context.Background()
	round := func(r int) {
		for i, k := range keys {
			if _, _, err := h.runner.Submit(ctx, Input{RunID: fmt.Sprint("r", r, "-", i), SessionKey: k, AgentID: "main", Message: "go"}); err != nil {
				t.Fatal(err)
			}
		}
		for i, k := range keys {
			if got := h.wait(fmt.Sprint("r", r, "-", i)); got.Status != store.RunOK {
				t.Fatalf("%s: %+v", k, got)
			}
		}
	}
	idle := func() {
		deadline := time.Now().Add(30 * time.Second)
		for {
			h.runner.bg.mu.Lock()
			n := len(h.runner.bg.inflight)
			h.runner.bg.mu.Unlock()
			if n == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d background summaries still running", n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	round(1)
	idle()
	mu.Lock()
	if calls != sessions || peak > limit || peak == 0 {
		t.Errorf("summary calls = %d (want %d), peak concurrent = %d (limit %d)", calls, sessions, peak, limit)
	}
	mu.Unlock()
	for _, k := range keys {
		for _, m := range h.transcript(k) {
			if m.Entry.Type == transcript.TypeCompaction {
				t.Fatalf("%s: compacted inline or before its next turn", k)
			}
		}
	}
	round(2)
	for _, k := range keys {
		n := 0
		for _, m := range h.transcript(k) {
			if m.Entry.Type == transcript.TypeCompaction {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: %d compactions after the next turn, want 1", k, n)
		}
	}
	idle()
}

// TestFullWindowWaitsForBackgroundSummary: a turn that reaches the
// compaction threshold while the session's background summary is being
// written waits for it and uses it, instead of writing a second one.
func TestFullWindowWaitsForBackgroundSummary(t *testing.T) {
	// bgCalling is closed when the background summary call reaches the
	// model (it then holds the session's compaction lock until release);
	// compacting when the turn starts its own compaction, which waits for
	// that lock.
	release, bgCalling, compacting := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var compactingOnce sync.Once
	var mu sync.Mutex
	summaries, atTurn := 0, 0
	var lastReq *provider.Request
	sum := summariser(func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		mu.Lock()
		lastReq, atTurn = req, summaries
		mu.Unlock()
		return textReply("ok"), nil
	})
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		if req.System == compaction.SystemPrompt {
			mu.Lock()
			summaries++
			first := summaries == 1
			mu.Unlock()
			if first {
				close(bgCalling)
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
		}
		return sum(ctx, req)
	}, func(c *Config) {
		c.Models = windowModels{c.Models.(staticModels).p, 100000}
		c.Compaction = CompactionConfig{Background: BackgroundConfig{Enabled: true, SoftThresholdTokens: 70000}}
		c.OnCompact = func(_ context.Context, phase string, _ *store.Session, _ *CompactResult) {
			if phase == CompactBefore {
				compactingOnce.Do(func() { close(compacting) })
			}
		}
	})
	sess := fillTranscript(t, h, "agent:main:main", 40, 4000) // ≈ 40k tokens
	m, _ := h.runner.cfg.Models.ResolveModel("main", "")
	bud, _ := h.runner.newBudget(m)
	st := &runState{run: &store.Run{RunID: "prev", SessionKey: sess.Key, SessionID: sess.SessionID}, bg: &bgTrigger{sess: sess, model: m, budget: bud, est: 40000}}
	h.runner.maybeBackground(st)
	<-bgCalling
	ctx := context.Background()
	big := strings.Repeat("a large pasted document line ", 6000) // ≈ 45k tokens: past 80k with the history
	if _, _, err := h.runner.Submit(ctx, Input{RunID: "full", SessionKey: sess.Key, AgentID: "main", Message: big}); err != nil {
		t.Fatal(err)
	}
	<-compacting // the run now waits for the background summary
	close(release)
	if got := h.wait("full"); got.Status != store.RunOK {
		t.Fatalf("run: %+v", got)
	}
	n := 0
	for _, e := range h.transcript(sess.Key) {
		if e.Entry.Type == transcript.TypeCompaction {
			n++
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// (The turn ends past the soft threshold again, so a new background
	// summary may start after it; it is not applied before a next turn.)
	if atTurn != 1 || n != 1 {
		t.Errorf("summary calls before the turn's model call = %d, compactions = %d; want 1 and 1", atTurn, n)
	}
	if lastReq == nil || !strings.HasPrefix(lastReq.Messages[0].Text, compaction.SummaryPrefix) || lastUser(lastReq) != big {
		t.Error("the turn's request does not carry the background summary and its input")
	}
}
