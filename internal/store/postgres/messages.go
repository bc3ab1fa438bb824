package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

// AppendMessages appends msgs to transcript sessionID in order, in one
// transaction holding the transcript's lock. It assigns what the SQLite
// backend assigns (Seq, Entry.ID, Entry.ParentID, Entry.Timestamp,
// CreatedAt, Role, RunID) and returns the stored messages; msgs are not
// modified.
func (s *Store) AppendMessages(ctx context.Context, sessionID string, msgs []store.Message) ([]store.Message, error) {
	if err := s.checkOpen("AppendMessages"); err != nil {
		return nil, err
	}
	if sessionID == "" {
		return nil, errors.New("postgres.AppendMessages: empty session id")
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	out, err := s.prepareMessages(sessionID, msgs)
	if err != nil {
		return nil, fmt.Errorf("postgres.AppendMessages: %w", err)
	}
	var after tail
	err = s.writeTx(ctx, func(tx pgx.Tx) error {
		var err error
		after, err = s.appendTx(ctx, tx, sessionID, out, "")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres.AppendMessages: %w", err)
	}
	s.noteAppend(sessionID, after, out)
	return out, nil
}

// PostMessage implements store.Store: the lookup of idemKey and the append
// run in one transaction under the transcript's lock, and a unique index on
// (session, key) backs it, so concurrent posts with one key, from any node,
// store one message.
func (s *Store) PostMessage(ctx context.Context, sessionID, idemKey string, msg store.Message) (store.Message, bool, error) {
	if err := s.checkOpen("PostMessage"); err != nil {
		return store.Message{}, false, err
	}
	if sessionID == "" {
		return store.Message{}, false, errors.New("postgres.PostMessage: empty session id")
	}
	out, err := s.prepareMessages(sessionID, []store.Message{msg})
	if err != nil {
		return store.Message{}, false, fmt.Errorf("postgres.PostMessage: %w", err)
	}
	var (
		found  store.Message
		posted bool
		after  tail
	)
	err = s.writeTx(ctx, func(tx pgx.Tx) error {
		// One round trip: the lock, then (reading after it) the key and
		// the transcript's tail.
		var b pgx.Batch
		b.Queue(qLockTranscript, transcriptLockKey(sessionID))
		if idemKey != "" {
			b.Queue(s.q.byIdemKey, sessionID, idemKey)
		}
		b.Queue(s.q.lastEntry, sessionID)
		res := tx.SendBatch(ctx, &b)
		defer res.Close()
		if _, err := res.Exec(); err != nil {
			return err
		}
		if idemKey != "" {
			var line []byte
			m, err := sqlstore.ScanMessage(res.QueryRow(), sessionID, &line)
			if err == nil {
				found = m
				return nil
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		t, err := scanTail(res.QueryRow())
		if err != nil {
			return err
		}
		if err := res.Close(); err != nil {
			return err
		}
		if err := appendAfter(ctx, tx, sessionID, t, out, idemKey); err != nil {
			return err
		}
		found, posted, after = out[0], true, t
		return nil
	})
	if err != nil {
		return store.Message{}, false, fmt.Errorf("postgres.PostMessage: %w", err)
	}
	if posted {
		s.noteAppend(sessionID, after, out)
	}
	return found, posted, nil
}

// prepareMessages does the part of an append that does not depend on the
// transcript's tail: ids, timestamps, roles and run ids.
func (s *Store) prepareMessages(sessionID string, msgs []store.Message) ([]store.Message, error) {
	return sqlstore.PrepareMessages(sessionID, msgs, s.nowTime(), s.newID)
}

// tail is the last entry of a transcript: its seq (0 when empty) and id.
type tail struct {
	seq    int64
	prevID string
}

func scanTail(row pgx.Row) (tail, error) {
	var t tail
	if err := row.Scan(&t.seq, &t.prevID); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return t, err
	}
	return t, nil
}

// appendTx takes the transcript's lock and reads its tail in one round
// trip, then appends prepared messages; it returns the tail they follow.
func (s *Store) appendTx(ctx context.Context, tx pgx.Tx, sessionID string, out []store.Message, idemKey string) (tail, error) {
	var b pgx.Batch
	b.Queue(qLockTranscript, transcriptLockKey(sessionID))
	b.Queue(s.q.lastEntry, sessionID)
	res := tx.SendBatch(ctx, &b)
	if _, err := res.Exec(); err != nil {
		res.Close()
		return tail{}, err
	}
	t, err := scanTail(res.QueryRow())
	if err := errors.Join(err, res.Close()); err != nil {
		return tail{}, err
	}
	return t, appendAfter(ctx, tx, sessionID, t, out, idemKey)
}

// appendAfter appends prepared messages after the transcript's last entry
// t, chaining their parent ids and numbering them, in one statement. The
// caller holds the transcript's lock. idemKey, when set, is recorded on the
// first message (PostMessage). It is the transaction's last statement
// (see sendLast).
func appendAfter(ctx context.Context, tx pgx.Tx, sessionID string, t tail, out []store.Message, idemKey string) error {
	// The transaction's last statement: its COMMIT goes with it.
	var b pgx.Batch
	if err := queueAppend(&b, sessionID, t, out, idemKey); err != nil {
		return err
	}
	return sendLast(ctx, tx, &b).Close()
}

// queueAppend queues on b the insert of prepared messages after the
// transcript's last entry t (appendAfter's statement).
func queueAppend(b *pgx.Batch, sessionID string, t tail, out []store.Message, idemKey string) error {
	rows := sqlstore.MessageRows{SessionID: sessionID, IdemKey: idemKey, Seq: t.seq, PrevID: t.prevID}
	// One multi-row INSERT: one round trip whatever the batch size.
	args := make([]any, 0, 8*len(out))
	q := make([]byte, 0, 128+48*len(out))
	q = append(q, sqlstore.InsertMessages...)
	for i := range out {
		if i > 0 {
			q = append(q, ',')
		}
		n := len(args)
		q = fmt.Appendf(q, "($%d,$%d,$%d,$%d,$%d,$%d,$%d,$%d)", n+1, n+2, n+3, n+4, n+5, n+6, n+7, n+8)
		var err error
		if args, err = rows.Append(args, &out[i]); err != nil {
			return err
		}
	}
	b.Queue(string(q), args...)
	return nil
}

// appendQueued finishes batch results whose remaining statements are the
// transcript's lock and tail read, queued only when out is not empty: it
// appends out after that tail, or (nothing to append) closes the batch.
func appendQueued(ctx context.Context, tx pgx.Tx, br pgx.BatchResults, sessionID string, out []store.Message) error {
	if len(out) == 0 {
		return br.Close()
	}
	if _, err := br.Exec(); err != nil {
		br.Close()
		return err
	}
	t, err := scanTail(br.QueryRow())
	if err := firstErr(err, br.Close()); err != nil {
		return err
	}
	return appendAfter(ctx, tx, sessionID, t, out, "")
}
