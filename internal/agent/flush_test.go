package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
)

// TestMemoryFlushOncePerCycleAndOnlyWritable: a session past the flush
// threshold gets one flush before its compaction; a second turn in the
// same cycle gets none; a run that may not write its workspace gets none.
func TestMemoryFlushOncePerCycleAndOnlyWritable(t *testing.T) {
	for _, writable := range []bool{true, false} {
		t.Run(fmt.Sprint("writable=", writable), func(t *testing.T) {
			var mu sync.Mutex
			var kinds []string
			h := newHarness(t, summariser(func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
				mu.Lock()
				if strings.Contains(req.System, compaction.FlushSystemMarker) {
					kinds = append(kinds, "flush")
				} else {
					kinds = append(kinds, "turn")
				}
				mu.Unlock()
				if strings.Contains(req.System, compaction.FlushSystemMarker) {
					return textReply(compaction.SilentToken), nil
				}
				return textReply("ok"), nil
			}), func(c *Config) {
				c.Models = windowModels{c.Models.(staticModels).p, 100000}
				c.Compaction.MemoryFlush = MemoryFlushConfig{Enabled: true, Writable: func(RunInfo) bool { return writable }}
			})
			// About 78k estimated tokens: past the 76k flush threshold,
			// and the turn's input passes the 80k compaction threshold.
			fillTranscript(t, h, "agent:main:main", 40, 7800)
			ctx := context.Background()
			for i := range 2 {
				id := fmt.Sprint("r", i)
				if _, _, err := h.runner.Submit(ctx, Input{RunID: id, SessionKey: "agent:main:main", AgentID: "main", Message: "go"}); err != nil {
					t.Fatal(err)
				}
				if got := h.wait(id); got.Status != store.RunOK {
					t.Fatalf("%s: %+v", id, got)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			want := "turn,turn"
			if writable {
				want = "flush,turn,turn"
			}
			if got := strings.Join(kinds, ","); got != want {
				t.Errorf("model calls = %s, want %s", got, want)
			}
			for _, m := range h.transcript("agent:main:main") {
				if msg := m.Entry.Message; msg != nil && strings.Contains(msg.Content.Text(), compaction.SilentToken) {
					t.Error("the flush reply was stored")
				}
			}
		})
	}
}

func TestCompactionCount(t *testing.T) {
	for _, tt := range []struct {
		extra string
		want  int64
	}{
		{"", 0},
		{`{"compactionCount":3,"other":"x"}`, 3},
		{`{"other":1}`, 0},
		{`{"compactionCount":"3"}`, 0},
		{`not json`, 0},
	} {
		if got := CompactionCount(&store.Session{Extra: []byte(tt.extra)}); got != tt.want {
			t.Errorf("CompactionCount(%s) = %d, want %d", tt.extra, got, tt.want)
		}
	}
}
