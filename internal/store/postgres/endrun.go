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
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

var _ store.RunEnder = (*Store)(nil)

// EndRun implements store.RunEnder: a run's last messages and its end are
// one transaction with one fence check, where AppendMessages then
// FinishRun took four round trips (the read of the run's message counts,
// then two transactions each with its own fence check). When this store
// opened the run (OpenRun) and remembers the tail its open left, the
// transaction is one round trip: the transcript's lock and the check of
// that tail go with BEGIN, the fence check, the run's end, its outbox
// items, the messages and COMMIT, and the run's counts are the open's
// plus the new messages'. Otherwise (or when the tail moved) it is two:
// the lock, the tail and the run's stored messages are read with BEGIN
// and the fence check, and the writes go next, with COMMIT. A run that is
// not live ends nothing and appends nothing, as on SQLite.
func (s *Store) EndRun(ctx context.Context, runID string, res store.RunResult, sessionID string, msgs []store.Message) (*store.Run, []store.Message, error) {
	if len(msgs) > 0 && sessionID == "" {
		return nil, nil, errors.New("postgres.EndRun: empty session id")
	}
	return s.endRun(ctx, "EndRun", runID, res, sessionID, msgs)
}

// runEnd is what a run's end writes, ready for endTx.
type runEnd struct {
	runID     string
	res       store.RunResult
	ended     time.Time
	usage     string
	outbox    [][]any
	sessionID string
	out       []store.Message // prepared messages to append
}

