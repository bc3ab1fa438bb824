package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/postgres/pgtest"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

// TestListingPlans checks that the listings a gateway runs on every page
// read an index in the listing's order: no sort of the whole table, and no
// sequential scan, on a table of many sessions and outbox items.
func TestListingPlans(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	// 20k sessions over 20 agents, 20k outbox items, made in SQL.
	for _, q := range []string{
		`INSERT INTO sessions (key, session_id, agent_id, kind, spawned_by, label, created_at, updated_at, key_class, search)
		 SELECT 'agent:a' || (i % 20) || ':s' || i, 'sid-' || i, 'a' || (i % 20), 'direct',
		        CASE WHEN i % 10 = 0 THEN 'agent:a0:main' ELSE '' END,
		        CASE WHEN i % 50 = 0 THEN 'l' || (i % 7) ELSE '' END, i, i, 0, 'agent:a:s' || i
		 FROM generate_series(1, 20000) AS i`,
		`INSERT INTO outbox (id, kind, session_key, status, next_attempt_at, created_at, updated_at)
		 SELECT 'o' || i, CASE WHEN i % 2 = 0 THEN 'announce' ELSE 'a2a' END, 'agent:a0:main',
		        CASE WHEN i % 5 = 0 THEN 'pending' ELSE 'delivered' END, i, i, i
		 FROM generate_series(1, 20000) AS i`,
		`ANALYZE`,
	} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	sessionQuery := func(opts store.ListOptions) (string, []any) {
		opts.Limit = 100
		q := sqlstore.Postgres.ListSessions(opts)
		return q.String(), q.Args()
	}
	type plan struct {
		name string
		q    string
		args []any
	}
	var plans []plan
	for _, c := range []struct {
		name string
		opts store.ListOptions
	}{
		{"sessions page", store.ListOptions{}},
		{"sessions of an agent", store.ListOptions{AgentID: "a7"}},
		{"sessions spawned by", store.ListOptions{SpawnedBy: "agent:a0:main"}},
		{"sessions by label", store.ListOptions{Label: "l3"}},
		{"sessions excluding classes", store.ListOptions{Exclude: store.ClassSubagent | store.ClassCronRun}},
	} {
		q, args := sessionQuery(c.opts)
		plans = append(plans, plan{c.name, q, args})
	}
	for _, c := range []struct {
		name string
		f    store.OutboxFilter
	}{
		{"outbox due", store.OutboxFilter{DueBefore: time.UnixMilli(1 << 40), Limit: 100}},
		{"outbox of a kind due", store.OutboxFilter{Kind: "announce", DueBefore: time.UnixMilli(1 << 40), Limit: 100}},
		{"outbox newest of a kind", store.OutboxFilter{Kind: "announce", Newest: true, Limit: 100}},
	} {
		q, _, _ := sqlstore.Postgres.ListOutbox(c.f)
		plans = append(plans, plan{c.name, q.String(), q.Args()})
	}
	for _, p := range plans {
		rows, err := s.pool.Query(ctx, `EXPLAIN `+p.q, p.args...)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		var lines []string
		for rows.Next() {
			var l string
			if err := rows.Scan(&l); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, l)
		}
		rows.Close()
		text := strings.Join(lines, "\n")
		if !strings.Contains(text, "Index") || strings.Contains(text, "Seq Scan") || strings.Contains(text, "Sort") {
			t.Errorf("%s: plan does not read an index in order:\n%s", p.name, text)
		}
	}
	// The listings by spawner and by label read their partial indexes in
	// a generic plan too (the parameter unknown), as the store's cached
	// statements get after a few runs: the index's condition follows from
	// the query's text, not from the value.
	conn := genericConn(ctx, t, s)
	for _, p := range []struct {
		name, index string
		opts        store.ListOptions
	}{
		{"generic spawned by", "sessions_spawned_by", store.ListOptions{SpawnedBy: "agent:a0:main"}},
		{"generic label", "sessions_label", store.ListOptions{Label: "l3"}},
	} {
		q, args := sessionQuery(p.opts)
		if text := explainGeneric(ctx, t, conn, p.name, q, args); !strings.Contains(text, p.index) || strings.Contains(text, "Sort") {
			t.Errorf("%s: plan does not read %s in order:\n%s", p.name, p.index, text)
		}
	}
	// And the page itself comes back in order.
	got, err := s.ListSessions(ctx, store.ListOptions{AgentID: "a7", Limit: 100})
	if err != nil || len(got) != 100 || got[0].Key != "agent:a7:s19987" {
		t.Fatalf("ListSessions = %d rows (first %v), %v", len(got), got[0].Key, err)
	}
}

