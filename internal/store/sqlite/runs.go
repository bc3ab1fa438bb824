package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

// runSeqSlack is how many of a transcript's last entries a new live
// run's first_seq reaches back over (firstSeq3 spells it out): a chat
// command answered under the request's run id ("/new hello" runs the
// text under the id its reply was recorded with) is found with the run.
const runSeqSlack = 16

const (
	qGetRun = sqlstore.GetRun

	// qInsertRun is sqlstore.InsertRun that also sets first_seq
	// (sqlstore.RunFrom). A live run's messages come after its row (OpenRun
	// inserts the row before the run's input), but for a chat command's
	// reply, recorded under the request's run id before the row: firstSeq3
	// reaches back over the transcript's last runSeqSlack entries. A run
	// stored already ended (EndCommand's record of a command) bounds
	// nothing (0): its messages were all written before it.
	qInsertRun = `INSERT INTO runs (` + sqlstore.RunCols + `, first_seq)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13,
		CASE WHEN ?6 IN ('queued', 'running') THEN ` + firstSeq3 + ` ELSE 0 END)
		ON CONFLICT (run_id) DO NOTHING`

	// firstSeq3 is the first_seq of a run that starts in transcript ?3:
	// the seq of the transcript's next entry, less runSeqSlack.
	firstSeq3 = `MAX(COALESCE((SELECT MAX(seq) FROM messages WHERE session_id = ?3), 0) + 1 - 16, 0)`

	// qUpdateRun is sqlstore.UpdateRun, which forgets first_seq (0:
	// unknown) when the run moves to another transcript. (The right-hand
	// sides of an UPDATE see the row as it was.)
	qUpdateRun = `UPDATE runs SET session_key = ?2, session_id = ?3, agent_id = ?4,
		lane = ?5, status = ?6, input = ?7, created_at = ?8, started_at = ?9,
		ended_at = ?10, error = ?11, stop_reason = ?12, usage = ?13,
		first_seq = CASE WHEN session_id = ?3 THEN first_seq ELSE 0 END
		WHERE run_id = ?1`

	// qStartRun starts a queued run, and only a queued one; a run that
	// starts in another transcript than it was queued for takes its
	// first_seq there (firstSeq3).
	qStartRun = `UPDATE runs SET status = 'running', started_at = ?2, session_id = ?3,
		first_seq = CASE WHEN session_id = ?3 THEN first_seq ELSE ` + firstSeq3 + ` END
		WHERE run_id = ?1 AND status = 'queued' RETURNING ` + sqlstore.RunCols

	// qEndRun records the end of a live run and its message counts.
	qEndRun = `UPDATE runs SET status = ?2, ended_at = ?3, error = ?4, stop_reason = ?5,
		usage = ?6, stats = ?7 WHERE run_id = ?1 AND status IN ('queued', 'running')`

	// qFinishSession adds a run's usage to its session and records how the
	// run ended; finishSession does the same to a cached row.
	qFinishSession = `UPDATE sessions SET
		input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,
		total_tokens = total_tokens + ?, aborted_last_run = ?,
		system_sent = MAX(system_sent, ?), updated_at = MAX(updated_at, ?)
		WHERE key = ?`

	// The queries by status name sqlstore.LiveRuns, the condition of the
	// partial index runs_live.
	qRunning = `SELECT ` + sqlstore.RunCols + ` FROM runs WHERE status = 'running' AND ` + sqlstore.LiveRuns + `
		ORDER BY created_at, run_id`

	qAbortSessions = `UPDATE sessions SET aborted_last_run = 1
		WHERE key IN (SELECT session_key FROM runs WHERE status = 'running' AND ` + sqlstore.LiveRuns + `)`

	qAbortRuns = `UPDATE runs SET status = 'aborted', ended_at = ?, error = ?
		WHERE status = 'running' AND ` + sqlstore.LiveRuns
)

