package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/store"
)

// defaultActivitySessions is how many recently updated sessions runs.active
// lists when no limit is given.
const defaultActivitySessions = 50

// maxSpawnDepth bounds the walk up a session's spawnedBy links (a cycle in
// stored data must not hang the call).
const maxSpawnDepth = 64

// handleRunsActive lists running and queued runs and the sessions they
// belong to, with usage and cost per session.
func (s *Server) handleRunsActive(ctx context.Context, cl *call) (any, error) {
	var p struct {
		Limit int `json:"limit"`
	}
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	if p.Limit == 0 {
		p.Limit = defaultActivitySessions
	}
	runs, err := s.cfg.Store.ListRuns(ctx, store.RunFilter{Statuses: []store.RunStatus{store.RunRunning, store.RunQueued}})
	if err != nil {
		return nil, fmt.Errorf("runs.active: list runs: %w", err)
	}
	out := wire.RunsActiveResult{TS: s.now().UnixMilli(), Runs: []wire.ActiveRun{}, Sessions: []wire.ActivitySession{}}
	for _, r := range runs {
		ar := wire.ActiveRun{RunID: r.RunID, SessionKey: r.SessionKey, AgentID: r.AgentID, Lane: cmp.Or(r.Lane, wire.LaneMain),
			Status: string(r.Status), CreatedAt: r.CreatedAt.UnixMilli()}
		if !r.StartedAt.IsZero() {
			ar.StartedAt = r.StartedAt.UnixMilli()
		}
		out.Runs = append(out.Runs, ar)
	}
	recent, err := s.cfg.Store.ListSessions(ctx, store.ListOptions{Limit: p.Limit})
	if err != nil {
		return nil, fmt.Errorf("runs.active: list sessions: %w", err)
	}
	seen := map[string]bool{}
	var add func(sess *store.Session, depth int) error
	add = func(sess *store.Session, depth int) error {
		if seen[sess.Key] {
			return nil
		}
		seen[sess.Key] = true
		row, err := s.sessionActivity(ctx, sess)
		if err != nil {
			return err
		}
		out.Sessions = append(out.Sessions, row)
		if sess.SpawnedBy == "" || depth >= maxSpawnDepth || seen[sess.SpawnedBy] {
			return nil
		}
		parent, err := s.cfg.Store.GetSession(ctx, sess.SpawnedBy)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("runs.active: session %s: %w", sess.SpawnedBy, err)
		}
		return add(parent, depth+1)
	}
	for _, sess := range recent {
		if err := add(sess, 0); err != nil {
			return nil, err
		}
	}
	for _, r := range runs {
		if seen[r.SessionKey] {
			continue
		}
		sess, err := s.cfg.Store.GetSession(ctx, r.SessionKey)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("runs.active: session %s: %w", r.SessionKey, err)
		}
		if err := add(sess, 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sessionActivity is a session's row: tokens from the session, cost and
// run count summed over its runs.
func (s *Server) sessionActivity(ctx context.Context, sess *store.Session) (wire.ActivitySession, error) {
	row := wire.ActivitySession{Key: sess.Key, AgentID: sess.AgentID, SpawnedBy: sess.SpawnedBy,
		InputTokens: sess.InputTokens, OutputTokens: sess.OutputTokens, TotalTokens: sess.TotalTokens,
		UpdatedAt: sess.UpdatedAt.UnixMilli()}
	runs, err := s.cfg.Store.ListRuns(ctx, store.RunFilter{SessionKey: sess.Key})
	if err != nil {
		return row, fmt.Errorf("runs.active: runs of %s: %w", sess.Key, err)
	}
	row.Runs = len(runs)
	for _, r := range runs {
		if c := r.Usage.Cost; c != nil {
			row.Cost += c.Total
		}
	}
	return row, nil
}
