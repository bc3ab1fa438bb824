package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/switchboardhq/switchboard/internal/cron"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/store"
)

// CronService is the cron scheduler the cron.* methods drive (the daemon
// passes *cron.Scheduler). A missing job is store.ErrNotFound.
type CronService interface {
	Status(ctx context.Context) (map[string]any, error)
	Page(ctx context.Context, includeDisabled bool, query string, offset, limit int) (map[string]any, error)
	Get(ctx context.Context, id string) (*cron.Job, error)
	Add(ctx context.Context, j cron.Job) (*cron.Job, error)
	Update(ctx context.Context, id string, j cron.Job) (*cron.Job, error)
	Remove(ctx context.Context, id string) error
	SetEnabled(ctx context.Context, id string, on bool) (*cron.Job, error)
	Due(ctx context.Context, id string) (bool, error)
	RunNow(ctx context.Context, id string) (string, error)
	RunHistory(ctx context.Context, id string, limit int) (map[string]any, error)
	AllRuns(ctx context.Context, agentID string, limit, offset int) (map[string]any, error)
}

// cronMethods are the cron.* methods, in the reference's order, with the
// operator scope each needs.
func (s *Server) cronMethods() []*method {
	read, admin := wire.ScopeRead, wire.ScopeAdmin
	return []*method{
		{name: "cron.list", scope: read, handle: s.cronHandler(s.handleCronList)},
		{name: "cron.status", scope: read, handle: s.cronHandler(s.handleCronStatus)},
		{name: "cron.get", scope: read, handle: s.cronHandler(s.handleCronGet)},
		{name: "cron.add", scope: admin, handle: s.cronHandler(s.handleCronAdd)},
		{name: "cron.update", scope: admin, handle: s.cronHandler(s.handleCronUpdate)},
		{name: "cron.remove", scope: admin, handle: s.cronHandler(s.handleCronRemove)},
		{name: "cron.run", scope: admin, handle: s.cronHandler(s.handleCronRun)},
		{name: "cron.runs", scope: read, handle: s.cronHandler(s.handleCronRuns)},
		{name: "cron.enable", scope: admin, handle: s.cronHandler(s.handleCronEnable)},
		{name: "cron.disable", scope: admin, handle: s.cronHandler(s.handleCronEnable)},
	}
}

// cronBadRequest is an error in the caller's params, answered as
// INVALID_REQUEST with its message.
type cronBadRequest struct{ msg string }

func (e *cronBadRequest) Error() string { return e.msg }

func cronBad(format string, a ...any) error { return &cronBadRequest{fmt.Sprintf(format, a...)} }

// cronHandler wraps a cron method: with cron off it answers UNAVAILABLE;
// a missing job is the reference's "cron job not found: <id>" (its CLI
// matches that wording), an invalid job given to cron.add or cron.update
// and every bad param is INVALID_REQUEST, any other error is the method's.
func (s *Server) cronHandler(h func(ctx context.Context, cl *call) (any, error)) handler {
	return func(ctx context.Context, cl *call) (any, error) {
		if s.cfg.Cron == nil {
			return nil, wire.NewError(wire.CodeUnavailable, "cron is not enabled")
		}
		res, err := h(ctx, cl)
		if errors.Is(err, store.ErrNotFound) {
			var p cronIDParams
			_ = json.Unmarshal(cl.params, &p)
			id, _ := p.id()
			return nil, invalid("cron job not found: " + id)
		}
		var br *cronBadRequest
		if errors.As(err, &br) || (err != nil && (cl.method == "cron.add" || cl.method == "cron.update")) {
			return nil, invalid(err.Error())
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cl.method, err)
		}
		return res, nil
	}
}

// decodeCronParams decodes a cron method's params (none means {}).
func decodeCronParams(params json.RawMessage, v any) error {
	if len(bytes.TrimSpace(params)) == 0 {
		params = []byte("{}")
	}
	if err := json.Unmarshal(params, v); err != nil {
		return cronBad("invalid params: %v", err)
	}
	return nil
}

// cronPaging is a page of a cron listing.
type cronPaging struct {
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
}

// decodePagedCronParams decodes params into v, whose page is pg.
func decodePagedCronParams(params json.RawMessage, v any, pg *cronPaging) error {
	if err := decodeCronParams(params, v); err != nil {
		return err
	}
	if pg.Limit < 0 || pg.Offset < 0 {
		return cronBad("limit and offset must not be negative")
	}
	return nil
}

// cronIDParams name a job: id, or the reference's older jobId.
type cronIDParams struct {
	ID    string `json:"id"`
	JobID string `json:"jobId"`
}

func (p cronIDParams) id() (string, error) {
	id := strings.TrimSpace(p.ID)
	if id == "" {
		id = strings.TrimSpace(p.JobID)
	}
	if id == "" {
		return "", cronBad("id required")
	}
	return id, nil
}

