// Package cron owns the cron job scheduler: jobs in the reference's shape
// (name, schedule, session target, payload, delete-after-run, enabled) kept
// in the store, due ticks claimed durably before they run so a tick runs at
// most once across restarts and gateways, and missed ticks collapsed into one
// run on start. The daemon wires it to the agent runner through Submit.
package cron

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard/internal/cronsched"
	"github.com/switchboardhq/switchboard/internal/store"
)

// Store is the job storage the scheduler uses (store.CronStore).
type Store interface {
	PutCronJob(ctx context.Context, j *store.CronJob) error
	GetCronJob(ctx context.Context, id string) (*store.CronJob, error)
	ListCronJobs(ctx context.Context) ([]*store.CronJob, error)
	DeleteCronJob(ctx context.Context, id string) error
	DueCronJobs(ctx context.Context, now time.Time, limit int) ([]*store.CronJob, error)
	ClaimCronTick(ctx context.Context, id string, due, next time.Time, runID string) (bool, error)
	StartCronRun(ctx context.Context, id string, tick time.Time, runID string) error
	FinishCronRun(ctx context.Context, id string, tick time.Time, status, errText string) error
	CronRuns(ctx context.Context, id string, limit int) ([]*store.CronRun, error)
}

// Payload is what a run does: an agent turn with Message, or a system
// event with Text injected into the session.
type Payload struct {
	Kind    string `json:"kind"`
	Message string `json:"message,omitempty"`
	Text    string `json:"text,omitempty"`
}

// Job is one cron job in the reference's wire shape.
type Job struct {
	ID             string             `json:"id"`
	Name           string             `json:"name"`
	Description    string             `json:"description,omitempty"`
	Enabled        bool               `json:"enabled"`
	Schedule       cronsched.Schedule `json:"schedule"`
	SessionTarget  string             `json:"sessionTarget"` // "isolated" (cron:<id>) or "main"
	Wake           string             `json:"wakeMode,omitempty"`
	Payload        Payload            `json:"payload"`
	DeleteAfterRun bool               `json:"deleteAfterRun,omitempty"`
	AgentID        string             `json:"agentId,omitempty"`
	Delivery       json.RawMessage    `json:"delivery,omitempty"`
	CreatedAtMs    int64              `json:"createdAtMs,omitempty"`
	UpdatedAtMs    int64              `json:"updatedAtMs,omitempty"`
	State          JobState           `json:"state"`
}

// JobState is the scheduler-owned part of a job as reported to clients.
type JobState struct {
	NextRunAtMs int64 `json:"nextRunAtMs,omitempty"`
	LastRunAtMs int64 `json:"lastRunAtMs,omitempty"`
	// RunningAtMs is set while a run of the job is in flight.
	RunningAtMs int64 `json:"runningAtMs,omitempty"`
	// LastRunStatus, LastStatus (the reference's older name),
	// LastDurationMs and LastError describe the newest finished run.
	LastRunStatus  string `json:"lastRunStatus,omitempty"`
	LastStatus     string `json:"lastStatus,omitempty"`
	LastDurationMs int64  `json:"lastDurationMs,omitempty"`
	LastError      string `json:"lastError,omitempty"`
}

// SessionKey is the session the job's runs use: "main" or cron:<id>.
func (j *Job) SessionKey() string {
	if j.SessionTarget == "main" {
		return "main"
	}
	return "cron:" + j.ID
}

// Validate reports the first problem with j as a client-facing error.
func (j *Job) Validate() error {
	if strings.TrimSpace(j.Name) == "" {
		return errors.New("name is required")
	}
	if err := j.Schedule.Validate(); err != nil {
		return err
	}
	switch j.SessionTarget {
	case "", "isolated", "main":
	default:
		return fmt.Errorf("sessionTarget %q is not one of main, isolated", j.SessionTarget)
	}
	switch j.Payload.Kind {
	case "agentTurn":
		if strings.TrimSpace(j.Payload.Message) == "" {
			return errors.New("payload.message is required for agentTurn")
		}
	case "systemEvent":
		if strings.TrimSpace(j.Payload.Text) == "" {
			return errors.New("payload.text is required for systemEvent")
		}
	default:
		return fmt.Errorf("payload.kind %q is not one of agentTurn, systemEvent", j.Payload.Kind)
	}
	return nil
}

