package sqlstore

import (
	"encoding/json"
	"fmt"
	"github.com/switchboardhq/switchboard/internal/lazy"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// SessionCols lists the sessions columns in the order ScanSession and
// SessionArgs use.
const SessionCols = `key, session_id, agent_id, kind, channel, chat_type,
	display_name, label, spawned_by, spawn_depth,
	model, thinking_level, verbose_level,
	context_tokens, input_tokens, output_tokens, total_tokens,
	system_sent, aborted_last_run, send_policy,
	last_channel, last_to, last_account_id, delivery_context, extra,
	created_at, updated_at`

// Statements on sessions.
const (
	GetSession = `SELECT ` + SessionCols + ` FROM sessions WHERE key = ?`

	SessionsByID = `SELECT ` + SessionCols + ` FROM sessions WHERE session_id = ? ORDER BY key`

	DeleteSession = `DELETE FROM sessions WHERE key = ? RETURNING session_id`

	SessionIDInUse = `SELECT EXISTS (SELECT 1 FROM sessions WHERE session_id = ?)`

	DeleteTranscript = `DELETE FROM messages WHERE session_id = ?`
)

// sessionColNames is SessionCols, one name each.
var sessionColNames = lazy.Value[[]string]{New: func() []string { return colNames(SessionCols) }}

// InsertSession is the insert of a new session row, in d: SessionCols, then
// the store's derived columns extra, in the order of SessionArgs(s,
// extra's values...). A row with the key already there is left alone.
func (d Dialect) InsertSession(extra ...string) string {
	return d.Q(insertSession(extra) + `
		ON CONFLICT (key) DO NOTHING`)
}

// UpsertSession is the write of a whole session row (SQLite's): the insert
// of InsertSession that, for a key already there, sets every column of
// SessionCols but the key. The derived columns extra are written with a new
// row only: they follow from the key.
func UpsertSession(extra ...string) string {
	var b strings.Builder
	b.WriteString(insertSession(extra))
	b.WriteString(`
		ON CONFLICT (key) DO UPDATE SET `)
	for i, c := range sessionColNames.Get()[1:] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c + " = excluded." + c)
	}
	return b.String()
}

// PutSession is the overwrite of the session row with key ?1, in d: every
// column of SessionCols but the key, then extra, in the order of
// SessionArgs(s, extra's values...).
func (d Dialect) PutSession(extra ...string) string {
	var b strings.Builder
	b.WriteString(`UPDATE sessions SET `)
	for i, c := range append(slices.Clone(sessionColNames.Get()[1:]), extra...) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c + " = ?" + strconv.Itoa(i+2))
	}
	b.WriteString(`
		WHERE key = ?1`)
	return d.Q(b.String())
}

// insertSession is the INSERT ... VALUES of a session row with extra.
func insertSession(extra []string) string {
	cols := append(slices.Clone(sessionColNames.Get()), extra...)
	return `INSERT INTO sessions (` + strings.Join(cols, ", ") + `)
		VALUES (` + strings.TrimSuffix(strings.Repeat("?,", len(cols)), ",") + `)`
}

// ScanSession reads one row of SessionCols. Booleans are SQLite integers
// (0 or 1) or PostgreSQL booleans.
func ScanSession(sc Scanner) (*store.Session, error) {
	var (
		s                store.Session
		dc, extra        []byte
		created, updated int64
	)
	err := sc.Scan(&s.Key, &s.SessionID, &s.AgentID, &s.Kind, &s.Channel, &s.ChatType,
		&s.DisplayName, &s.Label, &s.SpawnedBy, &s.SpawnDepth,
		&s.Model, &s.ThinkingLevel, &s.VerboseLevel,
		&s.ContextTokens, &s.InputTokens, &s.OutputTokens, &s.TotalTokens,
		&s.SystemSent, &s.AbortedLastRun, &s.SendPolicy,
		&s.LastChannel, &s.LastTo, &s.LastAccountID, &dc, &extra,
		&created, &updated)
	if err != nil {
		return nil, err
	}
	if dc != nil {
		s.DeliveryContext = new(store.DeliveryContext)
		if err := json.Unmarshal(dc, s.DeliveryContext); err != nil {
			return nil, fmt.Errorf("session %q: deliveryContext: %w", s.Key, err)
		}
	}
	if extra != nil {
		s.Extra = json.RawMessage(extra)
	}
	s.CreatedAt = FromMs(created)
	s.UpdatedAt = FromMs(updated)
	return &s, nil
}

