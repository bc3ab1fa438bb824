package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/switchboardhq/switchboard/internal/store"
)

// sessionCols lists the sessions columns in the order scanSession and
// sessionArgs use.
const sessionCols = `key, session_id, agent_id, kind, channel, chat_type,
	display_name, label, spawned_by, spawn_depth,
	model, thinking_level, verbose_level,
	context_tokens, input_tokens, output_tokens, total_tokens,
	system_sent, aborted_last_run, send_policy,
	last_channel, last_to, last_account_id, delivery_context, extra,
	created_at, updated_at`

const (
	qGetSession = `SELECT ` + sessionCols + ` FROM sessions WHERE key = ?`

	qSessionsByID = `SELECT ` + sessionCols + ` FROM sessions WHERE session_id = ? ORDER BY key`

	// The key class is written with the row and never changes: the key is
	// the row's identity.
	qInsertSession = `INSERT INTO sessions (` + sessionCols + `, key_class)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT (key) DO NOTHING`

	qUpsertSession = `INSERT INTO sessions (` + sessionCols + `, key_class)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT (key) DO UPDATE SET
		session_id = excluded.session_id, agent_id = excluded.agent_id,
		kind = excluded.kind, channel = excluded.channel,
		chat_type = excluded.chat_type, display_name = excluded.display_name,
		label = excluded.label, spawned_by = excluded.spawned_by,
		spawn_depth = excluded.spawn_depth, model = excluded.model,
		thinking_level = excluded.thinking_level,
		verbose_level = excluded.verbose_level,
		context_tokens = excluded.context_tokens,
		input_tokens = excluded.input_tokens,
		output_tokens = excluded.output_tokens,
		total_tokens = excluded.total_tokens,
		system_sent = excluded.system_sent,
		aborted_last_run = excluded.aborted_last_run,
		send_policy = excluded.send_policy,
		last_channel = excluded.last_channel, last_to = excluded.last_to,
		last_account_id = excluded.last_account_id,
		delivery_context = excluded.delivery_context,
		extra = excluded.extra,
		created_at = excluded.created_at, updated_at = excluded.updated_at`

	qDeleteSession = `DELETE FROM sessions WHERE key = ? RETURNING session_id`

	qSessionIDInUse = `SELECT EXISTS (SELECT 1 FROM sessions WHERE session_id = ?)`

	qDeleteTranscript = `DELETE FROM messages WHERE session_id = ?`
)

// rowScanner is *sql.Row or *sql.Rows.
type rowScanner interface{ Scan(dest ...any) error }

// scanSession reads one row of sessionCols.
func scanSession(sc rowScanner) (*store.Session, error) {
	var (
		s                store.Session
		dc, extra        []byte
		sys, aborted     int64
		created, updated int64
	)
	err := sc.Scan(&s.Key, &s.SessionID, &s.AgentID, &s.Kind, &s.Channel, &s.ChatType,
		&s.DisplayName, &s.Label, &s.SpawnedBy, &s.SpawnDepth,
		&s.Model, &s.ThinkingLevel, &s.VerboseLevel,
		&s.ContextTokens, &s.InputTokens, &s.OutputTokens, &s.TotalTokens,
		&sys, &aborted, &s.SendPolicy,
		&s.LastChannel, &s.LastTo, &s.LastAccountID, &dc, &extra,
		&created, &updated)
	if err != nil {
		return nil, err
	}
	s.SystemSent = sys != 0
	s.AbortedLastRun = aborted != 0
	if dc != nil {
		s.DeliveryContext = new(store.DeliveryContext)
		if err := json.Unmarshal(dc, s.DeliveryContext); err != nil {
			return nil, fmt.Errorf("session %q: deliveryContext: %w", s.Key, err)
		}
	}
	if extra != nil {
		s.Extra = json.RawMessage(extra)
	}
	s.CreatedAt = fromMs(created)
	s.UpdatedAt = fromMs(updated)
	return &s, nil
}

