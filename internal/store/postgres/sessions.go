package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

// sessionCols lists the sessions columns in the order scanSession reads.
const sessionCols = sqlstore.SessionCols

// qPlaceholderSession reserves a missing key inside UpdateSession's
// transaction, so that concurrent creators of one key queue on its row.
const qPlaceholderSession = `INSERT INTO sessions (key, session_id, created_at, updated_at, key_class)
	VALUES ($1, '', 0, 0, $2) ON CONFLICT (key) DO NOTHING`

// searchSep separates the fields of the search column; see the schema.
const searchSep = "\x1f"

// searchText is the search column of s.
func searchText(s *store.Session) string {
	return SearchText(s.Key, s.SessionID, s.Label, s.DisplayName)
}

// SearchText is the derived search column of a session row with these
// fields, for writers that copy rows in bulk (switchboard migrate).
func SearchText(key, sessionID, label, displayName string) string {
	return strings.ToLower(strings.Join([]string{key, sessionID, label, displayName}, searchSep))
}

// scanSession reads one row of sessionCols.
func scanSession(row pgx.Row) (*store.Session, error) { return sqlstore.ScanSession(row) }

// sessionArgs returns s as the arguments of insertSession and putSession.
func sessionArgs(s *store.Session) ([]any, error) {
	return sqlstore.SessionArgs(s, int32(store.ClassOf(s.Key)), searchText(s))
}

// GetSession returns the session with the canonical key, or ErrNotFound.
func (s *Store) GetSession(ctx context.Context, key string) (*store.Session, error) {
	if err := s.checkOpen("GetSession"); err != nil {
		return nil, err
	}
	if sess, ok := s.memoSessionFor(ctx, key); ok {
		return sess, nil
	}
	since := s.sessions.now()
	sess, ver, err := scanSessionVer(s.pool.QueryRow(ctx, qGetSessionVer, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres.GetSession: %q: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres.GetSession: %w", err)
	}
	s.sessions.fill(since, sess.Clone(), ver)
	return sess, nil
}

// forgetSession drops the remembered row of session key, which this
// store is writing, and what ctx's session check recorded of it.
func (s *Store) forgetSession(ctx context.Context, key string) {
	s.sessions.drop(key)
	store.SessionCheckOf(ctx).Forget(key)
}

// CreateSession inserts sess; ErrConflict if the key exists. CreatedAt and
// UpdatedAt default to now when zero. sess itself is not modified.
func (s *Store) CreateSession(ctx context.Context, sess *store.Session) error {
	if err := s.checkOpen("CreateSession"); err != nil {
		return err
	}
	if sess == nil || sess.Key == "" {
		return errors.New("postgres.CreateSession: empty key")
	}
	c := *sess
	s.defaultTimes(&c)
	args, err := sessionArgs(&c)
	if err != nil {
		return fmt.Errorf("postgres.CreateSession: %w", err)
	}
	tag, err := s.pool.Exec(ctx, s.q.insertSession, args...)
	if err != nil {
		return fmt.Errorf("postgres.CreateSession: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres.CreateSession: %q: %w", sess.Key, store.ErrConflict)
	}
	return nil
}

// defaultTimes sets zero CreatedAt and UpdatedAt to now, and both to the
// stored resolution.
func (s *Store) defaultTimes(sess *store.Session) { sqlstore.DefaultTimes(sess, s.nowTime) }

// UpdateSession applies fn to the stored session, locked for the
// transaction, and stores the result; fn's error is returned as is and
// leaves the row unchanged. With create set, a missing session is passed to
// fn as a zero Session with only Key set, and inserted: the key is reserved
// first, so concurrent creators of one key take turns. fn may not change
// Key. Zero CreatedAt and UpdatedAt left by fn default to now; UpdatedAt is
// otherwise stored as fn leaves it. fn must not call the Store.
func (s *Store) UpdateSession(ctx context.Context, key string, create bool, fn func(*store.Session) error) (*store.Session, error) {
	if err := s.checkOpen("UpdateSession"); err != nil {
		return nil, err
	}
	if key == "" {
		return nil, errors.New("postgres.UpdateSession: empty key")
	}
	var (
		out   *store.Session
		fnErr error
	)
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, fnErr, err = s.updateSessionTx(ctx, tx, key, create, fn)
		return err
	})
	s.forgetSession(ctx, key)
	if fnErr != nil {
		return nil, fnErr
	}
	if err != nil {
		return nil, fmt.Errorf("postgres.UpdateSession: %w", err)
	}
	return out, nil
}

// updateSessionTx is UpdateSession's body in tx: it returns the stored
// session, and fn's error (also as the error) when fn failed.
func (s *Store) updateSessionTx(ctx context.Context, tx pgx.Tx, key string, create bool, fn func(*store.Session) error) (*store.Session, error, error) {
	var (
		fresh bool
		sess  *store.Session
		err   error
	)
	if create {
		// Reserve the key and lock the row in one round trip.
		var b pgx.Batch
		b.Queue(qPlaceholderSession, key, int32(store.ClassOf(key)))
		b.Queue(s.q.getSessionLocked, key)
		res := tx.SendBatch(ctx, &b)
		tag, xerr := res.Exec()
		if xerr != nil {
			res.Close()
			return nil, nil, xerr
		}
		fresh = tag.RowsAffected() == 1
		sess, err = scanSession(res.QueryRow())
		if cerr := res.Close(); err == nil && cerr != nil {
			return nil, nil, cerr
		}
	} else {
		sess, err = scanSession(tx.QueryRow(ctx, s.q.getSessionLocked, key))
	}
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil, fmt.Errorf("%q: %w", key, store.ErrNotFound)
	case err != nil:
		return nil, nil, err
	}
	if fresh {
		sess = &store.Session{Key: key}
	}
	if err := fn(sess); err != nil {
		return nil, err, err
	}
	if sess.Key != key {
		return nil, nil, fmt.Errorf("fn changed key %q to %q", key, sess.Key)
	}
	s.defaultTimes(sess)
	args, err := sessionArgs(sess)
	if err != nil {
		return nil, nil, err
	}
	if _, err := tx.Exec(ctx, s.q.putSession, args...); err != nil {
		return nil, nil, err
	}
	return sess.Clone(), nil, nil
}

// DeleteSession removes the session row and, with deleteTranscript, its
// current transcript unless another session still uses that SessionID.
// ErrNotFound if absent.
func (s *Store) DeleteSession(ctx context.Context, key string, deleteTranscript bool) error {
	if err := s.checkOpen("DeleteSession"); err != nil {
		return err
	}
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		var sid string
		if err := tx.QueryRow(ctx, s.q.deleteSession, key).Scan(&sid); errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%q: %w", key, store.ErrNotFound)
		} else if err != nil {
			return err
		}
		if !deleteTranscript || sid == "" {
			return nil
		}
		var used bool
		if err := tx.QueryRow(ctx, s.q.sessionIDInUse, sid).Scan(&used); err != nil {
			return err
		}
		if used {
			return nil
		}
		if err := lockTranscript(ctx, tx, sid); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, s.q.deleteTranscript, sid)
		return err
	})
	s.forgetSession(ctx, key)
	if err != nil {
		return fmt.Errorf("postgres.DeleteSession: %w", err)
	}
	return nil
}
