package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrations is the schema history: migrations[i] brings the database from
// version i to version i+1. Append only; never edit a released entry.
//
// Times are unix milliseconds in bigint columns (0 for "not yet"), as in
// the SQLite backend, so that `switchboard migrate` copies them unchanged
// and ordering and day arithmetic are plain integer operations. Opaque
// documents are json (not jsonb): PostgreSQL checks them but keeps their
// text as written. Transcript lines are text, byte for byte. The keys that
// listings order by are COLLATE "C" (byte order, as SQLite), whatever the
// database's locale, so their indexes serve the order.
var migrations = []string{
	// 1: sessions, messages, runs, outbox, with the indexes that serve the
	// contract's listings in their order.
	`
CREATE TABLE sessions (
	key              text    COLLATE "C" NOT NULL PRIMARY KEY,
	session_id       text    NOT NULL,
	agent_id         text    NOT NULL DEFAULT '',
	kind             text    NOT NULL DEFAULT '',
	channel          text    NOT NULL DEFAULT '',
	chat_type        text    NOT NULL DEFAULT '',
	display_name     text    NOT NULL DEFAULT '',
	label            text    NOT NULL DEFAULT '',
	spawned_by       text    NOT NULL DEFAULT '',
	spawn_depth      integer NOT NULL DEFAULT 0,
	model            text    NOT NULL DEFAULT '',
	thinking_level   text    NOT NULL DEFAULT '',
	verbose_level    text    NOT NULL DEFAULT '',
	context_tokens   bigint  NOT NULL DEFAULT 0,
	input_tokens     bigint  NOT NULL DEFAULT 0,
	output_tokens    bigint  NOT NULL DEFAULT 0,
	total_tokens     bigint  NOT NULL DEFAULT 0,
	system_sent      boolean NOT NULL DEFAULT false,
	aborted_last_run boolean NOT NULL DEFAULT false,
	send_policy      text    NOT NULL DEFAULT '',
	last_channel     text    NOT NULL DEFAULT '',
	last_to          text    NOT NULL DEFAULT '',
	last_account_id  text    NOT NULL DEFAULT '',
	delivery_context json,
	extra            json,
	created_at       bigint  NOT NULL,
	updated_at       bigint  NOT NULL,
	-- store.ClassOf(key), so listings exclude classes in the query.
	key_class        integer NOT NULL DEFAULT 0,
	-- key, session id, label and display name lower-cased by Go (the
	-- same folding for every server locale), joined by U+001F: what
	-- ListOptions.Search matches.
	search           text    NOT NULL DEFAULT ''
);
CREATE INDEX sessions_updated    ON sessions (updated_at DESC, key);
CREATE INDEX sessions_agent      ON sessions (agent_id, updated_at DESC, key);
CREATE INDEX sessions_spawned_by ON sessions (spawned_by, updated_at DESC, key);
CREATE INDEX sessions_kind       ON sessions (kind, updated_at DESC, key);
CREATE INDEX sessions_label      ON sessions (label, updated_at DESC, key);
CREATE INDEX sessions_session_id ON sessions (session_id, key);

CREATE TABLE messages (
	session_id text   NOT NULL,
	seq        bigint NOT NULL,
	entry_id   text   NOT NULL,
	role       text   NOT NULL DEFAULT '',
	run_id     text   NOT NULL DEFAULT '',
	created_at bigint NOT NULL,
	line       text   NOT NULL,
	idem_key   text   NOT NULL DEFAULT '',
	PRIMARY KEY (session_id, seq)
);
CREATE INDEX messages_run ON messages (session_id, run_id, seq);
CREATE UNIQUE INDEX messages_idem ON messages (session_id, idem_key) WHERE idem_key <> '';

CREATE TABLE runs (
	run_id      text   COLLATE "C" NOT NULL PRIMARY KEY,
	session_key text   NOT NULL DEFAULT '',
	session_id  text   NOT NULL DEFAULT '',
	agent_id    text   NOT NULL DEFAULT '',
	lane        text   NOT NULL DEFAULT '',
	status      text   NOT NULL,
	input       json,
	created_at  bigint NOT NULL,
	started_at  bigint NOT NULL DEFAULT 0,
	ended_at    bigint NOT NULL DEFAULT 0,
	error       text   NOT NULL DEFAULT '',
	stop_reason text   NOT NULL DEFAULT '',
	usage       json   NOT NULL DEFAULT '{}'
);
CREATE INDEX runs_status  ON runs (status, created_at, run_id);
CREATE INDEX runs_session ON runs (session_key, created_at, run_id);
CREATE INDEX runs_ended   ON runs (ended_at);

CREATE TABLE outbox (
	id              text    COLLATE "C" NOT NULL PRIMARY KEY,
	kind            text    NOT NULL DEFAULT '',
	session_key     text    NOT NULL DEFAULT '',
	run_id          text    NOT NULL DEFAULT '',
	payload         json,
	status          text    NOT NULL,
	attempts        integer NOT NULL DEFAULT 0,
	next_attempt_at bigint  NOT NULL DEFAULT 0,
	last_error      text    NOT NULL DEFAULT '',
	created_at      bigint  NOT NULL,
	updated_at      bigint  NOT NULL,
	delivered_at    bigint  NOT NULL DEFAULT 0
);
CREATE INDEX outbox_due          ON outbox (status, next_attempt_at, created_at, id);
CREATE INDEX outbox_kind         ON outbox (kind, status, next_attempt_at, created_at, id);
CREATE INDEX outbox_session      ON outbox (session_key, next_attempt_at, created_at, id);
CREATE INDEX outbox_run          ON outbox (run_id);
CREATE INDEX outbox_kind_created ON outbox (kind, created_at DESC, id DESC);
`,
	// 2: the sub-agent registry in its own table (as SQLite's migration 8:
	// records that were outbox items of kind "subagent" move over).
	`
CREATE TABLE subagent_runs (
	child_run_id      text   COLLATE "C" NOT NULL PRIMARY KEY,
	child_session_key text   NOT NULL DEFAULT '',
	requester_key     text   NOT NULL DEFAULT '',
	status            text   NOT NULL,
	archive_at        bigint NOT NULL DEFAULT 0,
	payload           json,
	created_at        bigint NOT NULL,
	updated_at        bigint NOT NULL
);
CREATE INDEX subagent_runs_requester ON subagent_runs (requester_key, created_at DESC, child_run_id DESC);
CREATE INDEX subagent_runs_created   ON subagent_runs (created_at DESC, child_run_id DESC);
CREATE INDEX subagent_runs_child     ON subagent_runs (child_session_key);
CREATE INDEX subagent_runs_archive   ON subagent_runs (status, archive_at) WHERE archive_at > 0;
INSERT INTO subagent_runs
	SELECT run_id, COALESCE(payload->>'childSessionKey', ''), session_key,
		CASE status WHEN 'pending' THEN 'active' ELSE 'retired' END,
		COALESCE((payload->>'archiveAtMs')::bigint, 0), payload, created_at, updated_at
	FROM outbox WHERE kind = 'subagent' AND run_id <> ''
	ON CONFLICT (child_run_id) DO NOTHING;
DELETE FROM outbox WHERE kind = 'subagent';
`,
	// 3: cron jobs and their run history (as SQLite's migration 9).
	`
CREATE TABLE cron_jobs (
	id          text    COLLATE "C" NOT NULL PRIMARY KEY,
	enabled     boolean NOT NULL,
	next_run_at bigint  NOT NULL DEFAULT 0,
	last_tick   bigint  NOT NULL DEFAULT 0,
	spec        text    NOT NULL,
	created_at  bigint  NOT NULL,
	updated_at  bigint  NOT NULL
);
CREATE INDEX cron_jobs_due ON cron_jobs (next_run_at) WHERE enabled AND next_run_at > 0;
CREATE TABLE cron_runs (
	job_id     text   COLLATE "C" NOT NULL REFERENCES cron_jobs (id) ON DELETE CASCADE,
	tick       bigint NOT NULL,
	run_id     text   NOT NULL DEFAULT '',
	status     text   NOT NULL,
	error      text   NOT NULL DEFAULT '',
	started_at bigint NOT NULL,
	ended_at   bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (job_id, tick)
);
`,
	// 4: A2A tasks (as SQLite's migration 10).
	`
CREATE TABLE a2a_tasks (
	peer       text    COLLATE "C" NOT NULL,
	id         text    COLLATE "C" NOT NULL,
	context_id text    COLLATE "C" NOT NULL DEFAULT '',
	state      text    NOT NULL,
	final      boolean NOT NULL,
	run_id     text    NOT NULL DEFAULT '',
	task       text    NOT NULL,
	created_at bigint  NOT NULL,
	updated_at bigint  NOT NULL,
	PRIMARY KEY (peer, id)
);
CREATE INDEX a2a_tasks_peer    ON a2a_tasks (peer, updated_at DESC, id DESC);
CREATE INDEX a2a_tasks_context ON a2a_tasks (peer, context_id, updated_at DESC, id DESC);
CREATE INDEX a2a_tasks_open    ON a2a_tasks (created_at) WHERE NOT final;
`,
	// 5: several gateway nodes on one database: the nodes and their
	// leases, which node runs each session's lane, which node a running
	// run executes on, and run events relayed between nodes. Lease times
	// are the database's clock (timestamptz), so nodes on machines whose
	// clocks differ agree on when a lease ends.
	`
CREATE TABLE nodes (
	node_id      text        COLLATE "C" NOT NULL PRIMARY KEY,
	address      text        NOT NULL DEFAULT '',
	version      text        NOT NULL DEFAULT '',
	state        text        NOT NULL DEFAULT 'active',
	started_at   timestamptz NOT NULL DEFAULT now(),
	heartbeat_at timestamptz NOT NULL DEFAULT now(),
	lease_until  timestamptz NOT NULL,
	active_runs  integer     NOT NULL DEFAULT 0,
	queued_runs  integer     NOT NULL DEFAULT 0,
	lanes        integer     NOT NULL DEFAULT 0
);
CREATE TABLE lanes (
	session_key text        COLLATE "C" NOT NULL PRIMARY KEY,
	node_id     text        COLLATE "C" NOT NULL,
	claimed_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX lanes_node ON lanes (node_id);
ALTER TABLE runs ADD COLUMN node_id text NOT NULL DEFAULT '';
CREATE INDEX runs_running_node ON runs (node_id) WHERE status = 'running';
CREATE INDEX runs_queued_session ON runs (session_key) WHERE status = 'queued';
CREATE TABLE cluster_events (
	id         bigserial   PRIMARY KEY,
	origin     text        NOT NULL,
	body       text        NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX cluster_events_created ON cluster_events (created_at);
`,
	// 6: fencing: every claim of a lane gets a new epoch, which the
	// claiming node's writes for the lane carry (store.Fence); a write
	// whose epoch is no longer the lane's is refused.
	`
CREATE SEQUENCE lane_epochs;
ALTER TABLE lanes ADD COLUMN epoch bigint NOT NULL DEFAULT nextval('lane_epochs');
`,
	// 7: the memory files' keyword index: one row per indexed file and its
	// chunks, with a generated tsvector ('simple' configuration: no
	// stemming, no stop words) under a GIN index.
	`
CREATE TABLE memory_files (
	scope    text   COLLATE "C" NOT NULL,
	path     text   COLLATE "C" NOT NULL,
	hash     text   NOT NULL,
	size     bigint NOT NULL,
	mtime_ns bigint NOT NULL,
	PRIMARY KEY (scope, path)
);
CREATE TABLE memory_chunks (
	id         bigserial PRIMARY KEY,
	scope      text      COLLATE "C" NOT NULL,
	path       text      COLLATE "C" NOT NULL,
	start_line integer   NOT NULL,
	end_line   integer   NOT NULL,
	text       text      NOT NULL,
	search     text      NOT NULL,
	tsv        tsvector  GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, search)) STORED
);
CREATE INDEX memory_chunks_path ON memory_chunks (scope, path);
CREATE INDEX memory_chunks_tsv  ON memory_chunks USING gin (tsv);
`,
	// 8: embeddings of memory chunks by model and text hash (as SQLite's
	// migration 12).
	`
CREATE TABLE memory_vectors (
	model text  COLLATE "C" NOT NULL,
	hash  text  COLLATE "C" NOT NULL,
	vec   bytea NOT NULL,
	PRIMARY KEY (model, hash)
);
`,
	// 9: a finished run's message counts (store.RunStats JSON), for
	// sessions.usage; runs finished before are '{}'.
	`ALTER TABLE runs ADD COLUMN stats json NOT NULL DEFAULT '{}'`,
	// 10: every fenced write share-locks its lane's row (qFenceGuard),
	// which writes the row's header: with a table of a few pages, nodes'
	// concurrent transactions queued on the same few buffers. Lane rows
	// now spread over pages (pages filled later; a database upgraded from
	// 9 spreads its rows as lanes are claimed anew).
	`ALTER TABLE lanes SET (fillfactor = 10)`,
	// 11: fewer index entries per chat turn, as SQLite's migration 14 for
	// runs. A run's insert put it in runs_ended (at 0), and its end moved
	// it in runs_status (running to a terminal status) and in runs_ended:
	// inserts at one hot spot of each index that the nodes' concurrent
	// turns queued on. Each index now holds only the rows its queries look
	// for (live runs, ended runs), and those queries name the index's
	// condition (sqlstore.LiveRuns, ended_at > 0) so that the planner uses
	// it in a generic plan too. (The sessions' indexes by spawned_by and
	// label stay whole: with the condition named, PostgreSQL's planner
	// misjudges a listing by spawner and sorts it.)
	`
DROP INDEX runs_status;
CREATE INDEX runs_live ON runs (status, created_at, run_id) WHERE status IN ('queued', 'running');
DROP INDEX runs_ended;
CREATE INDEX runs_ended ON runs (ended_at) WHERE ended_at > 0;
`,
	// 12: fewer index entries per session update. A turn moves its
	// session's updated_at (an indexed column, so the update is not HOT)
	// and each such update adds an entry to every index whose condition
	// the row meets: sessions_kind served only ListOptions.Kind, which no
	// listing uses (one by kind walks sessions_updated); sessions_label
	// holds only labelled rows (the listing by label names label <> '',
	// so that a generic plan uses it too), and sessions_spawned_by only
	// spawned ones, keyed by NULLIF(spawned_by, '') (the listing by
	// spawner compares that, which implies the index's condition). A
	// plain session's update adds 4 entries instead of 7.
	`
DROP INDEX sessions_kind;
DROP INDEX sessions_label;
CREATE INDEX sessions_label ON sessions (label, updated_at DESC, key) WHERE label <> '';
DROP INDEX sessions_spawned_by;
CREATE INDEX sessions_spawned_by ON sessions (NULLIF(spawned_by, ''), updated_at DESC, key) WHERE NULLIF(spawned_by, '') IS NOT NULL;
`,
}