// Submit starts one run of job in its session under runID. It returns once
// the run is accepted, not when it ends.
type Submit func(ctx context.Context, job *Job, runID string) error

// Config configures a Scheduler.
type Config struct {
	Store  Store
	Submit Submit
	// Wait, when set, waits for a submitted run to end and returns its
	// outcome ("ok", "error", "timeout", "aborted") for the job's run
	// history; the history then says how the run went, not only that it
	// started. It returns ctx's error when ctx ends first.
	Wait func(ctx context.Context, runID string) (status, errText string, err error)
	// Poll is the longest sleep between due scans; zero means 1s.
	Poll time.Duration
	// Batch is how many due jobs one scan takes; zero means 1000.
	Batch int
	Now   func() time.Time
	NewID func() string
	Log   *slog.Logger
}

// Scheduler runs due jobs. Create it with New and run Run once.
type Scheduler struct {
	cfg  Config
	wake chan struct{}

	// Watchers of runs in flight, for their history rows; Run's end stops
	// them (an unfinished row is resumed at the next start).
	watchCtx  context.Context
	stopWatch context.CancelFunc
	watchers  sync.WaitGroup
}

// New returns a Scheduler; Store, Submit and NewID are required.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Store == nil || cfg.Submit == nil || cfg.NewID == nil {
		return nil, errors.New("cron.New: Store, Submit and NewID are required")
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 1000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Scheduler{cfg: cfg, wake: make(chan struct{}, 1), watchCtx: ctx, stopWatch: cancel}, nil
}

// finishWhenDone records the outcome of run runID of job id (claimed for
// tick) once it ends: at once with status when Wait is not configured,
// else from a watcher the scheduler owns.
//
// deleteOnOK removes the job once the run ended ok (a one-shot job with
// deleteAfterRun).
func (s *Scheduler) finishWhenDone(id string, tick time.Time, runID string, deleteOnOK bool) {
	finish := func(ctx context.Context, status, errText string) {
		if err := s.cfg.Store.FinishCronRun(ctx, id, tick, status, errText); err != nil {
			s.cfg.Log.Warn("cron run history not recorded", "job", id, "runId", runID, "err", err)
		}
		if deleteOnOK && status == "ok" {
			if err := s.cfg.Store.DeleteCronJob(ctx, id); err != nil && !errors.Is(err, store.ErrNotFound) {
				s.cfg.Log.Warn("one-shot cron job not deleted", "job", id, "err", err)
			}
		}
	}
	if s.cfg.Wait == nil {
		finish(context.Background(), "ok", "")
		return
	}
	s.watchers.Go(func() {
		status, errText, err := s.cfg.Wait(s.watchCtx, runID)
		if err != nil {
			return // shutting down: the next start resumes the watch
		}
		finish(context.WithoutCancel(s.watchCtx), status, errText)
	})
}

// resumeWatches picks up the history rows a previous gateway left
// "running": each is finished from its run's outcome once that run ends.
func (s *Scheduler) resumeWatches(ctx context.Context) {
	if s.cfg.Wait == nil {
		return
	}
	jobs, err := s.cfg.Store.ListCronJobs(ctx)
	if err != nil {
		s.cfg.Log.Warn("cron history not resumed", "err", err)
		return
	}
	for _, j := range jobs {
		runs, err := s.cfg.Store.CronRuns(ctx, j.ID, 20)
		if err != nil {
			s.cfg.Log.Warn("cron history not resumed", "job", j.ID, "err", err)
			continue
		}
		for _, r := range runs {
			if r.Status == "running" && r.RunID != "" {
				s.finishWhenDone(j.ID, r.Tick, r.RunID, false)
			}
		}
	}
}