// sessionArgs returns s as arguments in sessionCols order.
func sessionArgs(s *store.Session) ([]any, error) {
	var dc, extra any // nil stores NULL
	if s.DeliveryContext != nil {
		b, err := json.Marshal(s.DeliveryContext)
		if err != nil {
			return nil, err
		}
		dc = string(b)
	}
	if s.Extra != nil {
		if !json.Valid(s.Extra) {
			return nil, fmt.Errorf("session %q: extra is not valid JSON", s.Key)
		}
		extra = string(s.Extra)
	}
	return []any{s.Key, s.SessionID, s.AgentID, s.Kind, s.Channel, s.ChatType,
		s.DisplayName, s.Label, s.SpawnedBy, s.SpawnDepth,
		s.Model, s.ThinkingLevel, s.VerboseLevel,
		s.ContextTokens, s.InputTokens, s.OutputTokens, s.TotalTokens,
		boolInt(s.SystemSent), boolInt(s.AbortedLastRun), s.SendPolicy,
		s.LastChannel, s.LastTo, s.LastAccountID, dc, extra,
		toMs(s.CreatedAt), toMs(s.UpdatedAt), int64(store.ClassOf(s.Key))}, nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// GetSession returns the session with the canonical key, or ErrNotFound.
func (s *Store) GetSession(ctx context.Context, key string) (*store.Session, error) {
	if err := s.checkOpen("GetSession"); err != nil {
		return nil, err
	}
	if sess, ok := s.sessions.get(key); ok {
		return sess, nil
	}
	gen := s.sessions.generation()
	sess, err := scanSession(s.queryRow(ctx, qGetSession, key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite.GetSession: %q: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite.GetSession: %w", err)
	}
	s.sessions.fill(gen, sess)
	return sess, nil
}

// SessionsByID returns every session whose current SessionID is id, ordered
// by key.
func (s *Store) SessionsByID(ctx context.Context, id string) ([]*store.Session, error) {
	if err := s.checkOpen("SessionsByID"); err != nil {
		return nil, err
	}
	rows, err := s.query(ctx, qSessionsByID, id)
	if err != nil {
		return nil, fmt.Errorf("sqlite.SessionsByID: %w", err)
	}
	out, err := collectSessions(rows, -1)
	if err != nil {
		return nil, fmt.Errorf("sqlite.SessionsByID: %w", err)
	}
	return out, nil
}

// collectSessions scans and closes rows. With hint >= 0 it preallocates.
func collectSessions(rows *sql.Rows, hint int) ([]*store.Session, error) {
	defer rows.Close()
	var out []*store.Session
	if hint > 0 {
		out = make([]*store.Session, 0, min(hint, 1024))
	}
	for rows.Next() {
		sess, err := scanSession(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, sess)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// ListSessions returns sessions matching opts, ordered by UpdatedAt
// descending, then Key.
func (s *Store) ListSessions(ctx context.Context, opts store.ListOptions) ([]*store.Session, error) {
	if err := s.checkOpen("ListSessions"); err != nil {
		return nil, err
	}
	var q strings.Builder
	q.WriteString(`SELECT ` + sessionCols + ` FROM sessions`)
	args := sessionWhere(&q, opts)
	q.WriteString(` ORDER BY updated_at DESC, key`)
	switch {
	case opts.Limit > 0:
		q.WriteString(` LIMIT ? OFFSET ?`)
		args = append(args, opts.Limit, max(opts.Offset, 0))
	case opts.Offset > 0:
		q.WriteString(` LIMIT -1 OFFSET ?`)
		args = append(args, opts.Offset)
	}
	rows, err := s.query(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite.ListSessions: %w", err)
	}
	out, err := collectSessions(rows, opts.Limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite.ListSessions: %w", err)
	}
	return out, nil
}

// sessionWhere appends the WHERE clause of opts' filters (not its limit
// and offset) to q and returns the arguments.
func sessionWhere(q *strings.Builder, opts store.ListOptions) []any {
	var args []any
	q.WriteString(` WHERE 1`)
	if opts.AgentID != "" {
		q.WriteString(` AND agent_id = ?`)
		args = append(args, opts.AgentID)
	}
	if opts.SpawnedBy != "" {
		q.WriteString(` AND spawned_by = ?`)
		args = append(args, opts.SpawnedBy)
	}
	if opts.Label != "" {
		q.WriteString(` AND label = ?`)
		args = append(args, opts.Label)
	}
	if opts.Kind != "" {
		q.WriteString(` AND kind = ?`)
		args = append(args, opts.Kind)
	}
	if !opts.UpdatedSince.IsZero() {
		q.WriteString(` AND updated_at >= ?`)
		args = append(args, opts.UpdatedSince.UnixMilli())
	}
	if opts.Search != "" {
		q.WriteString(` AND (sb_icontains(key, ?) OR sb_icontains(session_id, ?)
			OR sb_icontains(label, ?) OR sb_icontains(display_name, ?))`)
		needle := strings.ToLower(opts.Search)
		args = append(args, needle, needle, needle, needle)
	}
	if opts.Exclude != 0 {
		q.WriteString(` AND (key_class & ?) = 0`)
		args = append(args, int64(opts.Exclude))
	}
	return args
}

// CountSessions implements store.Store.
func (s *Store) CountSessions(ctx context.Context, opts store.ListOptions) (int64, error) {
	if err := s.checkOpen("CountSessions"); err != nil {
		return 0, err
	}
	var q strings.Builder
	q.WriteString(`SELECT COUNT(*) FROM sessions`)
	args := sessionWhere(&q, opts)
	var n int64
	if err := s.queryRow(ctx, q.String(), args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite.CountSessions: %w", err)
	}
	return n, nil
}

// CreateSession inserts sess; ErrConflict if the key exists. CreatedAt and
// UpdatedAt default to now when zero. sess itself is not modified.
func (s *Store) CreateSession(ctx context.Context, sess *store.Session) error {
	if err := s.checkOpen("CreateSession"); err != nil {
		return err
	}
	if sess == nil || sess.Key == "" {
		return errors.New("sqlite.CreateSession: empty key")
	}
	c := *sess
	s.defaultTimes(&c)
	args, err := sessionArgs(&c)
	if err != nil {
		return fmt.Errorf("sqlite.CreateSession: %w", err)
	}
	err = s.writeTxThen(ctx, func(tx *sql.Tx) error {
		st, err := s.wstmt(ctx, tx, qInsertSession)
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
			return fmt.Errorf("%q: %w", sess.Key, store.ErrConflict)
		}
		return nil
	}, func() { s.sessions.drop(sess.Key) })
	if err != nil {
		return fmt.Errorf("sqlite.CreateSession: %w", err)
	}
	return nil
}

// defaultTimes sets zero CreatedAt and UpdatedAt to now, and both to the
// stored resolution.
func (s *Store) defaultTimes(sess *store.Session) {
	if sess.CreatedAt.IsZero() || sess.UpdatedAt.IsZero() {
		now := s.nowTime()
		if sess.CreatedAt.IsZero() {
			sess.CreatedAt = now
		}
		if sess.UpdatedAt.IsZero() {
			sess.UpdatedAt = now
		}
	}
	sess.CreatedAt = store.Millis(sess.CreatedAt)
	sess.UpdatedAt = store.Millis(sess.UpdatedAt)
}

// UpdateSession applies fn to the stored session inside one write
// transaction and stores the result; fn's error is returned as is and leaves
// the row unchanged. With create set, a missing session is passed to fn as a
// zero Session with only Key set, and inserted. fn may not change Key. Zero
// CreatedAt and UpdatedAt left by fn default to now; UpdatedAt is otherwise
// stored as fn leaves it. fn runs while the writer is held: it must be quick
// and must not call the Store.
func (s *Store) UpdateSession(ctx context.Context, key string, create bool, fn func(*store.Session) error) (*store.Session, error) {
	if err := s.checkOpen("UpdateSession"); err != nil {
		return nil, err
	}
	if key == "" {
		return nil, errors.New("sqlite.UpdateSession: empty key")
	}
	var (
		out   *store.Session
		fnErr error
	)
	err := s.writeTxThen(ctx, func(tx *sql.Tx) error {
		get, err := s.wstmt(ctx, tx, qGetSession)
		if err != nil {
			return err
		}
		sess, err := scanSession(get.QueryRowContext(ctx, key))
		switch {
		case errors.Is(err, sql.ErrNoRows) && create:
			sess = &store.Session{Key: key}
		case errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("%q: %w", key, store.ErrNotFound)
		case err != nil:
			return err
		}
		if err := fn(sess); err != nil {
			fnErr = err
			return err
		}
		if sess.Key != key {
			return fmt.Errorf("fn changed key %q to %q", key, sess.Key)
		}
		s.defaultTimes(sess)
		args, err := sessionArgs(sess)
		if err != nil {
			return err
		}
		put, err := s.wstmt(ctx, tx, qUpsertSession)
		if err != nil {
			return err
		}
		if _, err := put.ExecContext(ctx, args...); err != nil {
			return err
		}
		out = sess.Clone()
		return nil
	}, func() { s.sessions.drop(key) })
	if fnErr != nil {
		return nil, fnErr
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite.UpdateSession: %w", err)
	}
	return out, nil
}

// DeleteSession removes the session row and, with deleteTranscript, its
// current transcript unless another session still uses that SessionID.
// ErrNotFound if absent.
func (s *Store) DeleteSession(ctx context.Context, key string, deleteTranscript bool) error {
	if err := s.checkOpen("DeleteSession"); err != nil {
		return err
	}
	err := s.writeTxThen(ctx, func(tx *sql.Tx) error {
		del, err := s.wstmt(ctx, tx, qDeleteSession)
		if err != nil {
			return err
		}
		var sid string
		if err := del.QueryRowContext(ctx, key).Scan(&sid); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%q: %w", key, store.ErrNotFound)
		} else if err != nil {
			return err
		}
		if !deleteTranscript || sid == "" {
			return nil
		}
		inUse, err := s.wstmt(ctx, tx, qSessionIDInUse)
		if err != nil {
			return err
		}
		var used bool
		if err := inUse.QueryRowContext(ctx, sid).Scan(&used); err != nil {
			return err
		}
		if used {
			return nil
		}
		delT, err := s.wstmt(ctx, tx, qDeleteTranscript)
		if err != nil {
			return err
		}
		_, err = delT.ExecContext(ctx, sid)
		return err
	}, func() { s.sessions.drop(key) })
	if err != nil {
		return fmt.Errorf("sqlite.DeleteSession: %w", err)
	}
	return nil
}
