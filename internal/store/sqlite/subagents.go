package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

const (
	qGetSubagent     = sqlstore.GetSubagent
	qInsertSubagent  = sqlstore.InsertSubagent
	qUpdateSubagent  = sqlstore.UpdateSubagent
	qPruneOutbox     = sqlstore.PruneOutbox
	qPruneOutboxKind = sqlstore.PruneOutboxKind
)

// PutSubagent inserts a registry row; ErrConflict if the child run exists.
func (s *Store) PutSubagent(ctx context.Context, r *store.SubagentRun) error {
	if err := s.checkOpen("PutSubagent"); err != nil {
		return err
	}
	if r == nil {
		return errors.New("sqlite.PutSubagent: nil row")
	}
	args, err := sqlstore.NewSubagentArgs(r, s.nowTime())
	if err != nil {
		return fmt.Errorf("sqlite.PutSubagent: %w", err)
	}
	err = s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
		return s.insertNewTx(ctx, tx, qInsertSubagent, r.ChildRunID, args)
	})
	if err != nil {
		return fmt.Errorf("sqlite.PutSubagent: %w", err)
	}
	return nil
}

// UpdateSubagent applies fn to the stored row in one write transaction.
func (s *Store) UpdateSubagent(ctx context.Context, childRunID string, fn func(*store.SubagentRun) error) (*store.SubagentRun, error) {
	if err := s.checkOpen("UpdateSubagent"); err != nil {
		return nil, err
	}
	var out *store.SubagentRun
	var fnErr error
	err := s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
		get, err := s.wstmt(ctx, tx, qGetSubagent)
		if err != nil {
			return err
		}
		r, err := sqlstore.ScanSubagent(get.QueryRowContext(ctx, childRunID))
		if errors.Is(err, sql.ErrNoRows) {
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
		put, err := s.wstmt(ctx, tx, qUpdateSubagent)
		if err != nil {
			return err
		}
		if _, err := put.ExecContext(ctx, args...); err != nil {
			return err
		}
		out = c
		return nil
	})
	if fnErr != nil {
		return nil, fnErr
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite.UpdateSubagent: %w", err)
	}
	return out, nil
}

// PruneOutbox deletes delivered items of kind ("" for all) delivered before
// deliveredBefore.
func (s *Store) PruneOutbox(ctx context.Context, kind string, deliveredBefore time.Time) (int64, error) {
	if err := s.checkOpen("PruneOutbox"); err != nil {
		return 0, err
	}
	var n int64
	err := s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
		query, args := qPruneOutbox, []any{deliveredBefore.UnixMilli()}
		if kind != "" {
			query, args = qPruneOutboxKind, []any{kind, deliveredBefore.UnixMilli()}
		}
		st, err := s.wstmt(ctx, tx, query)
		if err != nil {
			return err
		}
		res, err := st.ExecContext(ctx, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite.PruneOutbox: %w", err)
	}
	return n, nil
}
