package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// resultGateStore holds the write of tool result "first" until the next
// tool call has started (or, when it never does meanwhile, until a bound
// that only a failing runner reaches).
type resultGateStore struct {
	Store
	next   chan struct{} // closed when the second call starts
	mu     sync.Mutex
	apart  bool // the bound passed: the second call waited for the write
	writes int  // tool result writes
}

func (g *resultGateStore) AppendMessages(ctx context.Context, sessionID string, msgs []store.Message) ([]store.Message, error) {
	for _, m := range msgs {
		if m.Entry.Message == nil || m.Entry.Message.Role != transcript.RoleToolResult {
			continue
		}
		g.mu.Lock()
		g.writes++
		g.mu.Unlock()
		if m.Entry.Message.ToolCallID != "first" {
			continue
		}
		select {
		case <-g.next:
		case <-time.After(3 * time.Second):
			g.mu.Lock()
			g.apart = true
			g.mu.Unlock()
		}
	}
	return g.Store.AppendMessages(ctx, sessionID, msgs)
}

// twoCalls is a harness whose model calls tools a and b in one step and
// then answers "done" (log, when not nil, records the model calls). Its
// store is a resultGateStore (wrapped by wrap when not nil): the write of
// a's result waits for b to start, and b then runs then (when not nil).
func twoCalls(t *testing.T, log *reqLog, wrap func(Store) Store, then func(ctx context.Context) error) (*harness, *resultGateStore) {
	var gate *resultGateStore
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		if log != nil {
			log.add(req)
		}
		if len(req.Messages) == 1 {
			return toolTurn(
				provider.ToolCall{ID: "first", Name: "a", Arguments: json.RawMessage(`{}`)},
				provider.ToolCall{ID: "second", Name: "b", Arguments: json.RawMessage(`{}`)},
			), nil
		}
		return textReply("done"), nil
	}, func(c *Config) {
		gate = &resultGateStore{Store: c.Store, next: make(chan struct{})}
		c.Store = gate
		if wrap != nil {
			c.Store = wrap(gate)
		}
		c.Tools = func(context.Context, RunInfo) *tools.Set {
			return tools.NewSet(
				funcTool{"a", func(context.Context, json.RawMessage) (*tools.Result, error) {
					return &tools.Result{Text: "a done"}, nil
				}},
				funcTool{"b", func(ctx context.Context, _ json.RawMessage) (*tools.Result, error) {
					close(gate.next)
					if then != nil {
						if err := then(ctx); err != nil {
							return nil, err
						}
					}
					return &tools.Result{Text: "b done"}, nil
				}},
			)
		}
	})
	return h, gate
}

// A tool result is written while the next call of the same model turn
// runs, and the results are stored in call order before the next model
// call, which sees them all.
func TestToolResultWrittenWhileNextCallRuns(t *testing.T) {
	var log reqLog
	h, gate := twoCalls(t, &log, nil, nil)
	h.submit(Input{RunID: "r1", Message: "go"})
	if run := h.wait("r1"); run.Status != store.RunOK {
		t.Fatalf("run: %s (%s)", run.Status, run.Error)
	}
	gate.mu.Lock()
	apart, writes := gate.apart, gate.writes
	gate.mu.Unlock()
	if apart {
		t.Error("the second call started only once the first call's result was written")
	}
	if writes != 2 {
		t.Errorf("tool result writes = %d, want 2", writes)
	}
	reqs := log.get()
	want := []string{"user:go", "assistant:[calls first,second]", "tool:a done", "tool:b done"}
	if len(reqs) != 2 || !cmp.Equal(reqs[1], want) {
		t.Errorf("model calls = %q, want the second to be %q", reqs, want)
	}
	if got := h.texts("agent:main:main"); !cmp.Equal(got, []string{"user:go", "assistant:", "toolResult:a done", "toolResult:b done", "assistant:done"}) {
		t.Errorf("transcript = %q", got)
	}
}

// failFirstStore fails the write of tool result "first".
type failFirstStore struct{ Store }

func (f failFirstStore) AppendMessages(ctx context.Context, sessionID string, msgs []store.Message) ([]store.Message, error) {
	for _, m := range msgs {
		if m.Entry.Message != nil && m.Entry.Message.ToolCallID == "first" {
			return nil, errors.New("disk full")
		}
	}
	return f.Store.AppendMessages(ctx, sessionID, msgs)
}

