package agent

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// idle waits until the runner has no lane left.
func (h *harness) idle() {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		h.runner.mu.Lock()
		n := len(h.runner.lanes)
		h.runner.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	h.t.Fatal("lanes still busy")
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func TestAutomaticResets(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rule   compaction.ResetRule
		start  string        // first turn
		gap    time.Duration // until the second turn
		reason string        // "" = same session
	}{
		{"daily: across 4:00", compaction.ResetRule{Mode: compaction.ResetDaily, AtHour: 4}, "2026-01-01T03:30:00Z", time.Hour, compaction.ResetDaily},
		{"daily: same day", compaction.ResetRule{Mode: compaction.ResetDaily, AtHour: 4}, "2026-01-01T05:00:00Z", 10 * time.Hour, ""},
		{"idle: expired", compaction.ResetRule{Mode: compaction.ResetIdle, IdleMinutes: 60}, "2026-01-01T05:00:00Z", 61 * time.Minute, compaction.ResetIdle},
		{"idle: fresh", compaction.ResetRule{Mode: compaction.ResetIdle, IdleMinutes: 60}, "2026-01-01T05:00:00Z", 59 * time.Minute, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start, _ := time.Parse(time.RFC3339, tc.start)
			clock := &fakeClock{t: start}
			var seen []*provider.Request
			var mu sync.Mutex
			h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
				mu.Lock()
				seen = append(seen, req)
				mu.Unlock()
				return textReply("ok"), nil
			}, func(c *Config) {
				c.Now = clock.now
				c.ResetRule = func(*store.Session) compaction.ResetRule { return tc.rule }
			})
			h.submit(Input{RunID: "r1", Message: "old turn"})
			h.wait("r1")
			h.idle()
			ctx := context.Background()
			before, _ := h.store.GetSession(ctx, "agent:main:main")
			clock.add(tc.gap)
			h.submit(Input{RunID: "r2", Message: "new turn"})
			h.wait("r2")
			after, _ := h.store.GetSession(ctx, "agent:main:main")
			msgs := h.transcript("agent:main:main")
			mu.Lock()
			last := seen[len(seen)-1]
			mu.Unlock()
			carriesOld := strings.Contains(last.Messages[0].Text, "old turn")
			if tc.reason == "" {
				if after.SessionID != before.SessionID || !carriesOld {
					t.Errorf("session was reset (%s → %s)", before.SessionID, after.SessionID)
				}
				return
			}
			if after.SessionID == before.SessionID || carriesOld {
				t.Fatalf("session not reset: %s, request %+v", after.SessionID, last.Messages)
			}
			if msgs[0].Entry.Type != transcript.TypeReset || !strings.Contains(string(msgs[0].Entry.Extra["reason"]), tc.reason) {
				t.Errorf("first entry = %s %s", msgs[0].Entry.Type, msgs[0].Entry.Extra["reason"])
			}
			if !strings.Contains(string(after.Extra), `"previousSessionId":"`+before.SessionID+`"`) {
				t.Errorf("extra = %s", after.Extra)
			}
		})
	}
}

// TestAutomaticResetSkipsNonHumanInput: announces and session sends do
// not roll a session.
func TestAutomaticResetSkipsNonHumanInput(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 5, 0, 0, 0, time.UTC)}
	h := newHarness(t, echo, func(c *Config) {
		c.Now = clock.now
		c.ResetRule = func(*store.Session) compaction.ResetRule {
			return compaction.ResetRule{Mode: compaction.ResetIdle, IdleMinutes: 1}
		}
	})
	h.submit(Input{RunID: "r1", Message: "hi"})
	h.wait("r1")
	h.idle()
	before, _ := h.store.GetSession(context.Background(), "agent:main:main")
	clock.add(time.Hour)
	h.submit(Input{RunID: "r2", Message: "from another session", Provenance: &Provenance{Kind: "inter_session"}})
	h.wait("r2")
	after, _ := h.store.GetSession(context.Background(), "agent:main:main")
	if after.SessionID != before.SessionID {
		t.Error("inter-session input reset the session")
	}
}
