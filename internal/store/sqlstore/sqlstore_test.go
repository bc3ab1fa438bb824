package sqlstore

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

func TestQ(t *testing.T) {
	for _, c := range []struct{ in, sqlite, pg string }{
		{`SELECT 1`, `SELECT 1`, `SELECT 1`},
		{`a = ? AND b = ?`, `a = ? AND b = ?`, `a = $1 AND b = $2`},
		{`SET a = ?2 WHERE k = ?1`, `SET a = ?2 WHERE k = ?1`, `SET a = $2 WHERE k = $1`},
		{`VALUES (?,?,?)`, `VALUES (?,?,?)`, `VALUES ($1,$2,$3)`},
		{`x = '?' AND "a?" = ?`, `x = '?' AND "a?" = ?`, `x = '?' AND "a?" = $1`},
		{`?10 + ?`, `?10 + ?`, `$10 + $1`},
	} {
		if got := SQLite.Q(c.in); got != c.sqlite {
			t.Errorf("SQLite.Q(%q) = %q, want %q", c.in, got, c.sqlite)
		}
		if got := Postgres.Q(c.in); got != c.pg {
			t.Errorf("Postgres.Q(%q) = %q, want %q", c.in, got, c.pg)
		}
	}
}

func TestListRunsQuery(t *testing.T) {
	f := store.RunFilter{SessionKey: "k", Statuses: []store.RunStatus{store.RunQueued, store.RunRunning},
		SessionKeys: []string{"a"}, Newest: true, Limit: 5}
	for _, c := range []struct {
		d    Dialect
		want string
		args []any
	}{
		{SQLite, `SELECT ` + RunCols + ` FROM runs WHERE 1 AND session_key = ? AND status IN (SELECT value FROM json_each(?)) AND ` + LiveRuns + ` AND session_key IN (SELECT value FROM json_each(?)) ORDER BY created_at DESC, run_id DESC LIMIT ?`,
			[]any{"k", `["queued","running"]`, `["a"]`, 5}},
		{Postgres, `SELECT ` + RunCols + ` FROM runs WHERE true AND session_key = $1 AND status = ANY($2) AND ` + LiveRuns + ` AND session_key = ANY($3) ORDER BY created_at DESC, run_id DESC LIMIT $4`,
			[]any{"k", []string{"queued", "running"}, []string{"a"}, 5}},
	} {
		q, err := c.d.ListRuns(f)
		if err != nil {
			t.Fatal(err)
		}
		if q.String() != c.want {
			t.Errorf("dialect %d:\n got %s\nwant %s", c.d, q.String(), c.want)
		}
		if !slices.EqualFunc(q.Args(), c.args, func(a, b any) bool { return fmtAny(a) == fmtAny(b) }) {
			t.Errorf("dialect %d: args %v, want %v", c.d, q.Args(), c.args)
		}
	}
}

func TestLimitOffset(t *testing.T) {
	for _, c := range []struct {
		d             Dialect
		limit, offset int
		want          string
		n             int
	}{
		{SQLite, 0, 0, ``, 0},
		{SQLite, 3, 0, ` LIMIT ? OFFSET ?`, 2},
		{SQLite, 0, 4, ` LIMIT -1 OFFSET ?`, 1},
		{Postgres, 3, 0, ` LIMIT $1`, 1},
		{Postgres, 0, 4, ` OFFSET $1`, 1},
		{Postgres, 3, 4, ` LIMIT $1 OFFSET $2`, 2},
	} {
		q := c.d.NewQuery("")
		q.LimitOffset(c.limit, c.offset)
		if q.String() != c.want || len(q.Args()) != c.n {
			t.Errorf("dialect %d LimitOffset(%d, %d) = %q %v, want %q with %d args", c.d, c.limit, c.offset, q.String(), q.Args(), c.want, c.n)
		}
	}
}

