package agent

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// countingStore counts the store calls a warm turn makes.
type countingStore struct {
	Store
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingStore) count(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[op]++
}

func (c *countingStore) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = map[string]int{}
	return out
}

func (c *countingStore) AppendMessages(ctx context.Context, sessionID string, msgs []store.Message) ([]store.Message, error) {
	c.count("AppendMessages")
	return c.Store.AppendMessages(ctx, sessionID, msgs)
}

func (c *countingStore) FinishRun(ctx context.Context, runID string, res store.RunResult) (*store.Run, error) {
	c.count("FinishRun")
	return c.Store.FinishRun(ctx, runID, res)
}

func (c *countingStore) CountMessages(ctx context.Context, sessionID string) (int64, error) {
	c.count("CountMessages")
	return c.Store.CountMessages(ctx, sessionID)
}

func (c *countingStore) History(ctx context.Context, sessionID string, opts store.HistoryOptions) ([]store.Message, error) {
	c.count("History")
	return c.Store.History(ctx, sessionID, opts)
}

func (c *countingStore) CreateRun(ctx context.Context, run *store.Run) error {
	c.count("CreateRun")
	return c.Store.CreateRun(ctx, run)
}

func (c *countingStore) StartRun(ctx context.Context, runID string, startedAt time.Time, sessionID string, msgs []store.Message) (*store.Run, []store.Message, error) {
	c.count("StartRun")
	return c.Store.StartRun(ctx, runID, startedAt, sessionID, msgs)
}

func (c *countingStore) GetRun(ctx context.Context, runID string) (*store.Run, error) {
	c.count("GetRun")
	return c.Store.GetRun(ctx, runID)
}

// enderStore is a countingStore whose store queues and starts a run in
// one transaction, and ends it in one.
type enderStore struct{ *countingStore }

func (e enderStore) OpenRun(ctx context.Context, run *store.Run, msgs []store.Message) (*store.Run, []store.Message, error) {
	e.count("OpenRun")
	return store.OpenRun(ctx, e.Store, run, msgs)
}

func (e enderStore) EndRun(ctx context.Context, runID string, res store.RunResult, sessionID string, msgs []store.Message) (*store.Run, []store.Message, error) {
	e.count("EndRun")
	return e.Store.(store.RunEnder).EndRun(ctx, runID, res, sessionID, msgs)
}

