package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// runSeqs returns the seqs History finds for run runID in transcript sid,
// all of them and the last two, as "1,3" strings.
func runSeqs(t *testing.T, s *Store, sid, runID string) (all, tail string) {
	t.Helper()
	join := func(ms []store.Message) string {
		var b strings.Builder
		for i, m := range ms {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatInt(m.Seq, 10))
			if m.RunID != runID {
				t.Errorf("History(RunID %q) returned seq %d of run %q", runID, m.Seq, m.RunID)
			}
		}
		return b.String()
	}
	ctx := context.Background()
	ms, err := s.History(ctx, sid, store.HistoryOptions{RunID: runID})
	if err != nil {
		t.Fatal(err)
	}
	last, err := s.History(ctx, sid, store.HistoryOptions{RunID: runID, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	return join(ms), join(last)
}

// firstSeq reads a run's first_seq.
func firstSeq(t *testing.T, s *Store, runID string) int64 {
	t.Helper()
	var n int64
	if err := s.r.QueryRow(`SELECT first_seq FROM runs WHERE run_id = ?`, runID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRunMessagesFromFirstSeq checks that a run's messages are found from
// its first_seq on, without an index by run: first_seq is the seq of a
// run's input for an opened run, the next seq for a queued one, moves
// with a run that starts or is updated into another transcript, and a
// run that goes on writing after its transcript was deleted (seqs start
// over) is found all the same; messages of a run id with no run row are
// found by a walk of the whole transcript.
func TestRunMessagesFromFirstSeq(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	now := time.Now()
	const sid, other = "sid-a", "sid-b"
	post := func(sid string, msgs ...store.Message) {
		t.Helper()
		if _, err := s.AppendMessages(ctx, sid, msgs); err != nil {
			t.Fatal(err)
		}
	}
	post(sid, chatMsg(transcript.RoleUser, "before", ""), chatMsg(transcript.RoleUser, "post", "post-1")) // seqs 1, 2

	// Opened with its input (seq 3), then a reply around a post (4, 6).
	run := &store.Run{RunID: "run-1", SessionKey: "k", SessionID: sid, Status: store.RunRunning, StartedAt: now}
	if _, _, err := s.OpenRun(ctx, run, []store.Message{chatMsg(transcript.RoleUser, "hi", "run-1")}); err != nil {
		t.Fatal(err)
	}
	if got := firstSeq(t, s, "run-1"); got != 3 {
		t.Errorf("first_seq of an opened run = %d, want 3 (its input's seq)", got)
	}
	post(sid, chatMsg(transcript.RoleAssistant, "a", "run-1"), chatMsg(transcript.RoleUser, "post", "post-1"),
		chatMsg(transcript.RoleAssistant, "b", "run-1"))
	if all, tail := runSeqs(t, s, sid, "run-1"); all != "3,4,6" || tail != "4,6" {
		t.Errorf("run-1: %s / %s, want 3,4,6 / 4,6", all, tail)
	}
	if all, _ := runSeqs(t, s, sid, "post-1"); all != "2,5" {
		t.Errorf("a run id with no run row: %s, want 2,5", all)
	}

	// Queued for sid (next seq 7), started in other: its first_seq moves.
	if err := s.CreateRun(ctx, &store.Run{RunID: "run-2", SessionKey: "k", SessionID: sid}); err != nil {
		t.Fatal(err)
	}
	if got := firstSeq(t, s, "run-2"); got != 7 {
		t.Errorf("first_seq of a queued run = %d, want 7", got)
	}
	post(other, chatMsg(transcript.RoleUser, "x", ""))
	if _, _, err := s.StartRun(ctx, "run-2", now, other, []store.Message{chatMsg(transcript.RoleUser, "go", "run-2")}); err != nil {
		t.Fatal(err)
	}
	if got := firstSeq(t, s, "run-2"); got != 2 {
		t.Errorf("first_seq of a run started in another transcript = %d, want 2", got)
	}
	if all, _ := runSeqs(t, s, other, "run-2"); all != "2" {
		t.Errorf("run-2 in %s: %s, want 2", other, all)
	}

	// Moved to sid by UpdateRun: first_seq is forgotten (0), and its
	// messages there are found by a walk of the transcript.
	post(sid, chatMsg(transcript.RoleAssistant, "early", "run-3")) // seq 7, before run-3's row
	if err := s.CreateRun(ctx, &store.Run{RunID: "run-3", SessionKey: "k", SessionID: other}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateRun(ctx, "run-3", func(r *store.Run) error { r.SessionID = sid; return nil }); err != nil {
		t.Fatal(err)
	}
	if got := firstSeq(t, s, "run-3"); got != 0 {
		t.Errorf("first_seq after UpdateRun moved the run = %d, want 0", got)
	}
	if all, _ := runSeqs(t, s, sid, "run-3"); all != "7" {
		t.Errorf("run-3 after the move: %s, want 7", all)
	}
	// An UpdateRun that keeps the transcript keeps first_seq.
	if _, err := s.UpdateRun(ctx, "run-1", func(r *store.Run) error { r.Lane = "x"; return nil }); err != nil {
		t.Fatal(err)
	}
	if got := firstSeq(t, s, "run-1"); got != 3 {
		t.Errorf("first_seq after an UpdateRun in place = %d, want 3", got)
	}

	// The transcript is deleted while run-1 is live: it writes from seq 1
	// again, and is found there.
	if err := s.CreateSession(ctx, &store.Session{Key: "agent:main:gone", SessionID: sid}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession(ctx, "agent:main:gone", true); err != nil {
		t.Fatal(err)
	}
	post(sid, chatMsg(transcript.RoleAssistant, "again", "run-1"))
	if all, _ := runSeqs(t, s, sid, "run-1"); all != "1" {
		t.Errorf("run-1 after its transcript was deleted: %s, want 1", all)
	}
}

// TestMigrateRunFirstSeq opens a database at schema version 15 and checks
// that migration 16 sets each run's first_seq from its messages (or to
// its transcript's next seq, for a run with none yet), and that its
// messages are then found.
func TestMigrateRunFirstSeq(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	db := sql.OpenDB(connector{dsn: path})
	qs := []string{`CREATE TABLE schema_migrations (version INTEGER NOT NULL PRIMARY KEY, applied_at INTEGER NOT NULL)`}
	qs = append(qs, migrations[:15]...)
	qs = append(qs, `INSERT INTO schema_migrations (version, applied_at) VALUES (15, 0)`)
	line := func(id string) string {
		return `{"type":"message","id":"` + id + `","parentId":null,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"x"}}`
	}
	for i, run := range []string{"", "r1", "", "r1", "r2"} {
		qs = append(qs, `INSERT INTO messages (session_id, seq, entry_id, role, run_id, created_at, line)
			VALUES ('s', `+strconv.Itoa(i+1)+`, 'e`+strconv.Itoa(i+1)+`', 'user', '`+run+`', 0, '`+line("e"+strconv.Itoa(i+1))+`')`)
	}
	qs = append(qs,
		`INSERT INTO runs (run_id, session_key, session_id, status, created_at) VALUES ('r1', 'k', 's', 'ok', 1)`,
		`INSERT INTO runs (run_id, session_key, session_id, status, created_at) VALUES ('r2', 'k', 's', 'ok', 1)`,
		`INSERT INTO runs (run_id, session_key, session_id, status, created_at) VALUES ('r3', 'k', 's', 'running', 1)`,
		`INSERT INTO runs (run_id, session_key, session_id, status, created_at) VALUES ('r4', 'k', '', 'queued', 1)`,
	)
	for _, q := range qs {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s := openAt(t, path)
	for run, want := range map[string]int64{"r1": 2, "r2": 5, "r3": 6, "r4": 0} {
		if got := firstSeq(t, s, run); got != want {
			t.Errorf("first_seq of %s after the migration = %d, want %d", run, got, want)
		}
	}
	if all, _ := runSeqs(t, s, "s", "r1"); all != "2,4" {
		t.Errorf("r1 after the migration: %s, want 2,4", all)
	}
	var n int
	if err := s.r.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'messages_run'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("messages_run left: %d (%v)", n, err)
	}
}
