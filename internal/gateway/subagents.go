package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/subagent"
)

// Subagents is what the gateway needs of the sub-agent manager for the
// subagents.* and announces.* methods. Implementations are safe for
// concurrent use; *subagent.Manager is the one the daemon passes.
type Subagents interface {
	// List returns at most limit (0: all) children spawned by requester (a
	// canonical key; "" means every requester), newest first; with active
	// set, only those still running. more says rows were left out.
	List(ctx context.Context, requester string, active bool, limit int) (infos []subagent.Info, more bool, err error)
	// Kill aborts a child run and every live descendant and returns the
	// aborted run ids. Its errors are fit to show the caller.
	Kill(ctx context.Context, runID string) ([]string, error)
	// Announces lists at most limit announce items with the given statuses
	// (nil: all), in the outbox's order; limit 0 means no limit.
	Announces(ctx context.Context, statuses []store.OutboxStatus, limit int) ([]*store.OutboxItem, error)
	// Redeliver queues an undelivered announce again; it wraps
	// store.ErrNotFound for an unknown id, and its other errors are fit to
	// show the caller.
	Redeliver(ctx context.Context, id string) error
}

var _ Subagents = (*subagent.Manager)(nil)

// errSubagentsDisabled answers the sub-agent methods when Config.Subagents
// is nil.
var errSubagentsDisabled = wire.NewError(wire.CodeUnavailable, "sub-agents are not enabled")

func (s *Server) handleSubagentsList(ctx context.Context, cl *call) (any, error) {
	var p wire.SubagentsListParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	if s.cfg.Subagents == nil {
		return nil, errSubagentsDisabled
	}
	requester := ""
	if p.RequesterKey != "" {
		requester = s.canonicalKey(p.RequesterKey, "")
	}
	limit := wire.DefaultSubagentsLimit
	if p.Limit != nil {
		limit = *p.Limit
	}
	infos, more, err := s.cfg.Subagents.List(ctx, requester, p.Active, limit)
	if err != nil {
		return nil, fmt.Errorf("subagents.list: %w", err)
	}
	res := wire.SubagentsListResult{Subagents: make([]wire.SubagentInfo, 0, len(infos)), HasMore: more}
	for i := range infos {
		res.Subagents = append(res.Subagents, subagentInfo(&infos[i]))
	}
	return res, nil
}

func subagentInfo(in *subagent.Info) wire.SubagentInfo {
	r := &in.Record
	return wire.SubagentInfo{
		ChildRunID: r.ChildRunID, ChildSessionKey: r.ChildSessionKey, AgentID: r.AgentID,
		RequesterKey: r.RequesterKey, RequesterDisplay: r.RequesterDisplay, RequesterParent: r.RequesterParent,
		RequesterChannel: r.RequesterChannel, Task: r.Task, Label: r.Label, Cleanup: r.Cleanup, Mode: r.Mode,
		Model: r.Model, RunTimeoutSeconds: r.RunTimeoutSeconds, CreatedAt: r.CreatedAt, ArchiveAtMs: r.ArchiveAtMs,
		Workspace: r.Workspace, AttachmentsDir: r.AttachmentsDir, RetainAttachments: r.RetainAttachments, Killed: r.Killed,
		RunStatus: in.RunStatus, StartedAt: in.StartedAt, EndedAt: in.EndedAt, Error: in.Error,
		AnnounceID: in.AnnounceID, AnnounceStatus: in.AnnounceStatus, Archived: in.Archived,
	}
}

func (s *Server) handleSubagentsKill(ctx context.Context, cl *call) (any, error) {
	var p wire.SubagentsKillParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	if s.cfg.Subagents == nil {
		return nil, errSubagentsDisabled
	}
	killed, err := s.cfg.Subagents.Kill(ctx, p.RunID)
	if err != nil {
		return nil, fmt.Errorf("subagents.kill: %w", err) // safe reasons reach the client as INVALID_REQUEST
	}
	if killed == nil {
		killed = []string{}
	}
	return wire.SubagentsKillResult{OK: true, Killed: killed}, nil
}

func (s *Server) handleAnnouncesList(ctx context.Context, cl *call) (any, error) {
	var p wire.AnnouncesListParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	if s.cfg.Subagents == nil {
		return nil, errSubagentsDisabled
	}
	var statuses []store.OutboxStatus // nil: all
	switch p.Status {
	case "":
		statuses = []store.OutboxStatus{store.OutboxDead}
	case wire.AnnounceStatusAll:
	default:
		statuses = []store.OutboxStatus{store.OutboxStatus(p.Status)}
	}
	limit := wire.DefaultAnnouncesLimit
	if p.Limit != nil {
		limit = *p.Limit
	}
	items, err := s.cfg.Subagents.Announces(ctx, statuses, limit+1)
	if err != nil {
		return nil, fmt.Errorf("announces.list: %w", err)
	}
	res := wire.AnnouncesListResult{Announces: make([]wire.AnnounceRow, 0, min(len(items), limit))}
	if len(items) > limit {
		items, res.HasMore = items[:limit], true
	}
	for _, it := range items {
		res.Announces = append(res.Announces, wire.AnnounceRow{
			ID: it.ID, Kind: it.Kind, SessionKey: it.SessionKey, RunID: it.RunID, Status: string(it.Status),
			Attempts: it.Attempts, LastError: it.LastError, CreatedAt: ms(it.CreatedAt), UpdatedAt: ms(it.UpdatedAt),
			DeliveredAt: ms(it.DeliveredAt), NextAttemptAt: ms(it.NextAttemptAt),
		})
	}
	return res, nil
}

func (s *Server) handleAnnouncesRedeliver(ctx context.Context, cl *call) (any, error) {
	var p wire.AnnouncesRedeliverParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	if s.cfg.Subagents == nil {
		return nil, errSubagentsDisabled
	}
	switch err := s.cfg.Subagents.Redeliver(ctx, p.ID); {
	case errors.Is(err, store.ErrNotFound):
		return nil, invalid("announce not found: " + p.ID)
	case err != nil:
		return nil, fmt.Errorf("announces.redeliver: %w", err) // safe reasons reach the client as INVALID_REQUEST
	}
	return wire.AnnouncesRedeliverResult{OK: true}, nil
}
