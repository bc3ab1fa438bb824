package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// outboxCols lists the outbox columns in the order scanOutbox and
// outboxArgs use.
const outboxCols = `id, kind, session_key, run_id, payload, status, attempts,
	next_attempt_at, last_error, created_at, updated_at, delivered_at`

const (
	qGetOutbox = `SELECT ` + outboxCols + ` FROM outbox WHERE id = ?`

	// qInsertOutbox inserts an item unless its id exists; callers tell the
	// two apart by the number of rows affected.
	qInsertOutbox = `INSERT INTO outbox (` + outboxCols + `)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (id) DO NOTHING`

	qUpdateOutbox = `UPDATE outbox SET kind = ?2, session_key = ?3, run_id = ?4,
		payload = ?5, status = ?6, attempts = ?7, next_attempt_at = ?8,
		last_error = ?9, created_at = ?10, updated_at = ?11, delivered_at = ?12
		WHERE id = ?1`
)

// scanOutbox reads one row of outboxCols.
func scanOutbox(sc rowScanner) (*store.OutboxItem, error) {
	var (
		it                                store.OutboxItem
		status                            string
		payload                           []byte
		next, created, updated, delivered int64
	)
	err := sc.Scan(&it.ID, &it.Kind, &it.SessionKey, &it.RunID, &payload, &status, &it.Attempts,
		&next, &it.LastError, &created, &updated, &delivered)
	if err != nil {
		return nil, err
	}
	it.Status = store.OutboxStatus(status)
	if payload != nil {
		it.Payload = json.RawMessage(payload)
	}
	it.NextAttemptAt = fromMs(next)
	it.CreatedAt = fromMs(created)
	it.UpdatedAt = fromMs(updated)
	it.DeliveredAt = fromMs(delivered)
	return &it, nil
}

// outboxArgs prepares it (store.PrepareOutbox) and returns it as
// arguments in outboxCols order.
func outboxArgs(it *store.OutboxItem, now time.Time) ([]any, error) {
	if err := store.PrepareOutbox(it, now); err != nil {
		return nil, err
	}
	return []any{it.ID, it.Kind, it.SessionKey, it.RunID, store.PayloadArg(it.Payload), string(it.Status), it.Attempts,
		toMs(it.NextAttemptAt), it.LastError, toMs(it.CreatedAt), toMs(it.UpdatedAt),
		toMs(it.DeliveredAt)}, nil
}

// newOutboxArgs applies PutOutbox's defaults to it, a caller's copy, with
// now as the current time, and returns its arguments.
func newOutboxArgs(it *store.OutboxItem, now time.Time) ([]any, error) {
	if err := store.PrepareNewOutbox(it, now); err != nil {
		return nil, err
	}
	return outboxArgs(it, now)
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
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
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
func (s *Store) insertOutboxTx(ctx context.Context, tx *sql.Tx, args []any) (bool, error) {
	st, err := s.wstmt(ctx, tx, qInsertOutbox)
	if err != nil {
		return false, err
	}
	res, err := st.ExecContext(ctx, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// GetOutbox returns the item, or ErrNotFound.
func (s *Store) GetOutbox(ctx context.Context, id string) (*store.OutboxItem, error) {
	if err := s.checkOpen("GetOutbox"); err != nil {
		return nil, err
	}
	it, err := scanOutbox(s.queryRow(ctx, qGetOutbox, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite.GetOutbox: %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite.GetOutbox: %w", err)
	}
	return it, nil
}

// ListOutbox returns items matching f, ordered by NextAttemptAt, then
// CreatedAt, then ID. With DueBefore set it returns only pending items due
// by then, served by the (status, next_attempt_at, …) index without a sort.
func (s *Store) ListOutbox(ctx context.Context, f store.OutboxFilter) ([]*store.OutboxItem, error) {
	if err := s.checkOpen("ListOutbox"); err != nil {
		return nil, err
	}
	query, args, ok, err := outboxQuery(f)
	if err != nil {
		return nil, fmt.Errorf("sqlite.ListOutbox: %w", err)
	}
	if !ok {
		return nil, nil
	}
	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite.ListOutbox: %w", err)
	}
	defer rows.Close()
	var out []*store.OutboxItem
	if f.Limit > 0 {
		out = make([]*store.OutboxItem, 0, min(f.Limit, 1024))
	}
	for rows.Next() {
		it, err := scanOutbox(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite.ListOutbox: %w", err)
		}
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite.ListOutbox: %w", err)
	}
	return out, nil
}

// outboxQuery builds ListOutbox's query for f. ok is false when f can match
// nothing (DueBefore with Statuses that exclude pending).
func outboxQuery(f store.OutboxFilter) (query string, args []any, ok bool, err error) {
	var q strings.Builder
	q.WriteString(`SELECT ` + outboxCols + ` FROM outbox WHERE 1`)
	if f.Kind != "" {
		q.WriteString(` AND kind = ?`)
		args = append(args, f.Kind)
	}
	if f.SessionKey != "" {
		q.WriteString(` AND session_key = ?`)
		args = append(args, f.SessionKey)
	}
	if f.RunID != "" {
		q.WriteString(` AND run_id = ?`)
		args = append(args, f.RunID)
	}
	statuses := f.Statuses
	if !f.DueBefore.IsZero() {
		if len(statuses) > 0 && !slices.Contains(statuses, store.OutboxPending) {
			return "", nil, false, nil
		}
		statuses = []store.OutboxStatus{store.OutboxPending}
		q.WriteString(` AND next_attempt_at <= ?`)
		args = append(args, f.DueBefore.UnixMilli())
	}
	switch {
	case len(statuses) == 1:
		// An equality lets the planner use the status indexes for order.
		q.WriteString(` AND status = ?`)
		args = append(args, string(statuses[0]))
	case len(statuses) > 1:
		// One parameter whatever the number of statuses, so one statement.
		b, err := json.Marshal(statuses)
		if err != nil {
			return "", nil, false, err
		}
		q.WriteString(` AND status IN (SELECT value FROM json_each(?))`)
		args = append(args, string(b))
	}
	if f.Newest {
		q.WriteString(` ORDER BY created_at DESC, id DESC`)
	} else {
		q.WriteString(` ORDER BY next_attempt_at, created_at, id`)
	}
	switch {
	case f.Limit > 0:
		q.WriteString(` LIMIT ? OFFSET ?`)
		args = append(args, f.Limit, max(f.Offset, 0))
	case f.Offset > 0:
		q.WriteString(` LIMIT -1 OFFSET ?`)
		args = append(args, f.Offset)
	}
	return q.String(), args, true, nil
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
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		get, err := s.wstmt(ctx, tx, qGetOutbox)
		if err != nil {
			return err
		}
		it, err := scanOutbox(get.QueryRowContext(ctx, id))
		if errors.Is(err, sql.ErrNoRows) {
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
		put, err := s.wstmt(ctx, tx, qUpdateOutbox)
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
		return nil, fmt.Errorf("sqlite.UpdateOutbox: %w", err)
	}
	return out, nil
}
