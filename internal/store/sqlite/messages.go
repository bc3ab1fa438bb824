package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

const (
	qLastEntry = `SELECT seq, entry_id FROM messages
		WHERE session_id = ? ORDER BY seq DESC LIMIT 1`

	qInsertMessage = `INSERT INTO messages
		(session_id, seq, entry_id, role, run_id, created_at, line, idem_key)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

	qByIdemKey = `SELECT seq, role, run_id, created_at, line FROM messages
		WHERE session_id = ? AND idem_key = ?`

	qHistoryTail = `SELECT seq, role, run_id, created_at, line FROM messages
		WHERE session_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`

	qHistoryAll = `SELECT seq, role, run_id, created_at, line FROM messages
		WHERE session_id = ? AND seq < ? ORDER BY seq`

	qHistoryRunTail = `SELECT seq, role, run_id, created_at, line FROM messages
		WHERE session_id = ? AND run_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`

	qHistoryRunAll = `SELECT seq, role, run_id, created_at, line FROM messages
		WHERE session_id = ? AND run_id = ? AND seq < ? ORDER BY seq`

	// Seq is the 1-based position in the transcript, so the count is the
	// last seq: one index probe instead of an index scan.
	qCountMessages = `SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ?`
)

// AppendMessages appends msgs to transcript sessionID in order, in one write
// transaction. For each message it assigns Seq, Entry.ID when empty,
// Entry.ParentID when nil or "" (the previous entry's id; nil for the first
// entry of the transcript), Entry.Timestamp when empty (from CreatedAt),
// CreatedAt when zero, Role from Entry.Message, and RunID from the
// message's __openclaw.runId when empty. Message.SessionID is ignored. It
// returns the stored messages; their Entry.Message and Entry.Extra share
// memory with msgs, which are not modified.
func (s *Store) AppendMessages(ctx context.Context, sessionID string, msgs []store.Message) ([]store.Message, error) {
	if err := s.checkOpen("AppendMessages"); err != nil {
		return nil, err
	}
	if sessionID == "" {
		return nil, errors.New("sqlite.AppendMessages: empty session id")
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	out, err := s.prepareMessages(sessionID, msgs)
	if err != nil {
		return nil, fmt.Errorf("sqlite.AppendMessages: %w", err)
	}
	err = s.writeTx(ctx, func(tx *sql.Tx) error { return s.appendTx(ctx, tx, sessionID, out, "") })
	if err != nil {
		return nil, fmt.Errorf("sqlite.AppendMessages: %w", err)
	}
	return out, nil
}

// PostMessage implements store.Store: the lookup of idemKey and the append
// run in one write transaction, and a unique index on (session, key) backs
// it, so two concurrent posts with one key store one message.
func (s *Store) PostMessage(ctx context.Context, sessionID, idemKey string, msg store.Message) (store.Message, bool, error) {
	if err := s.checkOpen("PostMessage"); err != nil {
		return store.Message{}, false, err
	}
	if sessionID == "" {
		return store.Message{}, false, errors.New("sqlite.PostMessage: empty session id")
	}
	out, err := s.prepareMessages(sessionID, []store.Message{msg})
	if err != nil {
		return store.Message{}, false, fmt.Errorf("sqlite.PostMessage: %w", err)
	}
	var (
		found  store.Message
		posted bool
	)
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		if idemKey != "" {
			st, err := s.wstmt(ctx, tx, qByIdemKey)
			if err != nil {
				return err
			}
			var (
				created int64
				line    []byte
			)
			found = store.Message{SessionID: sessionID}
			err = st.QueryRowContext(ctx, sessionID, idemKey).Scan(&found.Seq, &found.Role, &found.RunID, &created, &line)
			if err == nil {
				found.CreatedAt = fromMs(created)
				return found.Entry.UnmarshalJSON(line)
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		if err := s.appendTx(ctx, tx, sessionID, out, idemKey); err != nil {
			return err
		}
		found, posted = out[0], true
		return nil
	})
	if err != nil {
		return store.Message{}, false, fmt.Errorf("sqlite.PostMessage: %w", err)
	}
	return found, posted, nil
}

// History returns a window of transcript sessionID in ascending Seq.
func (s *Store) History(ctx context.Context, sessionID string, opts store.HistoryOptions) ([]store.Message, error) {
	if err := s.checkOpen("History"); err != nil {
		return nil, err
	}
	before := opts.BeforeSeq
	if before <= 0 {
		before = math.MaxInt64
	}
	var (
		rows *sql.Rows
		err  error
	)
	switch {
	case opts.RunID != "" && opts.Limit > 0:
		rows, err = s.query(ctx, qHistoryRunTail, sessionID, opts.RunID, before, opts.Limit)
	case opts.RunID != "":
		rows, err = s.query(ctx, qHistoryRunAll, sessionID, opts.RunID, before)
	case opts.Limit > 0:
		rows, err = s.query(ctx, qHistoryTail, sessionID, before, opts.Limit)
	default:
		rows, err = s.query(ctx, qHistoryAll, sessionID, before)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite.History: %w", err)
	}
	defer rows.Close()
	var out []store.Message
	if opts.Limit > 0 {
		out = make([]store.Message, 0, min(opts.Limit, 64))
	}
	var line sql.RawBytes // valid until the next Next; Unmarshal copies
	for rows.Next() {
		m := store.Message{SessionID: sessionID}
		var created int64
		if err := rows.Scan(&m.Seq, &m.Role, &m.RunID, &created, &line); err != nil {
			return nil, fmt.Errorf("sqlite.History: %w", err)
		}
		// UnmarshalJSON validates; json.Unmarshal would scan the line twice more.
		if err := m.Entry.UnmarshalJSON(line); err != nil {
			return nil, fmt.Errorf("sqlite.History: %s seq %d: %w", sessionID, m.Seq, err)
		}
		m.CreatedAt = fromMs(created)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite.History: %w", err)
	}
	if opts.Limit > 0 {
		slices.Reverse(out)
	}
	return out, nil
}

// CountMessages returns the number of entries in transcript sessionID.
func (s *Store) CountMessages(ctx context.Context, sessionID string) (int64, error) {
	if err := s.checkOpen("CountMessages"); err != nil {
		return 0, err
	}
	var n int64
	if err := s.queryRow(ctx, qCountMessages, sessionID).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite.CountMessages: %w", err)
	}
	return n, nil
}

// prepareMessages does the part of an append that does not depend on the
// transcript's tail: ids, timestamps, roles and run ids.
func (s *Store) prepareMessages(sessionID string, msgs []store.Message) ([]store.Message, error) {
	// Everything that does not depend on the transcript's current tail is
	// done before taking the writer.
	out := slices.Clone(msgs)
	now := s.nowTime()
	for i := range out {
		m := &out[i]
		if m.Entry.Type == "" {
			return nil, fmt.Errorf("message %d: empty entry type", i)
		}
		m.SessionID = sessionID
		if m.CreatedAt.IsZero() {
			m.CreatedAt = now
		}
		m.CreatedAt = store.Millis(m.CreatedAt)
		if m.Entry.ID == "" {
			m.Entry.ID = s.newID()
		}
		if m.Entry.Timestamp == "" {
			m.Entry.Timestamp = transcript.FormatTime(m.CreatedAt)
		}
		m.Role = ""
		if m.Entry.Message != nil {
			m.Role = m.Entry.Message.Role
			if m.RunID == "" && m.Entry.Message.Meta != nil {
				m.RunID = m.Entry.Message.Meta.RunID
			}
		}
	}
	return out, nil
}

// appendTx appends prepared messages after the transcript's last entry
// within tx, chaining their parent ids and numbering them. idemKey, when
// set, is recorded on the first message (PostMessage).
func (s *Store) appendTx(ctx context.Context, tx *sql.Tx, sessionID string, out []store.Message, idemKey string) error {
	last, err := s.wstmt(ctx, tx, qLastEntry)
	if err != nil {
		return err
	}
	var (
		seq    int64
		prevID string
	)
	if err := last.QueryRowContext(ctx, sessionID).Scan(&seq, &prevID); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	ins, err := s.wstmt(ctx, tx, qInsertMessage)
	if err != nil {
		return err
	}
	for i := range out {
		m := &out[i]
		seq++
		m.Seq = seq
		if m.Entry.ParentID == nil || *m.Entry.ParentID == "" {
			m.Entry.ParentID = nil
			if prevID != "" {
				p := prevID
				m.Entry.ParentID = &p
			}
		}
		prevID = m.Entry.ID
		// The type's own JSON method, not json.Marshal: it writes the
		// same compact line transcript.Encoder does (json.Marshal would
		// re-validate it and escape <, > and &).
		line, err := m.Entry.MarshalJSON()
		if err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		key := ""
		if i == 0 {
			key = idemKey
		}
		if _, err := ins.ExecContext(ctx, sessionID, m.Seq, m.Entry.ID, m.Role, m.RunID,
			toMs(m.CreatedAt), string(line), key); err != nil {
			return err
		}
	}
	return nil
}
