package sqlstore

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// MessageCols lists the messages columns ScanMessage reads.
const MessageCols = `seq, role, run_id, created_at, line`

// Statements on transcripts (the messages table).
const (
	// LastEntry reads a transcript's tail: its last seq and entry id.
	LastEntry = `SELECT seq, entry_id FROM messages
		WHERE session_id = ? ORDER BY seq DESC LIMIT 1`

	// InsertMessages starts an insert of messages; each row is
	// (session_id, seq, entry_id, role, run_id, created_at, line, idem_key).
	InsertMessages = `INSERT INTO messages
		(session_id, seq, entry_id, role, run_id, created_at, line, idem_key)
		VALUES `

	ByIdemKey = `SELECT ` + MessageCols + ` FROM messages
		WHERE session_id = ? AND idem_key = ?`

	HistoryTail = `SELECT ` + MessageCols + ` FROM messages
		WHERE session_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`

	HistoryAll = `SELECT ` + MessageCols + ` FROM messages
		WHERE session_id = ? AND seq < ? ORDER BY seq`

	HistoryRunTail = `SELECT ` + MessageCols + ` FROM messages
		WHERE session_id = ? AND run_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`

	HistoryRunAll = `SELECT ` + MessageCols + ` FROM messages
		WHERE session_id = ? AND run_id = ? AND seq < ? ORDER BY seq`

	// CountMessages: Seq is the 1-based position in the transcript, so
	// the count is the last seq: one index probe instead of an index scan.
	CountMessages = `SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ?`
)

// ScanMessage reads one row of MessageCols of transcript sessionID; line
// receives the entry's JSON (a *sql.RawBytes lets SQLite lend it).
func ScanMessage[B ~[]byte](sc Scanner, sessionID string, line *B) (store.Message, error) {
	m := store.Message{SessionID: sessionID}
	var created int64
	if err := sc.Scan(&m.Seq, &m.Role, &m.RunID, &created, line); err != nil {
		return m, err
	}
	// UnmarshalJSON validates; json.Unmarshal would scan the line twice more.
	if err := m.Entry.UnmarshalJSON([]byte(*line)); err != nil {
		return m, fmt.Errorf("%s seq %d: %w", sessionID, m.Seq, err)
	}
	m.CreatedAt = FromMs(created)
	return m, nil
}

// PrepareMessages does the part of an append that does not depend on the
// transcript's tail, on a copy of msgs: ids (from newID), timestamps (now
// when unset), roles and run ids.
func PrepareMessages(sessionID string, msgs []store.Message, now time.Time, newID func() string) ([]store.Message, error) {
	out := slices.Clone(msgs)
	for i := range out {
		m := &out[i]
		if m.Entry.Type == "" {
			return nil, fmt.Errorf("message %d: empty entry type", i)
		}
		m.SessionID = sessionID
		if m.CreatedAt.IsZero() {
			m.CreatedAt = now
		}
		m.CreatedAt = store.Millis(m.CreatedAt)
		if m.Entry.ID == "" {
			m.Entry.ID = newID()
		}
		if m.Entry.Timestamp == "" {
			m.Entry.Timestamp = transcript.FormatTime(m.CreatedAt)
		}
		m.Role = ""
		if m.Entry.Message != nil {
			m.Role = m.Entry.Message.Role
			if m.RunID == "" && m.Entry.Message.Meta != nil {
				m.RunID = m.Entry.Message.Meta.RunID
			}
		}
	}
	return out, nil
}

// Chain places prepared message m after the transcript entry prevID (""
// when m is the first): it numbers m seq, sets an unset parent id to
// prevID, and returns m's stored line.
func Chain(m *store.Message, seq int64, prevID string) (string, error) {
	m.Seq = seq
	if m.Entry.ParentID == nil || *m.Entry.ParentID == "" {
		m.Entry.ParentID = nil
		if prevID != "" {
			p := prevID
			m.Entry.ParentID = &p
		}
	}
	// The type's own encoder, not json.Marshal: it writes the same
	// compact line transcript.Encoder does (json.Marshal would re-validate
	// it and escape <, > and &). It writes into a pooled buffer, so that
	// the line's one allocation is the string it is stored as, not every
	// step of a buffer grown from nothing.
	bp := lineBufs.Get().(*[]byte)
	b, err := m.Entry.AppendJSON((*bp)[:0])
	line := string(b)
	if cap(b) <= maxPooledLine {
		*bp = b
		lineBufs.Put(bp)
	}
	if err != nil {
		return "", err
	}
	return line, nil
}

// lineBufs holds the buffers Chain encodes into; a buffer that grew past
// maxPooledLine (a message with a large tool result) is left to the
// collector.
var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

const maxPooledLine = 64 << 10

