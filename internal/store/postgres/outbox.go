package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

// scanOutbox reads one row of sqlstore.OutboxCols.
func scanOutbox(row pgx.Row) (*store.OutboxItem, error) { return sqlstore.ScanOutbox(row) }

// outboxArgs is sqlstore.OutboxArgs.
func outboxArgs(it *store.OutboxItem, now time.Time) ([]any, error) {
	return sqlstore.OutboxArgs(it, now)
}

// newOutboxArgs is sqlstore.NewOutboxArgs.
func newOutboxArgs(it *store.OutboxItem, now time.Time) ([]any, error) {
	return sqlstore.NewOutboxArgs(it, now)
}

// PutOutbox inserts item with store.Store's defaults; ErrConflict if its
// ID exists. item itself is not modified.
func (s *Store) PutOutbox(ctx context.Context, item *store.OutboxItem) error {
	if err := s.checkOpen("PutOutbox"); err != nil {
		return err
	}
	if item == nil {
		return errors.New("postgres.PutOutbox: nil item")
	}
	c := *item // Payload is shared but only read
	args, err := newOutboxArgs(&c, s.nowTime())
	if err != nil {
		return fmt.Errorf("postgres.PutOutbox: %w", err)
	}
	var tag pgconn.CommandTag
	if _, fenced := store.FenceOf(ctx); fenced {
		err = s.writeTx(ctx, func(tx pgx.Tx) error {
			tag, err = tx.Exec(ctx, s.q.insertOutbox, args...)
			return err
		})
	} else {
		tag, err = s.pool.Exec(ctx, s.q.insertOutbox, args...)
	}
	if err != nil {
		return fmt.Errorf("postgres.PutOutbox: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres.PutOutbox: %q: %w", item.ID, store.ErrConflict)
	}
	return nil
}

// UpdateOutbox applies fn to the stored item, locked for the transaction,
// and stores the result with UpdatedAt set to now (and a delivered item's
// zero DeliveredAt set to now); fn's error is returned as is and leaves the
// item unchanged, so fn is a compare-and-set across nodes. ErrNotFound if
// absent. fn may not change ID and must not call the Store.
func (s *Store) UpdateOutbox(ctx context.Context, id string, fn func(*store.OutboxItem) error) (*store.OutboxItem, error) {
	if err := s.checkOpen("UpdateOutbox"); err != nil {
		return nil, err
	}
	var (
		out   *store.OutboxItem
		fnErr error
	)
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		it, err := scanOutbox(tx.QueryRow(ctx, s.q.getOutboxLocked, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%q: %w", id, store.ErrNotFound)
		} else if err != nil {
			return err
		}
		if err := fn(it); err != nil {
			fnErr = err
			return err
		}
		if it.ID != id {
			return fmt.Errorf("fn changed outbox item id %q to %q", id, it.ID)
		}
		c := it.Clone() // fn may keep it and mutate it later
		now := s.nowTime()
		c.UpdatedAt = now
		args, err := outboxArgs(c, now)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.q.updateOutbox, args...); err != nil {
			return err
		}
		out = c
		return nil
	})
	if fnErr != nil {
		return nil, fnErr
	}
	if err != nil {
		return nil, fmt.Errorf("postgres.UpdateOutbox: %w", err)
	}
	return out, nil
}
