package cron

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard/internal/store"
)

// badRequest is an error in the caller's params; the gateway answers it
// as INVALID_REQUEST with its message.
type badRequest struct{ msg string }

func (e *badRequest) Error() string    { return e.msg }
func (e *badRequest) BadRequest() bool { return true }

func bad(format string, a ...any) error { return &badRequest{fmt.Sprintf(format, a...)} }

func decodeStrict(params json.RawMessage, v any) error {
	if len(bytes.TrimSpace(params)) == 0 {
		params = []byte("{}")
	}
	if err := json.Unmarshal(params, v); err != nil {
		return bad("invalid params: %v", err)
	}
	return nil
}

type idParams struct {
	ID    string `json:"id"`
	JobID string `json:"jobId"`
}

func (p idParams) id() (string, error) {
	id := strings.TrimSpace(p.ID)
	if id == "" {
		id = strings.TrimSpace(p.JobID)
	}
	if id == "" {
		return "", bad("id required")
	}
	return id, nil
}

// Call serves one cron.* gateway method (list, status, get, add, update,
// remove, run, runs, enable, disable) with the reference's params.
func (s *Scheduler) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	res, err := s.call(ctx, method, params)
	if errors.Is(err, store.ErrNotFound) {
		// The reference's wording, which its CLI matches to tell a
		// missing job from a failure.
		var p idParams
		_ = json.Unmarshal(params, &p)
		id, _ := p.id()
		return nil, bad("cron job not found: %s", id)
	}
	var br *badRequest
	if err != nil && !errors.As(err, &br) && isValidation(method) {
		return nil, &badRequest{err.Error()}
	}
	return res, err
}

func isValidation(method string) bool { return method == "cron.add" || method == "cron.update" }

func (s *Scheduler) call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case "cron.list":
		var p struct {
			IncludeDisabled *bool  `json:"includeDisabled"`
			Query           string `json:"query"`
			Limit           int    `json:"limit"`
			Offset          int    `json:"offset"`
		}
		if err := decodeStrict(params, &p); err != nil {
			return nil, err
		}
		if p.Limit < 0 || p.Offset < 0 {
			return nil, bad("limit and offset must not be negative")
		}
		all, err := s.List(ctx)
		if err != nil {
			return nil, err
		}
		return listPage(all, p.IncludeDisabled == nil || *p.IncludeDisabled, p.Query, p.Offset, p.Limit), nil
	case "cron.status":
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
	case "cron.get":
		var p idParams
		if err := decodeStrict(params, &p); err != nil {
			return nil, err
		}
		id, err := p.id()
		if err != nil {
			return nil, err
		}
		return s.Get(ctx, id)
	case "cron.add":
		var j Job
		if err := decodeStrict(params, &j); err != nil {
			return nil, err
		}
		if !bytes.Contains(params, []byte(`"enabled"`)) {
			j.Enabled = true
		}
		return s.Add(ctx, j)
	case "cron.update":
		var p struct {
			idParams
			Patch json.RawMessage `json:"patch"`
		}
		if err := decodeStrict(params, &p); err != nil {
			return nil, err
		}
		id, err := p.id()
		if err != nil {
			return nil, err
		}
		if len(p.Patch) == 0 {
			return nil, bad("patch required")
		}
		cur, err := s.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		// The patch merges over the current job: fields it names replace.
		if err := json.Unmarshal(p.Patch, cur); err != nil {
			return nil, bad("invalid patch: %v", err)
		}
		return s.Update(ctx, id, *cur)
	case "cron.remove":
		var p idParams
		if err := decodeStrict(params, &p); err != nil {
			return nil, err
		}
		id, err := p.id()
		if err != nil {
			return nil, err
		}
		if err := s.Remove(ctx, id); err != nil {
			return nil, err
		}
		return map[string]any{"ok": true, "removed": true}, nil
	case "cron.enable", "cron.disable":
		var p idParams
		if err := decodeStrict(params, &p); err != nil {
			return nil, err
		}
		id, err := p.id()
		if err != nil {
			return nil, err
		}
		return s.SetEnabled(ctx, id, method == "cron.enable")
	case "cron.run":
		var p struct {
			idParams
			Mode string `json:"mode"`
		}
		if err := decodeStrict(params, &p); err != nil {
			return nil, err
		}
		id, err := p.id()
		if err != nil {
			return nil, err
		}
		switch p.Mode {
		case "", "force":
		case "due":
			j, err := s.Get(ctx, id)
			if err != nil {
				return nil, err
			}
			if !j.Enabled || j.State.NextRunAtMs == 0 || j.State.NextRunAtMs > s.cfg.Now().UnixMilli() {
				return map[string]any{"ok": true, "ran": false, "reason": "not-due"}, nil
			}
		default:
			return nil, bad("mode %q is not one of due, force", p.Mode)
		}
		runID, err := s.RunNow(ctx, id)
		if err != nil {
			return nil, err
		}
		return map[string]any{"ok": true, "ran": true, "runId": runID}, nil
	case "cron.runs":
		var p struct {
			idParams
			Scope   string `json:"scope"`
			AgentID string `json:"agentId"`
			Limit   int    `json:"limit"`
			Offset  int    `json:"offset"`
		}
		if err := decodeStrict(params, &p); err != nil {
			return nil, err
		}
		if p.Limit < 0 || p.Offset < 0 {
			return nil, bad("limit and offset must not be negative")
		}
		scope := p.Scope
		if scope == "" {
			scope = "job"
			if strings.TrimSpace(p.ID) == "" && strings.TrimSpace(p.JobID) == "" {
				scope = "all"
			}
		}
		switch scope {
		case "all":
			return s.allRuns(ctx, p.AgentID, p.Limit, p.Offset)
		case "job":
		default:
			return nil, bad("scope %q is not one of job, all", p.Scope)
		}
		id, err := p.id()
		if err != nil {
			return nil, err
		}
		runs, err := s.Runs(ctx, id, p.Limit)
		if err != nil {
			return nil, err
		}
		entries := make([]map[string]any, 0, len(runs))
		for _, r := range runs {
			entries = append(entries, runEntry(r))
		}
		return map[string]any{"entries": entries}, nil
	}
	return nil, bad("unknown method %s", method)
}

// Methods lists the gateway methods Call serves.
var Methods = []string{"cron.list", "cron.status", "cron.get", "cron.add", "cron.update", "cron.remove",
	"cron.run", "cron.runs", "cron.enable", "cron.disable"}

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

// allRuns is cron.runs with scope "all": the runs of every job (of
// agentID's jobs when set), newest first, one page of them, with the
// reference's paging fields and each entry's job name. Each job's newest
// offset+limit runs are read, so total counts at most that many per job.
func (s *Scheduler) allRuns(ctx context.Context, agentID string, limit, offset int) (any, error) {
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
