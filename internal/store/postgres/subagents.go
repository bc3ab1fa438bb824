package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

// PutSubagent inserts a registry row; ErrConflict if the child run exists.
func (s *Store) PutSubagent(ctx context.Context, r *store.SubagentRun) error {
	if err := s.checkOpen("PutSubagent"); err != nil {
		return err
	}
	if r == nil {
		return errors.New("postgres.PutSubagent: nil row")
	}
	args, err := sqlstore.NewSubagentArgs(r, s.nowTime())
	if err != nil {
		return fmt.Errorf("postgres.PutSubagent: %w", err)
	}
	tag, err := s.pool.Exec(ctx, s.q.insertSubagent, args...)
	if err != nil {
		return fmt.Errorf("postgres.PutSubagent: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres.PutSubagent: %q: %w", r.ChildRunID, store.ErrConflict)
	}
	return nil
}

// UpdateSubagent applies fn to the stored row, locked, in one transaction.
func (s *Store) UpdateSubagent(ctx context.Context, childRunID string, fn func(*store.SubagentRun) error) (*store.SubagentRun, error) {
	if err := s.checkOpen("UpdateSubagent"); err != nil {
		return nil, err
	}
	var out *store.SubagentRun
	var fnErr error
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		r, err := sqlstore.ScanSubagent(tx.QueryRow(ctx, s.q.getSubagentLocked, childRunID))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%q: %w", childRunID, store.ErrNotFound)
		} else if err != nil {
			return err
		}
		if err := fn(r); err != nil {
			fnErr = err
			return err
		}
		if r.ChildRunID != childRunID {
			return fmt.Errorf("fn changed child run id %q to %q", childRunID, r.ChildRunID)
		}
		c := r.Clone()
		c.UpdatedAt = s.nowTime()
		if err := store.PrepareSubagent(c); err != nil {
			return err
		}
		args := sqlstore.SubagentArgs(c)
		if _, err := tx.Exec(ctx, s.q.updateSubagent, args...); err != nil {
			return err
		}
		out = c
		return nil
	})
	if fnErr != nil {
		return nil, fnErr
	}
	if err != nil {
		return nil, fmt.Errorf("postgres.UpdateSubagent: %w", err)
	}
	return out, nil
}

// PruneOutbox deletes delivered items of kind ("" for all) delivered before
// deliveredBefore.
func (s *Store) PruneOutbox(ctx context.Context, kind string, deliveredBefore time.Time) (int64, error) {
	if err := s.checkOpen("PruneOutbox"); err != nil {
		return 0, err
	}
	query, args := s.q.pruneOutbox, []any{deliveredBefore.UnixMilli()}
	if kind != "" {
		query, args = s.q.pruneOutboxKind, []any{kind, deliveredBefore.UnixMilli()}
	}
	tag, err := s.pool.Exec(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("postgres.PruneOutbox: %w", err)
	}
	return tag.RowsAffected(), nil
}
