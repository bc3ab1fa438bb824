package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

// qOpenRun inserts a run already started on node $14; qOpenRunNew fails
// (unique_violation) where qOpenRun does nothing, when the id exists.
const (
	qOpenRunNew = `INSERT INTO runs (` + runCols + `, node_id)
	VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14)`
	qOpenRun = qOpenRunNew + ` ON CONFLICT (run_id) DO NOTHING`
)

// qTailIs fails (division_by_zero) unless transcript $1's last entry is
// seq $2 with id $3.
const qTailIs = `SELECT 1 / count(*) FROM (` + `SELECT seq, entry_id FROM messages
	WHERE session_id = $1 ORDER BY seq DESC LIMIT 1) t WHERE t.seq = $2 AND t.entry_id = $3`

// errTailMoved is openAfter's: the remembered tail was not the
// transcript's, or the run's id exists; nothing was written.
var errTailMoved = errors.New("remembered tail moved, or the run exists")

var _ store.RunOpener = (*Store)(nil)

// OpenRun implements store.RunOpener in one or two round trips, where
// CreateRun then StartRun took three and two commits. The run's insert
// (started, on this node), the transcript's lock and the read of its tail
// travel with BEGIN and the fence check; the input messages with COMMIT.
// When this store remembers the transcript's tail from the session's last
// open or end (tailCache), the tail is checked instead of read, and the
// input goes in the same round trip (openAfter).
//
// On a node (SetNode) a run opens only under the fence ctx carries for
// r's session lane on this node: the fence check is the transaction's
// first statement, so a claim that moved (or a lease that ended) refuses
// the open with ErrFenced before the insert runs, and nothing is written.
// Without such a fence it is refused with ErrFenced too: the caller
// queues the run instead, to be started by the lane's holder.
func (s *Store) OpenRun(ctx context.Context, r *store.Run, msgs []store.Message) (*store.Run, []store.Message, error) {
	if err := s.checkOpen("OpenRun"); err != nil {
		return nil, nil, err
	}
	if r == nil || r.RunID == "" || r.SessionID == "" {
		return nil, nil, errors.New("postgres.OpenRun: empty run or session id")
	}
	if r.Status != store.RunRunning || r.StartedAt.IsZero() {
		return nil, nil, fmt.Errorf("postgres.OpenRun: run %q is %s (started %v), not running", r.RunID, r.Status, r.StartedAt)
	}
	node := s.nodeID()
	if node != "" {
		if f, ok := store.FenceOf(ctx); !ok || f.Node != node || f.SessionKey != r.SessionKey {
			return nil, nil, fmt.Errorf("postgres.OpenRun: run %q: no fence of node %s for lane %s: %w", r.RunID, node, r.SessionKey, store.ErrFenced)
		}
	}
	c := sqlstore.NewRun(r, s.nowTime)
	args, err := runArgs(&c)
	if err != nil {
		return nil, nil, fmt.Errorf("postgres.OpenRun: %w", err)
	}
	out, err := s.prepareMessages(r.SessionID, msgs)
	if err != nil {
		return nil, nil, fmt.Errorf("postgres.OpenRun: %w", err)
	}
	// What the run's end counts of the input (store.RunStats), so that it
	// need not read it back (EndRun).
	var counts store.RunStats
	if err := countRun(&counts, out, r.RunID); err != nil {
		return nil, nil, fmt.Errorf("postgres.OpenRun: %w", err)
	}
	served, checked := checkedVersion(ctx, r.SessionKey)
	if t, ok := s.tails.get(r.SessionID); ok && len(out) > 0 {
		stored, err := s.openAfter(ctx, append(args, node), r.SessionID, t, out, r.SessionKey, served)
		switch {
		case errors.Is(err, errSessionMoved):
			s.sessions.drop(r.SessionKey)
			return nil, nil, fmt.Errorf("postgres.OpenRun: %w", store.ErrSessionMoved)
		case err == nil:
			s.tails.putOpened(r.SessionID, lastOf(stored), r.RunID, counts)
			return sqlstore.StoredRun(&c), stored, nil
		case !errors.Is(err, errTailMoved):
			return nil, nil, fmt.Errorf("postgres.OpenRun: %w", err)
		}
		s.tails.drop(r.SessionID) // and open reading the tail
	}
	if checked {
		if err := s.verifyServed(ctx, r.SessionKey); err != nil {
			return nil, nil, fmt.Errorf("postgres.OpenRun: %w", err)
		}
	}
	var existing *store.Run
	err = s.writeTx(ctx, func(tx pgx.Tx) error {
		existing = nil
		var b pgx.Batch
		b.Queue(qOpenRun, append(args, node)...)
		if len(out) > 0 {
			b.Queue(qLockTranscript, transcriptLockKey(r.SessionID))
			b.Queue(s.q.lastEntry, r.SessionID)
		}
		br := tx.SendBatch(ctx, &b)
		tag, err := br.Exec()
		if err != nil {
			br.Close()
			return err
		}
		if tag.RowsAffected() == 0 {
			// The id exists: the insert found it. The lock and tail
			// read that went with it are harmless.
			if err := br.Close(); err != nil {
				return err
			}
			if existing, err = scanRun(tx.QueryRow(ctx, s.q.getRun, r.RunID)); err != nil {
				existing = nil
				return err
			}
			return fmt.Errorf("%q: %w", r.RunID, store.ErrConflict)
		}
		return appendQueued(ctx, tx, br, r.SessionID, out)
	})
	if existing != nil && errors.Is(err, store.ErrConflict) {
		return existing, nil, fmt.Errorf("postgres.OpenRun: %w", err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("postgres.OpenRun: %w", err)
	}
	if len(out) > 0 {
		s.tails.putOpened(r.SessionID, lastOf(out), r.RunID, counts)
	}
	return sqlstore.StoredRun(&c), out, nil
}

// openAfter is OpenRun in one round trip when t, the transcript's
// remembered tail, is still its tail: the run's insert, the transcript's
// lock (taken by the fence check's statement, leadLock), the check of t
// (qTailIs) and the input's insert go with BEGIN, the fence check and
// COMMIT. When t is not the tail, or the run's id
// exists, a statement fails, the server skips the rest (COMMIT included)
// and it returns errTailMoved, having written nothing. out is not
// modified: it returns the stored copy.
//
// When served is set (the version of session sessionKey's row that the
// caller was served from memory, store.SessionCheck), that version is
// checked too (qSessionIs), and errSessionMoved returned, having written
// nothing, when the row moved.
//
// It is offered to the store's group committer (groupCommitter, shared
// with the runs' ends): sent alone (openAfterTx) when nothing is in
// flight, else with the opens and ends that arrived meanwhile, its fence
// check first among its statements; when its group is rolled back it is
// sent alone, and the errors above come from there.
func (s *Store) openAfter(ctx context.Context, args []any, sessionID string, t tail, out []store.Message, sessionKey, served string) ([]store.Message, error) {
	stored := slices.Clone(out)
	var b pgx.Batch
	lock := transcriptLockKey(sessionID)
	f, fenced := store.FenceOf(ctx)
	if fenced {
		b.Queue(qFenceGuardOnlyLock, f.SessionKey, f.Node, f.Epoch, lock)
	}
	b.Queue(qOpenRunNew, args...)
	if !fenced {
		b.Queue(qLockTranscript, lock)
	}
	b.Queue(qTailIs, sessionID, t.seq, t.prevID)
	if served != "" {
		b.Queue(qSessionIs, sessionKey, served)
	}
	if err := queueAppend(&b, sessionID, t, stored, ""); err != nil {
		return nil, err
	}
	var (
		aloneStored []store.Message
		alone       bool
	)
	m := newGroupMember(ctx, b.QueuedQueries)
	m.read = func(br pgx.BatchResults) error {
		for range b.QueuedQueries {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		return nil
	}
	m.alone = func(ctx context.Context) error {
		alone = true
		var err error
		aloneStored, err = s.openAfterTx(ctx, args, sessionID, t, out, sessionKey, served)
		return err
	}
	err := s.ends.commit(s, m)
	if alone {
		return aloneStored, err
	}
	return stored, err
}

// openAfterTx is openAfter in a transaction of its own.
func (s *Store) openAfterTx(ctx context.Context, args []any, sessionID string, t tail, out []store.Message, sessionKey, served string) ([]store.Message, error) {
	stored := slices.Clone(out)
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		var b pgx.Batch
		led := leadLock(tx, transcriptLockKey(sessionID))
		b.Queue(qOpenRunNew, args...)
		if !led {
			b.Queue(qLockTranscript, transcriptLockKey(sessionID))
		}
		b.Queue(qTailIs, sessionID, t.seq, t.prevID)
		if served != "" {
			b.Queue(qSessionIs, sessionKey, served)
		}
		if err := queueAppend(&b, sessionID, t, stored, ""); err != nil {
			return err
		}
		br := sendLast(ctx, tx, &b)
		if _, err := br.Exec(); err != nil {
			br.Close()
			if isCode(err, "23505") {
				return errTailMoved
			}
			return err
		}
		if err := readTailGuard(br, led); err != nil {
			br.Close()
			return err
		}
		if served != "" {
			if _, err := br.Exec(); err != nil {
				br.Close()
				if isCode(err, "22012") {
					return errSessionMoved
				}
				return err
			}
		}
		return br.Close()
	})
	return stored, err
}

// errSessionMoved is openAfter's: the session row the caller was served
// from memory moved; nothing was written.
var errSessionMoved = errors.New("session row moved")

// lastOf is the tail that stored messages leave.
func lastOf(stored []store.Message) tail {
	m := stored[len(stored)-1]
	return tail{seq: m.Seq, prevID: m.Entry.ID}
}
