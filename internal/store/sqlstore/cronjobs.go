package sqlstore

import (
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// CronJobCols lists the cron_jobs columns in ScanCronJob's order.
const CronJobCols = `id, enabled, next_run_at, last_tick, spec, created_at, updated_at`

// Statements on cron jobs and their runs. Those that test the enabled flag
// are made per dialect by DueCronJobs and ClaimCronTick.
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

// DueCronJobs is the statement of store.CronStore's DueCronJobs, in d.
func (d Dialect) DueCronJobs() string {
	return d.Q(`SELECT ` + CronJobCols + ` FROM cron_jobs
		WHERE ` + d.Is("enabled") + ` AND next_run_at > 0 AND next_run_at <= ? ORDER BY next_run_at, id LIMIT ?`)
}

// ClaimCronTick is the statement that claims an enabled job's due tick
// (?2) by moving it to the next (?3), in d; its arguments are the job's id,
// the due tick, the next and the time of the claim.
func (d Dialect) ClaimCronTick() string {
	return d.Q(`UPDATE cron_jobs SET next_run_at = ?3, last_tick = ?2, updated_at = ?4
		WHERE id = ?1 AND ` + d.Is("enabled") + ` AND next_run_at = ?2`)
}

// CronJobArgs returns j, written at now, as the arguments of PutCronJob in
// d; an empty spec is stored as {}.
func (d Dialect) CronJobArgs(j *store.CronJob, now time.Time) []any {
	spec := string(j.Spec)
	if spec == "" {
		spec = "{}"
	}
	return []any{j.ID, d.Bool(j.Enabled), ToMs(j.NextRunAt), ToMs(j.LastTick), spec, ToMs(now)}
}