func decode(r *store.CronJob) (*Job, error) {
	var j Job
	if err := json.Unmarshal(r.Spec, &j); err != nil {
		return nil, fmt.Errorf("cron job %q: %w", r.ID, err)
	}
	j.ID, j.Enabled = r.ID, r.Enabled
	j.CreatedAtMs, j.UpdatedAtMs = r.CreatedAt.UnixMilli(), r.UpdatedAt.UnixMilli()
	j.State = JobState{}
	if !r.NextRunAt.IsZero() {
		j.State.NextRunAtMs = r.NextRunAt.UnixMilli()
	}
	if !r.LastTick.IsZero() {
		j.State.LastRunAtMs = r.LastTick.UnixMilli()
	}
	return &j, nil
}

func (s *Scheduler) put(ctx context.Context, j *Job, next, last time.Time) error {
	spec := *j
	spec.State = JobState{}
	b, err := json.Marshal(&spec)
	if err != nil {
		return fmt.Errorf("cron: encode job: %w", err)
	}
	return s.cfg.Store.PutCronJob(ctx, &store.CronJob{ID: j.ID, Enabled: j.Enabled, NextRunAt: next, LastTick: last, Spec: b})
}

func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Add validates j, gives it an id and stores it; it returns the stored job.
func (s *Scheduler) Add(ctx context.Context, j Job) (*Job, error) {
	if err := j.Validate(); err != nil {
		return nil, err
	}
	j.ID = s.cfg.NewID()
	if j.SessionTarget == "" {
		j.SessionTarget = "isolated"
	}
	next := time.Time{}
	if t, ok := j.Schedule.First(s.cfg.Now()); ok {
		next = t
	}
	if err := s.put(ctx, &j, next, time.Time{}); err != nil {
		return nil, err
	}
	s.poke()
	return s.Get(ctx, j.ID)
}

// Update replaces job id's definition with j (enabled, schedule and all);
// the next run is recomputed from now.
func (s *Scheduler) Update(ctx context.Context, id string, j Job) (*Job, error) {
	old, err := s.cfg.Store.GetCronJob(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := j.Validate(); err != nil {
		return nil, err
	}
	j.ID = id
	if j.SessionTarget == "" {
		j.SessionTarget = "isolated"
	}
	next := time.Time{}
	if t, ok := j.Schedule.First(s.cfg.Now()); ok {
		next = t
	}
	if err := s.put(ctx, &j, next, old.LastTick); err != nil {
		return nil, err
	}
	s.poke()
	return s.Get(ctx, id)
}

// SetEnabled enables or disables job id.
func (s *Scheduler) SetEnabled(ctx context.Context, id string, on bool) (*Job, error) {
	j, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	j.Enabled = on
	return s.Update(ctx, id, *j)
}

// Get returns job id (store.ErrNotFound when absent).
func (s *Scheduler) Get(ctx context.Context, id string) (*Job, error) {
	r, err := s.cfg.Store.GetCronJob(ctx, id)
	if err != nil {
		return nil, err
	}
	j, err := decode(r)
	if err != nil {
		return nil, err
	}
	return j, s.withRuns(ctx, j)
}

// withRuns fills j's state from its run history: a run in flight, and
// how the newest finished one went.
func (s *Scheduler) withRuns(ctx context.Context, j *Job) error {
	runs, err := s.cfg.Store.CronRuns(ctx, j.ID, 5)
	if err != nil {
		return fmt.Errorf("cron: history of %q: %w", j.ID, err)
	}
	for _, r := range runs {
		if r.Status == "running" {
			if j.State.RunningAtMs == 0 {
				j.State.RunningAtMs = r.StartedAt.UnixMilli()
			}
			continue
		}
		j.State.LastRunAtMs = r.StartedAt.UnixMilli()
		j.State.LastRunStatus, j.State.LastStatus, j.State.LastError = r.Status, r.Status, r.Error
		if !r.EndedAt.IsZero() {
			j.State.LastDurationMs = r.EndedAt.Sub(r.StartedAt).Milliseconds()
		}
		break
	}
	return nil
}

// List returns every job.
func (s *Scheduler) List(ctx context.Context) ([]*Job, error) {
	rows, err := s.cfg.Store.ListCronJobs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*Job, 0, len(rows))
	for _, r := range rows {
		j, err := decode(r)
		if err != nil {
			return nil, err
		}
		if err := s.withRuns(ctx, j); err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, nil
}

// Remove deletes job id and its history.
func (s *Scheduler) Remove(ctx context.Context, id string) error {
	return s.cfg.Store.DeleteCronJob(ctx, id)
}

// Runs returns job id's run history, newest first.
func (s *Scheduler) Runs(ctx context.Context, id string, limit int) ([]*store.CronRun, error) {
	if limit <= 0 {
		limit = 50
	}
	return s.cfg.Store.CronRuns(ctx, id, limit)
}

// RunNow runs job id once now (a forced run), outside its schedule, and
// returns the run id.
func (s *Scheduler) RunNow(ctx context.Context, id string) (string, error) {
	j, err := s.Get(ctx, id)
	if err != nil {
		return "", err
	}
	runID := s.cfg.NewID()
	tick := s.cfg.Now()
	if err := s.cfg.Store.StartCronRun(ctx, id, tick, runID); err != nil {
		return "", fmt.Errorf("cron: run %q: %w", id, err)
	}
	if err := s.cfg.Submit(ctx, j, runID); err != nil {
		if ferr := s.cfg.Store.FinishCronRun(context.WithoutCancel(ctx), id, tick, "error", err.Error()); ferr != nil {
			s.cfg.Log.Warn("cron run history not recorded", "job", id, "err", ferr)
		}
		return "", fmt.Errorf("cron: run %q: %w", id, err)
	}
	s.finishWhenDone(id, tick, runID, false)
	return runID, nil
}

// Run scans for due jobs until ctx ends. A job due before Run starts (its
// ticks passed while the gateway was down) runs once.
func (s *Scheduler) Run(ctx context.Context) error {
	defer func() {
		s.stopWatch()
		s.watchers.Wait()
	}()
	s.resumeWatches(ctx)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-s.wake:
		}
		if _, err := s.Tick(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Log.Warn("cron scan failed", "err", err)
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(s.cfg.Poll)
	}
}

