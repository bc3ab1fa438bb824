package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

var _ store.RunEnder = (*Store)(nil)

// qEndedHere fails (division_by_zero) unless run $1's row is a version
// this transaction wrote: after qFinishRun, unless the run was not live.
const qEndedHere = `SELECT 1 / count(*) FROM runs
	WHERE run_id = $1 AND xmin::text::bigint = pg_current_xact_id()::text::bigint % 4294967296`

// EndRun implements store.RunEnder: a run's last messages and its end are
// one transaction of two round trips with one fence check, where
// AppendMessages then FinishRun took four (the read of the run's message
// counts, then two transactions each with its own fence check). The
// transcript's lock and tail and the run's stored messages are read with
// BEGIN and the fence check; the run's end, its outbox items and the
// messages go next, with COMMIT. A run that is not live ends nothing and
// appends nothing, as on SQLite.
func (s *Store) EndRun(ctx context.Context, runID string, res store.RunResult, sessionID string, msgs []store.Message) (*store.Run, []store.Message, error) {
	if len(msgs) > 0 && sessionID == "" {
		return nil, nil, errors.New("postgres.EndRun: empty session id")
	}
	return s.endRun(ctx, "EndRun", runID, res, sessionID, msgs)
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
	var (
		out   []store.Message
		added store.RunStats // the new messages' share of the run's counts
	)
	if len(msgs) > 0 {
		var err error
		if out, err = s.prepareMessages(sessionID, msgs); err != nil {
			return nil, nil, fmt.Errorf("postgres.%s: %w", op, err)
		}
		for i := range out {
			if out[i].RunID != runID {
				continue
			}
			// The line as appendAfter writes it, but for the parent
			// id, which Count does not look at.
			line, err := out[i].Entry.MarshalJSON()
			if err != nil {
				return nil, nil, fmt.Errorf("postgres.%s: message %d: %w", op, i, err)
			}
			added.Count(out[i].Role, line)
		}
	}
	ended, outbox, err := sqlstore.RunEndArgs(runID, res.EndedAt, res.Outbox, s.nowTime())
	if err != nil {
		return nil, nil, fmt.Errorf("postgres.%s: %w", op, err)
	}
	usage, err := json.Marshal(res.Usage)
	if err != nil {
		return nil, nil, fmt.Errorf("postgres.%s: usage: %w", op, err)
	}
	// Without messages, the run's counts (sessions.usage), from its
	// transcript entries, all stored before its end, are read first, so
	// that the transaction is one round trip; with messages they are read
	// in the transaction's first round trip, which it needs anyway.
	var stats string
	if len(out) == 0 {
		if stats, err = s.runStats(ctx, runID); err != nil {
			return nil, nil, fmt.Errorf("postgres.%s: stats: %w", op, err)
		}
	}
	var run *store.Run
	err = s.writeTx(ctx, func(tx pgx.Tx) error {
		var t tail
		if len(out) > 0 {
			var err error
			if t, stats, err = lockTailAndStats(ctx, tx, sessionID, runID, added); err != nil {
				return err
			}
		}
		// The run, its session, the outbox and the messages in one
		// round trip with COMMIT (and BEGIN and the fence check when
		// nothing went before). When the run is not live the end
		// changes nothing and qEndedHere fails, so the server skips
		// what follows, COMMIT too; it is found out after the rollback.
		var b pgx.Batch
		b.Queue(qFinishRun, runID, string(res.Status), res.Error, res.StopReason, string(usage), toMs(ended),
			res.Usage.Input, res.Usage.Output, res.Usage.TotalTokens, res.Status == store.RunAborted, stats)
		if len(outbox) > 0 || len(out) > 0 {
			b.Queue(qEndedHere, runID)
		}
		for _, args := range outbox {
			b.Queue(qInsertOutbox, args...)
		}
		if len(out) > 0 {
			if err := queueAppend(&b, sessionID, t, out, ""); err != nil {
				return err
			}
		}
		br := sendLast(ctx, tx, &b)
		r, err := scanRun(br.QueryRow())
		if errors.Is(err, pgx.ErrNoRows) {
			br.Close()
			return errNotLive
		}
		if err := firstErr(err, br.Close()); err != nil {
			return err
		}
		run = r
		return nil
	})
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
	if len(out) > 0 {
		s.tails.put(sessionID, lastOf(out)) // for the session's next open
	}
	return run, out, nil
}

// lockTailAndStats takes transcript sessionID's lock and reads its tail
// and the counts of run runID's stored messages plus added, in one round
// trip (the transaction's first: BEGIN and the fence check go with it).
func lockTailAndStats(ctx context.Context, tx pgx.Tx, sessionID, runID string, added store.RunStats) (tail, string, error) {
	var b pgx.Batch
	b.Queue(qLockTranscript, transcriptLockKey(sessionID))
	b.Queue(qLastEntry, sessionID)
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
