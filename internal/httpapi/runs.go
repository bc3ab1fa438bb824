package httpapi

import (
	"context"
	"errors"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// errSendDenied is a turn refused by the session's send policy.
var errSendDenied = errors.New(policy.SendBlockedMessage)

// errClosed ends a wait when the server closes.
var errClosed = errors.New("httpapi: gateway shutting down")

// turn is one submitted run that a request follows.
type turn struct {
	runID string
}

// startTurn checks the session's send policy and submits in (whose RunID
// must be set). fresh says the session cannot exist yet, so its row is not
// read.
func (s *Server) startTurn(ctx context.Context, in agent.Input, fresh bool) (*turn, error) {
	var entry *store.Session
	if !fresh {
		var err error
		entry, err = s.cfg.Store.GetSession(ctx, in.SessionKey)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("httpapi: read session: %w", err)
		}
	}
	sp := policy.SendInput{Config: s.cfg.SendRules, SessionKey: in.SessionKey, Channel: in.Channel}
	if entry != nil {
		sp.EntryOverride, sp.EntryChannel, sp.EntryLastChannel, sp.EntryChatType = entry.SendPolicy, entry.Channel, entry.LastChannel, entry.ChatType
	}
	if policy.ResolveSend(sp) == policy.DecisionDeny {
		return nil, errSendDenied
	}
	if _, _, err := s.cfg.Runner.Submit(ctx, in); err != nil {
		return nil, fmt.Errorf("httpapi: submit: %w", err)
	}
	return &turn{runID: in.RunID}, nil
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