// CreateRun inserts r; ErrConflict if RunID exists. An empty Status means
// queued and a zero CreatedAt means now. r itself is not modified.
// An outbox item ctx carries for the run (store.RunOutbox) is inserted in
// the same transaction.
func (s *Store) CreateRun(ctx context.Context, r *store.Run) error {
	if err := s.checkOpen("CreateRun"); err != nil {
		return err
	}
	if r == nil || r.RunID == "" {
		return errors.New("sqlite.CreateRun: empty run id")
	}
	c := sqlstore.NewRun(r, s.nowTime)
	args, err := sqlstore.RunArgs(&c)
	if err != nil {
		return fmt.Errorf("sqlite.CreateRun: %w", err)
	}
	ob, obArgs, err := s.runOutbox(ctx, r.RunID)
	if err != nil {
		return fmt.Errorf("sqlite.CreateRun: %w", err)
	}
	claims := store.RunClaimsOf(ctx, r.RunID)
	err = s.writeTxThen(ctx, func(ctx context.Context, tx wtx) error {
		if ok, err := s.insertRunTx(ctx, tx, args); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("%q: %w", r.RunID, store.ErrConflict)
		}
		if err := s.insertRunOutboxTx(ctx, tx, obArgs); err != nil {
			return err
		}
		return s.runClaimsTx(ctx, tx, claims)
	}, func() {
		ob.markStored()
		if claims != nil {
			claims.MarkStored()
		}
	})
	if err != nil {
		return fmt.Errorf("sqlite.CreateRun: %w", err)
	}
	return nil
}

// runOutbox returns the outbox item ctx carries for run runID
// (store.RunOutbox), to be inserted in the transaction that stores the
// run, and its insert's arguments; nil when there is none.
func (s *Store) runOutbox(ctx context.Context, runID string) (runOutbox, []any, error) {
	o := store.RunOutboxOf(ctx, runID)
	if o == nil {
		return runOutbox{}, nil, nil
	}
	c := *o.Item // Payload is shared but only read
	args, err := newOutboxArgs(&c, s.nowTime())
	if err != nil {
		return runOutbox{}, nil, err
	}
	return runOutbox{o}, args, nil
}

// runOutbox is the store.RunOutbox a run's transaction carries, if any.
type runOutbox struct{ o *store.RunOutbox }

// markStored marks the item stored (its transaction committed).
func (r runOutbox) markStored() {
	if r.o != nil {
		r.o.MarkStored()
	}
}

// insertRunOutboxTx inserts the outbox item of a run's transaction
// (runOutbox's args; none when nil) in tx: an item with its id that exists
// is kept, as a recorded flow is.
func (s *Store) insertRunOutboxTx(ctx context.Context, tx wtx, args []any) error {
	if args == nil {
		return nil
	}
	_, err := s.insertOutboxTx(ctx, tx, args)
	return err
}

// insertRunTx inserts a run's row (RunArgs) inside a write transaction; it
// reports false when a run with its id exists (nothing is written).
func (s *Store) insertRunTx(ctx context.Context, tx wtx, args []any) (bool, error) {
	return s.insertTx(ctx, tx, qInsertRun, args)
}

// getRunTx reads a run inside a write transaction; ErrNotFound if absent.
func (s *Store) getRunTx(ctx context.Context, tx wtx, runID string) (*store.Run, error) {
	st, err := s.wstmt(ctx, tx, qGetRun)
	if err != nil {
		return nil, err
	}
	r, err := sqlstore.ScanRun(st.QueryRowContext(ctx, runID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%q: %w", runID, store.ErrNotFound)
	}
	return r, err
}

// putRunTx overwrites a run's row inside a write transaction.
func (s *Store) putRunTx(ctx context.Context, tx wtx, r *store.Run) error {
	args, err := sqlstore.RunArgs(r)
	if err != nil {
		return err
	}
	st, err := s.wstmt(ctx, tx, qUpdateRun)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(ctx, args...)
	return err
}

// endRunTx stores the end of r (its status, end time, error, stop reason
// and usage) with the counts of its messages, in one statement; stats nil
// means count them now. It reports false when the run is no longer live
// (nothing is written).
func (s *Store) endRunTx(ctx context.Context, tx wtx, r *store.Run, stats *store.RunStats) (bool, error) {
	if !sqlstore.ValidRunStatus(r.Status) {
		return false, fmt.Errorf("run %q: unknown status %q", r.RunID, r.Status)
	}
	usage, err := json.Marshal(r.Usage)
	if err != nil {
		return false, fmt.Errorf("run %q: usage: %w", r.RunID, err)
	}
	var counts []byte
	if stats != nil {
		counts, err = json.Marshal(stats)
	} else {
		counts, err = s.runStatsTx(ctx, tx, r)
	}
	if err != nil {
		return false, err
	}
	res, err := s.wexec(ctx, tx, qEndRun, r.RunID, string(r.Status), toMs(r.EndedAt), r.Error, r.StopReason, string(usage), string(counts))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// UpdateRun applies fn to the stored run in one write transaction and stores
// the result; fn's error is returned as is and leaves the row unchanged.
// ErrNotFound if absent. fn may not change RunID; like UpdateSession's fn it
// must be quick and must not call the Store.
func (s *Store) UpdateRun(ctx context.Context, runID string, fn func(*store.Run) error) (*store.Run, error) {
	if err := s.checkOpen("UpdateRun"); err != nil {
		return nil, err
	}
	var (
		out   *store.Run
		fnErr error
	)
	err := s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
		r, err := s.getRunTx(ctx, tx, runID)
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
		s.memo.forgetRun(runID)
		out = sqlstore.StoredRun(r)
		return nil
	})
	if fnErr != nil {
		return nil, fnErr
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite.UpdateRun: %w", err)
	}
	return out, nil
}