// TestRunPlans checks that the queries by a run's status and by its end
// read the partial indexes that hold only live runs (runs_live) and ended
// runs (runs_ended), in a generic plan (the parameters unknown), on a table
// of many ended runs and a few live ones.
func TestRunPlans(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	for _, q := range []string{
		`INSERT INTO runs (run_id, session_key, session_id, status, created_at, started_at, ended_at)
		 SELECT 'r' || i, 'agent:a:s' || (i % 500), 'sid-' || (i % 500),
		        CASE WHEN i % 1000 = 0 THEN 'queued' ELSE 'ok' END, i, i,
		        CASE WHEN i % 1000 = 0 THEN 0 ELSE i + 1 END
		 FROM generate_series(1, 20000) AS i`,
		`ANALYZE`,
	} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	conn := genericConn(ctx, t, s)
	live, err := sqlstore.Postgres.ListRuns(store.RunFilter{Statuses: []store.RunStatus{store.RunQueued}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		name, index, q string
		args           []any
	}{
		{"queued runs", "runs_live", live.String(), live.Args()},
		{"runs usage", "runs_ended", qRunsUsage, []any{int64(0), int64(1 << 40), "", "", 100}},
		{"usage by day", "runs_ended", qUsageByDay, []any{int64(0), int64(0), int64(1 << 40)}},
	} {
		text := explainGeneric(ctx, t, conn, p.name, p.q, p.args)
		if !strings.Contains(text, p.index) {
			t.Errorf("%s: plan does not read %s:\n%s", p.name, p.index, text)
		}
	}
}

// TestNewerSchemaRefused checks that a database migrated by a newer binary
// is refused by Open and reported by Check, and that Check leaves a new
// database unmigrated.
func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DB(t)
	res, err := Check(ctx, dsn)
	if err != nil || res.SchemaVersion != 0 || res.BinaryVersion != schemaVersion() {
		t.Fatalf("Check(new) = %+v, %v", res, err)
	}
	s, err := Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := Check(ctx, dsn); err != nil || res.SchemaVersion != schemaVersion() {
		t.Fatalf("Check(migrated) = %+v, %v", res, err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO schema_migrations VALUES (999, 0)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(ctx, dsn, Options{}); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("Open(newer) = %v, want ErrNewerSchema", err)
	}
	if _, err := Check(ctx, dsn); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("Check(newer) = %v, want ErrNewerSchema", err)
	}
}

// TestOpenBadURL checks that a malformed URL is refused without echoing
// the password it may hold, and that an unreachable server fails Open.
func TestOpenBadURL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, u := range []string{"", "postgres://user:s3cret@host:notaport/db", "postgres://u:s3cret@[::1/x"} {
		_, err := Open(ctx, u, Options{})
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open(%q) = %v; want an error without the password", u, err)
		}
	}
	if _, err := Open(ctx, "postgres://u:s3cret@127.0.0.1:1/db?connect_timeout=2", Options{}); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Open(unreachable) = %v", err)
	}
}

// genericConn returns a connection of s's pool that plans every prepared
// statement generically, released when the test ends.
func genericConn(ctx context.Context, t *testing.T, s *Store) *pgxpool.Conn {
	t.Helper()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Release)
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	return conn
}

// explainGeneric prepares q on conn (which has plan_cache_mode set to
// force_generic_plan) as name and returns the plan of its execution with
// args: the generic plan the store's cached statements get.
func explainGeneric(ctx context.Context, t *testing.T, conn *pgxpool.Conn, name, q string, args []any) string {
	t.Helper()
	name = strings.ReplaceAll(name, " ", "_")
	if _, err := conn.Exec(ctx, `PREPARE `+name+` AS `+q); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	params := make([]string, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			params[i] = "'" + v + "'"
		case []string:
			params[i] = "'{" + strings.Join(v, ",") + "}'"
		default:
			params[i] = fmt.Sprint(v)
		}
	}
	rows, err := conn.Query(ctx, `EXPLAIN EXECUTE `+name+`(`+strings.Join(params, ", ")+`)`)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
