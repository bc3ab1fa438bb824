package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

var _ store.CronStore = (*Store)(nil)

// PutCronJob implements store.CronStore.
func (s *Store) PutCronJob(ctx context.Context, j *store.CronJob) error {
	if err := s.checkOpen("PutCronJob"); err != nil {
		return err
	}
	if j == nil || j.ID == "" {
		return errors.New("postgres.PutCronJob: job without id")
	}
	if _, err := s.pool.Exec(ctx, s.q.putCronJob, sqlstore.Postgres.CronJobArgs(j, s.nowTime())...); err != nil {
		return fmt.Errorf("postgres.PutCronJob %q: %w", j.ID, err)
	}
	return nil
}

// DeleteCronJob implements store.CronStore.
func (s *Store) DeleteCronJob(ctx context.Context, id string) error {
	if err := s.checkOpen("DeleteCronJob"); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, s.q.deleteCronJob, id)
	if err != nil {
		return fmt.Errorf("postgres.DeleteCronJob %q: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres.DeleteCronJob %q: %w", id, store.ErrNotFound)
	}
	return nil
}

// ClaimCronTick implements store.CronStore. Under READ COMMITTED a
// concurrent claim waits for the row lock and then re-checks next_run_at,
// so exactly one claimer of a tick wins, across gateways too.
func (s *Store) ClaimCronTick(ctx context.Context, id string, due, next time.Time, runID string) (bool, error) {
	if err := s.checkOpen("ClaimCronTick"); err != nil {
		return false, err
	}
	if due.IsZero() {
		return false, errors.New("postgres.ClaimCronTick: zero tick")
	}
	won := false
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		now := toMs(s.nowTime())
		tag, err := tx.Exec(ctx, s.q.claimCronTick, id, toMs(due), toMs(next), now)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		if _, err := tx.Exec(ctx, s.q.insertCronRun, id, toMs(due), runID, now); err != nil {
			return err
		}
		won = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("postgres.ClaimCronTick %q: %w", id, err)
	}
	return won, nil
}

// StartCronRun implements store.CronStore.
func (s *Store) StartCronRun(ctx context.Context, id string, tick time.Time, runID string) error {
	if err := s.checkOpen("StartCronRun"); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO cron_runs (job_id, tick, run_id, status, started_at)
		SELECT id, $2, $3, 'running', $4 FROM cron_jobs WHERE id = $1
		ON CONFLICT (job_id, tick) DO NOTHING`, id, toMs(tick), runID, toMs(s.nowTime()))
	if err != nil {
		return fmt.Errorf("postgres.StartCronRun %q: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		if _, err := s.GetCronJob(ctx, id); err != nil {
			return fmt.Errorf("postgres.StartCronRun: %w", err)
		}
	}
	return nil
}

// FinishCronRun implements store.CronStore.
func (s *Store) FinishCronRun(ctx context.Context, id string, tick time.Time, status, errText string) error {
	if err := s.checkOpen("FinishCronRun"); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, s.q.finishCronRun, id, toMs(tick), status, errText, toMs(s.nowTime()))
	if err != nil {
		return fmt.Errorf("postgres.FinishCronRun %q: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres.FinishCronRun %q at %v: %w", id, tick, store.ErrNotFound)
	}
	return nil
}
