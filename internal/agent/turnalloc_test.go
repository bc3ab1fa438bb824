package agent

import (
	"context"
	"iter"
	"testing"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
)

// replayProvider streams the same events every call, allocating only its
// sequence.
type replayProvider struct{ evs []provider.Event }

func (p *replayProvider) Stream(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Event, error] {
	return func(yield func(*provider.Event, error) bool) {
		for i := range p.evs {
			if !yield(&p.evs[i], nil) {
				return
			}
		}
	}
}

// TestTurnAllocations checks what one model turn allocates besides its
// events (a warm chat turn is one): what the stream brings is gathered in
// one variable, not one per field the iterator's body writes, and the
// message's blocks are made at their size.
func TestTurnAllocations(t *testing.T) {
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		return textReply("unused"), nil
	}, nil)
	r := h.runner
	model := Model{Provider: &replayProvider{evs: []provider.Event{
		{Type: provider.EventTextDelta, Text: "ok, noted."},
		{Type: provider.EventUsage, Usage: &provider.Usage{Input: 10, Output: 3}},
		{Type: provider.EventDone, StopReason: provider.StopEnd, ResponseID: "resp-1"},
	}}, ProviderID: "fake", ModelID: "fake-1", API: "openai-completions"}
	req := &provider.Request{Model: model.ModelID, Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}
	st := &runState{run: &store.Run{RunID: "turn-allocs", SessionKey: "agent:main:main", AgentID: "main"}}
	ctx := context.Background()
	turn := func() {
		msg, usage, err := r.turn(ctx, st, model, req)
		if err != nil || msg.Content.Text() != "ok, noted." || usage.Input != 10 || msg.ResponseID != "resp-1" {
			t.Fatalf("turn = %+v, %+v, %v", msg, usage, err)
		}
	}
	turn()
	// Without subscribers: the sequence, the gathered stream and the
	// closure that fills it, the text, its block, the blocks, the message
	// and its usage, and what the run's event log keeps of the delta (15
	// when each captured variable was an allocation).
	base := testing.AllocsPerRun(50, func() { r.emit(st, Event{Stream: StreamAssistant, Text: "ok, noted.", Delta: "ok, noted."}) })
	got := testing.AllocsPerRun(50, turn)
	if want := base + 8; got > want {
		t.Errorf("a turn made %v allocations, want at most %v (%v of them the delta's event)", got, want, base)
	}
}

var ctxSink context.Context

// TestWriteContextMadeOnce checks that the context a run's writes go
// through (the runner's, without its cancellation) is made once, not at
// each of a turn's writes, and still outlives the runner's cancellation.
func TestWriteContextMadeOnce(t *testing.T) {
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		return textReply("unused"), nil
	}, nil)
	r := h.runner
	if n := testing.AllocsPerRun(50, func() { ctxSink = r.writeCtx("no-such-run") }); n != 0 {
		t.Errorf("writeCtx made %v allocations, want 0", n)
	}
	r.cancel(errShutdown)
	if err := r.writeCtx("no-such-run").Err(); err != nil {
		t.Errorf("the write context ended with the runner: %v", err)
	}
}
