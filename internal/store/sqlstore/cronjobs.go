package sqlstore

import "github.com/switchboardhq/switchboard/internal/store"

// CronJobCols lists the cron_jobs columns in ScanCronJob's order.
const CronJobCols = `id, enabled, next_run_at, last_tick, spec, created_at, updated_at`

// Statements on cron jobs and their runs. Those that test the enabled flag
// stay in their store: SQLite compares an integer, PostgreSQL a boolean.
const (
	PutCronJob = `INSERT INTO cron_jobs (` + CronJobCols + `) VALUES (?1,?2,?3,?4,?5,?6,?6)
		ON CONFLICT (id) DO UPDATE SET enabled = ?2, next_run_at = ?3, last_tick = ?4, spec = ?5, updated_at = ?6`
	GetCronJob    = `SELECT ` + CronJobCols + ` FROM cron_jobs WHERE id = ?`
	ListCronJobs  = `SELECT ` + CronJobCols + ` FROM cron_jobs ORDER BY created_at, id`
	DeleteCronJob = `DELETE FROM cron_jobs WHERE id = ?`
	InsertCronRun = `INSERT INTO cron_runs (job_id, tick, run_id, status, started_at) VALUES (?,?,?,'running',?)
		ON CONFLICT (job_id, tick) DO NOTHING`
	FinishCronRun = `UPDATE cron_runs SET status = ?3, error = ?4, ended_at = ?5 WHERE job_id = ?1 AND tick = ?2`
	CronRuns      = `SELECT job_id, tick, run_id, status, error, started_at, ended_at FROM cron_runs
		WHERE job_id = ? ORDER BY tick DESC LIMIT ?`
)

// ScanCronJob reads one row of CronJobCols.
func ScanCronJob(sc Scanner) (*store.CronJob, error) {
	var (
		j                            store.CronJob
		next, last, created, updated int64
		spec                         string
	)
	if err := sc.Scan(&j.ID, &j.Enabled, &next, &last, &spec, &created, &updated); err != nil {
		return nil, err
	}
	j.Spec = []byte(spec)
	j.NextRunAt, j.LastTick, j.CreatedAt, j.UpdatedAt = FromMs(next), FromMs(last), FromMs(created), FromMs(updated)
	return &j, nil
}

// ScanCronRun reads one row of CronRuns.
func ScanCronRun(sc Scanner) (*store.CronRun, error) {
	var (
		r                    store.CronRun
		tick, started, ended int64
	)
	if err := sc.Scan(&r.JobID, &tick, &r.RunID, &r.Status, &r.Error, &started, &ended); err != nil {
		return nil, err
	}
	r.Tick, r.StartedAt, r.EndedAt = FromMs(tick), FromMs(started), FromMs(ended)
	return &r, nil
}