// MessageRows numbers and chains prepared messages after a transcript's
// tail, giving each one's row of InsertMessages; the first row carries
// IdemKey.
type MessageRows struct {
	SessionID, IdemKey string
	// Seq and PrevID are the tail: its last seq (0 when the transcript is
	// empty) and entry id.
	Seq    int64
	PrevID string
	n      int
}

// Append chains m, the next message, and appends its row's arguments to
// args.
func (r *MessageRows) Append(args []any, m *store.Message) ([]any, error) {
	i := r.n
	r.n++
	r.Seq++
	line, err := Chain(m, r.Seq, r.PrevID)
	r.PrevID = m.Entry.ID
	if err != nil {
		return args, fmt.Errorf("message %d: %w", i, err)
	}
	key := ""
	if i == 0 {
		key = r.IdemKey
	}
	return append(args, r.SessionID, m.Seq, m.Entry.ID, m.Role, m.RunID, ToMs(m.CreatedAt), line, key), nil
}

// HistoryStmts lists History's statements in the order HistoryStmt picks
// them.
var HistoryStmts = [4]string{HistoryRunTail, HistoryRunAll, HistoryTail, HistoryAll}

// RunFrom is the SQLite condition that bounds a read of run ?2's messages
// in transcript ?1 below by the run's first_seq (a lower bound of the seqs
// of its messages there, kept on its row; 0 when unknown), so that the
// read walks the primary key from the run's first message on: SQLite has
// no index by run (schema 16), which saved a page of the WAL append per
// message. A run of another transcript, or none, bounds nothing.
const RunFrom = `seq >= COALESCE((SELECT first_seq FROM runs WHERE run_id = ?2 AND session_id = ?1), 0)`

// HistoryStmts returns History's statements in d, in the order HistoryStmt
// picks them: SQLite's reads by run are bounded by RunFrom.
func (d Dialect) HistoryStmts() [4]string {
	if d != SQLite {
		out := HistoryStmts
		for i, s := range out {
			out[i] = d.Q(s)
		}
		return out
	}
	return [4]string{
		`SELECT ` + MessageCols + ` FROM messages
		WHERE session_id = ?1 AND run_id = ?2 AND seq < ?3 AND ` + RunFrom + ` ORDER BY seq DESC LIMIT ?4`,
		`SELECT ` + MessageCols + ` FROM messages
		WHERE session_id = ?1 AND run_id = ?2 AND seq < ?3 AND ` + RunFrom + ` ORDER BY seq`,
		HistoryTail, HistoryAll,
	}
}

// HistoryStmt picks the statement of store.Store's History for opts: its
// index in HistoryStmts and its arguments.
func HistoryStmt(sessionID string, opts store.HistoryOptions) (int, []any) {
	before := opts.BeforeSeq
	if before <= 0 {
		before = math.MaxInt64
	}
	switch {
	case opts.RunID != "" && opts.Limit > 0:
		return 0, []any{sessionID, opts.RunID, before, opts.Limit}
	case opts.RunID != "":
		return 1, []any{sessionID, opts.RunID, before}
	case opts.Limit > 0:
		return 2, []any{sessionID, before, opts.Limit}
	}
	return 3, []any{sessionID, before}
}

// History reads the rows of HistoryStmt's statement into messages in
// ascending Seq (a limited read comes newest first and is reversed). B is
// the type of the line's buffer, reused from row to row: sql.RawBytes lets
// SQLite lend it.
func History[B ~[]byte, R interface {
	Scanner
	Next() bool
	Err() error
}](rows R, sessionID string, limit int) ([]store.Message, error) {
	var out []store.Message
	if limit > 0 {
		out = make([]store.Message, 0, min(limit, 64))
	}
	// One set of scan targets for every row, made at the first, so that
	// scanning a row allocates nothing of its own; Unmarshal copies what
	// it keeps.
	var t *historyRow[B]
	for rows.Next() {
		if t == nil {
			t = new(historyRow[B])
			t.dest = [...]any{&t.m.Seq, &t.m.Role, &t.m.RunID, &t.created, &t.line}
		}
		t.m = store.Message{SessionID: sessionID}
		if err := rows.Scan(t.dest[:]...); err != nil {
			return nil, err
		}
		if err := t.m.Entry.UnmarshalJSON([]byte(t.line)); err != nil {
			return nil, fmt.Errorf("%s seq %d: %w", sessionID, t.m.Seq, err)
		}
		t.m.CreatedAt = FromMs(t.created)
		out = append(out, t.m)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if limit > 0 {
		slices.Reverse(out)
	}
	return out, nil
}

// historyRow holds History's scan targets.
type historyRow[B ~[]byte] struct {
	m       store.Message
	created int64
	line    B
	dest    [5]any
}
