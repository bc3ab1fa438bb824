package postgres

import (
	"github.com/switchboardhq/switchboard/internal/lazy"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

// statements are the store's statements that are built from sqlstore's
// shared ones (written with ? placeholders, rewritten to $N by pq) or from
// its column lists. They are built once, on the first Open (stmts), not at
// process start: a gateway on SQLite links this package but never opens
// it, and package-level values built by calls would run in the package's
// initialiser in every process. Open keeps the pointer in Store.q.
// TestStatementsMatchSQLStore pins each text to the expression it comes
// from.
type statements struct {
	putA2ATask string

	putCronJob, deleteCronJob, insertCronRun, finishCronRun string
	// claimCronTick claims a job's due tick (sqlstore's ClaimCronTick).
	claimCronTick string

	memoryChunksDelete, memoryFileDelete, memoryFilePut, memoryVecPut string

	lastEntry, byIdemKey string

	getOutbox, getOutboxLocked, insertOutbox, updateOutbox string

	getRun, getRunLocked, insertRun, updateRun, runStatus string
	// abortRunning aborts every running run; the runs are locked in a
	// fixed order first so that two callers cannot deadlock.
	abortRunning string
	// finishRun ends a live run ($1) with its status, error, stop reason,
	// usage and end ($2–$6), and adds the usage to its session ($7–$9),
	// recording whether it was aborted ($10) and, when it had started,
	// that the system prompt was sent; it returns the run, then the
	// session row as it wrote it and that row's version (xmin), for the
	// session's next admission (sessionMemo): all NULL when the session
	// is gone (scanFinished). It fails (division_by_zero) when the run is
	// not live, so that in a pipeline the server skips what follows it
	// (the run's outbox items and messages, COMMIT).
	finishRun string

	getSession, getSessionLocked, deleteSession, sessionIDInUse, deleteTranscript string
	// insertSession and putSession write sessionCols, then the derived
	// key_class and search.
	insertSession, putSession string

	getSubagent, getSubagentLocked, insertSubagent, updateSubagent string
	pruneOutbox, pruneOutboxKind                                   string
}

// stmts is the package's statements, built on the first Get (Open's).
var stmts = lazy.Value[*statements]{New: buildStatements}

// buildStatements builds the statements; see statements.
func buildStatements() *statements {
	q := &statements{
		putA2ATask: pq(sqlstore.PutA2ATask),

		putCronJob:    pq(sqlstore.PutCronJob),
		deleteCronJob: pq(sqlstore.DeleteCronJob),
		insertCronRun: pq(sqlstore.InsertCronRun),
		finishCronRun: pq(sqlstore.FinishCronRun),
		claimCronTick: sqlstore.Postgres.ClaimCronTick(),

		memoryChunksDelete: pq(sqlstore.MemoryChunksDelete),
		memoryFileDelete:   pq(sqlstore.MemoryFileDelete),
		memoryFilePut:      pq(sqlstore.MemoryFilePut),
		memoryVecPut:       pq(sqlstore.MemoryVecPut),

		lastEntry: pq(sqlstore.LastEntry),
		byIdemKey: pq(sqlstore.ByIdemKey),

		getOutbox:    pq(sqlstore.GetOutbox),
		insertOutbox: pq(sqlstore.InsertOutbox),
		updateOutbox: pq(sqlstore.UpdateOutbox),

		getRun:    pq(sqlstore.GetRun),
		insertRun: pq(sqlstore.InsertRun),
		updateRun: pq(sqlstore.UpdateRun),
		runStatus: pq(sqlstore.RunStatus),
		abortRunning: `WITH locked AS (
			SELECT run_id FROM runs WHERE status = 'running' ORDER BY run_id FOR UPDATE
		)
		UPDATE runs SET status = 'aborted', ended_at = $1, error = $2
		FROM locked WHERE runs.run_id = locked.run_id AND runs.status = 'running'
		RETURNING ` + sqlstore.Qualify("runs", runCols),
		finishRun: `WITH r AS (
		UPDATE runs SET status = $2, error = $3, stop_reason = $4, usage = $5, ended_at = $6, stats = $11
		WHERE run_id = $1 AND status IN ('queued', 'running')
		RETURNING ` + runCols + `),
	s AS (
		UPDATE sessions SET input_tokens = input_tokens + $7, output_tokens = output_tokens + $8,
			total_tokens = total_tokens + $9, aborted_last_run = $10,
			system_sent = system_sent OR r.started_at <> 0, updated_at = GREATEST(updated_at, $6)
		FROM r WHERE sessions.key = r.session_key
		RETURNING ` + sqlstore.Qualify("sessions", sessionCols) + `, sessions.xmin::text::bigint AS ver)
	SELECT ` + sqlstore.Qualify("r", runCols) + `, ` + sqlstore.Qualify("s", sessionCols) + `, s.ver
	FROM (SELECT 1 / count(*) AS live FROM r) ended LEFT JOIN r ON true LEFT JOIN s ON true WHERE ended.live = 1`,

		getSession:       pq(sqlstore.GetSession),
		deleteSession:    pq(sqlstore.DeleteSession),
		sessionIDInUse:   pq(sqlstore.SessionIDInUse),
		deleteTranscript: pq(sqlstore.DeleteTranscript),
		insertSession:    sqlstore.Postgres.InsertSession("key_class", "search"),
		putSession:       sqlstore.Postgres.PutSession("key_class", "search"),

		getSubagent:     pq(sqlstore.GetSubagent),
		insertSubagent:  pq(sqlstore.InsertSubagent),
		updateSubagent:  pq(sqlstore.UpdateSubagent),
		pruneOutbox:     pq(sqlstore.PruneOutbox),
		pruneOutboxKind: pq(sqlstore.PruneOutboxKind),
	}
	q.getOutboxLocked = q.getOutbox + forUpdate
	q.getRunLocked = q.getRun + forUpdate
	q.getSessionLocked = q.getSession + forUpdate
	q.getSubagentLocked = q.getSubagent + forUpdate
	return q
}

// forUpdate makes a read of one row lock it.
const forUpdate = ` FOR UPDATE`

// pq rewrites a shared statement's placeholders for PostgreSQL.
func pq(q string) string { return sqlstore.Postgres.Q(q) }
