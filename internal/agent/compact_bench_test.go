package agent

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// fillTranscript appends n user/assistant messages of size bytes each to
// the session of key, created first.
func fillTranscript(tb testing.TB, h *harness, key string, n, size int) *store.Session {
	tb.Helper()
	ctx := context.Background()
	sess, err := h.store.UpdateSession(ctx, key, true, func(s *store.Session) error {
		if s.SessionID == "" {
			s.SessionID, s.AgentID = "sess-"+strings.ReplaceAll(key, ":", "-"), "main"
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	text := strings.Repeat("lorem ipsum dolor sit amet ", size/27+1)[:size]
	now := time.Now()
	const batch = 500
	for i := 0; i < n; i += batch {
		var msgs []store.Message
		for j := i; j < min(i+batch, n); j++ {
			var m *transcript.Message
			if j%2 == 0 {
				m = transcript.NewUserMessage(fmt.Sprint(j, " ", text), now)
			} else {
				m = transcript.NewAssistantMessage([]transcript.Block{transcript.TextBlock(text)}, now)
			}
			msgs = append(msgs, store.Message{SessionID: sess.SessionID, Entry: transcript.MessageEntry(m, now), Role: m.Role})
		}
		if _, err := h.store.AppendMessages(ctx, sess.SessionID, msgs); err != nil {
			tb.Fatal(err)
		}
	}
	return sess
}

// BenchmarkBudgetCheck measures what a turn in a session that needs no
// compaction pays for context management on a 10,000-message transcript:
// "baseline" is what building the request cost before (the cached history
// window as model messages), "prepare" adds the view (finding the last
// boundary) and the budget check against the window.
func BenchmarkBudgetCheck(b *testing.B) {
	h := newHarness(b, echo, func(c *Config) {
		c.Models = windowModels{c.Models.(staticModels).p, 1 << 30}
		c.Compaction.MemoryFlush.Enabled = true
		c.Compaction.Background.Enabled = true
	})
	sess := fillTranscript(b, h, "agent:main:main", 10000, 200)
	m, _ := h.runner.cfg.Models.ResolveModel("main", "")
	bud, _ := h.runner.newBudget(m)
	ctx := context.Background()
	run := func(b *testing.B, step func() error) {
		if err := step(); err != nil { // warm the window cache
			b.Fatal(err)
		}
		lat := make([]time.Duration, 0, b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			t0 := time.Now()
			if err := step(); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		b.StopTimer()
		b.ReportMetric(float64(p99(lat).Microseconds()), "p99-µs")
	}
	b.Run("baseline", func(b *testing.B) {
		run(b, func() error {
			hist, err := h.runner.history(ctx, sess.SessionID)
			_ = toProviderMessages(hist)
			return err
		})
	})
	b.Run("prepare", func(b *testing.B) {
		run(b, func() error {
			_, err := h.runner.prepare(ctx, nil, sess, m, bud, &provider.Request{Model: "fake-1", System: "system prompt"}, nil)
			return err
		})
	})
	// prepare-o200k counts with OpenAI's tokenizer, as for a gpt-4o
	// model: each message is tokenized once, then its count is found by
	// its hash.
	mo := m
	mo.ModelID = "gpt-4o"
	b.Run("prepare-o200k", func(b *testing.B) {
		run(b, func() error {
			_, err := h.runner.prepare(ctx, nil, sess, mo, bud, &provider.Request{Model: "gpt-4o", System: "system prompt"}, nil)
			return err
		})
	})
	// turn-start is the first model call of a turn: it also looks for a
	// ready background summary and checks the memory-flush threshold.
	ft := &flushTurn{info: RunInfo{SessionKey: sess.Key, AgentID: "main"}}
	b.Run("turn-start", func(b *testing.B) {
		run(b, func() error {
			_, err := h.runner.prepare(ctx, nil, sess, m, bud, &provider.Request{Model: "fake-1", System: "system prompt"}, ft)
			return err
		})
	})
}

// BenchmarkBackground200k writes the background summary of a transcript
// of about 200,000 estimated tokens with an instant summariser (so the
// model call is left out), then applies it as the next turn start does;
// it reports the p99 of each step and the heap after against before.
func BenchmarkBackground200k(b *testing.B) {
	h := newHarness(b, summariser(echo), func(c *Config) {
		c.Models = windowModels{c.Models.(staticModels).p, 1 << 20}
		c.HistoryLimit = 1000
		c.Compaction.Background.Enabled = true
	})
	ctx := context.Background()
	m, _ := h.runner.cfg.Models.ResolveModel("main", "")
	bud, _ := h.runner.newBudget(m)
	var sessions []*store.Session
	for i := range b.N {
		sessions = append(sessions, fillTranscript(b, h, fmt.Sprint("agent:main:bg", i), 800, 1000))
	}
	for _, sess := range sessions {
		if _, err := h.runner.view(ctx, sess.SessionID); err != nil {
			b.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	write := make([]time.Duration, 0, b.N)
	apply := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		sess := sessions[i]
		t0 := time.Now()
		ready := h.runner.backgroundSummary(ctx, &bgTrigger{sess: sess, model: m, budget: bud})
		if ready == nil {
			b.Fatal("no background summary")
		}
		h.runner.bg.start(sess.SessionID)
		h.runner.bg.done(sess.SessionID, ready)
		t1 := time.Now()
		h.runner.applyReady(ctx, nil, sess, m)
		apply = append(apply, time.Since(t1))
		write = append(write, t1.Sub(t0))
		if h.runner.bg.has(sess.SessionID) {
			b.Fatal("summary not applied")
		}
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(p99(write).Microseconds())/1000, "write-p99-ms")
	b.ReportMetric(float64(p99(apply).Microseconds())/1000, "apply-p99-ms")
	b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/(1<<20), "heap-growth-MB")
}

// BenchmarkCompact200k compacts a transcript of about 200,000 estimated
// tokens with an instant summariser, and reports the heap after the
// compactions against before.
func BenchmarkCompact200k(b *testing.B) {
	h := newHarness(b, summariser(echo), func(c *Config) {
		c.Models = windowModels{c.Models.(staticModels).p, 1 << 20}
		c.HistoryLimit = 1000
	})
	ctx := context.Background()
	var sessions []*store.Session
	for i := range b.N {
		sessions = append(sessions, fillTranscript(b, h, fmt.Sprint("agent:main:s", i), 800, 1000))
	}
	for _, sess := range sessions {
		if _, err := h.runner.view(ctx, sess.SessionID); err != nil { // the turn that triggers it read the history
			b.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		res, err := h.runner.Compact(ctx, sessions[i].Key, "")
		if err != nil || !res.Compacted || res.TokensBefore < 200000 {
			b.Fatalf("Compact = %+v, %v", res, err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(p99(lat).Milliseconds()), "p99-ms")
	b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/(1<<20), "heap-growth-MB")
}
