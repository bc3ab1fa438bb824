package cron

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard/internal/store"
)

// Status is cron.status: the number of jobs and, when any enabled job is
// due, the earliest next run.
func (s *Scheduler) Status(ctx context.Context) (map[string]any, error) {
	all, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	var next int64
	for _, j := range all {
		if j.Enabled && j.State.NextRunAtMs > 0 && (next == 0 || j.State.NextRunAtMs < next) {
			next = j.State.NextRunAtMs
		}
	}
	out := map[string]any{"enabled": true, "jobs": len(all)}
	if next > 0 {
		out["nextWakeAtMs"] = next
	}
	return out, nil
}

// Page is one cron.list page: the jobs (the disabled ones too when
// includeDisabled) whose id or name holds query, from offset, at most
// limit of them (0: the default page size).
func (s *Scheduler) Page(ctx context.Context, includeDisabled bool, query string, offset, limit int) (map[string]any, error) {
	all, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	return listPage(all, includeDisabled, query, offset, limit), nil
}

// Due reports whether job id is enabled and its next run is due now.
func (s *Scheduler) Due(ctx context.Context, id string) (bool, error) {
	j, err := s.Get(ctx, id)
	if err != nil {
		return false, err
	}
	return j.Enabled && j.State.NextRunAtMs != 0 && j.State.NextRunAtMs <= s.cfg.Now().UnixMilli(), nil
}

// RunHistory is cron.runs of one job: its newest runs (at most limit; 0:
// the default), as entries.
func (s *Scheduler) RunHistory(ctx context.Context, id string, limit int) (map[string]any, error) {
	runs, err := s.Runs(ctx, id, limit)
	if err != nil {
		return nil, err
	}
	entries := make([]map[string]any, 0, len(runs))
	for _, r := range runs {
		entries = append(entries, runEntry(r))
	}
	return map[string]any{"entries": entries}, nil
}

// defaultListLimit is cron.list's page size when the caller names none
// (the reference CLI's page size).
const defaultListLimit = 200

// listPage is one cron.list page in the reference's canonical inventory
// form: the jobs at offset, and the metadata a paging client checks —
// snapshotRevision (changes whenever any job does), total, offset, limit,
// hasMore and nextOffset (null on the last page).
func listPage(all []*Job, includeDisabled bool, query string, offset, limit int) map[string]any {
	h := fnv.New64a()
	var jobs []*Job
	q := strings.ToLower(strings.TrimSpace(query))
	for _, j := range all {
		fmt.Fprintf(h, "%s\x00%d\x00%t\x00", j.ID, j.UpdatedAtMs, j.Enabled)
		if !j.Enabled && !includeDisabled {
			continue
		}
		if q != "" && !strings.Contains(strings.ToLower(j.ID), q) && !strings.Contains(strings.ToLower(j.Name), q) {
			continue
		}
		jobs = append(jobs, j)
	}
	if limit == 0 {
		limit = defaultListLimit
	}
	total := len(jobs)
	page := jobs[min(offset, total):]
	if len(page) > limit {
		page = page[:limit]
	}
	if page == nil {
		page = []*Job{}
	}
	out := map[string]any{
		"jobs": page, "total": total, "offset": offset, "limit": limit,
		"snapshotRevision": fmt.Sprintf("%d-%016x", len(all), h.Sum64()),
		"hasMore":          offset+len(page) < total, "nextOffset": nil,
	}
	if offset+len(page) < total {
		out["nextOffset"] = offset + len(page)
	}
	return out
}

// runEntry is one cron.runs entry.
func runEntry(r *store.CronRun) map[string]any {
	e := map[string]any{"jobId": r.JobID, "runId": r.RunID, "status": r.Status,
		"ts": r.Tick.UnixMilli(), "runAtMs": r.StartedAt.UnixMilli()}
	if r.Error != "" {
		e["error"] = r.Error
	}
	if !r.EndedAt.IsZero() {
		e["durationMs"] = r.EndedAt.Sub(r.StartedAt).Milliseconds()
	}
	return e
}

// Default and largest page of cron.runs with scope "all".
const (
	allRunsLimit    = 50
	maxAllRunsLimit = 200
)

// AllRuns is cron.runs with scope "all": the runs of every job (of
// agentID's jobs when set), newest first, one page of them, with the
// reference's paging fields and each entry's job name. Each job's newest
// offset+limit runs are read, so total counts at most that many per job.
func (s *Scheduler) AllRuns(ctx context.Context, agentID string, limit, offset int) (map[string]any, error) {
	if limit == 0 {
		limit = allRunsLimit
	}
	limit = min(limit, maxAllRunsLimit)
	jobs, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	agentID = strings.ToLower(strings.TrimSpace(agentID))
	type named struct {
		run  *store.CronRun
		name string
	}
	var all []named
	for _, j := range jobs {
		if agentID != "" && !strings.EqualFold(j.AgentID, agentID) {
			continue
		}
		// A job's newest offset+limit runs hold every one of its runs
		// the page can show.
		runs, err := s.Runs(ctx, j.ID, offset+limit)
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			all = append(all, named{r, j.Name})
		}
	}
	slices.SortStableFunc(all, func(a, b named) int {
		if c := b.run.Tick.Compare(a.run.Tick); c != 0 {
			return c
		}
		return b.run.StartedAt.Compare(a.run.StartedAt)
	})
	total := len(all)
	start := min(offset, total)
	end := min(start+limit, total)
	entries := make([]map[string]any, 0, end-start)
	for _, n := range all[start:end] {
		e := runEntry(n.run)
		if n.name != "" {
			e["jobName"] = n.name
		}
		entries = append(entries, e)
	}
	res := map[string]any{"entries": entries, "total": total, "offset": start, "limit": limit,
		"hasMore": end < total, "nextOffset": nil}
	if end < total {
		res["nextOffset"] = end
	}
	return res, nil
}
