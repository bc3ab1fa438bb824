package httpapi

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// router hands the runner's events to the requests following their runs.
// The runner calls dispatch on its own goroutines; dispatch never blocks.
type router struct {
	mu    sync.RWMutex // guards sinks
	sinks map[string]*sink
}

func newRouter() *router { return &router{sinks: make(map[string]*sink)} }

// sink queues one run's events for its request: an unbounded queue (a
// run's events are bounded by its output) and a wake-up signal.
type sink struct {
	mu     sync.Mutex // guards events
	events []agent.Event
	wake   chan struct{} // capacity 1
}

// watch starts queueing runID's events; it must be called before the run
// is submitted so that none is missed.
func (rt *router) watch(runID string) *sink {
	sk := &sink{wake: make(chan struct{}, 1)}
	rt.mu.Lock()
	rt.sinks[runID] = sk
	rt.mu.Unlock()
	return sk
}

func (rt *router) unwatch(runID string) {
	rt.mu.Lock()
	delete(rt.sinks, runID)
	rt.mu.Unlock()
}

// dispatch queues the events a request uses: assistant text and the end
// of the run.
func (rt *router) dispatch(ev agent.Event) {
	if ev.Stream != agent.StreamAssistant && (ev.Stream != agent.StreamLifecycle || ev.Phase != agent.PhaseEnd) {
		return
	}
	rt.mu.RLock()
	sk := rt.sinks[ev.RunID]
	rt.mu.RUnlock()
	if sk == nil {
		return
	}
	sk.mu.Lock()
	sk.events = append(sk.events, ev)
	sk.mu.Unlock()
	select {
	case sk.wake <- struct{}{}:
	default:
	}
}

func (sk *sink) take() []agent.Event {
	sk.mu.Lock()
	defer sk.mu.Unlock()
	evs := sk.events
	sk.events = nil
	return evs
}

// errClosed ends a wait when the server closes.
var errClosed = errors.New("httpapi: gateway shutting down")

// turn is one submitted run that a request follows.
type turn struct {
	runID string
	sink  *sink
	// answer is set when a command answered without a run: the reply.
	answer *string
}

// startTurn hands in (whose RunID must be set) to admission — commands,
// the send policy, the queue — with the run's events already routed to
// the returned turn.
func (s *Server) startTurn(ctx context.Context, in agent.Input) (*turn, error) {
	t := &turn{runID: in.RunID, sink: s.runs.watch(in.RunID)}
	tk, err := s.cfg.Admit.Accept(ctx, admission.Request{Origin: admission.OriginOperator, Input: in, Admin: true})
	if err != nil {
		s.runs.unwatch(in.RunID)
		return nil, fmt.Errorf("httpapi: submit: %w", err)
	}
	if tk.Run == nil {
		s.runs.unwatch(in.RunID)
		t.answer = &tk.Reply
	}
	return t, nil
}

// runEnd is how a followed run ended.
type runEnd struct {
	Run  *store.Run
	Last *transcript.Message
}

// follow waits for the run's end, handing each assistant text delta to
// onDelta (nil ignores them). When ctx ends first (the client left) the
// run is aborted and ctx's error returned; when the server closes,
// errClosed.
func (s *Server) follow(ctx context.Context, t *turn, onDelta func(string) error) (runEnd, error) {
	if t.answer != nil {
		// A command's reply ends the request as a run's reply would.
		return runEnd{Run: &store.Run{RunID: t.runID, Status: store.RunOK},
			Last: &transcript.Message{Role: transcript.RoleAssistant, Content: transcript.BlockContent(transcript.TextBlock(*t.answer))}}, nil
	}
	defer s.runs.unwatch(t.runID)
	for {
		for _, ev := range t.sink.take() {
			switch {
			case ev.Stream == agent.StreamAssistant:
				if onDelta != nil && ev.Delta != "" {
					if err := onDelta(ev.Delta); err != nil {
						s.abort(t.runID)
						return runEnd{}, err
					}
				}
			case ev.Stream == agent.StreamLifecycle && ev.Phase == agent.PhaseEnd && ev.Run != nil:
				if ev.Run.Status == store.RunAborted && ev.Run.Error == agent.ShutdownError {
					return runEnd{}, errClosed // the shutdown's grace ran out: say so, not "internal error"
				}
				return runEnd{Run: ev.Run, Last: ev.Message}, nil
			}
		}
		select {
		case <-t.sink.wake:
		case <-ctx.Done():
			s.abort(t.runID)
			return runEnd{}, ctx.Err()
		case <-s.ctx.Done():
			return runEnd{}, errClosed
		}
	}
}

// abort stops a run whose client went away.
func (s *Server) abort(runID string) {
	if _, err := s.cfg.Runner.Abort(context.WithoutCancel(s.ctx), runID); err != nil {
		s.log.Warn("abort after client disconnect failed", "runId", runID, "err", err)
	}
}
