// Package pgmigrate owns "switchboard migrate": copying a gateway's SQLite
// state (sessions, transcripts, runs, outbox, sub-agent registry) into a PostgreSQL database,
// row for row, and proving the copy with counts and checksums.
//
// The copy upserts by primary key in one PostgreSQL transaction, so it is
// safe to re-run: a second run changes nothing, and a run after the SQLite
// state moved on brings the database up to it. Only the daemon imports it.
package pgmigrate

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, read-only here

	"github.com/switchboardhq/switchboard/internal/lazy"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/postgres"
	"github.com/switchboardhq/switchboard/internal/store/sqlite"
)

// kind is how a column's value is carried from SQLite to PostgreSQL.
type kind byte

const (
	text    kind = 's' // text
	integer kind = 'i' // integer or bigint
	boolean kind = 'b' // SQLite 0/1, PostgreSQL boolean
	jsonDoc kind = 'j' // JSON text in SQLite, json in PostgreSQL (NULL allowed)
)

type column struct {
	name string
	kind kind
}

// table is one copied table: its columns (shared by both schemas) and its
// primary key, which is also the copy and checksum order.
type table struct {
	name string
	cols []column
	key  []string
	// derived adds PostgreSQL-only columns computed from a row.
	derived func(row []any) (names []string, vals []any)
}

// tables lists the tables migrate copies, in copy order.
func tables() []table { return tableList.Get() }

// tableList is built on the first call of tables (the package has no
// init-time work for it).
var tableList = lazy.Value[[]table]{New: buildTables}

// buildTables builds the table list.
func buildTables() []table {
	return []table{
		{
			name: "sessions",
			cols: cols("key s, session_id s, agent_id s, kind s, channel s, chat_type s, display_name s, label s, " +
				"spawned_by s, spawn_depth i, model s, thinking_level s, verbose_level s, context_tokens i, " +
				"input_tokens i, output_tokens i, total_tokens i, system_sent b, aborted_last_run b, send_policy s, " +
				"last_channel s, last_to s, last_account_id s, delivery_context j, extra j, created_at i, updated_at i"),
			key: []string{"key"},
			derived: func(row []any) ([]string, []any) {
				key, sid, label, display := str(row[0]), str(row[1]), str(row[7]), str(row[6])
				return []string{"key_class", "search"},
					[]any{int32(store.ClassOf(key)), postgres.SearchText(key, sid, label, display)}
			},
		},
		{
			name: "messages",
			cols: cols("session_id s, seq i, entry_id s, role s, run_id s, created_at i, line s, idem_key s"),
			key:  []string{"session_id", "seq"},
		},
		{
			name: "runs",
			cols: cols("run_id s, session_key s, session_id s, agent_id s, lane s, status s, input j, created_at i, " +
				"started_at i, ended_at i, error s, stop_reason s, usage j"),
			key: []string{"run_id"},
		},
		{
			name: "outbox",
			cols: cols("id s, kind s, session_key s, run_id s, payload j, status s, attempts i, next_attempt_at i, " +
				"last_error s, created_at i, updated_at i, delivered_at i"),
			key: []string{"id"},
		},
		{
			name: "subagent_runs",
			cols: cols("child_run_id s, child_session_key s, requester_key s, status s, archive_at i, payload j, " +
				"created_at i, updated_at i"),
			key: []string{"child_run_id"},
		},
	}
}

// cols parses "name kind, …".
func cols(spec string) []column {
	var out []column
	for _, f := range strings.Split(spec, ",") {
		name, k, _ := strings.Cut(strings.TrimSpace(f), " ")
		out = append(out, column{name, kind(k[0])})
	}
	return out
}

func str(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return ""
}

// TableReport is the outcome for one table.
type TableReport struct {
	Table string
	// Inserted and Updated count the rows this run wrote.
	Inserted, Updated int64
	// SourceRows and DestRows count the rows on each side after the copy.
	SourceRows, DestRows int64
	// SourceSum and DestSum are SHA-256 digests of the rows in key order,
	// in one canonical text form.
	SourceSum, DestSum string
}

// Match reports whether both sides hold the same rows.
func (r TableReport) Match() bool {
	return r.SourceRows == r.DestRows && r.SourceSum == r.DestSum
}

// Report is the outcome of Copy.
type Report struct {
	Tables []TableReport
}

// OK reports whether every table matches.
func (r Report) OK() bool {
	for _, t := range r.Tables {
		if !t.Match() {
			return false
		}
	}
	return len(r.Tables) > 0
}

// ErrMismatch is returned by Copy when the verification finds the two
// sides different after the copy.
var ErrMismatch = errors.New("the copy does not match its source")

