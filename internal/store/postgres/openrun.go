package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

// qOpenRun inserts a run already started on node $14.
var qOpenRun = `INSERT INTO runs (` + runCols + `, node_id)
	VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14) ON CONFLICT (run_id) DO NOTHING`

var _ store.RunOpener = (*Store)(nil)

// OpenRun implements store.RunOpener in two round trips, where CreateRun
// then StartRun took three and two commits. The run's insert (started, on
// this node), the transcript's lock and the read of its tail travel with
// BEGIN and the fence check; the input messages with COMMIT.
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
	var existing *store.Run
	err = s.writeTx(ctx, func(tx pgx.Tx) error {
		existing = nil
		var b pgx.Batch
		b.Queue(qOpenRun, append(args, node)...)
		if len(out) > 0 {
			b.Queue(qLockTranscript, transcriptLockKey(r.SessionID))
			b.Queue(qLastEntry, r.SessionID)
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
			if existing, err = scanRun(tx.QueryRow(ctx, qGetRun, r.RunID)); err != nil {
				existing = nil
				return err
			}
			return fmt.Errorf("%q: %w", r.RunID, store.ErrConflict)
		}
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
		return appendAfter(ctx, tx, r.SessionID, t, out, "")
	})
	if existing != nil && errors.Is(err, store.ErrConflict) {
		return existing, nil, fmt.Errorf("postgres.OpenRun: %w", err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("postgres.OpenRun: %w", err)
	}
	return sqlstore.StoredRun(&c), out, nil
}
