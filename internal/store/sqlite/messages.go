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
	err = s.writeTx(ctx, func(ctx context.Context, tx wtx) error { return s.appendTx(ctx, tx, sessionID, out, "") })
	if err != nil {
		return nil, fmt.Errorf("sqlite.AppendMessages: %w", err)
	}
	return out, nil
}

// PostMessage implements store.Store: the lookup of idemKey and the append
// run in one write transaction, and a unique index on (session, key) backs
// it, so two concurrent posts with one key store one message.
func (s *Store) PostMessage(ctx context.Context, sessionID, idemKey string, msg store.Message) (store.Message, bool, error) {
	return s.post(ctx, "PostMessage", "", sessionID, idemKey, msg, time.Time{})
}

// qTouchSession moves a session's updated_at forward (PostToSession).
const qTouchSession = `UPDATE sessions SET updated_at = MAX(updated_at, ?) WHERE key = ?`

// PostToSession implements store.SessionPoster: PostMessage, and when the
// message is posted, session key's updated_at moved forward to at, and
// the outbox item ctx carries to settle with the post (store.PostSettle)
// settled, in the same write transaction.
func (s *Store) PostToSession(ctx context.Context, key, sessionID, idemKey string, msg store.Message, at time.Time) (store.Message, bool, error) {
	if key == "" {
		return store.Message{}, false, errors.New("sqlite.PostToSession: empty session key")
	}
	return s.post(ctx, "PostToSession", key, sessionID, idemKey, msg, at)
}

// post is PostMessage and, with key set, PostToSession.
func (s *Store) post(ctx context.Context, op, key, sessionID, idemKey string, msg store.Message, at time.Time) (store.Message, bool, error) {
	if err := s.checkOpen(op); err != nil {
		return store.Message{}, false, err
	}
	if sessionID == "" {
		return store.Message{}, false, fmt.Errorf("sqlite.%s: empty session id", op)
	}
	out, err := s.prepareMessages(sessionID, []store.Message{msg})
	if err != nil {
		return store.Message{}, false, fmt.Errorf("sqlite.%s: %w", op, err)
	}
	var settle *store.PostSettle
	if key != "" {
		settle = store.PostSettleOf(ctx)
	}
	var (
		found   store.Message
		posted  bool
		touched bool // the session row took at
		settled bool // settle's item took its outcome
	)
	err = s.writeTxThen(ctx, func(ctx context.Context, tx wtx) error {
		posted, touched, settled = false, false, false // set, not kept: the body may run again
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
		if key != "" {
			res, err := s.wexec(ctx, tx, qTouchSession, toMs(at), key)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			touched = n == 1
		}
		if settle != nil {
			_, _, err := s.updateOutboxTx(ctx, tx, settle.ID, settle.Apply)
			switch {
			case err == nil:
				settled = true
			case !errors.Is(err, store.ErrNotFound): // an item that is gone is settled as before
				return fmt.Errorf("settle %s: %w", settle.ID, err)
			}
		}
		found, posted = out[0], true
		return nil
	}, func() {
		if settled {
			settle.MarkStored()
		}
		if touched {
			s.sessions.update(key, func(c *store.Session) {
				if at.After(c.UpdatedAt) {
					c.UpdatedAt = at
				}
			})
		}
	})
	if err != nil {
		return store.Message{}, false, fmt.Errorf("sqlite.%s: %w", op, err)
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
func (s *Store) appendTx(ctx context.Context, tx wtx, sessionID string, out []store.Message, idemKey string) error {
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