// Copy copies the SQLite database at from into the PostgreSQL database at
// toURL, creating or updating its schema, then verifies every table by
// count and checksum. The SQLite file is brought to this binary's schema
// first (as serve would) and otherwise only read; no gateway may use
// either side meanwhile (the PostgreSQL side is locked as a gateway would
// lock it). It returns ErrMismatch with the report when the tables differ,
// e.g. when the database holds rows the SQLite state never had.
func Copy(ctx context.Context, from, toURL string) (Report, error) {
	if _, err := os.Stat(from); err != nil {
		return Report{}, fmt.Errorf("pgmigrate: source: %w", err)
	}
	src, err := sqlite.Open(ctx, from, sqlite.Options{})
	if err != nil {
		return Report{}, fmt.Errorf("pgmigrate: source: %w", err)
	}
	if err := src.Close(); err != nil {
		return Report{}, fmt.Errorf("pgmigrate: source: %w", err)
	}
	dst, err := postgres.Open(ctx, toURL, postgres.Options{MaxConns: 2})
	if err != nil {
		return Report{}, fmt.Errorf("pgmigrate: destination: %w", err)
	}
	defer dst.Close()
	if err := dst.CheckIdle(ctx); err != nil {
		return Report{}, fmt.Errorf("pgmigrate: destination: %w (stop the gateway that uses it)", err)
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: from}).EscapedPath()+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return Report{}, fmt.Errorf("pgmigrate: source: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := pgx.Connect(ctx, toURL)
	if err != nil {
		return Report{}, fmt.Errorf("pgmigrate: destination: %w", err)
	}
	defer conn.Close(context.Background())

	var rep Report
	// One snapshot of the source, one transaction on the destination.
	rtx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return Report{}, fmt.Errorf("pgmigrate: source: %w", err)
	}
	defer rtx.Rollback()
	err = pgx.BeginFunc(ctx, conn, func(wtx pgx.Tx) error {
		for _, t := range tables() {
			tr, err := copyTable(ctx, rtx, wtx, t)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			rep.Tables = append(rep.Tables, tr)
		}
		return nil
	})
	if err != nil {
		return Report{}, fmt.Errorf("pgmigrate: copy: %w", err)
	}
	for i, t := range tables() {
		tr := &rep.Tables[i]
		if tr.SourceRows, tr.SourceSum, err = digestSQLite(ctx, rtx, t); err != nil {
			return rep, fmt.Errorf("pgmigrate: verify %s: %w", t.name, err)
		}
		if tr.DestRows, tr.DestSum, err = digestPostgres(ctx, conn, t); err != nil {
			return rep, fmt.Errorf("pgmigrate: verify %s: %w", t.name, err)
		}
	}
	if !rep.OK() {
		return rep, fmt.Errorf("pgmigrate: %w", ErrMismatch)
	}
	return rep, nil
}

// batchRows is how many rows go to PostgreSQL per round trip.
const batchRows = 500