func fmtAny(v any) string {
	switch v := v.(type) {
	case []string:
		return "[]" + string(mustJSON(v))
	default:
		return string(mustJSON(v))
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func TestHistoryStmt(t *testing.T) {
	for _, c := range []struct {
		opts store.HistoryOptions
		stmt string
		args []any
	}{
		{store.HistoryOptions{}, HistoryAll, []any{"s", int64(math.MaxInt64)}},
		{store.HistoryOptions{Limit: 5, BeforeSeq: 9}, HistoryTail, []any{"s", int64(9), 5}},
		{store.HistoryOptions{RunID: "r"}, HistoryRunAll, []any{"s", "r", int64(math.MaxInt64)}},
		{store.HistoryOptions{RunID: "r", Limit: 2}, HistoryRunTail, []any{"s", "r", int64(math.MaxInt64), 2}},
	} {
		i, args := HistoryStmt("s", c.opts)
		if HistoryStmts[i] != c.stmt || !slices.Equal(args, c.args) {
			t.Errorf("HistoryStmt(%+v) = %q %v, want %q %v", c.opts, HistoryStmts[i], args, c.stmt, c.args)
		}
	}
}

func TestListOutboxQuery(t *testing.T) {
	due := time.UnixMilli(1000)
	if _, ok, err := SQLite.ListOutbox(store.OutboxFilter{DueBefore: due, Statuses: []store.OutboxStatus{store.OutboxDead}}); ok || err != nil {
		t.Errorf("due dead items: ok %v, err %v; want a query that matches nothing", ok, err)
	}
	for _, c := range []struct {
		d    Dialect
		f    store.OutboxFilter
		want string
	}{
		{SQLite, store.OutboxFilter{DueBefore: due, Limit: 10},
			`SELECT ` + OutboxCols + ` FROM outbox WHERE 1 AND next_attempt_at <= ? AND status = ? ORDER BY next_attempt_at, created_at, id LIMIT ? OFFSET ?`},
		{Postgres, store.OutboxFilter{Kind: "a2a", Statuses: []store.OutboxStatus{store.OutboxPending, store.OutboxDead}, Newest: true},
			`SELECT ` + OutboxCols + ` FROM outbox WHERE true AND kind = $1 AND status = ANY($2) ORDER BY created_at DESC, id DESC`},
	} {
		q, ok, err := c.d.ListOutbox(c.f)
		if !ok || err != nil || q.String() != c.want {
			t.Errorf("dialect %d ListOutbox(%+v):\n got %v %v %s\nwant %s", c.d, c.f, ok, err, q.String(), c.want)
		}
	}
}

func TestFlagStatements(t *testing.T) {
	for _, c := range []struct {
		d                  Dialect
		due, claim, open   string
		enabled, falseFlag any
	}{
		{SQLite,
			`WHERE enabled = 1 AND next_run_at > 0 AND next_run_at <= ? ORDER BY next_run_at, id LIMIT ?`,
			`WHERE id = ?1 AND enabled = 1 AND next_run_at = ?2`,
			`FROM a2a_tasks WHERE final = 0
		ORDER BY created_at, peer, id LIMIT ?`, int64(1), int64(0)},
		{Postgres,
			`WHERE enabled AND next_run_at > 0 AND next_run_at <= $1 ORDER BY next_run_at, id LIMIT $2`,
			`WHERE id = $1 AND enabled AND next_run_at = $2`,
			`FROM a2a_tasks WHERE NOT final
		ORDER BY created_at, peer, id LIMIT $1`, true, false},
	} {
		for _, s := range []struct{ got, tail string }{
			{c.d.DueCronJobs(), c.due}, {c.d.ClaimCronTick(), c.claim}, {c.d.OpenA2ATasks(), c.open},
		} {
			if !strings.HasSuffix(s.got, s.tail) {
				t.Errorf("dialect %d: %q does not end in %q", c.d, s.got, s.tail)
			}
		}
		now := time.UnixMilli(5000)
		job := c.d.CronJobArgs(&store.CronJob{ID: "j", Enabled: true, NextRunAt: time.UnixMilli(7)}, now)
		if want := []any{"j", c.enabled, int64(7), int64(0), "{}", int64(5000)}; !slices.Equal(job, want) {
			t.Errorf("dialect %d: cron job args %v, want %v", c.d, job, want)
		}
		task := c.d.A2ATaskArgs(&store.A2ATask{Peer: "p", ID: "t", State: "working", Task: json.RawMessage(`{"a":1}`)}, now)
		if want := []any{"p", "t", "", "working", c.falseFlag, "", `{"a":1}`, int64(5000)}; !slices.Equal(task, want) {
			t.Errorf("dialect %d: A2A task args %v, want %v", c.d, task, want)
		}
	}
}

// TestSessionWrites checks the session writes made from SessionCols against
// the statements the stores wrote out by hand before.
func TestSessionWrites(t *testing.T) {
	sets := `session_id = ?2, agent_id = ?3, kind = ?4, channel = ?5, chat_type = ?6,
		display_name = ?7, label = ?8, spawned_by = ?9, spawn_depth = ?10,
		model = ?11, thinking_level = ?12, verbose_level = ?13,
		context_tokens = ?14, input_tokens = ?15, output_tokens = ?16, total_tokens = ?17,
		system_sent = ?18, aborted_last_run = ?19, send_policy = ?20,
		last_channel = ?21, last_to = ?22, last_account_id = ?23,
		delivery_context = ?24, extra = ?25, created_at = ?26, updated_at = ?27`
	excluded := `session_id = excluded.session_id, agent_id = excluded.agent_id,
		kind = excluded.kind, channel = excluded.channel,
		chat_type = excluded.chat_type, display_name = excluded.display_name,
		label = excluded.label, spawned_by = excluded.spawned_by,
		spawn_depth = excluded.spawn_depth, model = excluded.model,
		thinking_level = excluded.thinking_level, verbose_level = excluded.verbose_level,
		context_tokens = excluded.context_tokens, input_tokens = excluded.input_tokens,
		output_tokens = excluded.output_tokens, total_tokens = excluded.total_tokens,
		system_sent = excluded.system_sent, aborted_last_run = excluded.aborted_last_run,
		send_policy = excluded.send_policy, last_channel = excluded.last_channel,
		last_to = excluded.last_to, last_account_id = excluded.last_account_id,
		delivery_context = excluded.delivery_context, extra = excluded.extra,
		created_at = excluded.created_at, updated_at = excluded.updated_at`
	values := func(n int) string { return strings.TrimSuffix(strings.Repeat("?,", n), ",") }
	for _, c := range []struct{ got, want string }{
		{SQLite.InsertSession("key_class"), `INSERT INTO sessions (` + SessionCols + `, key_class)
			VALUES (` + values(28) + `) ON CONFLICT (key) DO NOTHING`},
		{UpsertSession("key_class"), `INSERT INTO sessions (` + SessionCols + `, key_class)
			VALUES (` + values(28) + `) ON CONFLICT (key) DO UPDATE SET ` + excluded},
		{Postgres.InsertSession("key_class", "search"), Postgres.Q(`INSERT INTO sessions (` + SessionCols + `, key_class, search)
			VALUES (` + values(29) + `) ON CONFLICT (key) DO NOTHING`)},
		{Postgres.PutSession("key_class", "search"), Postgres.Q(`UPDATE sessions SET ` + sets +
			`, key_class = ?28, search = ?29 WHERE key = ?1`)},
		{Qualify("runs", `run_id, session_key,
			usage`), `runs.run_id, runs.session_key, runs.usage`},
	} {
		if g, w := strings.Join(strings.Fields(c.got), " "), strings.Join(strings.Fields(c.want), " "); g != w {
			t.Errorf("\n got %s\nwant %s", g, w)
		}
	}
}

func TestRunEndArgs(t *testing.T) {
	now := time.UnixMicro(5_000_123)
	items := []store.OutboxItem{{ID: "a", Kind: "k"}, {ID: "b", Kind: "k", RunID: "other"}}
	ended, outbox, err := RunEndArgs("r1", time.Time{}, items, now)
	if err != nil {
		t.Fatal(err)
	}
	if !ended.Equal(time.UnixMilli(5_000)) {
		t.Errorf("ended %v, want now at the stored resolution", ended)
	}
	if len(outbox) != 2 || !slices.Contains(outbox[0], any("r1")) || !slices.Contains(outbox[1], any("other")) {
		t.Errorf("outbox args %v: want the run's id on the first item only", outbox)
	}
	if items[0].RunID != "" {
		t.Error("RunEndArgs changed the caller's items")
	}
	at := time.UnixMilli(7)
	if ended, _, _ := RunEndArgs("r1", at, nil, now); !ended.Equal(at) {
		t.Errorf("ended %v, want %v", ended, at)
	}
	_, _, err = RunEndArgs("r1", at, []store.OutboxItem{{ID: "a", Kind: "k"}, {Kind: "k"}}, now)
	if err == nil || !strings.HasPrefix(err.Error(), "outbox item 1: ") {
		t.Errorf("error %v, want one naming outbox item 1", err)
	}
}

func TestNewRun(t *testing.T) {
	now := time.UnixMilli(9)
	clock := func() time.Time { return now }
	if c := NewRun(&store.Run{RunID: "r"}, clock); c.Status != store.RunQueued || !c.CreatedAt.Equal(now) {
		t.Errorf("defaults: %+v", c)
	}
	at := time.UnixMilli(3)
	if c := NewRun(&store.Run{RunID: "r", Status: store.RunRunning, CreatedAt: at}, clock); c.Status != store.RunRunning || !c.CreatedAt.Equal(at) {
		t.Errorf("set fields changed: %+v", c)
	}
	r := &store.Run{RunID: "r", CreatedAt: time.UnixMicro(1_500), EndedAt: time.UnixMicro(2_999)}
	if c := StoredRun(r); !c.CreatedAt.Equal(time.UnixMilli(1)) || !c.EndedAt.Equal(time.UnixMilli(2)) || c == r {
		t.Errorf("StoredRun: %+v", c)
	}
}

func TestMessageRows(t *testing.T) {
	out := []store.Message{{Role: "user", RunID: "r"}, {Role: "assistant", RunID: "r"}}
	out[0].Entry.ID, out[1].Entry.ID = "e1", "e2"
	rows := MessageRows{SessionID: "s", IdemKey: "k", Seq: 4, PrevID: "e0"}
	var args []any
	for i := range out {
		var err error
		if args, err = rows.Append(args, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	if len(args) != 16 {
		t.Fatalf("%d arguments, want two rows of 8", len(args))
	}
	for i, want := range []struct {
		seq      int64
		id, key  string
		parentID string
	}{{5, "e1", "k", "e0"}, {6, "e2", "", "e1"}} {
		row := args[8*i : 8*i+8]
		if row[0] != "s" || row[1] != want.seq || row[2] != want.id || row[7] != want.key {
			t.Errorf("row %d: %v", i, row)
		}
		if p := out[i].Entry.ParentID; p == nil || *p != want.parentID {
			t.Errorf("message %d: parent %v, want %q", i, p, want.parentID)
		}
	}
}
