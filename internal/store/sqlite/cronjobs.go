package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

var _ store.CronStore = (*Store)(nil)

const (
	qPutCronJob    = sqlstore.PutCronJob
	qDeleteCronJob = sqlstore.DeleteCronJob
	qInsertCronRun = sqlstore.InsertCronRun
	qFinishCronRun = sqlstore.FinishCronRun
)

// PutCronJob implements store.CronStore.
func (s *Store) PutCronJob(ctx context.Context, j *store.CronJob) error {
	if err := s.checkOpen("PutCronJob"); err != nil {
		return err
	}
	if j == nil || j.ID == "" {
		return errors.New("sqlite.PutCronJob: job without id")
	}
	err := s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
		_, err := tx.ExecContext(ctx, qPutCronJob, sqlstore.SQLite.CronJobArgs(j, s.nowTime())...)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite.PutCronJob %q: %w", j.ID, err)
	}
	return nil
}

// DeleteCronJob implements store.CronStore.
func (s *Store) DeleteCronJob(ctx context.Context, id string) error {
	if err := s.checkOpen("DeleteCronJob"); err != nil {
		return err
	}
	var n int64
	err := s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
		res, err := tx.ExecContext(ctx, qDeleteCronJob, id)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite.DeleteCronJob %q: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("sqlite.DeleteCronJob %q: %w", id, store.ErrNotFound)
	}
	return nil
}

// ClaimCronTick implements store.CronStore.
func (s *Store) ClaimCronTick(ctx context.Context, id string, due, next time.Time, runID string) (bool, error) {
	if err := s.checkOpen("ClaimCronTick"); err != nil {
		return false, err
	}
	if due.IsZero() {
		return false, errors.New("sqlite.ClaimCronTick: zero tick")
	}
	won := false
	err := s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
		now := toMs(s.nowTime())
		res, err := tx.ExecContext(ctx, s.q.claimCronTick, id, toMs(due), toMs(next), now)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		if _, err := tx.ExecContext(ctx, qInsertCronRun, id, toMs(due), runID, now); err != nil {
			return err
		}
		won = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("sqlite.ClaimCronTick %q: %w", id, err)
	}
	return won, nil
}

// StartCronRun implements store.CronStore.
func (s *Store) StartCronRun(ctx context.Context, id string, tick time.Time, runID string) error {
	if err := s.checkOpen("StartCronRun"); err != nil {
		return err
	}
	err := s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM cron_jobs WHERE id = ?`, id).Scan(&one); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		_, err := tx.ExecContext(ctx, qInsertCronRun, id, toMs(tick), runID, toMs(s.nowTime()))
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite.StartCronRun %q: %w", id, err)
	}
	return nil
}

// FinishCronRun implements store.CronStore.
func (s *Store) FinishCronRun(ctx context.Context, id string, tick time.Time, status, errText string) error {
	if err := s.checkOpen("FinishCronRun"); err != nil {
		return err
	}
	var n int64
	err := s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
		res, err := tx.ExecContext(ctx, qFinishCronRun, id, toMs(tick), status, errText, toMs(s.nowTime()))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite.FinishCronRun %q: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("sqlite.FinishCronRun %q at %v: %w", id, tick, store.ErrNotFound)
	}
	return nil
}
