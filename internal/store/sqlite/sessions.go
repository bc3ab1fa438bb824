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
	qGetSession       = sqlstore.GetSession
	qDeleteSession    = sqlstore.DeleteSession
	qSessionIDInUse   = sqlstore.SessionIDInUse
	qDeleteTranscript = sqlstore.DeleteTranscript

	// qUnboundLiveRuns forgets the first_seq of the live runs of
	// transcript ? (sqlstore.RunFrom), whose seqs start over once it is
	// deleted: a run that goes on writing there numbers from 1 again.
	qUnboundLiveRuns = `UPDATE runs SET first_seq = 0 WHERE ` + sqlstore.LiveRuns + ` AND session_id = ?`
)

// rowScanner is *sql.Row or *sql.Rows.
type rowScanner = sqlstore.Scanner

// scanSession reads one row of sqlstore.SessionCols.
func scanSession(sc rowScanner) (*store.Session, error) { return sqlstore.ScanSession(sc) }

// sessionArgs returns s as arguments in sqlstore.SessionCols order, then its key
// class.
func sessionArgs(s *store.Session) ([]any, error) {
	return sqlstore.SessionArgs(s, int64(store.ClassOf(s.Key)))
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
	err = s.writeTxThen(ctx, func(ctx context.Context, tx wtx) error {
		return s.insertNewTx(ctx, tx, s.q.insertSession, sess.Key, args)
	}, func() { s.sessions.drop(sess.Key) })
	if err != nil {
		return fmt.Errorf("sqlite.CreateSession: %w", err)
	}
	return nil
}

// defaultTimes sets zero CreatedAt and UpdatedAt to now, and both to the
// stored resolution.
func (s *Store) defaultTimes(sess *store.Session) { sqlstore.DefaultTimes(sess, s.nowTime) }

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
	err := s.writeTxThen(ctx, func(ctx context.Context, tx wtx) error {
		var err error
		out, fnErr, err = s.updateSessionTx(ctx, tx, key, create, fn)
		return err
	}, func() { s.sessions.drop(key) })
	if fnErr != nil {
		return nil, fnErr
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite.UpdateSession: %w", err)
	}
	return out, nil
}

// updateSessionTx is UpdateSession's body in tx: it returns the stored
// session, and fn's error (also as the error) when fn failed.
func (s *Store) updateSessionTx(ctx context.Context, tx wtx, key string, create bool, fn func(*store.Session) error) (*store.Session, error, error) {
	get, err := s.wstmt(ctx, tx, qGetSession)
	if err != nil {
		return nil, nil, err
	}
	sess, err := scanSession(get.QueryRowContext(ctx, key))
	switch {
	case errors.Is(err, sql.ErrNoRows) && create:
		sess = &store.Session{Key: key}
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil, fmt.Errorf("%q: %w", key, store.ErrNotFound)
	case err != nil:
		return nil, nil, err
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
	put, err := s.wstmt(ctx, tx, s.q.upsertSession)
	if err != nil {
		return nil, nil, err
	}
	if _, err := put.ExecContext(ctx, args...); err != nil {
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
	err := s.writeTxThen(ctx, func(ctx context.Context, tx wtx) error {
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
		s.memo.forgetTranscript(sid)
		if _, err = delT.ExecContext(ctx, sid); err != nil {
			return err
		}
		_, err = s.wexec(ctx, tx, qUnboundLiveRuns, sid)
		return err
	}, func() { s.sessions.drop(key) })
	if err != nil {
		return fmt.Errorf("sqlite.DeleteSession: %w", err)
	}
	return nil
}