// cronJobID decodes params that name a job and returns its id.
func cronJobID(params json.RawMessage) (string, error) {
	var p cronIDParams
	if err := decodeCronParams(params, &p); err != nil {
		return "", err
	}
	return p.id()
}

func (s *Server) handleCronList(ctx context.Context, cl *call) (any, error) {
	var p struct {
		cronPaging
		IncludeDisabled *bool  `json:"includeDisabled"`
		Query           string `json:"query"`
	}
	if err := decodePagedCronParams(cl.params, &p, &p.cronPaging); err != nil {
		return nil, err
	}
	return s.cfg.Cron.Page(ctx, p.IncludeDisabled == nil || *p.IncludeDisabled, p.Query, p.Offset, p.Limit)
}

func (s *Server) handleCronStatus(ctx context.Context, _ *call) (any, error) {
	return s.cfg.Cron.Status(ctx)
}

func (s *Server) handleCronGet(ctx context.Context, cl *call) (any, error) {
	id, err := cronJobID(cl.params)
	if err != nil {
		return nil, err
	}
	return s.cfg.Cron.Get(ctx, id)
}

func (s *Server) handleCronAdd(ctx context.Context, cl *call) (any, error) {
	var j cron.Job
	if err := decodeCronParams(cl.params, &j); err != nil {
		return nil, err
	}
	if !bytes.Contains(cl.params, []byte(`"enabled"`)) {
		j.Enabled = true
	}
	return s.cfg.Cron.Add(ctx, j)
}

// handleCronUpdate merges the patch over the current job: the fields it
// names replace.
func (s *Server) handleCronUpdate(ctx context.Context, cl *call) (any, error) {
	var p struct {
		cronIDParams
		Patch json.RawMessage `json:"patch"`
	}
	if err := decodeCronParams(cl.params, &p); err != nil {
		return nil, err
	}
	id, err := p.id()
	if err != nil {
		return nil, err
	}
	if len(p.Patch) == 0 {
		return nil, cronBad("patch required")
	}
	cur, err := s.cfg.Cron.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(p.Patch, cur); err != nil {
		return nil, cronBad("invalid patch: %v", err)
	}
	return s.cfg.Cron.Update(ctx, id, *cur)
}

func (s *Server) handleCronRemove(ctx context.Context, cl *call) (any, error) {
	id, err := cronJobID(cl.params)
	if err != nil {
		return nil, err
	}
	if err := s.cfg.Cron.Remove(ctx, id); err != nil {
		return nil, err
	}
	return map[string]any{"ok": true, "removed": true}, nil
}

// handleCronEnable serves cron.enable and cron.disable.
func (s *Server) handleCronEnable(ctx context.Context, cl *call) (any, error) {
	id, err := cronJobID(cl.params)
	if err != nil {
		return nil, err
	}
	return s.cfg.Cron.SetEnabled(ctx, id, cl.method == "cron.enable")
}

// handleCronRun runs a job now: mode "force" (the default) always, "due"
// only when its next run is due.
func (s *Server) handleCronRun(ctx context.Context, cl *call) (any, error) {
	var p struct {
		cronIDParams
		Mode string `json:"mode"`
	}
	if err := decodeCronParams(cl.params, &p); err != nil {
		return nil, err
	}
	id, err := p.id()
	if err != nil {
		return nil, err
	}
	switch p.Mode {
	case "", "force":
	case "due":
		due, err := s.cfg.Cron.Due(ctx, id)
		if err != nil {
			return nil, err
		}
		if !due {
			return map[string]any{"ok": true, "ran": false, "reason": "not-due"}, nil
		}
	default:
		return nil, cronBad("mode %q is not one of due, force", p.Mode)
	}
	runID, err := s.cfg.Cron.RunNow(ctx, id)
	if refused := refusal(err); refused != nil {
		return nil, refused // as from every door (the run history says so too)
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"ok": true, "ran": true, "runId": runID}, nil
}

// handleCronRuns is a job's run history (scope "job", the default when an
// id is given) or every job's (scope "all").
func (s *Server) handleCronRuns(ctx context.Context, cl *call) (any, error) {
	var p struct {
		cronIDParams
		cronPaging
		Scope   string `json:"scope"`
		AgentID string `json:"agentId"`
	}
	if err := decodePagedCronParams(cl.params, &p, &p.cronPaging); err != nil {
		return nil, err
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
		return s.cfg.Cron.AllRuns(ctx, p.AgentID, p.Limit, p.Offset)
	case "job":
	default:
		return nil, cronBad("scope %q is not one of job, all", p.Scope)
	}
	id, err := p.id()
	if err != nil {
		return nil, err
	}
	return s.cfg.Cron.RunHistory(ctx, id, p.Limit)
}
