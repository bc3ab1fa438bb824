package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard/internal/store"
)

// subagentCols lists the subagent_runs columns in scanSubagent's order.
const subagentCols = `child_run_id, child_session_key, requester_key, status, archive_at,
	payload, created_at, updated_at`

const (
	qGetSubagent       = `SELECT ` + subagentCols + ` FROM subagent_runs WHERE child_run_id = $1`
	qGetSubagentLocked = qGetSubagent + ` FOR UPDATE`
	qInsertSubagent    = `INSERT INTO subagent_runs (` + subagentCols + `) VALUES ($1,$2,$3,$4,$5,$6,$7,$8)
		ON CONFLICT (child_run_id) DO NOTHING`
	qUpdateSubagent = `UPDATE subagent_runs SET child_session_key = $2, requester_key = $3,
		status = $4, archive_at = $5, payload = $6, created_at = $7, updated_at = $8
		WHERE child_run_id = $1`
	qPruneOutbox     = `DELETE FROM outbox WHERE status = 'delivered' AND delivered_at < $1`
	qPruneOutboxKind = `DELETE FROM outbox WHERE kind = $1 AND status = 'delivered' AND delivered_at < $2`
)

func scanSubagent(row pgx.Row) (*store.SubagentRun, error) {
	var (
		r                         store.SubagentRun
		status                    string
		payload                   []byte
		archive, created, updated int64
	)
	if err := row.Scan(&r.ChildRunID, &r.ChildSessionKey, &r.RequesterKey, &status, &archive,
		&payload, &created, &updated); err != nil {
		return nil, err
	}
	r.Status = store.SubagentStatus(status)
	if payload != nil {
		r.Payload = json.RawMessage(payload)
	}
	r.ArchiveAt, r.CreatedAt, r.UpdatedAt = fromMs(archive), fromMs(created), fromMs(updated)
	return &r, nil
}

// subagentArgs returns a prepared row as arguments in subagentCols order.
func subagentArgs(r *store.SubagentRun) []any {
	return []any{r.ChildRunID, r.ChildSessionKey, r.RequesterKey, string(r.Status), toMs(r.ArchiveAt),
		store.PayloadArg(r.Payload), toMs(r.CreatedAt), toMs(r.UpdatedAt)}
}

// PutSubagent inserts a registry row; ErrConflict if the child run exists.
func (s *Store) PutSubagent(ctx context.Context, r *store.SubagentRun) error {
	if err := s.checkOpen("PutSubagent"); err != nil {
		return err
	}
	if r == nil {
		return errors.New("postgres.PutSubagent: nil row")
	}
	c := *r
	if err := store.PrepareNewSubagent(&c, s.nowTime()); err != nil {
		return fmt.Errorf("postgres.PutSubagent: %w", err)
	}
	args := subagentArgs(&c)
	tag, err := s.pool.Exec(ctx, qInsertSubagent, args...)
	if err != nil {
		return fmt.Errorf("postgres.PutSubagent: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres.PutSubagent: %q: %w", r.ChildRunID, store.ErrConflict)
	}
	return nil
}

// GetSubagent returns the row of a child run, or ErrNotFound.
func (s *Store) GetSubagent(ctx context.Context, childRunID string) (*store.SubagentRun, error) {
	if err := s.checkOpen("GetSubagent"); err != nil {
		return nil, err
	}
	r, err := scanSubagent(s.pool.QueryRow(ctx, qGetSubagent, childRunID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres.GetSubagent: %q: %w", childRunID, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres.GetSubagent: %w", err)
	}
	return r, nil
}

// ListSubagents returns rows matching f, newest first.
func (s *Store) ListSubagents(ctx context.Context, f store.SubagentFilter) ([]*store.SubagentRun, error) {
	if err := s.checkOpen("ListSubagents"); err != nil {
		return nil, err
	}
	var q strings.Builder
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	q.WriteString(`SELECT ` + subagentCols + ` FROM subagent_runs WHERE true`)
	if f.RequesterKey != "" {
		q.WriteString(` AND requester_key = ` + arg(f.RequesterKey))
	}
	if f.ChildSessionKey != "" {
		q.WriteString(` AND child_session_key = ` + arg(f.ChildSessionKey))
	}
	if len(f.Statuses) > 0 {
		st := make([]string, len(f.Statuses))
		for i, v := range f.Statuses {
			st[i] = string(v)
		}
		q.WriteString(` AND status = ANY(` + arg(st) + `)`)
	}
	if !f.ArchiveDueBefore.IsZero() {
		q.WriteString(` AND archive_at > 0 AND archive_at <= ` + arg(f.ArchiveDueBefore.UnixMilli()))
	}
	q.WriteString(` ORDER BY created_at DESC, child_run_id DESC`)
	if f.Limit > 0 {
		q.WriteString(` LIMIT ` + arg(f.Limit))
	}
	if f.Offset > 0 {
		q.WriteString(` OFFSET ` + arg(f.Offset))
	}
	rows, err := s.pool.Query(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("postgres.ListSubagents: %w", err)
	}
	defer rows.Close()
	var out []*store.SubagentRun
	for rows.Next() {
		r, err := scanSubagent(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres.ListSubagents: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres.ListSubagents: %w", err)
	}
	return out, nil
}

// UpdateSubagent applies fn to the stored row, locked, in one transaction.
func (s *Store) UpdateSubagent(ctx context.Context, childRunID string, fn func(*store.SubagentRun) error) (*store.SubagentRun, error) {
	if err := s.checkOpen("UpdateSubagent"); err != nil {
		return nil, err
	}
	var out *store.SubagentRun
	var fnErr error
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		r, err := scanSubagent(tx.QueryRow(ctx, qGetSubagentLocked, childRunID))
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
		args := subagentArgs(c)
		if _, err := tx.Exec(ctx, qUpdateSubagent, args...); err != nil {
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
	query, args := qPruneOutbox, []any{deliveredBefore.UnixMilli()}
	if kind != "" {
		query, args = qPruneOutboxKind, []any{kind, deliveredBefore.UnixMilli()}
	}
	tag, err := s.pool.Exec(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("postgres.PruneOutbox: %w", err)
	}
	return tag.RowsAffected(), nil
}
