package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

// runCols lists the runs columns in the order scanRun and runArgs use.
const runCols = sqlstore.RunCols

const (
	qAbortSessions = `UPDATE sessions SET aborted_last_run = true WHERE key = ANY($1)`

	// qStartRun starts a queued run. With a node ($4 not empty) it also
	// records the node and fences: the node must hold the run's session
	// lane under a live lease, so a node whose lease ended (cut off from
	// the database, then adopted) can never start a run another node now
	// owns.
	qStartRun = `UPDATE runs SET status = 'running', started_at = $2, session_id = $3, node_id = $4
		WHERE run_id = $1 AND status = 'queued' AND ($4 = '' OR EXISTS (
			SELECT 1 FROM lanes l JOIN nodes n ON n.node_id = l.node_id
			WHERE l.session_key = runs.session_key AND l.node_id = $4 AND n.lease_until > now()))
		RETURNING ` + runCols
)

// scanRun reads one row of runCols.
func scanRun(row pgx.Row) (*store.Run, error) { return sqlstore.ScanRun(row) }

// runArgs returns r as arguments in runCols order; r's input must be valid
// JSON (a jsonb column).
func runArgs(r *store.Run) ([]any, error) {
	if len(r.Input) > 0 && !json.Valid(r.Input) {
		return nil, fmt.Errorf("run %q: input is not valid JSON", r.RunID)
	}
	return sqlstore.RunArgs(r)
}

// CreateRun inserts r; ErrConflict if RunID exists. An empty Status means
// queued and a zero CreatedAt means now. r itself is not modified.
func (s *Store) CreateRun(ctx context.Context, r *store.Run) error {
	if err := s.checkOpen("CreateRun"); err != nil {
		return err
	}
	if r == nil || r.RunID == "" {
		return errors.New("postgres.CreateRun: empty run id")
	}
	c := sqlstore.NewRun(r, s.nowTime)
	args, err := runArgs(&c)
	if err != nil {
		return fmt.Errorf("postgres.CreateRun: %w", err)
	}
	if err := s.verifyServed(ctx, r.SessionKey); err != nil {
		return fmt.Errorf("postgres.CreateRun: %w", err)
	}
	tag, err := s.pool.Exec(ctx, s.q.insertRun, args...)
	if err != nil {
		return fmt.Errorf("postgres.CreateRun: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres.CreateRun: %q: %w", r.RunID, store.ErrConflict)
	}
	return nil
}

// getRunLocked reads and locks a run inside a transaction; ErrNotFound if
// absent.
func (s *Store) getRunLocked(ctx context.Context, tx pgx.Tx, runID string) (*store.Run, error) {
	r, err := scanRun(tx.QueryRow(ctx, s.q.getRunLocked, runID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%q: %w", runID, store.ErrNotFound)
	}
	return r, err
}

// putRunTx overwrites a run's row inside a transaction.
func (s *Store) putRunTx(ctx context.Context, tx pgx.Tx, r *store.Run) error {
	args, err := runArgs(r)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, s.q.updateRun, args...)
	return err
}

// UpdateRun applies fn to the stored run, locked for the transaction, and
// stores the result; fn's error is returned as is and leaves the row
// unchanged. ErrNotFound if absent. fn may not change RunID and must not
// call the Store.
func (s *Store) UpdateRun(ctx context.Context, runID string, fn func(*store.Run) error) (*store.Run, error) {
	if err := s.checkOpen("UpdateRun"); err != nil {
		return nil, err
	}
	var (
		out   *store.Run
		fnErr error
	)
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		r, err := s.getRunLocked(ctx, tx, runID)
		if err != nil {
			return err
		}
		if err := fn(r); err != nil {
			fnErr = err
			return err
		}
		if r.RunID != runID {
			return fmt.Errorf("fn changed run id %q to %q", runID, r.RunID)
		}
		if err := s.putRunTx(ctx, tx, r); err != nil {
			return err
		}
		out = sqlstore.StoredRun(r)
		return nil
	})
	if fnErr != nil {
		return nil, fnErr
	}
	if err != nil {
		return nil, fmt.Errorf("postgres.UpdateRun: %w", err)
	}
	return out, nil
}