// Tick runs every job due now once and reports how many it started.
func (s *Scheduler) Tick(ctx context.Context) (int, error) {
	started := 0
	for {
		now := s.cfg.Now()
		due, err := s.cfg.Store.DueCronJobs(ctx, now, s.cfg.Batch)
		if err != nil {
			return started, fmt.Errorf("cron: due jobs: %w", err)
		}
		for _, r := range due {
			ok, err := s.fire(ctx, r, now)
			if err != nil {
				return started, err
			}
			if ok {
				started++
			}
		}
		if len(due) < s.cfg.Batch {
			return started, nil
		}
	}
}

// fire claims r's due tick and, when this caller won it, submits the run.
func (s *Scheduler) fire(ctx context.Context, r *store.CronJob, now time.Time) (bool, error) {
	j, err := decode(r)
	if err != nil {
		// A job that cannot be read is parked (no next run) so it does
		// not block the scan; it stays listed for the operator.
		_, cerr := s.cfg.Store.ClaimCronTick(ctx, r.ID, r.NextRunAt, time.Time{}, "")
		s.cfg.Log.Warn("cron job unreadable", "job", r.ID, "err", err)
		return false, cerr
	}
	next, _ := j.Schedule.AfterRun(r.NextRunAt, now)
	runID := s.cfg.NewID()
	won, err := s.cfg.Store.ClaimCronTick(ctx, r.ID, r.NextRunAt, next, runID)
	if err != nil || !won {
		return false, err
	}
	status, errText := "ok", ""
	if err := s.cfg.Submit(ctx, j, runID); err != nil {
		status, errText = "error", err.Error()
		if err := s.cfg.Store.FinishCronRun(ctx, r.ID, r.NextRunAt, status, errText); err != nil {
			return true, err
		}
	} else {
		s.finishWhenDone(r.ID, r.NextRunAt, runID, j.DeleteAfterRun && next.IsZero())
	}
	return true, nil
}
