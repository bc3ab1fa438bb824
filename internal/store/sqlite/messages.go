package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

const (
	qLastEntry     = sqlstore.LastEntry
	qInsertMessage = sqlstore.InsertMessages + `(?, ?, ?, ?, ?, ?, ?, ?)`
	qByIdemKey     = sqlstore.ByIdemKey
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
	err = s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error { return s.appendTx(ctx, tx, sessionID, out, "") })
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
	err = s.writeTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
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

// prepareMessages does the part of an append that does not depend on the
// transcript's tail: ids, timestamps, roles and run ids.
func (s *Store) prepareMessages(sessionID string, msgs []store.Message) ([]store.Message, error) {
	return sqlstore.PrepareMessages(sessionID, msgs, s.nowTime(), s.newID)
}

// appendTx appends prepared messages after the transcript's last entry
// within tx, chaining their parent ids and numbering them. idemKey, when
// set, is recorded on the first message (PostMessage). The tail comes from
// the writer's memo when it holds the transcript's, and the new tail and
// the counts of live runs go back into it.
func (s *Store) appendTx(ctx context.Context, tx *sql.Tx, sessionID string, out []store.Message, idemKey string) error {
	t, ok := s.memo.tailOf(sessionID)
	if !ok {
		last, err := s.wstmt(ctx, tx, qLastEntry)
		if err != nil {
			return err
		}
		if err := last.QueryRowContext(ctx, sessionID).Scan(&t.seq, &t.id); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
	}
	rows := sqlstore.MessageRows{SessionID: sessionID, IdemKey: idemKey, Seq: t.seq, PrevID: t.id}
	var err error
	args := make([]any, 0, 8)
	for i := range out {
		if args, err = rows.Append(args[:0], &out[i]); err != nil {
			return err
		}
		if _, err := s.wexec(ctx, tx, qInsertMessage, args...); err != nil {
			s.memo.forgetTail(sessionID) // should a body go on after all
			return err
		}
		if out[i].RunID != "" {
			s.memo.countMessage(sessionID, &out[i], args[6].(string))
		}
	}
	s.memo.setTail(sessionID, tail{seq: rows.Seq, id: rows.PrevID})
	return nil
}
