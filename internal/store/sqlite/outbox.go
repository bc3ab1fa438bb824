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
	qGetOutbox    = sqlstore.GetOutbox
	qInsertOutbox = sqlstore.InsertOutbox
	qUpdateOutbox = sqlstore.UpdateOutbox
)

// scanOutbox reads one row of sqlstore.OutboxCols.
func scanOutbox(sc rowScanner) (*store.OutboxItem, error) { return sqlstore.ScanOutbox(sc) }

// outboxArgs is sqlstore.OutboxArgs.
func outboxArgs(it *store.OutboxItem, now time.Time) ([]any, error) {
	return sqlstore.OutboxArgs(it, now)
}

// newOutboxArgs is sqlstore.NewOutboxArgs.
func newOutboxArgs(it *store.OutboxItem, now time.Time) ([]any, error) {
	return sqlstore.NewOutboxArgs(it, now)
}

// PutOutbox inserts item; ErrConflict if its ID exists. An empty Status
// means pending, zero CreatedAt and UpdatedAt mean now, a zero NextAttemptAt
// means CreatedAt, and a delivered item's zero DeliveredAt means now. item
// itself is not modified.
func (s *Store) PutOutbox(ctx context.Context, item *store.OutboxItem) error {
	if err := s.checkOpen("PutOutbox"); err != nil {
		return err
	}
	if item == nil {
		return errors.New("sqlite.PutOutbox: nil item")
	}
	c := *item // Payload is shared but only read
	args, err := newOutboxArgs(&c, s.nowTime())
	if err != nil {
		return fmt.Errorf("sqlite.PutOutbox: %w", err)
	}
	err = s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
		ins, err := s.insertOutboxTx(ctx, tx, args)
		if err != nil {
			return err
		}
		if !ins {
			return fmt.Errorf("%q: %w", item.ID, store.ErrConflict)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite.PutOutbox: %w", err)
	}
	return nil
}

// insertOutboxTx inserts one item's args inside a write transaction and
// reports whether it was inserted (false: the id exists).
func (s *Store) insertOutboxTx(ctx context.Context, tx wtx, args []any) (bool, error) {
	return s.insertTx(ctx, tx, qInsertOutbox, args)
}

// insertTx runs an INSERT … ON CONFLICT DO NOTHING inside a write
// transaction and reports whether it inserted a row.
func (s *Store) insertTx(ctx context.Context, tx wtx, query string, args []any) (bool, error) {
	res, err := s.wexec(ctx, tx, query, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// UpdateOutbox applies fn to the stored item in one write transaction and
// stores the result with UpdatedAt set to now (and a delivered item's zero
// DeliveredAt set to now); fn's error is returned as is and leaves the item
// unchanged. ErrNotFound if absent. fn may not change ID; it runs while the
// writer is held, so it must be quick and must not call the Store.
func (s *Store) UpdateOutbox(ctx context.Context, id string, fn func(*store.OutboxItem) error) (*store.OutboxItem, error) {
	if err := s.checkOpen("UpdateOutbox"); err != nil {
		return nil, err
	}
	var (
		out   *store.OutboxItem
		fnErr error
	)
	err := s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
		var err error
		out, fnErr, err = s.updateOutboxTx(ctx, tx, id, fn)
		return err
	})
	if fnErr != nil {
		return nil, fnErr
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite.UpdateOutbox: %w", err)
	}
	return out, nil
}

// updateOutboxTx is UpdateOutbox's body in tx: it returns the stored item,
// and fn's error (also as the error) when fn failed.
func (s *Store) updateOutboxTx(ctx context.Context, tx wtx, id string, fn func(*store.OutboxItem) error) (*store.OutboxItem, error, error) {
	get, err := s.wstmt(ctx, tx, qGetOutbox)
	if err != nil {
		return nil, nil, err
	}
	it, err := scanOutbox(get.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, fmt.Errorf("%q: %w", id, store.ErrNotFound)
	} else if err != nil {
		return nil, nil, err
	}
	if err := fn(it); err != nil {
		return nil, err, err
	}
	if it.ID != id {
		return nil, nil, fmt.Errorf("fn changed outbox item id %q to %q", id, it.ID)
	}
	c := it.Clone() // fn may keep it and mutate it later
	now := s.nowTime()
	c.UpdatedAt = now
	args, err := outboxArgs(c, now)
	if err != nil {
		return nil, nil, err
	}
	put, err := s.wstmt(ctx, tx, qUpdateOutbox)
	if err != nil {
		return nil, nil, err
	}
	if _, err := put.ExecContext(ctx, args...); err != nil {
		return nil, nil, err
	}
	return c, nil, nil
}

// ClaimsWithRuns implements store.RunClaimer: OpenRun and CreateRun make
// the claims their context carries (store.RunClaims) in the run's
// transaction.
func (s *Store) ClaimsWithRuns() bool { return true }

// runClaimsTx makes the claims ctx carries for run runID in tx (none:
// nothing); a claim's error refuses the run.
func (s *Store) runClaimsTx(ctx context.Context, tx wtx, c *store.RunClaims) error {
	if c == nil {
		return nil
	}
	for _, cl := range c.Claims {
		if _, _, err := s.updateOutboxTx(ctx, tx, cl.ID, cl.Apply); err != nil {
			return fmt.Errorf("claim %s: %w", cl.ID, err)
		}
	}
	return nil
}
