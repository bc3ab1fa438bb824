package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/safeerr"
	"github.com/switchboardhq/switchboard/internal/store"
)

// Info describes one spawned child for listings.
type Info struct {
	Record
	RunStatus      string `json:"runStatus"`
	StartedAt      int64  `json:"startedAt,omitempty"`
	EndedAt        int64  `json:"endedAt,omitempty"`
	Error          string `json:"error,omitempty"`
	AnnounceID     string `json:"announceId,omitempty"`
	AnnounceStatus string `json:"announceStatus,omitempty"` // pending|delivered|dead, "" before the child ends
	Archived       bool   `json:"archived"`
}

// List returns the children spawned by requester ("" = every requester),
// newest first; with active set, only those still running. limit > 0 bounds
// the rows (more reports whether there were more); the registry is read a
// page at a time, newest first, never whole.
func (m *Manager) List(ctx context.Context, requester string, active bool, limit int) (out []Info, more bool, err error) {
	page := 200
	if limit > 0 {
		page = min(max(limit+1, 16), 500)
	}
	for offset := 0; ; offset += page {
		items, err := m.cfg.Store.ListSubagents(ctx, store.SubagentFilter{RequesterKey: requester, Limit: page, Offset: offset})
		if err != nil {
			return nil, false, fmt.Errorf("subagent.List: %w", err)
		}
		for _, it := range items {
			var info Info
			if err := json.Unmarshal(it.Payload, &info.Record); err != nil {
				m.log.Warn("sub-agent record unreadable; skipped", "runId", it.ChildRunID, "err", err)
				continue
			}
			info.Archived = it.Status != store.SubagentActive
			if run, err := m.cfg.Store.GetRun(ctx, info.ChildRunID); err == nil {
				info.RunStatus = string(run.Status)
				info.StartedAt, info.EndedAt, info.Error = ms(run.StartedAt), ms(run.EndedAt), run.Error
			}
			if active && (info.RunStatus == "" || store.RunStatus(info.RunStatus).Terminal()) {
				continue
			}
			if limit > 0 && len(out) == limit {
				return out, true, nil
			}
			aid := announceID(info.ChildRunID, info.RequesterKey)
			if a, err := m.cfg.Store.GetOutbox(ctx, aid); err == nil {
				info.AnnounceID, info.AnnounceStatus = aid, string(a.Status)
			}
			out = append(out, info)
		}
		if len(items) < page {
			// Registry order is by creation; CreatedAt in the record is
			// the same instant, so the rows are newest first already.
			return out, false, nil
		}
	}
}

// Kill aborts a child run and, cascading, every live descendant spawned
// below it. It returns the aborted run ids. Each record is marked killed
// before its run is aborted, so that the end is not announced (Record.Killed).
func (m *Manager) Kill(ctx context.Context, runID string) ([]string, error) {
	rec, err := m.record(ctx, runID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, safeerr.Errorf("no sub-agent run %s", runID)
	}
	if err != nil {
		return nil, err
	}
	var killed []string
	queue := []*Record{rec}
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		if err := m.markKilled(ctx, r.ChildRunID); err != nil {
			return killed, err
		}
		ok, err := m.cfg.Runner.Abort(ctx, r.ChildRunID)
		if err != nil {
			return killed, err
		}
		if ok {
			killed = append(killed, r.ChildRunID)
		}
		kids, _, err := m.List(ctx, r.ChildSessionKey, false, 0)
		if err != nil {
			return killed, err
		}
		for i := range kids {
			queue = append(queue, &kids[i].Record)
		}
	}
	return killed, nil
}

// markKilled sets Record.Killed on a child run's registry row, unless the
// run has ended already (its end was announced, or will be, as it was).
func (m *Manager) markKilled(ctx context.Context, childRunID string) error {
	if run, err := m.cfg.Store.GetRun(ctx, childRunID); err == nil && run.Status.Terminal() {
		return nil
	}
	_, err := m.cfg.Store.UpdateSubagent(ctx, childRunID, func(row *store.SubagentRun) error {
		rec, err := decodeRecord(row)
		if err != nil {
			return err
		}
		if rec.Killed {
			return nil
		}
		rec.Killed = true
		b, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		row.Payload = b
		return nil
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("subagent: mark %s killed: %w", childRunID, err)
	}
	return nil
}

// Announces lists at most limit outbox items — sub-agent announces and
// agent-to-agent flows, the two kinds of delivery — with the given statuses
// (nil: all); limit 0 means no limit.
func (m *Manager) Announces(ctx context.Context, statuses []store.OutboxStatus, limit int) ([]*store.OutboxItem, error) {
	return m.cfg.Store.ListOutbox(ctx, store.OutboxFilter{Statuses: statuses, Limit: limit})
}

func ms(t interface{ UnixMilli() int64 }) int64 {
	if v := t.UnixMilli(); v > 0 {
		return v
	}
	return 0
}