// copyTable upserts every row of t from the source into the destination.
func copyTable(ctx context.Context, rtx *sql.Tx, wtx pgx.Tx, t table) (TableReport, error) {
	tr := TableReport{Table: t.name}
	names := make([]string, len(t.cols))
	for i, c := range t.cols {
		names[i] = c.name
	}
	rows, err := rtx.QueryContext(ctx, `SELECT `+strings.Join(names, ", ")+` FROM `+t.name+` ORDER BY `+strings.Join(t.key, ", "))
	if err != nil {
		return tr, err
	}
	defer rows.Close()
	var (
		batch pgx.Batch
		query string
	)
	flush := func() error {
		if batch.Len() == 0 {
			return nil
		}
		res := wtx.SendBatch(ctx, &batch)
		for range batch.Len() {
			var inserted bool
			switch err := res.QueryRow().Scan(&inserted); {
			case errors.Is(err, pgx.ErrNoRows):
				// The row is there as it is in SQLite: not written.
			case err != nil:
				res.Close()
				return err
			case inserted:
				tr.Inserted++
			default:
				tr.Updated++
			}
		}
		batch = pgx.Batch{}
		return res.Close()
	}
	for rows.Next() {
		vals := make([]any, len(t.cols))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return tr, err
		}
		args := make([]any, len(vals))
		for i, c := range t.cols {
			if args[i], err = toPostgres(c, vals[i]); err != nil {
				return tr, err
			}
		}
		allNames := names
		if t.derived != nil {
			dn, dv := t.derived(vals)
			allNames = append(append([]string(nil), names...), dn...)
			args = append(args, dv...)
		}
		if query == "" {
			query = upsertQuery(t, allNames)
		}
		batch.Queue(query, args...)
		if batch.Len() >= batchRows {
			if err := flush(); err != nil {
				return tr, err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return tr, err
	}
	return tr, flush()
}

// upsertQuery inserts a row, or overwrites the one with its key where
// they differ, and says which it did (no row: the two were the same, so a
// re-run rewrites nothing and reports no update).
func upsertQuery(t table, names []string) string {
	ph := make([]string, len(names))
	var set, old, excluded []string
	for i, n := range names {
		ph[i] = "$" + strconv.Itoa(i+1)
		if !slices.Contains(t.key, n) {
			set = append(set, n+" = EXCLUDED."+n)
			o, e := t.name+"."+n, "EXCLUDED."+n
			if slices.Contains(t.cols, column{n, jsonDoc}) {
				o, e = o+"::text", e+"::text" // json has no equality; its text is kept as written
			}
			old, excluded = append(old, o), append(excluded, e)
		}
	}
	return `INSERT INTO ` + t.name + ` (` + strings.Join(names, ", ") + `) VALUES (` + strings.Join(ph, ", ") +
		`) ON CONFLICT (` + strings.Join(t.key, ", ") + `) DO UPDATE SET ` + strings.Join(set, ", ") +
		` WHERE (` + strings.Join(old, ", ") + `) IS DISTINCT FROM (` + strings.Join(excluded, ", ") + `)` +
		` RETURNING (xmax = 0)`
}

// toPostgres converts one SQLite value for column c.
func toPostgres(c column, v any) (any, error) {
	switch c.kind {
	case integer:
		n, ok := v.(int64)
		if !ok {
			return nil, fmt.Errorf("column %s: %T is not an integer", c.name, v)
		}
		return n, nil
	case boolean:
		n, ok := v.(int64)
		if !ok {
			return nil, fmt.Errorf("column %s: %T is not 0 or 1", c.name, v)
		}
		return n != 0, nil
	case jsonDoc:
		if v == nil {
			return nil, nil
		}
		return str(v), nil
	default:
		if v == nil {
			return "", nil
		}
		return str(v), nil
	}
}

// digestSQLite counts and digests t's rows in the source.
func digestSQLite(ctx context.Context, rtx *sql.Tx, t table) (int64, string, error) {
	names := make([]string, len(t.cols))
	for i, c := range t.cols {
		names[i] = c.name
	}
	rows, err := rtx.QueryContext(ctx, `SELECT `+strings.Join(names, ", ")+` FROM `+t.name+` ORDER BY `+strings.Join(t.key, ", "))
	if err != nil {
		return 0, "", err
	}
	defer rows.Close()
	d := newDigest(len(names))
	for rows.Next() {
		if err := rows.Scan(d.ptrs...); err != nil {
			return 0, "", err
		}
		d.add(t.cols)
	}
	if err := rows.Err(); err != nil {
		return 0, "", err
	}
	n, sum := d.sum()
	return n, sum, nil
}

// digestPostgres counts and digests t's rows in the destination, in the
// source's byte order and value forms.
func digestPostgres(ctx context.Context, conn *pgx.Conn, t table) (int64, string, error) {
	exprs := make([]string, len(t.cols))
	for i, c := range t.cols {
		switch c.kind {
		case boolean:
			exprs[i] = c.name + `::int::int8`
		case jsonDoc:
			exprs[i] = c.name + `::text`
		case integer:
			exprs[i] = c.name + `::int8`
		default:
			exprs[i] = c.name
		}
	}
	order := make([]string, len(t.key))
	for i, k := range t.key {
		order[i] = k + ` COLLATE "C"`
		if kindOf(t, k) == integer {
			order[i] = k
		}
	}
	rows, err := conn.Query(ctx, `SELECT `+strings.Join(exprs, ", ")+` FROM `+t.name+` ORDER BY `+strings.Join(order, ", "))
	if err != nil {
		return 0, "", err
	}
	defer rows.Close()
	d := newDigest(len(exprs))
	for rows.Next() {
		if err := rows.Scan(d.ptrs...); err != nil {
			return 0, "", err
		}
		d.add(t.cols)
	}
	if err := rows.Err(); err != nil {
		return 0, "", err
	}
	n, sum := d.sum()
	return n, sum, nil
}

func kindOf(t table, name string) kind {
	for _, c := range t.cols {
		if c.name == name {
			return c.kind
		}
	}
	return text
}

// digest hashes rows in one canonical text form: each value tagged with
// its kind, NULL distinct from the empty string.
type digest struct {
	vals []any
	ptrs []any
	buf  []byte
	sha  hash.Hash
	n    int64
}

func newDigest(n int) *digest {
	d := &digest{vals: make([]any, n), ptrs: make([]any, n), sha: sha256.New()}
	for i := range d.vals {
		d.ptrs[i] = &d.vals[i]
	}
	return d
}

func (d *digest) add(cols []column) {
	d.buf = d.buf[:0]
	for i, v := range d.vals {
		if i > 0 {
			d.buf = append(d.buf, '\t')
		}
		switch v := v.(type) {
		case nil:
			if cols[i].kind == text {
				d.buf = strconv.AppendQuote(d.buf, "") // NOT NULL text: "" on both sides
			} else {
				d.buf = append(d.buf, 'N')
			}
		case int64:
			d.buf = strconv.AppendInt(d.buf, v, 10)
		case int32:
			d.buf = strconv.AppendInt(d.buf, int64(v), 10)
		case bool:
			d.buf = strconv.AppendBool(d.buf, v)
		case string:
			d.buf = strconv.AppendQuote(d.buf, v)
		case []byte:
			d.buf = strconv.AppendQuote(d.buf, string(v))
		default:
			d.buf = fmt.Appendf(d.buf, "%T:%v", v, v)
		}
	}
	d.buf = append(d.buf, '\n')
	d.sha.Write(d.buf)
	d.n++
}

func (d *digest) sum() (int64, string) {
	return d.n, hex.EncodeToString(d.sha.Sum(nil))
}