// FinishRun marks a live run terminal with res (res.Usage replaces the run's
// usage; a zero EndedAt means now) and, in the same transaction, adds the
// usage to its session's input, output and total token counters, sets the
// session's AbortedLastRun (true only for RunAborted), moves its UpdatedAt
// forward to EndedAt and inserts res.Outbox with PutOutbox's defaults (an
// empty RunID means runID), skipping items whose ID exists. A missing
// session is not an error. ErrNotFound if the run is absent, ErrConflict if
// it is already terminal; on error nothing is written.
func (s *Store) FinishRun(ctx context.Context, runID string, res store.RunResult) (*store.Run, error) {
	run, _, err := s.endRun(ctx, "FinishRun", runID, res, "", nil)
	return run, err
}

// EndRun implements store.RunEnder: the messages of the run's last turn
// and its end are one transaction.
func (s *Store) EndRun(ctx context.Context, runID string, res store.RunResult, sessionID string, msgs []store.Message) (*store.Run, []store.Message, error) {
	if len(msgs) > 0 && sessionID == "" {
		return nil, nil, errors.New("sqlite.EndRun: empty session id")
	}
	return s.endRun(ctx, "EndRun", runID, res, sessionID, msgs)
}

// endRun is FinishRun, appending msgs to sessionID first in its
// transaction.
func (s *Store) endRun(ctx context.Context, op, runID string, res store.RunResult, sessionID string, msgs []store.Message) (*store.Run, []store.Message, error) {
	if err := s.checkOpen(op); err != nil {
		return nil, nil, err
	}
	if !res.Status.Terminal() {
		return nil, nil, fmt.Errorf("sqlite.%s: status %q is not terminal", op, res.Status)
	}
	var stored []store.Message
	if len(msgs) > 0 {
		var err error
		if stored, err = s.prepareMessages(sessionID, msgs); err != nil {
			return nil, nil, fmt.Errorf("sqlite.%s: %w", op, err)
		}
	}
	// Outbox rows are built before taking the writer.
	ended, outbox, err := sqlstore.RunEndArgs(runID, res.EndedAt, res.Outbox, s.nowTime())
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite.%s: %w", op, err)
	}
	var (
		out      *store.Run
		finished bool // the session row exists and took the run's end
	)
	err = s.writeTxThen(ctx, func(ctx context.Context, tx wtx) error {
		out, finished = nil, false // set, not kept: the body may run again
		// A run this writer opened is in its memo, with the counts of its
		// messages: nothing to read.
		var (
			r   *store.Run
			err error
		)
		if lr, ok := s.memo.run(runID); ok {
			// A copy of the remembered record, which the body must not
			// change (it may roll back); it shares Input, which nothing
			// writes to, and takes the end's fields below.
			c := lr.run
			r = &c
		} else if r, err = s.getRunTx(ctx, tx, runID); err != nil {
			return err
		} else if r.Status.Terminal() {
			return fmt.Errorf("run %q already %s: %w", runID, r.Status, store.ErrConflict)
		}
		if len(stored) > 0 {
			if err := s.appendTx(ctx, tx, sessionID, stored, ""); err != nil {
				return err
			}
		}
		var stats *store.RunStats
		if lr, ok := s.memo.run(runID); ok {
			stats = &lr.stats
		}
		r.Status = res.Status
		r.Error = res.Error
		r.StopReason = res.StopReason
		r.Usage = res.Usage
		if r.Usage.Cost != nil {
			c := *r.Usage.Cost
			r.Usage.Cost = &c
		}
		r.EndedAt = ended
		if live, err := s.endRunTx(ctx, tx, r, stats); err != nil {
			return err
		} else if !live { // ended since the memo took it: say how
			if r, err = s.getRunTx(ctx, tx, runID); err != nil {
				return err
			}
			return fmt.Errorf("run %q already %s: %w", runID, r.Status, store.ErrConflict)
		}
		s.memo.forgetRun(runID)
		fin, err := s.wexec(ctx, tx, qFinishSession, res.Usage.Input, res.Usage.Output, res.Usage.TotalTokens,
			boolInt(res.Status == store.RunAborted), boolInt(!r.StartedAt.IsZero()), toMs(ended), r.SessionKey)
		if err != nil {
			return err
		}
		n, err := fin.RowsAffected() // a missing session is not an error
		if err != nil {
			return err
		}
		finished = n == 1
		for _, args := range outbox {
			if _, err := s.insertOutboxTx(ctx, tx, args); err != nil {
				return err
			}
		}
		out = r
		return nil
	}, func() {
		if finished {
			s.sessions.update(out.SessionKey, func(c *store.Session) {
				finishSession(c, res, !out.StartedAt.IsZero(), ended)
			})
		}
	})
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite.%s: %w", op, err)
	}
	return out, stored, nil
}