// SessionArgs returns s as arguments in SessionCols order, then more (the
// columns a store derives from the row).
func SessionArgs(s *store.Session, more ...any) ([]any, error) {
	var dc, extra any // nil stores NULL
	if s.DeliveryContext != nil {
		b, err := json.Marshal(s.DeliveryContext)
		if err != nil {
			return nil, err
		}
		dc = string(b)
	}
	if s.Extra != nil {
		if !json.Valid(s.Extra) {
			return nil, fmt.Errorf("session %q: extra is not valid JSON", s.Key)
		}
		extra = string(s.Extra)
	}
	return append(append(make([]any, 0, 27+len(more)),
		s.Key, s.SessionID, s.AgentID, s.Kind, s.Channel, s.ChatType,
		s.DisplayName, s.Label, s.SpawnedBy, s.SpawnDepth,
		s.Model, s.ThinkingLevel, s.VerboseLevel,
		s.ContextTokens, s.InputTokens, s.OutputTokens, s.TotalTokens,
		s.SystemSent, s.AbortedLastRun, s.SendPolicy,
		s.LastChannel, s.LastTo, s.LastAccountID, dc, extra,
		ToMs(s.CreatedAt), ToMs(s.UpdatedAt)), more...), nil
}

// DefaultTimes sets a zero CreatedAt and UpdatedAt of sess to now() and
// both to the stored resolution.
func DefaultTimes(sess *store.Session, now func() time.Time) {
	if sess.CreatedAt.IsZero() || sess.UpdatedAt.IsZero() {
		t := now()
		if sess.CreatedAt.IsZero() {
			sess.CreatedAt = t
		}
		if sess.UpdatedAt.IsZero() {
			sess.UpdatedAt = t
		}
	}
	sess.CreatedAt = store.Millis(sess.CreatedAt)
	sess.UpdatedAt = store.Millis(sess.UpdatedAt)
}

// ListSessions is the query of store.Store's ListSessions for opts, in d.
func (d Dialect) ListSessions(opts store.ListOptions) *Query {
	q := d.sessionWhere(`SELECT `+SessionCols+` FROM sessions`, opts)
	q.Write(` ORDER BY updated_at DESC, key`)
	q.LimitOffset(opts.Limit, opts.Offset)
	return q
}

// partialNonEmpty adds, in SQLite, that col is not the empty string (true
// beside col = a non-empty value): SQLite's index by spawned_by holds only
// such rows, and its planner uses it only for a query that says so.
func (q *Query) partialNonEmpty(col string) {
	if q.d == SQLite {
		q.Write(` AND ` + col + ` != ''`)
	}
}

// CountSessions is the query of store.Store's CountSessions for opts, in d.
func (d Dialect) CountSessions(opts store.ListOptions) *Query {
	return d.sessionWhere(`SELECT COUNT(*) FROM sessions`, opts)
}

// sessionWhere starts a query with head and the WHERE clause of opts'
// filters (not its limit and offset).
func (d Dialect) sessionWhere(head string, opts store.ListOptions) *Query {
	q := d.NewQuery(head + ` WHERE ` + d.True())
	if opts.AgentID != "" {
		q.Add(` AND agent_id = ?`, opts.AgentID)
	}
	if opts.SpawnedBy != "" {
		if d == SQLite {
			q.Add(` AND spawned_by = ?`, opts.SpawnedBy)
			q.partialNonEmpty("spawned_by")
		} else {
			// PostgreSQL's index by spawner holds only spawned rows, by
			// NULLIF(spawned_by, ''): this condition implies the index's
			// (the expression is not null) whatever the value, in a
			// generic plan too, and the planner estimates it from the
			// index's statistics (naming spawned_by <> '' beside
			// spawned_by = ? makes it misjudge the rows and sort).
			q.Add(` AND NULLIF(spawned_by, '') = ?`, opts.SpawnedBy)
		}
	}
	if opts.Label != "" {
		// Both stores' indexes by label hold only labelled rows.
		q.Add(` AND label = ? AND label != ''`, opts.Label)
	}
	if opts.Kind != "" {
		q.Add(` AND kind = ?`, opts.Kind)
	}
	if !opts.UpdatedSince.IsZero() {
		q.Add(` AND updated_at >= ?`, opts.UpdatedSince.UnixMilli())
	}
	if opts.Search != "" {
		needle := strings.ToLower(opts.Search)
		if d == SQLite {
			q.Add(` AND (sb_icontains(key, ?) OR sb_icontains(session_id, ?)
			OR sb_icontains(label, ?) OR sb_icontains(display_name, ?))`, needle, needle, needle, needle)
		} else {
			// The search column joins the fields; the needle is matched
			// within each field: one that spans the separator cannot match.
			q.Add(` AND strpos(search, ?) > 0`, needle)
		}
	}
	if opts.Exclude != 0 {
		if d == SQLite {
			q.Add(` AND (key_class & ?) = 0`, int64(opts.Exclude))
		} else {
			// "key_class = 0 OR": most keys are in no class, and the
			// planner estimates that from the column's statistics (it
			// cannot estimate the bit test), so it keeps walking the
			// ordered index.
			q.Add(` AND (key_class = 0 OR (key_class & ?) = 0)`, int32(opts.Exclude))
		}
	}
	return q
}
