package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

// migrations is the schema history: migrations[i] brings the database from
// version i to version i+1. Append only; never edit a released entry.
var migrations = []string{
	// 1: sessions, messages, runs.
	`
CREATE TABLE sessions (
	key              TEXT    NOT NULL PRIMARY KEY,
	session_id       TEXT    NOT NULL,
	agent_id         TEXT    NOT NULL DEFAULT '',
	kind             TEXT    NOT NULL DEFAULT '',
	channel          TEXT    NOT NULL DEFAULT '',
	chat_type        TEXT    NOT NULL DEFAULT '',
	display_name     TEXT    NOT NULL DEFAULT '',
	label            TEXT    NOT NULL DEFAULT '',
	spawned_by       TEXT    NOT NULL DEFAULT '',
	spawn_depth      INTEGER NOT NULL DEFAULT 0,
	model            TEXT    NOT NULL DEFAULT '',
	thinking_level   TEXT    NOT NULL DEFAULT '',
	verbose_level    TEXT    NOT NULL DEFAULT '',
	context_tokens   INTEGER NOT NULL DEFAULT 0,
	input_tokens     INTEGER NOT NULL DEFAULT 0,
	output_tokens    INTEGER NOT NULL DEFAULT 0,
	total_tokens     INTEGER NOT NULL DEFAULT 0,
	system_sent      INTEGER NOT NULL DEFAULT 0,
	aborted_last_run INTEGER NOT NULL DEFAULT 0,
	send_policy      TEXT    NOT NULL DEFAULT '',
	last_channel     TEXT    NOT NULL DEFAULT '',
	last_to          TEXT    NOT NULL DEFAULT '',
	last_account_id  TEXT    NOT NULL DEFAULT '',
	delivery_context TEXT,            -- JSON object, NULL when unset
	extra            TEXT,            -- JSON object, NULL when unset
	created_at       INTEGER NOT NULL, -- unix ms
	updated_at       INTEGER NOT NULL  -- unix ms
);
CREATE INDEX sessions_updated    ON sessions (updated_at DESC, key);
CREATE INDEX sessions_agent      ON sessions (agent_id, updated_at DESC, key);
CREATE INDEX sessions_spawned_by ON sessions (spawned_by, updated_at DESC, key);
CREATE INDEX sessions_kind       ON sessions (kind, updated_at DESC, key);
CREATE INDEX sessions_label      ON sessions (label, updated_at DESC, key);
CREATE INDEX sessions_session_id ON sessions (session_id, key);

-- One row per transcript entry; line is the entry's JSON line. The primary
-- key serves appends (last seq) and history tails.
CREATE TABLE messages (
	session_id TEXT    NOT NULL,
	seq        INTEGER NOT NULL,
	entry_id   TEXT    NOT NULL,
	role       TEXT    NOT NULL DEFAULT '',
	run_id     TEXT    NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL, -- unix ms
	line       TEXT    NOT NULL,
	PRIMARY KEY (session_id, seq)
);

CREATE TABLE runs (
	run_id      TEXT    NOT NULL PRIMARY KEY,
	session_key TEXT    NOT NULL DEFAULT '',
	session_id  TEXT    NOT NULL DEFAULT '',
	agent_id    TEXT    NOT NULL DEFAULT '',
	lane        TEXT    NOT NULL DEFAULT '',
	status      TEXT    NOT NULL,
	input       TEXT,             -- opaque JSON, NULL when unset
	created_at  INTEGER NOT NULL, -- unix ms
	started_at  INTEGER NOT NULL DEFAULT 0,
	ended_at    INTEGER NOT NULL DEFAULT 0,
	error       TEXT    NOT NULL DEFAULT '',
	stop_reason TEXT    NOT NULL DEFAULT '',
	usage       TEXT    NOT NULL DEFAULT '{}' -- transcript.Usage JSON
);
CREATE INDEX runs_status  ON runs (status, created_at, run_id);
CREATE INDEX runs_session ON runs (session_key, created_at, run_id);
`,
	// 2: outbox. The indexes end in the list order (next_attempt_at,
	// created_at, id) so filtered lists need no sort.
	`
CREATE TABLE outbox (
	id              TEXT    NOT NULL PRIMARY KEY,
	kind            TEXT    NOT NULL DEFAULT '',
	session_key     TEXT    NOT NULL DEFAULT '',
	run_id          TEXT    NOT NULL DEFAULT '',
	payload         TEXT,             -- opaque JSON, NULL when unset
	status          TEXT    NOT NULL,
	attempts        INTEGER NOT NULL DEFAULT 0,
	next_attempt_at INTEGER NOT NULL DEFAULT 0, -- unix ms
	last_error      TEXT    NOT NULL DEFAULT '',
	created_at      INTEGER NOT NULL, -- unix ms
	updated_at      INTEGER NOT NULL, -- unix ms
	delivered_at    INTEGER NOT NULL DEFAULT 0 -- unix ms, 0 until delivered
);
CREATE INDEX outbox_due     ON outbox (status, next_attempt_at, created_at, id);
CREATE INDEX outbox_kind    ON outbox (kind, status, next_attempt_at, created_at, id);
CREATE INDEX outbox_session ON outbox (session_key, next_attempt_at, created_at, id);
CREATE INDEX outbox_run     ON outbox (run_id);
`,
	// 3: a run's own messages (HistoryOptions.RunID).
	`
CREATE INDEX messages_run ON messages (session_id, run_id, seq);
`,
	// 4: usage by day (usage.cost) reads runs by their end.
	`CREATE INDEX runs_ended ON runs (ended_at)`,
	// 5: idempotent posts (PostMessage): at most one message per key and
	// session.
	`
ALTER TABLE messages ADD COLUMN idem_key TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX messages_idem ON messages (session_id, idem_key) WHERE idem_key != '';
`,
	// 6: key classes (store.ClassOf), so listings filter in the query.
	// Rows from before are classified by backfillKeyClass after migrating.
	`ALTER TABLE sessions ADD COLUMN key_class INTEGER NOT NULL DEFAULT -1`,
	// 7: newest-first pages of one kind (subagents.list).
	`CREATE INDEX outbox_kind_created ON outbox (kind, created_at DESC, id DESC)`,
	// 8: the sub-agent registry gets its own table (it was outbox items of
	// kind "subagent"); the outbox keeps deliveries only. Rows move over
	// with their state: a pending record is active, any other retired.
	`
CREATE TABLE subagent_runs (
	child_run_id      TEXT    NOT NULL PRIMARY KEY,
	child_session_key TEXT    NOT NULL DEFAULT '',
	requester_key     TEXT    NOT NULL DEFAULT '',
	status            TEXT    NOT NULL,
	archive_at        INTEGER NOT NULL DEFAULT 0, -- unix ms, 0 = never
	payload           TEXT,             -- JSON, NULL when unset
	created_at        INTEGER NOT NULL, -- unix ms
	updated_at        INTEGER NOT NULL  -- unix ms
);
CREATE INDEX subagent_runs_requester ON subagent_runs (requester_key, created_at DESC, child_run_id DESC);
CREATE INDEX subagent_runs_child     ON subagent_runs (child_session_key);
CREATE INDEX subagent_runs_archive   ON subagent_runs (status, archive_at) WHERE archive_at > 0;
INSERT OR IGNORE INTO subagent_runs
	SELECT run_id, COALESCE(json_extract(payload, '$.childSessionKey'), ''), session_key,
		CASE status WHEN 'pending' THEN 'active' ELSE 'retired' END,
		COALESCE(json_extract(payload, '$.archiveAtMs'), 0), payload, created_at, updated_at
	FROM outbox WHERE kind = 'subagent' AND run_id != '';
DELETE FROM outbox WHERE kind = 'subagent';
`,
	// 9: cron jobs and their run history. next_run_at 0 = no further run;
	// (job_id, tick) is unique so a tick is claimed once.
	`
CREATE TABLE cron_jobs (
	id          TEXT    NOT NULL PRIMARY KEY,
	enabled     INTEGER NOT NULL,
	next_run_at INTEGER NOT NULL DEFAULT 0, -- unix ms
	last_tick   INTEGER NOT NULL DEFAULT 0, -- unix ms
	spec        TEXT    NOT NULL,           -- JSON
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL
);
CREATE INDEX cron_jobs_due ON cron_jobs (next_run_at) WHERE enabled = 1 AND next_run_at > 0;
CREATE TABLE cron_runs (
	job_id     TEXT    NOT NULL REFERENCES cron_jobs (id) ON DELETE CASCADE,
	tick       INTEGER NOT NULL,
	run_id     TEXT    NOT NULL DEFAULT '',
	status     TEXT    NOT NULL,
	error      TEXT    NOT NULL DEFAULT '',
	started_at INTEGER NOT NULL,
	ended_at   INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (job_id, tick)
);
`,
	// 10: A2A tasks, keyed by (peer, id); final = 0 marks a task a restart
	// may have cut.
	`
CREATE TABLE a2a_tasks (
	peer       TEXT    NOT NULL,
	id         TEXT    NOT NULL,
	context_id TEXT    NOT NULL DEFAULT '',
	state      TEXT    NOT NULL,
	final      INTEGER NOT NULL,
	run_id     TEXT    NOT NULL DEFAULT '',
	task       TEXT    NOT NULL, -- JSON
	created_at INTEGER NOT NULL, -- unix ms
	updated_at INTEGER NOT NULL, -- unix ms
	PRIMARY KEY (peer, id)
);
CREATE INDEX a2a_tasks_peer    ON a2a_tasks (peer, updated_at DESC, id DESC);
CREATE INDEX a2a_tasks_context ON a2a_tasks (peer, context_id, updated_at DESC, id DESC);
CREATE INDEX a2a_tasks_open    ON a2a_tasks (created_at) WHERE final = 0;
`,
	// 11: the memory files' keyword index: one row per indexed file, its
	// chunks, and an FTS5 table over the chunks' search text (rowid = chunk
	// id).
	`
CREATE TABLE memory_files (
	scope    TEXT    NOT NULL,
	path     TEXT    NOT NULL,
	hash     TEXT    NOT NULL,
	size     INTEGER NOT NULL,
	mtime_ns INTEGER NOT NULL,
	PRIMARY KEY (scope, path)
);
CREATE TABLE memory_chunks (
	id         INTEGER PRIMARY KEY,
	scope      TEXT    NOT NULL,
	path       TEXT    NOT NULL,
	start_line INTEGER NOT NULL,
	end_line   INTEGER NOT NULL,
	text       TEXT    NOT NULL
);
CREATE INDEX memory_chunks_path ON memory_chunks (scope, path);
CREATE VIRTUAL TABLE memory_fts USING fts5 (search, tokenize = 'unicode61 remove_diacritics 2');
`,
	// 12: embeddings of memory chunks by model and text hash (vector
	// search; a cache no re-index clears).
	`
CREATE TABLE memory_vectors (
	model TEXT NOT NULL,
	hash  TEXT NOT NULL,
	vec   BLOB NOT NULL, -- little-endian float32s
	PRIMARY KEY (model, hash)
) WITHOUT ROWID;
`,
	// 13: a finished run's message counts (store.RunStats JSON), for
	// sessions.usage; runs finished before are '{}'.
	`ALTER TABLE runs ADD COLUMN stats TEXT NOT NULL DEFAULT '{}'`,
	// 14: fewer index pages per chat turn. A run's end moved its entry in
	// runs_status (running to a terminal status) and in runs_ended (0 to its
	// end), and every turn's updated_at moved the session's entry in
	// sessions_spawned_by and sessions_label, which hold mostly ''. Each
	// index now holds only the rows its queries look for (live runs, ended
	// runs, spawned or labelled sessions), and those queries name the
	// index's condition (sqlstore.LiveRuns and the like) so the planner may
	// use it.
	`
DROP INDEX runs_status;
CREATE INDEX runs_live ON runs (status, created_at, run_id) WHERE ` + sqlstore.LiveRuns + `;
DROP INDEX runs_ended;
CREATE INDEX runs_ended ON runs (ended_at) WHERE ended_at > 0;
DROP INDEX sessions_spawned_by;
CREATE INDEX sessions_spawned_by ON sessions (spawned_by, updated_at DESC, key) WHERE spawned_by != '';
DROP INDEX sessions_label;
CREATE INDEX sessions_label ON sessions (label, updated_at DESC, key) WHERE label != '';
`,
	// 15: no index by kind. Nothing lists sessions by kind but tests, and
	// sessions_kind held updated_at: every turn's end moved the session's
	// entry in it (a page of the end's WAL append). A listing by kind
	// walks sessions_updated and keeps the rows of the kind.
	`DROP INDEX sessions_kind`,
	// 16: no index by run. messages_run took a page of every turn's two
	// WAL appends (its entries of a session are in run id order, so a
	// turn's two messages went to a random page, and often a third on a
	// split). A run's messages are now found from its first_seq on, along
	// the primary key (sqlstore.RunFrom): the seq of its first message, or
	// of the next entry of its transcript when it has none yet (first_seq
	// is a lower bound; 0 bounds nothing).
	`
ALTER TABLE runs ADD COLUMN first_seq INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET first_seq = COALESCE(
	(SELECT MIN(seq) FROM messages WHERE messages.session_id = runs.session_id AND messages.run_id = runs.run_id),
	(SELECT MAX(seq) FROM messages WHERE messages.session_id = runs.session_id) + 1,
	1)
	WHERE session_id != '';
DROP INDEX messages_run;
`,
}

