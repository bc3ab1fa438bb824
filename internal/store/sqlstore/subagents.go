package sqlstore

import (
	"encoding/json"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// SubagentCols lists the subagent_runs columns in the order ScanSubagent and
// SubagentArgs use.
const SubagentCols = `child_run_id, child_session_key, requester_key, status, archive_at,
	payload, created_at, updated_at`

// Statements on the sub-agent registry, and the outbox's pruning.
const (
	GetSubagent    = `SELECT ` + SubagentCols + ` FROM subagent_runs WHERE child_run_id = ?`
	InsertSubagent = `INSERT INTO subagent_runs (` + SubagentCols + `) VALUES (?,?,?,?,?,?,?,?)
		ON CONFLICT (child_run_id) DO NOTHING`
	UpdateSubagent = `UPDATE subagent_runs SET child_session_key = ?2, requester_key = ?3,
		status = ?4, archive_at = ?5, payload = ?6, created_at = ?7, updated_at = ?8
		WHERE child_run_id = ?1`
	PruneOutbox     = `DELETE FROM outbox WHERE status = 'delivered' AND delivered_at < ?`
	PruneOutboxKind = `DELETE FROM outbox WHERE kind = ? AND status = 'delivered' AND delivered_at < ?`
)

// ScanSubagent reads one row of SubagentCols.
func ScanSubagent(sc Scanner) (*store.SubagentRun, error) {
	var (
		r                         store.SubagentRun
		status                    string
		payload                   []byte
		archive, created, updated int64
	)
	if err := sc.Scan(&r.ChildRunID, &r.ChildSessionKey, &r.RequesterKey, &status, &archive,
		&payload, &created, &updated); err != nil {
		return nil, err
	}
	r.Status = store.SubagentStatus(status)
	if payload != nil {
		r.Payload = json.RawMessage(payload)
	}
	r.ArchiveAt, r.CreatedAt, r.UpdatedAt = FromMs(archive), FromMs(created), FromMs(updated)
	return &r, nil
}

// SubagentArgs returns a prepared row as arguments in SubagentCols order.
func SubagentArgs(r *store.SubagentRun) []any {
	return []any{r.ChildRunID, r.ChildSessionKey, r.RequesterKey, string(r.Status), ToMs(r.ArchiveAt),
		store.PayloadArg(r.Payload), ToMs(r.CreatedAt), ToMs(r.UpdatedAt)}
}

// NewSubagentArgs applies PutSubagent's defaults to a copy of r (now is
// the current time), checks it, and returns it as SubagentArgs does.
func NewSubagentArgs(r *store.SubagentRun, now time.Time) ([]any, error) {
	c := *r
	if err := store.PrepareNewSubagent(&c, now); err != nil {
		return nil, err
	}
	return SubagentArgs(&c), nil
}

// ListSubagents is the query of store.Store's ListSubagents for f, in d.
func (d Dialect) ListSubagents(f store.SubagentFilter) (*Query, error) {
	q := d.NewQuery(`SELECT ` + SubagentCols + ` FROM subagent_runs WHERE ` + d.True())
	if f.RequesterKey != "" {
		q.Add(` AND requester_key = ?`, f.RequesterKey)
	}
	if f.ChildSessionKey != "" {
		q.Add(` AND child_session_key = ?`, f.ChildSessionKey)
	}
	if err := q.AddOneOf("status", Strings(f.Statuses)); err != nil {
		return nil, err
	}
	if !f.ArchiveDueBefore.IsZero() {
		q.Add(` AND archive_at > 0 AND archive_at <= ?`, f.ArchiveDueBefore.UnixMilli())
	}
	q.Write(` ORDER BY created_at DESC, child_run_id DESC`)
	q.LimitOffset(f.Limit, f.Offset)
	return q, nil
}
