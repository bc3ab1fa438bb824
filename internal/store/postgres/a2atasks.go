package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

var _ store.A2ATaskStore = (*Store)(nil)

var (
	qPutA2ATask      = pq(sqlstore.PutA2ATask)
	qGetA2ATask      = pq(sqlstore.GetA2ATask)
	qListA2ATasks    = pq(sqlstore.ListA2ATasks)
	qListA2ATasksCtx = pq(sqlstore.ListA2ATasksCtx)
)

const qOpenA2ATasks = `SELECT ` + sqlstore.A2ATaskCols + ` FROM a2a_tasks WHERE NOT final
		ORDER BY created_at, peer, id LIMIT $1`

// PutA2ATask implements store.A2ATaskStore.
func (s *Store) PutA2ATask(ctx context.Context, t *store.A2ATask) error {
	if err := s.checkOpen("PutA2ATask"); err != nil {
		return err
	}
	if t == nil || t.Peer == "" || t.ID == "" || t.State == "" {
		return errors.New("postgres.PutA2ATask: task needs a peer, an id and a state")
	}
	body := string(t.Task)
	if body == "" {
		body = "{}"
	}
	if _, err := s.pool.Exec(ctx, qPutA2ATask, t.Peer, t.ID, t.ContextID, t.State, t.Final,
		t.RunID, body, toMs(s.nowTime())); err != nil {
		return fmt.Errorf("postgres.PutA2ATask %q/%q: %w", t.Peer, t.ID, err)
	}
	return nil
}

// GetA2ATask implements store.A2ATaskStore.
func (s *Store) GetA2ATask(ctx context.Context, peer, id string) (*store.A2ATask, error) {
	if err := s.checkOpen("GetA2ATask"); err != nil {
		return nil, err
	}
	t, err := sqlstore.ScanA2ATask(s.pool.QueryRow(ctx, qGetA2ATask, peer, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres.GetA2ATask %q/%q: %w", peer, id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres.GetA2ATask %q/%q: %w", peer, id, err)
	}
	return t, nil
}

// ListA2ATasks implements store.A2ATaskStore.
func (s *Store) ListA2ATasks(ctx context.Context, peer, contextID string, limit int) ([]*store.A2ATask, error) {
	if limit <= 0 || limit > store.MaxA2ATaskList {
		return nil, fmt.Errorf("postgres.ListA2ATasks: limit %d not in 1..%d", limit, store.MaxA2ATaskList)
	}
	if contextID == "" {
		return s.a2aTasks(ctx, "ListA2ATasks", qListA2ATasks, peer, limit)
	}
	return s.a2aTasks(ctx, "ListA2ATasks", qListA2ATasksCtx, peer, contextID, limit)
}

// OpenA2ATasks implements store.A2ATaskStore.
func (s *Store) OpenA2ATasks(ctx context.Context, limit int) ([]*store.A2ATask, error) {
	if limit <= 0 || limit > store.MaxA2ATaskList {
		return nil, fmt.Errorf("postgres.OpenA2ATasks: limit %d not in 1..%d", limit, store.MaxA2ATaskList)
	}
	return s.a2aTasks(ctx, "OpenA2ATasks", qOpenA2ATasks, limit)
}

func (s *Store) a2aTasks(ctx context.Context, op, q string, args ...any) ([]*store.A2ATask, error) {
	if err := s.checkOpen(op); err != nil {
		return nil, err
	}
	out, err := queryAll(ctx, s, 0, sqlstore.ScanA2ATask, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres.%s: %w", op, err)
	}
	return out, nil
}
