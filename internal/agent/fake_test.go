package agent

import (
	"context"
	"encoding/json"
	"iter"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlite"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// fakeProvider answers each turn with fn. It is the hand-written fake for
// runner unit tests; end-to-end tests use real adapters over HTTP.
type fakeProvider struct {
	fn func(ctx context.Context, req *provider.Request) ([]provider.Event, error)
}

func (f *fakeProvider) Stream(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Event, error] {
	return func(yield func(*provider.Event, error) bool) {
		evs, err := f.fn(ctx, req)
		for i := range evs {
			if !yield(&evs[i], nil) {
				return
			}
		}
		if err != nil {
			yield(nil, err)
		}
	}
}

// textReply is a turn that streams text in two deltas.
func textReply(text string) []provider.Event {
	h := len(text) / 2
	return []provider.Event{
		{Type: provider.EventTextDelta, Text: text[:h]},
		{Type: provider.EventTextDelta, Text: text[h:]},
		{Type: provider.EventUsage, Usage: &provider.Usage{Input: 10, Output: 3}},
		{Type: provider.EventDone, StopReason: provider.StopEnd, ResponseID: "resp-1"},
	}
}

func toolTurn(calls ...provider.ToolCall) []provider.Event {
	var evs []provider.Event
	for i := range calls {
		evs = append(evs, provider.Event{Type: provider.EventToolCall, ToolCall: &calls[i]})
	}
	return append(evs, provider.Event{Type: provider.EventUsage, Usage: &provider.Usage{Input: 5, Output: 1}},
		provider.Event{Type: provider.EventDone, StopReason: provider.StopToolUse})
}

// lastUser returns the text of the last user message of req.
func lastUser(req *provider.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == provider.RoleUser {
			return req.Messages[i].Text
		}
	}
	return ""
}

type staticModels struct{ p provider.Provider }

func (m staticModels) ResolveModel(agentID, ref string) (Model, error) {
	return Model{Provider: m.p, ProviderID: "fake", ModelID: "fake-1", API: "openai-completions"}, nil
}

// funcTool is a tool backed by a function.
type funcTool struct {
	name string
	fn   func(ctx context.Context, args json.RawMessage) (*tools.Result, error)
}

func (t funcTool) Name() string            { return t.name }
func (t funcTool) Description() string     { return "test tool " + t.name }
func (t funcTool) Schema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (t funcTool) Call(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
	return t.fn(ctx, args)
}

func openStore(tb testing.TB, dir string) *sqlite.Store {
	tb.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "switchboard.db"), sqlite.Options{})
	if err != nil {
		tb.Fatalf("sqlite.Open: %v", err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

type harness struct {
	t      testing.TB
	store  *sqlite.Store
	runner *Runner
	prov   *fakeProvider

	mu     sync.Mutex
	events []Event
}

func newHarness(tb testing.TB, fn func(ctx context.Context, req *provider.Request) ([]provider.Event, error), mod func(*Config)) *harness {
	tb.Helper()
	h := &harness{t: tb, store: openStore(tb, tb.TempDir()), prov: &fakeProvider{fn: fn}}
	cfg := Config{Store: h.store, Models: staticModels{h.prov}}
	if mod != nil {
		mod(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	h.runner = r
	r.Subscribe(func(ev Event) {
		h.mu.Lock()
		h.events = append(h.events, ev)
		h.mu.Unlock()
	})
	if _, err := r.Recover(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() })
	return h
}

func (h *harness) submit(in Input) *store.Run {
	h.t.Helper()
	if in.SessionKey == "" {
		in.SessionKey = "agent:main:main"
	}
	if in.AgentID == "" {
		in.AgentID = "main"
	}
	run, _, err := h.runner.Submit(context.Background(), in)
	if err != nil {
		h.t.Fatalf("Submit: %v", err)
	}
	return run
}

func (h *harness) wait(runID string) *store.Run {
	h.t.Helper()
	run, done, err := h.runner.Wait(context.Background(), runID, 10*time.Second)
	if err != nil || !done {
		h.t.Fatalf("Wait(%s) = done %v, err %v", runID, done, err)
	}
	return run
}

func (h *harness) eventsFor(runID string) []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Event
	for _, ev := range h.events {
		if ev.RunID == runID {
			out = append(out, ev)
		}
	}
	return out
}

func (h *harness) transcript(key string) []store.Message {
	h.t.Helper()
	s, err := h.store.GetSession(context.Background(), key)
	if err != nil {
		h.t.Fatalf("GetSession(%s): %v", key, err)
	}
	msgs, err := h.store.History(context.Background(), s.SessionID, store.HistoryOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return msgs
}