// TestWarmTurnReadsNothingItRead runs warm turns and checks what each one
// asks of the store: one write transaction queues and starts the run with
// its input (CreateRun then StartRun when the store cannot), the reply is
// stored with the run's end (one transaction when the store can,
// AppendMessages then FinishRun when it cannot; the two share one commit
// when the open lingers, TestWarmTurnOneCommit),
// the history window is not read again (nor read at all on a new session), and neither a client's run id
// (before the insert, which finds a repeat itself) nor a run this node
// submitted (before it starts) is read. Whatever another writer
// appends between turns still reaches the next model request.
func TestWarmTurnReadsNothingItRead(t *testing.T) {
	for _, oneCommit := range []bool{true, false} {
		t.Run(fmt.Sprintf("oneCommit=%v", oneCommit), func(t *testing.T) {
			var (
				mu   sync.Mutex
				seen [][]provider.Message
			)
			var cs *countingStore
			h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
				mu.Lock()
				seen = append(seen, req.Messages)
				mu.Unlock()
				return textReply("reply " + lastUser(req)), nil
			}, func(cfg *Config) {
				cs = &countingStore{Store: cfg.Store, calls: map[string]int{}}
				cfg.Store = cs
				if oneCommit {
					cfg.Store = enderStore{cs}
				}
			})
			ctx := context.Background()
			// Runs are waited for through their events: Wait reads the run.
			ended := make(chan *store.Run, 1)
			h.runner.Subscribe(func(ev Event) {
				if ev.Stream == StreamLifecycle && ev.Phase == PhaseEnd {
					ended <- ev.Run
				}
			})
			turn := func(i int) {
				t.Helper()
				// A client's run id (chat.send's idempotency key) is
				// not read before the run's insert.
				in := Input{RunID: fmt.Sprint("run-", i), SessionKey: "agent:main:main", AgentID: "main", Message: fmt.Sprint("m", i)}
				if _, _, err := h.runner.Submit(ctx, in); err != nil {
					t.Fatal(err)
				}
				if got := <-ended; got.Status != store.RunOK {
					t.Fatalf("run %d: %+v", i, got)
				}
				// The next turn finds the lane idle (its goroutine ends
				// just after the end event), as a client's next message
				// does: a turn on a busy lane is queued behind it.
				h.idle()
			}
			// A new session's first turn reads nothing back either: its
			// input is the transcript's first entry.
			turn(0)
			if calls := cs.take(); calls["History"] != 0 || calls["CountMessages"] != 0 {
				t.Errorf("first turn: %v, want no History or CountMessages", calls)
			}
			for i := 1; i <= 3; i++ {
				turn(i)
				calls := cs.take()
				want := map[string]int{"OpenRun": 1, "EndRun": 1}
				if !oneCommit {
					want = map[string]int{"CreateRun": 1, "StartRun": 1, "AppendMessages": 1, "FinishRun": 1}
				}
				for _, op := range []string{"OpenRun", "CreateRun", "StartRun", "EndRun", "AppendMessages", "FinishRun", "CountMessages", "History", "GetRun"} {
					if calls[op] != want[op] {
						t.Errorf("turn %d: %s called %d times, want %d (all: %v)", i, op, calls[op], want[op], calls)
					}
				}
			}
			msgs := h.transcript("agent:main:main")
			if len(msgs) != 8 {
				t.Fatalf("transcript has %d entries, want 8 (4 turns)", len(msgs))
			}
			for i, m := range msgs {
				want := transcript.RoleUser
				if i%2 == 1 {
					want = transcript.RoleAssistant
				}
				if m.Role != want || m.Seq != int64(i+1) {
					t.Errorf("entry %d: role %s seq %d", i, m.Role, m.Seq)
				}
			}

			// Another writer appends between turns: the next request has it.
			sess, err := h.store.GetSession(ctx, "agent:main:main")
			if err != nil {
				t.Fatal(err)
			}
			note := transcript.NewUserMessage("written by someone else", h.runner.now())
			if _, err := h.store.AppendMessages(ctx, sess.SessionID, []store.Message{{Entry: transcript.MessageEntry(note, h.runner.now())}}); err != nil {
				t.Fatal(err)
			}
			turn(4)
			mu.Lock()
			last := seen[len(seen)-1]
			mu.Unlock()
			found := false
			for _, m := range last {
				found = found || m.Text == "written by someone else"
			}
			if !found || len(last) != 10 || last[len(last)-1].Text != "m4" {
				t.Fatalf("request after another writer's append: %d messages, foreign one found %v: %+v", len(last), found, last)
			}
		})
	}
}

// TestReplyStoredBeforeTheEnd checks what a client that sees a run's end
// can rely on: by the time the end event is emitted, the reply and the
// run's terminal status are committed (a crash after it loses neither).
func TestReplyStoredBeforeTheEnd(t *testing.T) {
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		return textReply("the stored reply"), nil
	}, nil)
	type seen struct {
		status store.RunStatus
		reply  bool
	}
	got := make(chan seen, 1)
	h.runner.Subscribe(func(ev Event) {
		if ev.RunID != "r1" || ev.Stream != StreamLifecycle || ev.Phase != PhaseEnd {
			return
		}
		var s seen
		if run, err := h.store.GetRun(context.Background(), "r1"); err == nil {
			s.status = run.Status
		}
		for _, m := range h.transcript("agent:main:main") {
			if msg := m.Entry.Message; msg != nil && msg.Role == transcript.RoleAssistant && msg.Content.Text() == "the stored reply" {
				s.reply = true
			}
		}
		got <- s
	})
	h.submit(Input{RunID: "r1", Message: "hello"})
	h.wait("r1")
	if s := <-got; s.status != store.RunOK || !s.reply {
		t.Errorf("at the end event: stored status %q, reply stored %v; want ok and true", s.status, s.reply)
	}
}