// queryRuns runs a query of runCols and scans its rows.
func (s *Store) queryRuns(ctx context.Context, query string, args ...any) ([]*store.Run, error) {
	return sqlstore.All(ctx, poolReads{s}, 0, sqlstore.ScanRun, query, args...)
}

// FinishRun marks a live run terminal with res and, in the same
// transaction, updates its session's counters and enqueues res.Outbox, as
// store.Store describes. ErrNotFound if the run is absent, ErrConflict if
// it is already terminal; on error nothing is written.
func (s *Store) FinishRun(ctx context.Context, runID string, res store.RunResult) (*store.Run, error) {
	run, _, err := s.endRun(ctx, "FinishRun", runID, res, "", nil)
	return run, err
}

// errNotLive is how FinishRun's transaction says its run was not live.
var errNotLive = errors.New("run not live")

// AbortInterrupted marks every running run aborted with errText and EndedAt
// now (the Store's clock when zero), and sets AbortedLastRun on their
// sessions, in one transaction. Queued runs are left alone. It returns the
// changed runs ordered by CreatedAt, then RunID.
func (s *Store) AbortInterrupted(ctx context.Context, now time.Time, errText string) ([]*store.Run, error) {
	if err := s.checkOpen("AbortInterrupted"); err != nil {
		return nil, err
	}
	if now.IsZero() {
		now = s.nowTime()
	}
	var out []*store.Run
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, s.q.abortRunning, toMs(now), errText)
		if err != nil {
			return err
		}
		defer rows.Close()
		var keys []string
		for rows.Next() {
			r, err := scanRun(rows)
			if err != nil {
				return err
			}
			out = append(out, r)
			keys = append(keys, r.SessionKey)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		if len(keys) == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, qAbortSessions, keys)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres.AbortInterrupted: %w", err)
	}
	sortRuns(out)
	return out, nil
}

// sortRuns orders runs by CreatedAt, then RunID.
func sortRuns(rs []*store.Run) {
	slices.SortFunc(rs, func(a, b *store.Run) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.RunID, b.RunID)
	})
}

// StartRun implements store.Store: the run is locked, checked queued and
// marked running, and its input appended under the transcript's lock, in
// one transaction.
func (s *Store) StartRun(ctx context.Context, runID string, startedAt time.Time, sessionID string, msgs []store.Message) (*store.Run, []store.Message, error) {
	if err := s.checkOpen("StartRun"); err != nil {
		return nil, nil, err
	}
	if sessionID == "" {
		return nil, nil, errors.New("postgres.StartRun: empty session id")
	}
	out, err := s.prepareMessages(sessionID, msgs)
	if err != nil {
		return nil, nil, fmt.Errorf("postgres.StartRun: %w", err)
	}
	var run *store.Run
	err = s.writeTx(ctx, func(tx pgx.Tx) error {
		// Queued to running in one statement, sent with the transcript's
		// lock and the read of its tail (and BEGIN and the fence check:
		// one round trip); when it matches nothing, find out why.
		node := s.nodeID()
		var b pgx.Batch
		b.Queue(qStartRun, runID, toMs(startedAt), sessionID, node)
		if len(out) > 0 {
			b.Queue(qLockTranscript, transcriptLockKey(sessionID))
			b.Queue(s.q.lastEntry, sessionID)
		}
		br := tx.SendBatch(ctx, &b)
		r, err := scanRun(br.QueryRow())
		if errors.Is(err, pgx.ErrNoRows) {
			if err := br.Close(); err != nil {
				return err
			}
			var status string
			if err := tx.QueryRow(ctx, s.q.runStatus, runID).Scan(&status); errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("%q: %w", runID, store.ErrNotFound)
			} else if err != nil {
				return err
			}
			if status == string(store.RunQueued) {
				return fmt.Errorf("run %q: node %s does not hold its session's lane: %w", runID, node, store.ErrConflict)
			}
			return fmt.Errorf("run %q is %s, not queued: %w", runID, status, store.ErrConflict)
		}
		if err != nil {
			br.Close()
			return err
		}
		if err := appendQueued(ctx, tx, br, sessionID, out); err != nil {
			return err
		}
		run = sqlstore.StoredRun(r)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("postgres.StartRun: %w", err)
	}
	return run, out, nil
}
