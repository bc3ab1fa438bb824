package store

import (
	"context"
	"encoding/json"
	"time"
)

// CronJob is one stored scheduled job. The scheduler owns Spec (the job's
// reference-shaped JSON: name, schedule, payload, delivery...); the store
// owns the columns it queries: Enabled and NextRunAt pick the due jobs and
// LastTick records the last claimed tick so a tick runs at most once.
type CronJob struct {
	ID        string
	Enabled   bool
	NextRunAt time.Time // zero: no further run
	LastTick  time.Time // zero: never ran
	Spec      json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
}

// CronRun is one entry of a job's run history.
type CronRun struct {
	JobID     string
	Tick      time.Time // the due time the run was claimed for
	RunID     string
	Status    string // "ok", "error", "skipped" or "running"
	Error     string
	StartedAt time.Time
	EndedAt   time.Time // zero while running
}

// CronStore persists cron jobs and their run history. The scheduler and the
// cron gateway methods declare the subset they use; both backends implement it.
type CronStore interface {
	// PutCronJob inserts or replaces job j (by ID). CreatedAt is kept from
	// an existing row; UpdatedAt is set by the store.
	PutCronJob(ctx context.Context, j *CronJob) error
	// GetCronJob returns the job or ErrNotFound.
	GetCronJob(ctx context.Context, id string) (*CronJob, error)
	// ListCronJobs returns all jobs ordered by CreatedAt then ID.
	ListCronJobs(ctx context.Context) ([]*CronJob, error)
	// DeleteCronJob removes the job and its history; ErrNotFound if absent.
	DeleteCronJob(ctx context.Context, id string) error
	// DueCronJobs returns up to limit enabled jobs with 0 < NextRunAt <= now,
	// earliest first.
	DueCronJobs(ctx context.Context, now time.Time, limit int) ([]*CronJob, error)
	// ClaimCronTick atomically moves job id from tick due to next (zero:
	// none) and records due as LastTick and a "running" CronRun, only if
	// the job is enabled and its NextRunAt still equals due. It reports
	// whether this caller won the tick; a loser must not run the job.
	ClaimCronTick(ctx context.Context, id string, due, next time.Time, runID string) (bool, error)
	// StartCronRun records a "running" CronRun of job id for a run started
	// outside its schedule (forced with cron.run), at tick; ErrNotFound
	// when the job does not exist. A second call for (id, tick) is a no-op.
	StartCronRun(ctx context.Context, id string, tick time.Time, runID string) error
	// FinishCronRun records the outcome of the run claimed for (id, tick).
	FinishCronRun(ctx context.Context, id string, tick time.Time, status, errText string) error
	// CronRuns returns up to limit history rows of job id, newest first.
	CronRuns(ctx context.Context, id string, limit int) ([]*CronRun, error)
}