// schemaVersion is the version this binary migrates to.
func schemaVersion() int { return len(migrations) }

// migrationLock is the advisory lock key that serializes migrations when
// several nodes start at once on one database.
const migrationLock = 0x5357_4d49_4752 // "SWMIGR"

// migrate brings the database up to schemaVersion in one transaction under
// an advisory lock, refusing a database from the future.
func migrate(ctx context.Context, pool *pgxpool.Pool, now func() time.Time) error {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer NOT NULL PRIMARY KEY,
			applied_at bigint  NOT NULL
		)`); err != nil {
			return err
		}
		v, err := versionOf(ctx, tx)
		if err != nil {
			return err
		}
		if v > schemaVersion() {
			return fmt.Errorf("version %d, binary knows %d: %w", v, schemaVersion(), ErrNewerSchema)
		}
		for ; v < schemaVersion(); v++ {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return fmt.Errorf("to version %d: %w", v+1, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)`,
				v+1, now().UnixMilli()); err != nil {
				return fmt.Errorf("to version %d: %w", v+1, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// querier is what versionOf needs of a connection or transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// versionOf reads the schema version; 0 when schema_migrations is missing.
func versionOf(ctx context.Context, q querier) (int, error) {
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return 0, err
	}
	if !exists {
		return 0, nil
	}
	var v int
	err := q.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

// CheckResult is what Check found in a database.
type CheckResult struct {
	// SchemaVersion is the migration the database is at; 0 for a new one.
	SchemaVersion int
	// BinaryVersion is the migration this binary brings databases to.
	BinaryVersion int
	// LiveNodes are the ids of the gateway nodes whose lease has not
	// ended, sorted.
	LiveNodes []string
}

// Check connects to the database at url without migrating it and reads its
// schema version. It is safe while gateways use the database.
func Check(ctx context.Context, url string) (CheckResult, error) {
	res := CheckResult{BinaryVersion: schemaVersion()}
	cfg, err := parseConfig(url)
	if err != nil {
		return res, fmt.Errorf("postgres.Check: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return res, fmt.Errorf("postgres.Check: %w", err)
	}
	defer conn.Close(context.Background())
	if res.SchemaVersion, err = versionOf(ctx, conn); err != nil {
		return res, fmt.Errorf("postgres.Check: schema version: %w", err)
	}
	if res.SchemaVersion > res.BinaryVersion {
		return res, fmt.Errorf("postgres.Check: version %d, binary knows %d: %w", res.SchemaVersion, res.BinaryVersion, ErrNewerSchema)
	}
	if res.SchemaVersion >= 5 { // the nodes table came with migration 5
		rows, err := conn.Query(ctx, `SELECT node_id FROM nodes WHERE lease_until > now() ORDER BY node_id`)
		if err == nil {
			res.LiveNodes, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		if err != nil {
			return res, fmt.Errorf("postgres.Check: nodes: %w", err)
		}
	}
	return res, nil
}
