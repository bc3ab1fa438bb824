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
	"github.com/switchboardhq/switchboard/internal/store/sqlite/walvfs"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// TestWarmTurnOneCommit: with a model that answers within OpenLinger, a
// warm turn on an idle lane is one commit (one WAL write): the run's open
// waits for its end. With OpenLinger negative it is two. Either way Submit
// returns a run that is stored, and the transcript holds both messages.
func TestWarmTurnOneCommit(t *testing.T) {
	for _, tc := range []struct {
		linger time.Duration
		writes int64
	}{{time.Hour, 1}, {-1, 2}} {
		t.Run(fmt.Sprint("linger=", tc.linger), func(t *testing.T) {
			h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
				return textReply("reply " + lastUser(req)), nil
			}, func(cfg *Config) { cfg.OpenLinger = tc.linger })
			ended := make(chan *store.Run, 1)
			h.runner.Subscribe(func(ev Event) {
				if ev.Stream == StreamLifecycle && ev.Phase == PhaseEnd {
					ended <- ev.Run
				}
			})
			turn := func(i int) {
				t.Helper()
				run := h.submit(Input{RunID: fmt.Sprint("run-", i), Message: fmt.Sprint("m", i)})
				if got, err := h.store.GetRun(context.Background(), run.RunID); err != nil || got.RunID != run.RunID {
					t.Fatalf("run %d not stored when Submit returned: %+v, %v", i, got, err)
				}
				if got := <-ended; got.Status != store.RunOK {
					t.Fatalf("run %d: %+v", i, got)
				}
				h.idle()
			}
			turn(0) // the session's creation is a write of its own
			const turns = 5
			before := walvfs.Writes()
			for i := 1; i <= turns; i++ {
				turn(i)
			}
			if got := (walvfs.Writes() - before) / turns; got != tc.writes {
				t.Errorf("a warm turn made %d WAL writes, want %d", got, tc.writes)
			}
			if got := len(h.transcript("agent:main:main")); got != 2*(turns+1) {
				t.Errorf("transcript holds %d entries, want %d", got, 2*(turns+1))
			}
		})
	}
}

// TestLingerSlowModel: a model slower than OpenLinger does not hold
// Submit back: the open commits on its own when its time is up, and the
// run ends later as usual.
func TestLingerSlowModel(t *testing.T) {
	release := make(chan struct{})
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		<-release
		return textReply("late"), nil
	}, func(cfg *Config) { cfg.OpenLinger = time.Millisecond })
	unblock := releaser(t, release)
	run := h.submit(Input{RunID: "slow", Message: "hi"})
	got, err := h.store.GetRun(context.Background(), run.RunID)
	if err != nil || got.Status != store.RunRunning {
		t.Fatalf("GetRun while the model works = %+v, %v; want the run stored running", got, err)
	}
	if msgs := h.transcript("agent:main:main"); len(msgs) != 1 {
		t.Fatalf("transcript while the model works holds %d entries, want the input", len(msgs))
	}
	unblock()
	if fin := h.wait(run.RunID); fin.Status != store.RunOK {
		t.Fatalf("run ended %+v", fin)
	}
}

// TestLingerReadCommits: a run whose turn must read its transcript from
// the store (another writer appended to it) commits its open before the
// read, whatever OpenLinger is: Submit returns while the model still
// works, and the model is sent the input.
func TestLingerReadCommits(t *testing.T) {
	release := make(chan struct{})
	seen := make(chan []provider.Message, 2)
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		seen <- req.Messages
		if lastUser(req) == "second" {
			<-release
		}
		return textReply("ok"), nil
	}, func(cfg *Config) { cfg.OpenLinger = time.Hour })
	unblock := releaser(t, release)
	first := h.submit(Input{RunID: "first", Message: "first"})
	h.wait(first.RunID)
	<-seen
	h.idle()
	// Another writer's entry: the next turn's cached window no longer
	// ends the transcript, and the turn reads it.
	sess, err := h.store.GetSession(context.Background(), "agent:main:main")
	if err != nil {
		t.Fatal(err)
	}
	note := transcript.NewUserMessage("a note", time.Now())
	if _, err := h.store.AppendMessages(context.Background(), sess.SessionID,
		[]store.Message{{Entry: transcript.MessageEntry(note, time.Now()), Role: note.Role}}); err != nil {
		t.Fatal(err)
	}
	submitted := make(chan *store.Run, 1)
	go func() {
		run, _, err := h.runner.Submit(context.Background(), Input{RunID: "second", SessionKey: "agent:main:main", AgentID: "main", Message: "second"})
		if err != nil {
			t.Error(err)
		}
		submitted <- run
	}()
	if msgs := <-seen; lastUser(&provider.Request{Messages: msgs}) != "second" {
		t.Fatalf("model was sent %+v; want the input last", msgs)
	}
	var second *store.Run
	select {
	case second = <-submitted:
	case <-time.After(30 * time.Second): // a watchdog, not a wait: the model holds the run
		t.Fatal("Submit did not return while the model worked: the run's read did not commit its open")
	}
	if second == nil {
		t.FailNow()
	}
	if got, err := h.store.GetRun(context.Background(), second.RunID); err != nil || got.Status != store.RunRunning {
		t.Fatalf("GetRun while the model works = %+v, %v; want the run stored running", got, err)
	}
	unblock()
	h.wait(second.RunID)
}

// releaser returns a function that closes release once, also called when
// the test ends: registered after the harness's cleanup, it runs first,
// so that a failed check leaves no model blocked for the runner's close.
func releaser(t *testing.T, release chan struct{}) func() {
	var once sync.Once
	f := func() { once.Do(func() { close(release) }) }
	t.Cleanup(f)
	return f
}

// TestLingerFlushAfterCommit: the memory flush's tools write memory files,
// so a turn whose flush comes before any read of the store (its window
// cached, its session row too) commits its open first: the flush's model
// call finds the run stored, whatever OpenLinger is.
func TestLingerFlushAfterCommit(t *testing.T) {
	var h *harness
	flushes := make(chan error, 4)
	h = newHarness(t, summariser(func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		if strings.Contains(req.System, compaction.FlushSystemMarker) {
			_, err := h.store.GetRun(context.Background(), "big")
			flushes <- err
			return textReply(compaction.SilentToken), nil
		}
		return textReply("ok"), nil
	}), func(c *Config) {
		c.Models = windowModels{c.Models.(staticModels).p, 100000}
		c.Compaction.MemoryFlush = MemoryFlushConfig{Enabled: true}
		c.OpenLinger = time.Hour
	})
	small := h.submit(Input{RunID: "small", Message: "hi"})
	h.wait(small.RunID)
	h.idle()
	// About 78k estimated tokens: past the 76k flush threshold.
	big := h.submit(Input{RunID: "big", Message: strings.Repeat("lorem ipsum ", 26000)})
	h.wait(big.RunID)
	select {
	case err := <-flushes:
		if err != nil {
			t.Fatalf("the flush's model call ran before the run was stored: %v", err)
		}
	default:
		t.Fatal("no memory flush ran")
	}
}
