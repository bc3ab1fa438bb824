package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// subagentCols lists the subagent_runs columns in scanSubagent's order.
const subagentCols = `child_run_id, child_session_key, requester_key, status, archive_at,
	payload, created_at, updated_at`

const (
	qGetSubagent    = `SELECT ` + subagentCols + ` FROM subagent_runs WHERE child_run_id = ?`
	qInsertSubagent = `INSERT INTO subagent_runs (` + subagentCols + `) VALUES (?,?,?,?,?,?,?,?)
		ON CONFLICT (child_run_id) DO NOTHING`
	qUpdateSubagent = `UPDATE subagent_runs SET child_session_key = ?2, requester_key = ?3,
		status = ?4, archive_at = ?5, payload = ?6, created_at = ?7, updated_at = ?8
		WHERE child_run_id = ?1`
	qPruneOutbox     = `DELETE FROM outbox WHERE status = 'delivered' AND delivered_at < ?`
	qPruneOutboxKind = `DELETE FROM outbox WHERE kind = ? AND status = 'delivered' AND delivered_at < ?`
)

func scanSubagent(sc rowScanner) (*store.SubagentRun, error) {
	var (
		r                         store.SubagentRun
		status                    string
		payload                   []byte
		archive, created, updated int64
	)
	if err := sc.Scan(&r.ChildRunID, &r.ChildSessionKey, &r.RequesterKey, &status, &archive,
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
		return errors.New("sqlite.PutSubagent: nil row")
	}
	c := *r
	if err := store.PrepareNewSubagent(&c, s.nowTime()); err != nil {
		return fmt.Errorf("sqlite.PutSubagent: %w", err)
	}
	args := subagentArgs(&c)
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		st, err := s.wstmt(ctx, tx, qInsertSubagent)
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
			return fmt.Errorf("%q: %w", r.ChildRunID, store.ErrConflict)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite.PutSubagent: %w", err)
	}
	return nil
}

// GetSubagent returns the row of a child run, or ErrNotFound.
func (s *Store) GetSubagent(ctx context.Context, childRunID string) (*store.SubagentRun, error) {
	if err := s.checkOpen("GetSubagent"); err != nil {
		return nil, err
	}
	r, err := scanSubagent(s.queryRow(ctx, qGetSubagent, childRunID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite.GetSubagent: %q: %w", childRunID, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite.GetSubagent: %w", err)
	}
	return r, nil
}

// ListSubagents returns rows matching f, newest first, from the
// requester, child and status indexes.
func (s *Store) ListSubagents(ctx context.Context, f store.SubagentFilter) ([]*store.SubagentRun, error) {
	if err := s.checkOpen("ListSubagents"); err != nil {
		return nil, err
	}
	var q strings.Builder
	var args []any
	q.WriteString(`SELECT ` + subagentCols + ` FROM subagent_runs WHERE 1`)
	if f.RequesterKey != "" {
		q.WriteString(` AND requester_key = ?`)
		args = append(args, f.RequesterKey)
	}
	if f.ChildSessionKey != "" {
		q.WriteString(` AND child_session_key = ?`)
		args = append(args, f.ChildSessionKey)
	}
	switch len(f.Statuses) {
	case 0:
	case 1:
		q.WriteString(` AND status = ?`)
		args = append(args, string(f.Statuses[0]))
	default:
		b, err := json.Marshal(f.Statuses)
		if err != nil {
			return nil, fmt.Errorf("sqlite.ListSubagents: %w", err)
		}
		q.WriteString(` AND status IN (SELECT value FROM json_each(?))`)
		args = append(args, string(b))
	}
	if !f.ArchiveDueBefore.IsZero() {
		q.WriteString(` AND archive_at > 0 AND archive_at <= ?`)
		args = append(args, f.ArchiveDueBefore.UnixMilli())
	}
	q.WriteString(` ORDER BY created_at DESC, child_run_id DESC`)
	switch {
	case f.Limit > 0:
		q.WriteString(` LIMIT ? OFFSET ?`)
		args = append(args, f.Limit, max(f.Offset, 0))
	case f.Offset > 0:
		q.WriteString(` LIMIT -1 OFFSET ?`)
		args = append(args, f.Offset)
	}
	rows, err := s.query(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite.ListSubagents: %w", err)
	}
	defer rows.Close()
	var out []*store.SubagentRun
	for rows.Next() {
		r, err := scanSubagent(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite.ListSubagents: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite.ListSubagents: %w", err)
	}
	return out, nil
}

// UpdateSubagent applies fn to the stored row in one write transaction.
func (s *Store) UpdateSubagent(ctx context.Context, childRunID string, fn func(*store.SubagentRun) error) (*store.SubagentRun, error) {
	if err := s.checkOpen("UpdateSubagent"); err != nil {
		return nil, err
	}
	var out *store.SubagentRun
	var fnErr error
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		get, err := s.wstmt(ctx, tx, qGetSubagent)
		if err != nil {
			return err
		}
		r, err := scanSubagent(get.QueryRowContext(ctx, childRunID))
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
		args := subagentArgs(c)
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
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
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
