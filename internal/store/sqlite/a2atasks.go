package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/store"
)

var _ store.A2ATaskStore = (*Store)(nil)

const a2aTaskCols = `peer, id, context_id, state, final, run_id, task, created_at, updated_at`

const (
	qPutA2ATask = `INSERT INTO a2a_tasks (` + a2aTaskCols + `) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?8)
		ON CONFLICT (peer, id) DO UPDATE SET context_id = ?3, state = ?4, final = ?5, run_id = ?6, task = ?7, updated_at = ?8`
	qGetA2ATask   = `SELECT ` + a2aTaskCols + ` FROM a2a_tasks WHERE peer = ? AND id = ?`
	qListA2ATasks = `SELECT ` + a2aTaskCols + ` FROM a2a_tasks WHERE peer = ?
		ORDER BY updated_at DESC, id DESC LIMIT ?`
	qListA2ATasksCtx = `SELECT ` + a2aTaskCols + ` FROM a2a_tasks WHERE peer = ? AND context_id = ?
		ORDER BY updated_at DESC, id DESC LIMIT ?`
	qOpenA2ATasks = `SELECT ` + a2aTaskCols + ` FROM a2a_tasks WHERE final = 0
		ORDER BY created_at, peer, id LIMIT ?`
)

func scanA2ATask(sc rowScanner) (*store.A2ATask, error) {
	var (
		t                store.A2ATask
		final            int64
		created, updated int64
		body             string
	)
	if err := sc.Scan(&t.Peer, &t.ID, &t.ContextID, &t.State, &final, &t.RunID, &body, &created, &updated); err != nil {
		return nil, err
	}
	t.Final = final != 0
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
		return errors.New("sqlite.PutA2ATask: task needs a peer, an id and a state")
	}
	body := string(t.Task)
	if body == "" {
		body = "{}"
	}
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, qPutA2ATask, t.Peer, t.ID, t.ContextID, t.State, boolInt(t.Final),
			t.RunID, body, toMs(s.nowTime()))
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite.PutA2ATask %q/%q: %w", t.Peer, t.ID, err)
	}
	return nil
}

// GetA2ATask implements store.A2ATaskStore.
func (s *Store) GetA2ATask(ctx context.Context, peer, id string) (*store.A2ATask, error) {
	if err := s.checkOpen("GetA2ATask"); err != nil {
		return nil, err
	}
	t, err := scanA2ATask(s.queryRow(ctx, qGetA2ATask, peer, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite.GetA2ATask %q/%q: %w", peer, id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite.GetA2ATask %q/%q: %w", peer, id, err)
	}
	return t, nil
}

// ListA2ATasks implements store.A2ATaskStore.
func (s *Store) ListA2ATasks(ctx context.Context, peer, contextID string, limit int) ([]*store.A2ATask, error) {
	if limit <= 0 || limit > store.MaxA2ATaskList {
		return nil, fmt.Errorf("sqlite.ListA2ATasks: limit %d not in 1..%d", limit, store.MaxA2ATaskList)
	}
	if contextID == "" {
		return s.a2aTasks(ctx, "ListA2ATasks", qListA2ATasks, peer, limit)
	}
	return s.a2aTasks(ctx, "ListA2ATasks", qListA2ATasksCtx, peer, contextID, limit)
}

// OpenA2ATasks implements store.A2ATaskStore.
func (s *Store) OpenA2ATasks(ctx context.Context, limit int) ([]*store.A2ATask, error) {
	if limit <= 0 || limit > store.MaxA2ATaskList {
		return nil, fmt.Errorf("sqlite.OpenA2ATasks: limit %d not in 1..%d", limit, store.MaxA2ATaskList)
	}
	return s.a2aTasks(ctx, "OpenA2ATasks", qOpenA2ATasks, limit)
}

func (s *Store) a2aTasks(ctx context.Context, op, q string, args ...any) ([]*store.A2ATask, error) {
	if err := s.checkOpen(op); err != nil {
		return nil, err
	}
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite.%s: %w", op, err)
	}
	defer rows.Close()
	var out []*store.A2ATask
	for rows.Next() {
		t, err := scanA2ATask(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite.%s: %w", op, err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite.%s: %w", op, err)
	}
	return out, nil
}