// schemaVersion is the version this binary migrates to.
func schemaVersion() int { return len(migrations) }

// migrate brings the database behind db up to schemaVersion in one write
// transaction, refusing a database from the future. The transaction also
// sets the header's user_version to the version it leaves, so a start on
// a current database skips it (one read of the header, no transaction).
func migrate(ctx context.Context, db *sql.DB, now func() time.Time) error {
	var uv int
	if err := db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&uv); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if uv == schemaVersion() {
		return nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER NOT NULL PRIMARY KEY,
		applied_at INTEGER NOT NULL -- unix ms
	)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var v int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if v > schemaVersion() {
		return fmt.Errorf("migrate: version %d, binary knows %d: %w", v, schemaVersion(), ErrNewerSchema)
	}
	for ; v < schemaVersion(); v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("migrate: to version %d: %w", v+1, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
			v+1, now().UnixMilli()); err != nil {
			return fmt.Errorf("migrate: to version %d: %w", v+1, err)
		}
	}
	// PRAGMA takes no parameters; the version is a number this binary owns.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, schemaVersion())); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// backfillKeyClass classifies the sessions written before key classes were
// stored (key_class -1), in batches, each batch one transaction.
func backfillKeyClass(ctx context.Context, db *sql.DB) error {
	for {
		rows, err := db.QueryContext(ctx, `SELECT key FROM sessions WHERE key_class = -1 LIMIT 1000`)
		if err != nil {
			return fmt.Errorf("key classes: %w", err)
		}
		var keys []string
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				rows.Close()
				return fmt.Errorf("key classes: %w", err)
			}
			keys = append(keys, k)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("key classes: %w", err)
		}
		if len(keys) == 0 {
			return nil
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("key classes: %w", err)
		}
		for _, k := range keys {
			if _, err := tx.ExecContext(ctx, `UPDATE sessions SET key_class = ? WHERE key = ?`, int64(store.ClassOf(k)), k); err != nil {
				tx.Rollback()
				return fmt.Errorf("key classes: %w", err)
			}
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("key classes: %w", err)
		}
	}
}