// A tool result write that fails while the next call runs fails the run
// before its next model call.
func TestFailedResultWriteEndsTheRun(t *testing.T) {
	var log reqLog
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		if log.add(req) == 1 {
			return toolTurn(
				provider.ToolCall{ID: "first", Name: "a", Arguments: json.RawMessage(`{}`)},
				provider.ToolCall{ID: "second", Name: "a", Arguments: json.RawMessage(`{}`)},
			), nil
		}
		return textReply("done"), nil
	}, func(c *Config) {
		c.Store = failFirstStore{c.Store}
		c.Tools = func(context.Context, RunInfo) *tools.Set {
			return tools.NewSet(funcTool{"a", func(context.Context, json.RawMessage) (*tools.Result, error) {
				return &tools.Result{Text: "a done"}, nil
			}})
		}
	})
	h.submit(Input{RunID: "r1", Message: "go"})
	run := h.wait("r1")
	if run.Status != store.RunError || !strings.Contains(run.Error, "disk full") {
		t.Errorf("run = %s (%s), want an error with the write's", run.Status, run.Error)
	}
	if n := len(log.get()); n != 1 {
		t.Errorf("model calls = %d, want 1 (none after the failed write)", n)
	}
}

// storedResults records the tool results its store has written (after the
// write returned).
type storedResults struct {
	Store
	mu     sync.Mutex
	stored map[string]bool
}

func (s *storedResults) AppendMessages(ctx context.Context, sessionID string, msgs []store.Message) ([]store.Message, error) {
	out, err := s.Store.AppendMessages(ctx, sessionID, msgs)
	if err == nil {
		s.mu.Lock()
		for _, m := range msgs {
			if m.Entry.Message != nil && m.Entry.Message.Role == transcript.RoleToolResult {
				s.stored[m.Entry.Message.ToolCallID] = true
			}
		}
		s.mu.Unlock()
	}
	return out, err
}

// A tool result's event goes out once its write returned, never before
// (a client that sees it finds the result in the history, and a crash
// cannot lose a result a client saw), while the next call still runs
// during the write.
func TestResultEventFollowsItsWrite(t *testing.T) {
	var stored *storedResults
	h, gate := twoCalls(t, nil, func(st Store) Store {
		stored = &storedResults{Store: st, stored: map[string]bool{}}
		return stored
	}, nil)
	var mu sync.Mutex
	var seen, early []string
	h.runner.Subscribe(func(ev Event) {
		if ev.Stream != StreamTool || ev.Phase != PhaseResult {
			return
		}
		stored.mu.Lock()
		ok := stored.stored[ev.Tool.CallID]
		stored.mu.Unlock()
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, ev.Tool.CallID)
		if !ok {
			early = append(early, ev.Tool.CallID)
		}
	})
	h.submit(Input{RunID: "r1", Message: "go"})
	if run := h.wait("r1"); run.Status != store.RunOK {
		t.Fatalf("run: %s (%s)", run.Status, run.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(early) > 0 {
		t.Errorf("result events before their writes: %q", early)
	}
	if !cmp.Equal(seen, []string{"first", "second"}) {
		t.Errorf("result events %q, want first, second", seen)
	}
	gate.mu.Lock()
	defer gate.mu.Unlock()
	if gate.apart {
		t.Error("the second call started only once the first call's result was written")
	}
}

// A call that reads its own session's transcript after tools.AwaitWritten
// finds the results of the step's earlier calls, although they are
// written while it runs.
func TestLaterCallReadsEarlierResults(t *testing.T) {
	var h *harness
	var found atomic.Bool
	h, _ = twoCalls(t, nil, nil, func(ctx context.Context) error {
		if err := tools.AwaitWritten(ctx); err != nil {
			return err
		}
		for _, m := range h.transcript("agent:main:main") {
			if m.Entry.Message.ToolCallID == "first" {
				found.Store(true)
			}
		}
		return nil
	})
	h.submit(Input{RunID: "r1", Message: "go"})
	if run := h.wait("r1"); run.Status != store.RunOK {
		t.Fatalf("run: %s (%s)", run.Status, run.Error)
	}
	if !found.Load() {
		t.Error("the second call did not find the first call's result in its transcript")
	}
}
