package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

const (
	qLastEntry      = sqlstore.LastEntry
	qInsertMessage  = sqlstore.InsertMessages + `(?, ?, ?, ?, ?, ?, ?, ?)`
	qByIdemKey      = sqlstore.ByIdemKey
	qHistoryTail    = sqlstore.HistoryTail
	qHistoryAll     = sqlstore.HistoryAll
	qHistoryRunTail = sqlstore.HistoryRunTail
	qHistoryRunAll  = sqlstore.HistoryRunAll
	qCountMessages  = sqlstore.CountMessages
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
			var line []byte
			found, err = sqlstore.ScanMessage(st.QueryRowContext(ctx, sessionID, idemKey), sessionID, &line)
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
		m, err := sqlstore.ScanMessage(rows, sessionID, &line)
		if err != nil {
			return nil, fmt.Errorf("sqlite.History: %w", err)
		}
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
	return sqlstore.PrepareMessages(sessionID, msgs, s.nowTime(), s.newID)
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
		line, err := sqlstore.Chain(m, seq, prevID)
		prevID = m.Entry.ID
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
