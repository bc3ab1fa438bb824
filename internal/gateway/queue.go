package gateway

import (
	"context"
	"errors"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/store"
)

// cancelledShown bounds the cancelled inputs chat.history lists.
const cancelledShown = 20

// pendingInputs is chat.history's pendingInputs for key.
func (s *Server) pendingInputs(ctx context.Context, key string) (*wire.PendingInputs, error) {
	items, err := s.cfg.Runner.PendingInputs(ctx, key, cancelledShown)
	if err != nil {
		return nil, err
	}
	out := &wire.PendingInputs{Items: make([]wire.PendingInput, 0, min(len(items), wire.MaxPendingInputs)), Total: len(items)}
	for _, p := range items[:min(len(items), wire.MaxPendingInputs)] {
		out.Items = append(out.Items, wire.PendingInput{
			ID: p.RunID, AcceptedAt: p.AcceptedAt.UnixMilli(), State: p.State, Message: p.Message, RunID: p.RunID,
		})
	}
	return out, nil
}

func (s *Server) handleSessionsAbort(ctx context.Context, cl *call) (any, error) {
	var p wire.SessionsAbortParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	res := wire.ChatAbortResult{OK: true, RunIDs: []string{}}
	key := ""
	if p.Key != "" {
		key = s.canonicalKey(p.Key, s.agentID(p.AgentID))
	}
	if p.RunID != "" {
		run, err := s.cfg.Store.GetRun(ctx, p.RunID)
		if errors.Is(err, store.ErrNotFound) {
			return res, nil
		}
		if err != nil {
			return nil, err
		}
		if key != "" && run.SessionKey != key {
			return nil, invalid("runId does not belong to key " + key)
		}
		ok, err := s.cfg.Runner.Abort(ctx, p.RunID)
		if err != nil {
			return nil, err
		}
		if ok {
			res.Aborted, res.RunIDs = true, []string{p.RunID}
		}
		return res, nil
	}
	if key == "" {
		return nil, invalid("key or runId required")
	}
	if p.ClearQueued {
		ids, err := s.cfg.Runner.AbortQueued(ctx, key)
		if err != nil {
			return nil, err
		}
		res.RunIDs = append(res.RunIDs, ids...)
	}
	id, err := s.cfg.Runner.AbortActive(ctx, key)
	if err != nil {
		return nil, err
	}
	if id != "" {
		res.RunIDs = append(res.RunIDs, id)
	}
	res.Aborted = len(res.RunIDs) > 0
	return res, nil
}
