package sqlstore

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// RunCols lists the runs columns in the order ScanRun and RunArgs use.
const RunCols = `run_id, session_key, session_id, agent_id, lane, status, input,
	created_at, started_at, ended_at, error, stop_reason, usage`

// Statements on runs.
const (
	GetRun = `SELECT ` + RunCols + ` FROM runs WHERE run_id = ?`

	InsertRun = `INSERT INTO runs (` + RunCols + `)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (run_id) DO NOTHING`

	UpdateRun = `UPDATE runs SET session_key = ?2, session_id = ?3, agent_id = ?4,
		lane = ?5, status = ?6, input = ?7, created_at = ?8, started_at = ?9,
		ended_at = ?10, error = ?11, stop_reason = ?12, usage = ?13
		WHERE run_id = ?1`

	// RunStatus reads a run's status alone.
	RunStatus = `SELECT status FROM runs WHERE run_id = ?`
)

// ScanRun reads one row of RunCols.
func ScanRun(sc Scanner) (*store.Run, error) {
	var (
		r                       store.Run
		status                  string
		input, usage            []byte
		created, started, ended int64
	)
	err := sc.Scan(&r.RunID, &r.SessionKey, &r.SessionID, &r.AgentID, &r.Lane, &status, &input,
		&created, &started, &ended, &r.Error, &r.StopReason, &usage)
	if err != nil {
		return nil, err
	}
	r.Status = store.RunStatus(status)
	if input != nil {
		r.Input = json.RawMessage(input)
	}
	if len(usage) > 0 {
		if err := json.Unmarshal(usage, &r.Usage); err != nil {
			return nil, fmt.Errorf("run %q: usage: %w", r.RunID, err)
		}
	}
	r.CreatedAt = FromMs(created)
	r.StartedAt = FromMs(started)
	r.EndedAt = FromMs(ended)
	return &r, nil
}

// RunArgs returns r as arguments in RunCols order.
func RunArgs(r *store.Run) ([]any, error) {
	if !ValidRunStatus(r.Status) {
		return nil, fmt.Errorf("run %q: unknown status %q", r.RunID, r.Status)
	}
	var input any // nil stores NULL
	if len(r.Input) > 0 {
		input = string(r.Input)
	}
	usage, err := json.Marshal(r.Usage)
	if err != nil {
		return nil, fmt.Errorf("run %q: usage: %w", r.RunID, err)
	}
	return []any{r.RunID, r.SessionKey, r.SessionID, r.AgentID, r.Lane, string(r.Status), input,
		ToMs(r.CreatedAt), ToMs(r.StartedAt), ToMs(r.EndedAt), r.Error, r.StopReason,
		string(usage)}, nil
}

// NewRun returns a copy of r with CreateRun's defaults: an empty Status is
// queued, a zero CreatedAt is now().
func NewRun(r *store.Run, now func() time.Time) store.Run {
	c := *r
	if c.Status == "" {
		c.Status = store.RunQueued
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = now()
	}
	return c
}

// StoredRun returns a copy of r with its times at the stored resolution, as
// a read of the row would return it.
func StoredRun(r *store.Run) *store.Run {
	c := r.Clone()
	c.CreatedAt, c.StartedAt, c.EndedAt = store.Millis(r.CreatedAt), store.Millis(r.StartedAt), store.Millis(r.EndedAt)
	return c
}

// RunEndArgs returns what ending run runID with a store.RunResult writes
// besides the run's row, built before the transaction: the end (the
// result's EndedAt, now when zero, at the stored resolution) and its outbox
// items as arguments of InsertOutbox, with PutOutbox's defaults (an empty
// RunID is runID).
func RunEndArgs(runID string, endedAt time.Time, items []store.OutboxItem, now time.Time) (ended time.Time, outbox [][]any, err error) {
	ended = endedAt
	if ended.IsZero() {
		ended = now
	}
	ended = store.Millis(ended)
	outbox = make([][]any, len(items))
	for i := range items {
		it := items[i] // Payload is shared but only read
		if it.RunID == "" {
			it.RunID = runID
		}
		if outbox[i], err = NewOutboxArgs(&it, now); err != nil {
			return time.Time{}, nil, fmt.Errorf("outbox item %d: %w", i, err)
		}
	}
	return ended, outbox, nil
}

// LiveRuns is the condition of a run that has not ended. The index of
// runs by status (runs_live) holds only these rows, so a query by status
// names it for the planner to use that index.
const LiveRuns = `status IN ('queued', 'running')`

// live reports whether every status in ss is one of LiveRuns.
func live(ss []store.RunStatus) bool {
	for _, s := range ss {
		if s != store.RunQueued && s != store.RunRunning {
			return false
		}
	}
	return true
}

// ValidRunStatus reports whether s is a run status.
func ValidRunStatus(s store.RunStatus) bool {
	switch s {
	case store.RunQueued, store.RunRunning, store.RunOK, store.RunError, store.RunTimeout, store.RunAborted:
		return true
	}
	return false
}

// ListRuns is the query of store.Store's ListRuns for f, in d.
func (d Dialect) ListRuns(f store.RunFilter) (*Query, error) {
	q := d.NewQuery(`SELECT ` + RunCols + ` FROM runs WHERE ` + d.True())
	if f.SessionKey != "" {
		q.Add(` AND session_key = ?`, f.SessionKey)
	}
	if len(f.Statuses) > 0 {
		if err := q.AddIn("status", Strings(f.Statuses)); err != nil {
			return nil, err
		}
		if live(f.Statuses) {
			q.Write(` AND ` + LiveRuns)
		}
	}
	if len(f.SessionKeys) > 0 {
		if err := q.AddIn("session_key", f.SessionKeys); err != nil {
			return nil, err
		}
	}
	if f.Newest {
		q.Write(` ORDER BY created_at DESC, run_id DESC`)
	} else {
		q.Write(` ORDER BY created_at, run_id`)
	}
	if f.Limit > 0 {
		q.Add(` LIMIT ?`, f.Limit)
	}
	return q, nil
}

// Rows collects the rows of a query, each read by scan; the caller closes
// them. hint > 0 preallocates for that many rows (at most 1,024).
func Rows[T any, R interface {
	Scanner
	Next() bool
	Err() error
}](rows R, hint int, scan func(Scanner) (T, error)) ([]T, error) {
	var out []T
	if hint > 0 {
		out = make([]T, 0, min(hint, 1024))
	}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