// endRun is FinishRun (op names the caller in errors), appending msgs to
// transcript sessionID in its transaction when there are any.
func (s *Store) endRun(ctx context.Context, op, runID string, res store.RunResult, sessionID string, msgs []store.Message) (*store.Run, []store.Message, error) {
	if err := s.checkOpen(op); err != nil {
		return nil, nil, err
	}
	if !res.Status.Terminal() {
		return nil, nil, fmt.Errorf("postgres.%s: status %q is not terminal", op, res.Status)
	}
	e := runEnd{runID: runID, res: res, sessionID: sessionID}
	if len(msgs) > 0 {
		var err error
		if e.out, err = s.prepareMessages(sessionID, msgs); err != nil {
			return nil, nil, fmt.Errorf("postgres.%s: %w", op, err)
		}
	}
	var err error
	if e.ended, e.outbox, err = sqlstore.RunEndArgs(runID, res.EndedAt, res.Outbox, s.nowTime()); err != nil {
		return nil, nil, fmt.Errorf("postgres.%s: %w", op, err)
	}
	usage, err := json.Marshal(res.Usage)
	if err != nil {
		return nil, nil, fmt.Errorf("postgres.%s: usage: %w", op, err)
	}
	e.usage = string(usage)
	run, stored, err := s.endOpened(ctx, &e)
	if errors.Is(err, errTailMoved) {
		s.tails.drop(sessionID)
		run, stored, err = s.endTx(ctx, &e, nil, "")
	}
	if errors.Is(err, errNotLive) {
		var status string
		switch err := s.pool.QueryRow(ctx, `SELECT status FROM runs WHERE run_id = $1`, runID).Scan(&status); {
		case errors.Is(err, pgx.ErrNoRows):
			return nil, nil, fmt.Errorf("postgres.%s: %q: %w", op, runID, store.ErrNotFound)
		case err != nil:
			return nil, nil, fmt.Errorf("postgres.%s: %w", op, err)
		default:
			return nil, nil, fmt.Errorf("postgres.%s: run %q already %s: %w", op, runID, status, store.ErrConflict)
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("postgres.%s: %w", op, err)
	}
	if len(stored) > 0 {
		s.tails.put(sessionID, lastOf(stored)) // for the session's next open
	}
	return run, stored, nil
}

// endOpened ends the run in one round trip when this store opened it and
// remembers the tail its open left (tailCache.opened): the run's counts
// are the open's plus e's messages'. It returns errTailMoved, having
// written nothing, when that tail is not the transcript's any more; it
// ends the run as endTx does when nothing is remembered.
func (s *Store) endOpened(ctx context.Context, e *runEnd) (*store.Run, []store.Message, error) {
	if len(e.out) == 0 {
		return s.endTx(ctx, e, nil, "")
	}
	t, counts, ok := s.tails.opened(e.sessionID, e.runID)
	if !ok {
		return s.endTx(ctx, e, nil, "")
	}
	if err := countRun(&counts, e.out, e.runID); err != nil {
		return nil, nil, err
	}
	stats, err := json.Marshal(counts)
	if err != nil {
		return nil, nil, err
	}
	return s.endGrouped(ctx, e, t, string(stats))
}

// endGrouped is endTx with checked tail t and stats, offered to the
// store's group committer: sent alone when no end is in flight (endTx),
// else with the ends that arrived meanwhile, in one transaction. Its
// statements are endTx's: the fence check (taking the transcript's
// lock), the check of t, the run's end, its outbox items and its
// messages. When its group is rolled back (a member fenced, not live, or
// its tail moved) it is sent alone, and errTailMoved, ErrFenced and
// errNotLive come from there, as without the group.
func (s *Store) endGrouped(ctx context.Context, e *runEnd, t tail, stats string) (*store.Run, []store.Message, error) {
	stored := slices.Clone(e.out)
	var b pgx.Batch
	lock := transcriptLockKey(e.sessionID)
	f, fenced := store.FenceOf(ctx)
	if fenced {
		b.Queue(qFenceGuardOnlyLock, f.SessionKey, f.Node, f.Epoch, lock)
	} else {
		b.Queue(qLockTranscript, lock)
	}
	b.Queue(qTailIs, e.sessionID, t.seq, t.prevID)
	s.queueFinish(&b, e, stats)
	if err := queueAppend(&b, e.sessionID, t, stored, ""); err != nil {
		return nil, nil, err
	}
	var (
		run, aloneRun *store.Run
		ended         *store.Session
		endedVer      int64
		aloneStored   []store.Message
		alone         bool
	)
	m := newGroupMember(ctx, b.QueuedQueries)
	m.read = func(br pgx.BatchResults) error {
		for range 2 { // the fence check (or lock), the tail's
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		r, sess, ver, err := scanFinished(br)
		if err != nil {
			return err
		}
		for range len(e.outbox) + 1 { // the outbox items, the messages
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		run, ended, endedVer = r, sess, ver
		return nil
	}
	m.alone = func(ctx context.Context) error {
		alone = true
		var err error
		aloneRun, aloneStored, err = s.endTx(ctx, e, &t, stats)
		return err
	}
	err := s.ends.commit(s, m)
	if alone {
		return aloneRun, aloneStored, err
	}
	if err != nil {
		return nil, nil, err
	}
	if ended != nil {
		s.sessions.put(ended, endedVer)
	}
	return run, stored, nil
}

// queueFinish queues the end of e's run (finishRun, with the run's
// counts stats) and its outbox items.
func (s *Store) queueFinish(b *pgx.Batch, e *runEnd, stats string) {
	res := e.res
	b.Queue(s.q.finishRun, e.runID, string(res.Status), res.Error, res.StopReason, e.usage, toMs(e.ended),
		res.Usage.Input, res.Usage.Output, res.Usage.TotalTokens, res.Status == store.RunAborted, stats)
	for _, args := range e.outbox {
		b.Queue(s.q.insertOutbox, args...)
	}
}

// endTx writes the run's end, its outbox items and its messages in one
// transaction. With checked (the transcript's remembered tail) and stats
// (the run's counts with the messages), it is one round trip: the
// transcript's lock and the check of checked go first, and errTailMoved
// is returned when checked is not the tail. Without, the lock, the tail
// and the run's counts are read first (with messages; without, the
// run's counts are read before the transaction). It returns the stored
// copy of e's messages (e.out is not modified, for a retry).
func (s *Store) endTx(ctx context.Context, e *runEnd, checked *tail, stats string) (*store.Run, []store.Message, error) {
	var added store.RunStats // the new messages' share of the run's counts
	if checked == nil {
		if len(e.out) > 0 {
			if err := countRun(&added, e.out, e.runID); err != nil {
				return nil, nil, err
			}
		} else {
			// The run's counts (sessions.usage), from its transcript
			// entries, all stored before its end, are read first, so
			// that the transaction is one round trip.
			var err error
			if stats, err = s.runStats(ctx, e.runID); err != nil {
				return nil, nil, fmt.Errorf("stats: %w", err)
			}
		}
	}
	stored := slices.Clone(e.out)
	var (
		run      *store.Run
		ended    *store.Session // the session row as written, and its version
		endedVer int64
	)
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		var (
			b   pgx.Batch
			t   tail
			led bool // the fence check took the transcript's lock
		)
		stats := stats
		switch {
		case checked != nil:
			t = *checked
			if led = leadLock(tx, transcriptLockKey(e.sessionID)); !led {
				b.Queue(qLockTranscript, transcriptLockKey(e.sessionID))
			}
			b.Queue(qTailIs, e.sessionID, t.seq, t.prevID)
		case len(e.out) > 0:
			var err error
			if t, stats, err = s.lockTailAndStats(ctx, tx, e.sessionID, e.runID, added); err != nil {
				return err
			}
		}
		// The run, its session, the outbox and the messages in one
		// round trip with COMMIT (and BEGIN and the fence check when
		// nothing went before). When the run is not live finishRun
		// changes nothing and fails, so the server skips what follows,
		// COMMIT too; it is found out after the rollback.
		s.queueFinish(&b, e, stats)
		if len(stored) > 0 {
			if err := queueAppend(&b, e.sessionID, t, stored, ""); err != nil {
				return err
			}
		}
		br := sendLast(ctx, tx, &b)
		if checked != nil {
			if err := readTailGuard(br, led); err != nil {
				br.Close()
				return err
			}
		}
		r, sess, ver, err := scanFinished(br)
		if isCode(err, "22012") {
			br.Close()
			return errNotLive
		}
		if err := firstErr(err, br.Close()); err != nil {
			return err
		}
		run, ended, endedVer = r, sess, ver
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if ended != nil {
		s.sessions.put(ended, endedVer)
	}
	return run, stored, nil
}

// countRun adds to stats the messages of out that belong to run runID,
// as their stored lines count (store.RunStats.Count). The line counted is
// the entry's JSON but for the parent id, which Count does not look at;
// it is written only for the roles whose lines Count reads.
func countRun(stats *store.RunStats, out []store.Message, runID string) error {
	for i := range out {
		if out[i].RunID != runID {
			continue
		}
		switch out[i].Role {
		case transcript.RoleAssistant, transcript.RoleToolResult, transcript.RoleTool:
		default:
			stats.Count(out[i].Role, nil)
			continue
		}
		line, err := out[i].Entry.MarshalJSON()
		if err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		stats.Count(out[i].Role, line)
	}
	return nil
}

// isCode reports whether err is a PostgreSQL error of SQLSTATE code.
func isCode(err error, code string) bool {
	pe, ok := errors.AsType[*pgconn.PgError](err)
	return ok && pe.Code == code
}

// lockTailAndStats takes transcript sessionID's lock and reads its tail
// and the counts of run runID's stored messages plus added, in one round
// trip (the transaction's first: BEGIN and the fence check go with it).
func (s *Store) lockTailAndStats(ctx context.Context, tx pgx.Tx, sessionID, runID string, added store.RunStats) (tail, string, error) {
	var b pgx.Batch
	b.Queue(qLockTranscript, transcriptLockKey(sessionID))
	b.Queue(s.q.lastEntry, sessionID)
	b.Queue(qRunLines, runID)
	br := tx.SendBatch(ctx, &b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return tail{}, "", err
	}
	t, err := scanTail(br.QueryRow())
	if err != nil {
		return tail{}, "", err
	}
	rows, err := br.Query()
	if err != nil {
		return tail{}, "", err
	}
	stats := added
	var role, line string
	if _, err := pgx.ForEachRow(rows, []any{&role, &line}, func() error {
		stats.Count(role, []byte(line))
		return nil
	}); err != nil {
		return tail{}, "", err
	}
	if err := br.Close(); err != nil {
		return tail{}, "", err
	}
	b2, err := json.Marshal(stats)
	return t, string(b2), err
}

// scanFinished reads finishRun's row: the run, then the session row as
// the end wrote it and its version, or a nil session when it is gone (its
// columns are NULL). One row, split in two for the two scanners.
func scanFinished(br pgx.BatchResults) (*store.Run, *store.Session, int64, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, nil, 0, err
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, nil, 0, firstErr(rows.Err(), pgx.ErrNoRows)
	}
	raw, fields := rows.RawValues(), rows.FieldDescriptions()
	n := strings.Count(runCols, ",") + 1 // the run's columns come first
	if len(raw) <= n {
		return nil, nil, 0, fmt.Errorf("finished run: %d columns", len(raw))
	}
	c := rows.Conn()
	run, err := scanRun(rawRow{c, fields[:n], raw[:n]})
	if err != nil {
		return nil, nil, 0, err
	}
	if raw[n] == nil { // the session's key: no session row
		return run, nil, 0, rows.Err()
	}
	sess, ver, err := scanSessionVer(rawRow{c, fields[n:], raw[n:]})
	if err != nil {
		return nil, nil, 0, err
	}
	return run, sess, ver, rows.Err()
}

// rawRow is part of a row's raw values, scanned as a row of its own.
type rawRow struct {
	conn   *pgx.Conn // its type map decodes
	fields []pgconn.FieldDescription
	values [][]byte
}

func (r rawRow) Scan(dest ...any) error {
	return pgx.ScanRow(r.conn.TypeMap(), r.fields, r.values, dest...)
}
