package sqlite

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

var _ store.ChildCreator = (*Store)(nil)

// CreateChild stores a spawned child's session row (fn applied as
// UpdateSession with create applies it) and its registry row r in one
// commit (store.ChildCreator), and caches the stored row.
func (s *Store) CreateChild(ctx context.Context, key string, fn func(*store.Session) error, r *store.SubagentRun) (*store.Session, error) {
	if err := s.checkOpen("CreateChild"); err != nil {
		return nil, err
	}
	if key == "" || r == nil {
		return nil, errors.New("sqlite.CreateChild: empty key or nil row")
	}
	args, err := sqlstore.NewSubagentArgs(r, s.nowTime())
	if err != nil {
		return nil, fmt.Errorf("sqlite.CreateChild: %w", err)
	}
	var (
		out, row *store.Session
		fnErr    error
	)
	err = s.writeTxThen(ctx, func(ctx context.Context, tx wtx) error {
		var err error
		if out, fnErr, err = s.updateSessionTx(ctx, tx, key, true, fn); err != nil {
			return err
		}
		if err := s.insertNewTx(ctx, tx, qInsertSubagent, r.ChildRunID, args); err != nil {
			return err
		}
		// The row as a read returns it, for the cache: the child's run
		// reads it next (its admission and start).
		get, err := s.wstmt(ctx, tx, qGetSession)
		if err != nil {
			return err
		}
		row, err = scanSession(get.QueryRowContext(ctx, key))
		return err
	}, func() { s.sessions.put(row) })
	if fnErr != nil {
		return nil, fnErr
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite.CreateChild: %w", err)
	}
	return out, nil
}

// insertChildTx inserts a spawned child's new session row and its
// registry row (args, its insert's arguments) in tx.
func (s *Store) insertChildTx(ctx context.Context, tx wtx, c *store.ChildOpen, args []any) error {
	row := c.Session.Clone()
	if _, fnErr, err := s.updateSessionTx(ctx, tx, row.Key, true, func(x *store.Session) error {
		if !x.CreatedAt.IsZero() {
			return fmt.Errorf("child session %q: %w", row.Key, store.ErrConflict)
		}
		*x = *row
		return nil
	}); err != nil || fnErr != nil {
		return cmp.Or(fnErr, err)
	}
	return s.insertNewTx(ctx, tx, qInsertSubagent, c.Row.ChildRunID, args)
}

// insertNewTx runs insert statement q (one that inserts nothing when its
// row exists) with args in tx; ErrConflict, naming id, when it inserted
// nothing.
func (s *Store) insertNewTx(ctx context.Context, tx wtx, q, id string, args []any) error {
	st, err := s.wstmt(ctx, tx, q)
	if err != nil {
		return err
	}
	res, err := st.ExecContext(ctx, args...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("%q: %w", id, store.ErrConflict)
	}
	return nil
}
