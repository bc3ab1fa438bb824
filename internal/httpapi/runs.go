package httpapi

import (
	"context"
	"errors"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// errClosed ends a wait when the server closes.
var errClosed = errors.New("httpapi: gateway shutting down")

// turn is one submitted run that a request follows.
type turn struct {
	runID string
	// answer is set when a command answered without a run: the reply.
	answer *string
}

// startTurn hands in (whose RunID must be set) to admission — commands,
// the send policy, the queue; the run's events are then followed with
// Runner.Watch, which has them from the run's start.
func (s *Server) startTurn(ctx context.Context, in agent.Input) (*turn, error) {
	t := &turn{runID: in.RunID}
	tk, err := s.cfg.Admit.Accept(ctx, admission.Request{Origin: admission.OriginOperator, Input: in, Admin: true})
	if err != nil {
		return nil, fmt.Errorf("httpapi: submit: %w", err)
	}
	if tk.Run == nil {
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
// onDelta (nil ignores them). The run's events come from the runner's
// per-run stream (Runner.Watch), which has them from the run's start
// whenever the request began to follow. When ctx ends first (the client
// left) the run is aborted and ctx's error returned; when the server
// closes, errClosed.
func (s *Server) follow(ctx context.Context, t *turn, onDelta func(string) error) (runEnd, error) {
	if t.answer != nil {
		// A command's reply ends the request as a run's reply would.
		return runEnd{Run: &store.Run{RunID: t.runID, Status: store.RunOK},
			Last: &transcript.Message{Role: transcript.RoleAssistant, Content: transcript.BlockContent(transcript.TextBlock(*t.answer))}}, nil
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	for ev, err := range s.cfg.Runner.Watch(wctx, t.runID, 0) {
		switch {
		case err != nil && s.ctx.Err() != nil:
			return runEnd{}, errClosed
		case err != nil && ctx.Err() != nil:
			s.abort(t.runID)
			return runEnd{}, ctx.Err()
		case err != nil:
			return runEnd{}, fmt.Errorf("httpapi: follow %s: %w", t.runID, err)
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
	return runEnd{}, errClosed // not reached: a watch ends with the run's end or an error
}

// abort stops a run whose client went away.
func (s *Server) abort(runID string) {
	if _, err := s.cfg.Runner.Abort(context.WithoutCancel(s.ctx), runID); err != nil {
		s.log.Warn("abort after client disconnect failed", "runId", runID, "err", err)
	}
}