// finishSession applies qFinishSession to a cached row.
func finishSession(c *store.Session, res store.RunResult, started bool, ended time.Time) {
	c.InputTokens += res.Usage.Input
	c.OutputTokens += res.Usage.Output
	c.TotalTokens += res.Usage.TotalTokens
	c.AbortedLastRun = res.Status == store.RunAborted
	c.SystemSent = c.SystemSent || started
	if ended.After(c.UpdatedAt) {
		c.UpdatedAt = ended
	}
}

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
	err := s.writeTxThen(ctx, func(ctx context.Context, tx wtx) error {
		out = nil // set, not accumulated: the body may run again
		st, err := s.wstmt(ctx, tx, qRunning)
		if err != nil {
			return err
		}
		rows, err := st.QueryContext(ctx)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := sqlstore.ScanRun(rows)
			if err != nil {
				return err
			}
			r.Status = store.RunAborted
			r.EndedAt = store.Millis(now)
			r.Error = errText
			out = append(out, r)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		if len(out) == 0 {
			return nil
		}
		if st, err = s.wstmt(ctx, tx, qAbortSessions); err != nil {
			return err
		}
		if _, err := st.ExecContext(ctx); err != nil {
			return err
		}
		s.memo.forgetRun("")
		if st, err = s.wstmt(ctx, tx, qAbortRuns); err != nil {
			return err
		}
		_, err = st.ExecContext(ctx, toMs(now), errText)
		return err
	}, func() { s.sessions.drop("") })
	if err != nil {
		return nil, fmt.Errorf("sqlite.AbortInterrupted: %w", err)
	}
	return out, nil
}

// StartRun implements store.Store.
func (s *Store) StartRun(ctx context.Context, runID string, startedAt time.Time, sessionID string, msgs []store.Message) (*store.Run, []store.Message, error) {
	if err := s.checkOpen("StartRun"); err != nil {
		return nil, nil, err
	}
	if sessionID == "" {
		return nil, nil, errors.New("sqlite.StartRun: empty session id")
	}
	out, err := s.prepareMessages(sessionID, msgs)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite.StartRun: %w", err)
	}
	var run *store.Run
	err = s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
		st, err := s.wstmt(ctx, tx, qStartRun)
		if err != nil {
			return err
		}
		r, err := sqlstore.ScanRun(st.QueryRowContext(ctx, runID, toMs(startedAt), sessionID))
		if errors.Is(err, sql.ErrNoRows) {
			// Absent, or not queued: say which.
			if r, err = s.getRunTx(ctx, tx, runID); err != nil {
				return err
			}
			return fmt.Errorf("run %q is %s, not queued: %w", runID, r.Status, store.ErrConflict)
		}
		if err != nil {
			return err
		}
		s.memo.forgetRun(runID)
		if len(out) > 0 {
			if err := s.appendTx(ctx, tx, sessionID, out, ""); err != nil {
				return err
			}
		}
		run = sqlstore.StoredRun(r)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite.StartRun: %w", err)
	}
	return run, out, nil
}

var _ store.RunOpener = (*Store)(nil)

