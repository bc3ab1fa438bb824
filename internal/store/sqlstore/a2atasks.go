package sqlstore

import (
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// A2ATaskCols lists the a2a_tasks columns in ScanA2ATask's order.
const A2ATaskCols = `peer, id, context_id, state, final, run_id, task, created_at, updated_at`

// Statements on A2A tasks. The listing of open tasks tests the final flag
// and is made per dialect by OpenA2ATasks.
const (
	PutA2ATask = `INSERT INTO a2a_tasks (` + A2ATaskCols + `) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?8)
		ON CONFLICT (peer, id) DO UPDATE SET context_id = ?3, state = ?4, final = ?5, run_id = ?6, task = ?7, updated_at = ?8`
	GetA2ATask   = `SELECT ` + A2ATaskCols + ` FROM a2a_tasks WHERE peer = ? AND id = ?`
	ListA2ATasks = `SELECT ` + A2ATaskCols + ` FROM a2a_tasks WHERE peer = ?
		ORDER BY updated_at DESC, id DESC LIMIT ?`
	ListA2ATasksCtx = `SELECT ` + A2ATaskCols + ` FROM a2a_tasks WHERE peer = ? AND context_id = ?
		ORDER BY updated_at DESC, id DESC LIMIT ?`
)

// ScanA2ATask reads one row of A2ATaskCols.
func ScanA2ATask(sc Scanner) (*store.A2ATask, error) {
	var (
		t                store.A2ATask
		created, updated int64
		body             string
	)
	if err := sc.Scan(&t.Peer, &t.ID, &t.ContextID, &t.State, &t.Final, &t.RunID, &body, &created, &updated); err != nil {
		return nil, err
	}
	t.Task = []byte(body)
	t.CreatedAt, t.UpdatedAt = FromMs(created), FromMs(updated)
	return &t, nil
}

// OpenA2ATasks is the statement of store.A2ATaskStore's OpenA2ATasks, in d.
func (d Dialect) OpenA2ATasks() string {
	return d.Q(`SELECT ` + A2ATaskCols + ` FROM a2a_tasks WHERE ` + d.IsNot("final") + `
		ORDER BY created_at, peer, id LIMIT ?`)
}

// A2ATaskArgs returns t, written at now, as the arguments of PutA2ATask in
// d; an empty task body is stored as {}.
func (d Dialect) A2ATaskArgs(t *store.A2ATask, now time.Time) []any {
	body := string(t.Task)
	if body == "" {
		body = "{}"
	}
	return []any{t.Peer, t.ID, t.ContextID, t.State, d.Bool(t.Final), t.RunID, body, ToMs(now)}
}
