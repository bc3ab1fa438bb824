package sqlite

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlstore"
)

// TestQueryPlans checks that the hot queries use their indexes and need no
// sort, so they stay fast on large tables.
func TestQueryPlans(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	due := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		query string
		args  []any
		want  string // substring of the plan
	}{
		{"list", `SELECT ` + sqlstore.SessionCols + ` FROM sessions WHERE 1 ORDER BY updated_at DESC, key LIMIT ? OFFSET ?`, []any{200, 0}, "sessions_updated"},
		{"list since", `SELECT ` + sqlstore.SessionCols + ` FROM sessions WHERE 1 AND updated_at >= ? ORDER BY updated_at DESC, key LIMIT ? OFFSET ?`, []any{0, 200, 0}, "sessions_updated"},
		{"list agent", `SELECT ` + sqlstore.SessionCols + ` FROM sessions WHERE 1 AND agent_id = ? ORDER BY updated_at DESC, key LIMIT ? OFFSET ?`, []any{"a", 200, 0}, "sessions_agent"},
		{"list kind", `SELECT ` + sqlstore.SessionCols + ` FROM sessions WHERE 1 AND kind = ? ORDER BY updated_at DESC, key LIMIT ? OFFSET ?`, []any{"a", 200, 0}, "sessions_updated"}, // no index by kind (migration 15)
		{"by id", sqlstore.SessionsByID, []any{"x"}, "sessions_session_id"},
		{"history tail", sqlstore.HistoryTail, []any{"x", 10, 50}, "sqlite_autoindex_messages_1"},
		{"history all", sqlstore.HistoryAll, []any{"x", 10}, "sqlite_autoindex_messages_1"},
		{"last entry", qLastEntry, []any{"x"}, "sqlite_autoindex_messages_1"},
		{"history run tail", sqlstore.SQLite.HistoryStmts()[0], []any{"x", "r", 10, 50}, "sqlite_autoindex_messages_1 (session_id=? AND seq>? AND seq<?)"}, // no index by run (migration 16)
		{"history run all", sqlstore.SQLite.HistoryStmts()[1], []any{"x", "r", 10}, "sqlite_autoindex_messages_1 (session_id=? AND seq>? AND seq<?)"},
		{"run lines", qRunLines, []any{"x", "r"}, "sqlite_autoindex_messages_1 (session_id=? AND seq>?)"},
		{"next seq", qInsertRun, []any{"r", "k", "x", "", "", "ok", nil, 0, 0, 0, "", "", "{}"}, "sqlite_autoindex_messages_1 (session_id=?)"},
		{"unbound live runs", qUnboundLiveRuns, []any{"x"}, "runs_live"},
		{"count", sqlstore.CountMessages, []any{"x"}, "sqlite_autoindex_messages_1"},
		{"running", qRunning, nil, "runs_live"},
		{"abort sessions", qAbortSessions, nil, "runs_live"},
		{"abort runs", qAbortRuns, []any{1, "x"}, "runs_live"},
		{"usage by day", qUsageByDay, []any{0, 1, 2}, "runs_ended"},
		{"runs usage", qRunsUsage, []any{1, 2, "", "", "", "", 10}, "runs_ended"},
		{"runs by session", `SELECT ` + sqlstore.RunCols + ` FROM runs WHERE 1 AND session_key = ? ORDER BY created_at, run_id`, []any{"k"}, "runs_session"},
		{"runs by status", `SELECT ` + sqlstore.RunCols + ` FROM runs WHERE 1 AND status IN (SELECT value FROM json_each(?)) AND ` + sqlstore.LiveRuns + ` ORDER BY created_at, run_id`, []any{`["queued"]`}, "runs_live"},
		{"outbox get", qGetOutbox, []any{"x"}, "sqlite_autoindex_outbox_1"},
	}
	for _, o := range []struct {
		name string
		f    store.OutboxFilter
		want string
	}{
		{"outbox due", store.OutboxFilter{DueBefore: due, Limit: 100}, "outbox_due"},
		{"outbox status", store.OutboxFilter{Statuses: []store.OutboxStatus{store.OutboxDead}, Limit: 100}, "outbox_due"},
		{"outbox due kind", store.OutboxFilter{Kind: "a2a", DueBefore: due, Limit: 100}, "outbox_kind"},
		{"outbox session", store.OutboxFilter{SessionKey: "k"}, "outbox_session"},
		{"outbox run", store.OutboxFilter{RunID: "r"}, "outbox_run"},
	} {
		q, ok, err := sqlstore.SQLite.ListOutbox(o.f)
		if err != nil || !ok {
			t.Fatalf("%s: ListOutbox = %v, %v", o.name, ok, err)
		}
		tests = append(tests, struct {
			name  string
			query string
			args  []any
			want  string
		}{o.name, q.String(), q.Args(), o.want})
	}
	for _, l := range []struct {
		name string
		opts store.ListOptions
		want string
	}{
		{"list spawnedBy", store.ListOptions{SpawnedBy: "a", Limit: 200}, "sessions_spawned_by"},
		{"list label", store.ListOptions{Label: "a", Limit: 200}, "sessions_label"},
	} {
		q := sqlstore.SQLite.ListSessions(l.opts)
		tests = append(tests, struct {
			name  string
			query string
			args  []any
			want  string
		}{l.name, q.String(), q.Args(), l.want})
	}
	for _, tt := range tests {
		rows, err := s.r.QueryContext(ctx, "EXPLAIN QUERY PLAN "+tt.query, tt.args...)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		p := strings.Join(plan, "; ")
		if !strings.Contains(p, tt.want) {
			t.Errorf("%s: plan %q does not use %s", tt.name, p, tt.want)
		}
		if strings.Contains(p, "TEMP B-TREE") && tt.name != "runs by status" && tt.name != "outbox run" &&
			tt.name != "usage by day" && tt.name != "runs usage" {
			t.Errorf("%s: plan %q sorts", tt.name, p)
		}
		t.Logf("%s: %s", tt.name, p)
	}
}
