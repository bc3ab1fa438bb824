package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard/internal/store"
)

var _ store.A2ATaskStore = (*Store)(nil)

const a2aTaskCols = `peer, id, context_id, state, final, run_id, task, created_at, updated_at`

const (
	qPutA2ATask = `INSERT INTO a2a_tasks (` + a2aTaskCols + `) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$8)
		ON CONFLICT (peer, id) DO UPDATE SET context_id = $3, state = $4, final = $5, run_id = $6, task = $7, updated_at = $8`
	qGetA2ATask   = `SELECT ` + a2aTaskCols + ` FROM a2a_tasks WHERE peer = $1 AND id = $2`
	qListA2ATasks = `SELECT ` + a2aTaskCols + ` FROM a2a_tasks WHERE peer = $1
		ORDER BY updated_at DESC, id DESC LIMIT $2`
	qListA2ATasksCtx = `SELECT ` + a2aTaskCols + ` FROM a2a_tasks WHERE peer = $1 AND context_id = $2
		ORDER BY updated_at DESC, id DESC LIMIT $3`
	qOpenA2ATasks = `SELECT ` + a2aTaskCols + ` FROM a2a_tasks WHERE NOT final
		ORDER BY created_at, peer, id LIMIT $1`
)

func scanA2ATask(sc pgx.Row) (*store.A2ATask, error) {
	var (
		t                store.A2ATask
		created, updated int64
		body             string
	)
	if err := sc.Scan(&t.Peer, &t.ID, &t.ContextID, &t.State, &t.Final, &t.RunID, &body, &created, &updated); err != nil {
		return nil, err
	}
	t.Task = []byte(body)
	t.CreatedAt, t.UpdatedAt = fromMs(created), fromMs(updated)
	return &t, nil
}

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
	t, err := scanA2ATask(s.pool.QueryRow(ctx, qGetA2ATask, peer, id))
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
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres.%s: %w", op, err)
	}
	defer rows.Close()
	var out []*store.A2ATask
	for rows.Next() {
		t, err := scanA2ATask(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres.%s: %w", op, err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres.%s: %w", op, err)
	}
	return out, nil
}
