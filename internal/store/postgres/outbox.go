package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/switchboardhq/switchboard/internal/store"
)

// outboxCols lists the outbox columns in the order scanOutbox and
// outboxArgs use.
const outboxCols = `id, kind, session_key, run_id, payload, status, attempts,
	next_attempt_at, last_error, created_at, updated_at, delivered_at`

const (
	qGetOutbox       = `SELECT ` + outboxCols + ` FROM outbox WHERE id = $1`
	qGetOutboxLocked = qGetOutbox + ` FOR UPDATE`

	// qInsertOutbox inserts an item unless its id exists; callers tell the
	// two apart by the number of rows affected.
	qInsertOutbox = `INSERT INTO outbox (` + outboxCols + `)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12) ON CONFLICT (id) DO NOTHING`

	qUpdateOutbox = `UPDATE outbox SET kind = $2, session_key = $3, run_id = $4,
		payload = $5, status = $6, attempts = $7, next_attempt_at = $8,
		last_error = $9, created_at = $10, updated_at = $11, delivered_at = $12
		WHERE id = $1`
)

// scanOutbox reads one row of outboxCols.
func scanOutbox(row pgx.Row) (*store.OutboxItem, error) {
	var (
		it                                store.OutboxItem
		status                            string
		payload                           []byte
		next, created, updated, delivered int64
	)
	err := row.Scan(&it.ID, &it.Kind, &it.SessionKey, &it.RunID, &payload, &status, &it.Attempts,
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
			tag, err = tx.Exec(ctx, qInsertOutbox, args...)
			return err
		})
	} else {
		tag, err = s.pool.Exec(ctx, qInsertOutbox, args...)
	}
	if err != nil {
		return fmt.Errorf("postgres.PutOutbox: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres.PutOutbox: %q: %w", item.ID, store.ErrConflict)
	}
	return nil
}

// GetOutbox returns the item, or ErrNotFound.
func (s *Store) GetOutbox(ctx context.Context, id string) (*store.OutboxItem, error) {
	if err := s.checkOpen("GetOutbox"); err != nil {
		return nil, err
	}
	it, err := scanOutbox(s.pool.QueryRow(ctx, qGetOutbox, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres.GetOutbox: %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres.GetOutbox: %w", err)
	}
	return it, nil
}

// ListOutbox returns items matching f, ordered by NextAttemptAt, then
// CreatedAt, then ID (or newest first with f.Newest).
func (s *Store) ListOutbox(ctx context.Context, f store.OutboxFilter) ([]*store.OutboxItem, error) {
	if err := s.checkOpen("ListOutbox"); err != nil {
		return nil, err
	}
	query, args, ok := outboxQuery(f)
	if !ok {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres.ListOutbox: %w", err)
	}
	defer rows.Close()
	var out []*store.OutboxItem
	if f.Limit > 0 {
		out = make([]*store.OutboxItem, 0, min(f.Limit, 1024))
	}
	for rows.Next() {
		it, err := scanOutbox(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres.ListOutbox: %w", err)
		}
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres.ListOutbox: %w", err)
	}
	return out, nil
}

// outboxQuery builds ListOutbox's query for f. ok is false when f can match
// nothing (DueBefore with Statuses that exclude pending).
func outboxQuery(f store.OutboxFilter) (query string, args []any, ok bool) {
	var q strings.Builder
	add := func(cond string, v any) {
		args = append(args, v)
		q.WriteString(` AND ` + strings.ReplaceAll(cond, "$?", "$"+strconv.Itoa(len(args))))
	}
	q.WriteString(`SELECT ` + outboxCols + ` FROM outbox WHERE true`)
	if f.Kind != "" {
		add(`kind = $?`, f.Kind)
	}
	if f.SessionKey != "" {
		add(`session_key = $?`, f.SessionKey)
	}
	if f.RunID != "" {
		add(`run_id = $?`, f.RunID)
	}
	statuses := f.Statuses
	if !f.DueBefore.IsZero() {
		if len(statuses) > 0 && !slices.Contains(statuses, store.OutboxPending) {
			return "", nil, false
		}
		statuses = []store.OutboxStatus{store.OutboxPending}
		add(`next_attempt_at <= $?`, f.DueBefore.UnixMilli())
	}
	switch {
	case len(statuses) == 1:
		// An equality lets the planner use the status indexes for order.
		add(`status = $?`, string(statuses[0]))
	case len(statuses) > 1:
		st := make([]string, len(statuses))
		for i, v := range statuses {
			st[i] = string(v)
		}
		add(`status = ANY($?)`, st)
	}
	if f.Newest {
		q.WriteString(` ORDER BY created_at DESC, id DESC`)
	} else {
		q.WriteString(` ORDER BY next_attempt_at, created_at, id`)
	}
	if f.Limit > 0 {
		args = append(args, f.Limit)
		q.WriteString(` LIMIT $` + strconv.Itoa(len(args)))
	}
	if f.Offset > 0 {
		args = append(args, f.Offset)
		q.WriteString(` OFFSET $` + strconv.Itoa(len(args)))
	}
	return q.String(), args, true
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
		it, err := scanOutbox(tx.QueryRow(ctx, qGetOutboxLocked, id))
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
		if _, err := tx.Exec(ctx, qUpdateOutbox, args...); err != nil {
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
