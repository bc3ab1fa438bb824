package sqlstore

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// OutboxCols lists the outbox columns in the order ScanOutbox and
// OutboxArgs use.
const OutboxCols = `id, kind, session_key, run_id, payload, status, attempts,
	next_attempt_at, last_error, created_at, updated_at, delivered_at`

// Statements on the outbox.
const (
	GetOutbox = `SELECT ` + OutboxCols + ` FROM outbox WHERE id = ?`

	// InsertOutbox inserts an item unless its id exists; callers tell the
	// two apart by the number of rows affected.
	InsertOutbox = `INSERT INTO outbox (` + OutboxCols + `)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (id) DO NOTHING`

	UpdateOutbox = `UPDATE outbox SET kind = ?2, session_key = ?3, run_id = ?4,
		payload = ?5, status = ?6, attempts = ?7, next_attempt_at = ?8,
		last_error = ?9, created_at = ?10, updated_at = ?11, delivered_at = ?12
		WHERE id = ?1`
)

// ScanOutbox reads one row of OutboxCols.
func ScanOutbox(sc Scanner) (*store.OutboxItem, error) {
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
	it.NextAttemptAt = FromMs(next)
	it.CreatedAt = FromMs(created)
	it.UpdatedAt = FromMs(updated)
	it.DeliveredAt = FromMs(delivered)
	return &it, nil
}

// OutboxArgs prepares it (store.PrepareOutbox) and returns it as arguments
// in OutboxCols order.
func OutboxArgs(it *store.OutboxItem, now time.Time) ([]any, error) {
	if err := store.PrepareOutbox(it, now); err != nil {
		return nil, err
	}
	return []any{it.ID, it.Kind, it.SessionKey, it.RunID, store.PayloadArg(it.Payload), string(it.Status), it.Attempts,
		ToMs(it.NextAttemptAt), it.LastError, ToMs(it.CreatedAt), ToMs(it.UpdatedAt),
		ToMs(it.DeliveredAt)}, nil
}

// NewOutboxArgs applies PutOutbox's defaults to it, a caller's copy, with
// now as the current time, and returns its arguments.
func NewOutboxArgs(it *store.OutboxItem, now time.Time) ([]any, error) {
	if err := store.PrepareNewOutbox(it, now); err != nil {
		return nil, err
	}
	return OutboxArgs(it, now)
}

// ListOutbox is the query of store.Store's ListOutbox for f, in d. ok is
// false when f can match nothing (DueBefore with Statuses that exclude
// pending).
func (d Dialect) ListOutbox(f store.OutboxFilter) (q *Query, ok bool, err error) {
	q = d.NewQuery(`SELECT ` + OutboxCols + ` FROM outbox WHERE ` + d.True())
	if f.Kind != "" {
		q.Add(` AND kind = ?`, f.Kind)
	}
	if f.SessionKey != "" {
		q.Add(` AND session_key = ?`, f.SessionKey)
	}
	if f.RunID != "" {
		q.Add(` AND run_id = ?`, f.RunID)
	}
	statuses := f.Statuses
	if !f.DueBefore.IsZero() {
		if len(statuses) > 0 && !slices.Contains(statuses, store.OutboxPending) {
			return nil, false, nil
		}
		statuses = []store.OutboxStatus{store.OutboxPending}
		q.Add(` AND next_attempt_at <= ?`, f.DueBefore.UnixMilli())
	}
	if err := q.AddOneOf("status", Strings(statuses)); err != nil {
		return nil, false, err
	}
	if f.Newest {
		q.Write(` ORDER BY created_at DESC, id DESC`)
	} else {
		q.Write(` ORDER BY next_attempt_at, created_at, id`)
	}
	q.LimitOffset(f.Limit, f.Offset)
	return q, true, nil
}
