package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

var _ store.ChildCreator = (*Store)(nil)

// CreateChild stores a spawned child's session row (fn applied as
// UpdateSession with create applies it) and its registry row r in one
// transaction (store.ChildCreator).
func (s *Store) CreateChild(ctx context.Context, key string, fn func(*store.Session) error, r *store.SubagentRun) (*store.Session, error) {
	if err := s.checkOpen("CreateChild"); err != nil {
		return nil, err
	}
	if key == "" || r == nil {
		return nil, errors.New("postgres.CreateChild: empty key or nil row")
	}
	args, err := sqlstore.NewSubagentArgs(r, s.nowTime())
	if err != nil {
		return nil, fmt.Errorf("postgres.CreateChild: %w", err)
	}
	var (
		out   *store.Session
		fnErr error
	)
	err = s.writeTx(ctx, func(tx pgx.Tx) error {
		var err error
		if out, fnErr, err = s.updateSessionTx(ctx, tx, key, true, fn); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, s.q.insertSubagent, args...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%q: %w", r.ChildRunID, store.ErrConflict)
		}
		return nil
	})
	s.forgetSession(ctx, key)
	if fnErr != nil {
		return nil, fnErr
	}
	if err != nil {
		return nil, fmt.Errorf("postgres.CreateChild: %w", err)
	}
	return out, nil
}