// OpenRun implements store.RunOpener: the insert of a started run and its
// input messages are one transaction, and the insert itself finds an
// existing run with the id (ON CONFLICT DO NOTHING), which is then read in
// the same transaction and returned with ErrConflict. An outbox item ctx
// carries for the run (store.RunOutbox) is inserted in the same
// transaction.
func (s *Store) OpenRun(ctx context.Context, r *store.Run, msgs []store.Message) (*store.Run, []store.Message, error) {
	return s.openRun(ctx, "OpenRun", nil, r, msgs)
}

// OpenChildRun stores a spawned child's session and registry rows and
// opens its first run in one commit (store.ChildRunOpener), and caches
// the stored session row.
func (s *Store) OpenChildRun(ctx context.Context, c *store.ChildOpen, r *store.Run, msgs []store.Message) (*store.Run, []store.Message, error) {
	if c == nil || c.Session == nil || c.Session.Key == "" || c.Row == nil {
		return nil, nil, errors.New("sqlite.OpenChildRun: no child")
	}
	return s.openRun(ctx, "OpenChildRun", c, r, msgs)
}

// openRun is OpenRun, and with child OpenChildRun (named op in errors).
func (s *Store) openRun(ctx context.Context, op string, child *store.ChildOpen, r *store.Run, msgs []store.Message) (*store.Run, []store.Message, error) {
	if err := s.checkOpen(op); err != nil {
		return nil, nil, err
	}
	if r == nil || r.RunID == "" || r.SessionID == "" {
		return nil, nil, fmt.Errorf("sqlite.%s: empty run or session id", op)
	}
	if r.Status != store.RunRunning || r.StartedAt.IsZero() {
		return nil, nil, fmt.Errorf("sqlite.%s: run %q is %s (started %v), not running", op, r.RunID, r.Status, r.StartedAt)
	}
	c := sqlstore.NewRun(r, s.nowTime)
	args, err := sqlstore.RunArgs(&c)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite.%s: %w", op, err)
	}
	out, err := s.prepareMessages(r.SessionID, msgs)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite.%s: %w", op, err)
	}
	ob, obArgs, err := s.runOutbox(ctx, r.RunID)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite.%s: %w", op, err)
	}
	var childArgs []any
	if child != nil {
		if childArgs, err = sqlstore.NewSubagentArgs(child.Row, s.nowTime()); err != nil {
			return nil, nil, fmt.Errorf("sqlite.%s: %w", op, err)
		}
	}
	stored := sqlstore.StoredRun(&c)
	if len(stored.Input) == 0 {
		stored.Input = nil // stored NULL
	}
	var sess *store.Session
	var existingRun *store.Run
	claims := store.RunClaimsOf(ctx, r.RunID)
	after := func() {
		if sess != nil {
			s.sessions.put(sess)
		}
		ob.markStored()
		if claims != nil {
			claims.MarkStored()
		}
	}
	body := func(ctx context.Context, tx wtx) error {
		existingRun, sess = nil, nil // set, not kept: the body may run again
		if child != nil {
			if err := s.insertChildTx(ctx, tx, child, childArgs); err != nil {
				return err
			}
		}
		if ok, err := s.insertRunTx(ctx, tx, args); err != nil {
			return err
		} else if !ok {
			if child == nil {
				if existingRun, err = s.getRunTx(ctx, tx, r.RunID); err != nil {
					return err
				}
			}
			return fmt.Errorf("%q: %w", r.RunID, store.ErrConflict)
		}
		if err := s.insertRunOutboxTx(ctx, tx, obArgs); err != nil {
			return err
		}
		if err := s.runClaimsTx(ctx, tx, claims); err != nil {
			return err
		}
		if child != nil {
			// The row as a read returns it, for the cache: the child's
			// run reads it next.
			get, err := s.wstmt(ctx, tx, qGetSession)
			if err != nil {
				return err
			}
			if sess, err = scanSession(get.QueryRowContext(ctx, child.Session.Key)); err != nil {
				return err
			}
		}
		s.memo.openRun(stored)
		if len(out) > 0 {
			return s.appendTx(ctx, tx, r.SessionID, out, "")
		}
		return nil
	}
	if l := store.LingerOf(ctx); l != nil && child == nil && l.For > 0 {
		var p *lingerTx
		if p, err = s.commits.runLinger(ctx, body, after, l.For); p != nil {
			l.Pending = p
		}
	} else {
		err = s.writeTxThen(ctx, body, after)
	}
	if existingRun != nil && errors.Is(err, store.ErrConflict) {
		return existingRun, nil, fmt.Errorf("sqlite.%s: %w", op, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite.%s: %w", op, err)
	}
	return stored.Clone(), out, nil
}
