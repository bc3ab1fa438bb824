package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/store"
)

// handleRunsWatch follows one run for the calling connection: its events
// after afterSeq as runs.watch frames, then the final as the answer (see
// wire.MethodRunsWatch). The events come from the runner's per-run log, so
// a client that reconnects, here or on another node, resumes where it was.
func (s *Server) handleRunsWatch(ctx context.Context, cl *call) (any, error) {
	var p wire.RunsWatchParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	wctx := ctx
	if p.TimeoutMs != nil {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, time.Duration(*p.TimeoutMs)*time.Millisecond)
		defer cancel()
	}
	last := p.AfterSeq
	for ev, err := range s.cfg.Runner.Watch(wctx, p.RunID, p.AfterSeq) {
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil, invalid("unknown run: " + p.RunID)
		case err != nil && ctx.Err() == nil && wctx.Err() != nil:
			return wire.RunsWatchResult{AgentWaitResult: wire.AgentWaitResult{RunID: p.RunID, Status: waitTimeout}, Seq: last}, nil
		case err != nil:
			return nil, err
		case ev.Stream == agent.StreamLifecycle && ev.Phase == agent.PhaseEnd:
			res := wire.RunsWatchResult{AgentWaitResult: waitResult(ev.Run), Seq: ev.Seq}
			if ev.Message != nil {
				res.Text = ev.Message.Text()
			}
			return res, nil
		}
		wev, err := watchEvent(ev)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(wev)
		if err != nil {
			return nil, err
		}
		cl.c.sendEvent(wire.EventRunsWatch, b, false)
		last = ev.Seq
	}
	// The client saw the end already (afterSeq at or past it): the final
	// again, with no event.
	run, err := s.cfg.Store.GetRun(ctx, p.RunID)
	if err != nil {
		return nil, err
	}
	return wire.RunsWatchResult{AgentWaitResult: waitResult(run), Seq: last}, nil
}

// watchEvent is a watched event as the "agent" event of its stream
// carries it.
func watchEvent(ev agent.Event) (wire.AgentEvent, error) {
	raw, err := json.Marshal(watchData(ev))
	if err != nil {
		return wire.AgentEvent{}, err
	}
	return wire.AgentEvent{
		RunID: ev.RunID, Seq: ev.Seq, Stream: ev.Stream, TS: ev.Time.UnixMilli(), Data: raw,
		SessionKey: ev.SessionKey, AgentID: ev.AgentID, SessionID: ev.SessionID, Lane: ev.Lane, SpawnedBy: ev.SpawnedBy,
	}, nil
}

// handleSessionsWatch follows every run of one session for the calling
// connection (see wire.MethodSessionsWatch): its events after afterSeq as
// sessions.watch frames, until the end of untilRunId was sent, the
// timeout, or the connection closes.
func (s *Server) handleSessionsWatch(ctx context.Context, cl *call) (any, error) {
	var p wire.SessionsWatchParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	key := s.CanonicalKey(p.Key)
	if key == "" {
		return nil, invalid("invalid session key: " + p.Key)
	}
	wctx := ctx
	if p.TimeoutMs != nil {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, time.Duration(*p.TimeoutMs)*time.Millisecond)
		defer cancel()
	}
	res := wire.SessionsWatchResult{Key: key, Seq: p.AfterSeq}
	for ev, err := range s.cfg.Runner.WatchSession(wctx, key, p.AfterSeq) {
		switch {
		case err != nil && ctx.Err() == nil && wctx.Err() != nil:
			res.TimedOut = true
			return res, nil
		case err != nil:
			return nil, err
		}
		wev, err := watchEvent(ev)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(wire.SessionWatchEvent{AgentEvent: wev, SessionSeq: ev.SessionSeq})
		if err != nil {
			return nil, err
		}
		cl.c.sendEvent(wire.EventSessionsWatch, b, false)
		res.Seq = ev.SessionSeq
		if p.UntilRunID != "" && ev.RunID == p.UntilRunID && ev.Stream == agent.StreamLifecycle && ev.Phase == agent.PhaseEnd {
			return res, nil
		}
	}
	return res, nil
}

// watchData is the data of a watched run's event, as the "agent" event of
// the same stream carries it; every event is sent, so that the client sees
// no gap in the sequence numbers.
func watchData(ev agent.Event) map[string]any {
	ts := ev.Time.UnixMilli()
	switch ev.Stream {
	case agent.StreamLifecycle:
		switch ev.Phase {
		case agent.PhaseStart:
			return map[string]any{"phase": "start", "startedAt": ts}
		case agent.PhaseModel:
			return map[string]any{"phase": "model", "provider": ev.ProviderID, "model": ev.ModelID}
		case agent.PhaseEnd:
			if ev.Run != nil { // sessions.watch (runs.watch answers with the end)
				return map[string]any{"phase": "end", "status": string(ev.Run.Status), "error": ev.Run.Error}
			}
		}
	case agent.StreamPost:
		if ev.Message != nil {
			return map[string]any{"text": ev.Message.Text()}
		}
	case agent.StreamAssistant:
		return map[string]any{"text": liveText(ev.Text), "delta": ev.Delta}
	case agent.StreamTool:
		if ev.Tool != nil {
			return toolData(ev)
		}
	case agent.StreamCompaction:
		return compactionData(ev)
	case agent.StreamUsage:
		if ev.Usage != nil {
			return usageData(ev.Usage)
		}
	}
	return map[string]any{"phase": ev.Phase}
}
