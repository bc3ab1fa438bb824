package postgres

import (
	"testing"

	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
	"github.com/switchboardhq/switchboard/internal/store/storetest"
)

// TestStatementsMatchSQLStore checks each statement built on first use
// against the expression the package-level var it replaced was
// initialised with, so that building them lazily changes no SQL text;
// every field of statements must be listed.
func TestStatementsMatchSQLStore(t *testing.T) {
	want := map[string]string{
		"putA2ATask": sqlstore.Postgres.Q(sqlstore.PutA2ATask),

		"putCronJob":    sqlstore.Postgres.Q(sqlstore.PutCronJob),
		"deleteCronJob": sqlstore.Postgres.Q(sqlstore.DeleteCronJob),
		"insertCronRun": sqlstore.Postgres.Q(sqlstore.InsertCronRun),
		"finishCronRun": sqlstore.Postgres.Q(sqlstore.FinishCronRun),
		"claimCronTick": sqlstore.Postgres.ClaimCronTick(),

		"memoryChunksDelete": sqlstore.Postgres.Q(sqlstore.MemoryChunksDelete),
		"memoryFileDelete":   sqlstore.Postgres.Q(sqlstore.MemoryFileDelete),
		"memoryFilePut":      sqlstore.Postgres.Q(sqlstore.MemoryFilePut),
		"memoryVecPut":       sqlstore.Postgres.Q(sqlstore.MemoryVecPut),

		"lastEntry": sqlstore.Postgres.Q(sqlstore.LastEntry),
		"byIdemKey": sqlstore.Postgres.Q(sqlstore.ByIdemKey),

		"getOutbox":       sqlstore.Postgres.Q(sqlstore.GetOutbox),
		"getOutboxLocked": sqlstore.Postgres.Q(sqlstore.GetOutbox) + ` FOR UPDATE`,
		"insertOutbox":    sqlstore.Postgres.Q(sqlstore.InsertOutbox),
		"updateOutbox":    sqlstore.Postgres.Q(sqlstore.UpdateOutbox),

		"getRun":       sqlstore.Postgres.Q(sqlstore.GetRun),
		"getRunLocked": sqlstore.Postgres.Q(sqlstore.GetRun) + ` FOR UPDATE`,
		"insertRun":    sqlstore.Postgres.Q(sqlstore.InsertRun),
		"updateRun":    sqlstore.Postgres.Q(sqlstore.UpdateRun),
		"runStatus":    sqlstore.Postgres.Q(sqlstore.RunStatus),
		"abortRunning": `WITH locked AS (
			SELECT run_id FROM runs WHERE status = 'running' ORDER BY run_id FOR UPDATE
		)
		UPDATE runs SET status = 'aborted', ended_at = $1, error = $2
		FROM locked WHERE runs.run_id = locked.run_id AND runs.status = 'running'
		RETURNING ` + sqlstore.Qualify("runs", runCols),
		"finishRun": `WITH r AS (
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

		"getSession":       sqlstore.Postgres.Q(sqlstore.GetSession),
		"getSessionLocked": sqlstore.Postgres.Q(sqlstore.GetSession) + ` FOR UPDATE`,
		"deleteSession":    sqlstore.Postgres.Q(sqlstore.DeleteSession),
		"sessionIDInUse":   sqlstore.Postgres.Q(sqlstore.SessionIDInUse),
		"deleteTranscript": sqlstore.Postgres.Q(sqlstore.DeleteTranscript),
		"insertSession":    sqlstore.Postgres.InsertSession("key_class", "search"),
		"putSession":       sqlstore.Postgres.PutSession("key_class", "search"),

		"getSubagent":       sqlstore.Postgres.Q(sqlstore.GetSubagent),
		"getSubagentLocked": sqlstore.Postgres.Q(sqlstore.GetSubagent) + ` FOR UPDATE`,
		"insertSubagent":    sqlstore.Postgres.Q(sqlstore.InsertSubagent),
		"updateSubagent":    sqlstore.Postgres.Q(sqlstore.UpdateSubagent),
		"pruneOutbox":       sqlstore.Postgres.Q(sqlstore.PruneOutbox),
		"pruneOutboxKind":   sqlstore.Postgres.Q(sqlstore.PruneOutboxKind),
	}
	storetest.CheckStringFields(t, stmts.Get(), want)
}

// TestOpenKeepsTheStatements checks that a store uses the statements
// built once, not a copy of its own.
func TestOpenKeepsTheStatements(t *testing.T) {
	s := openTest(t, Options{})
	if s.q != stmts.Get() {
		t.Fatal("Store.q is not the package's statements")
	}
}
