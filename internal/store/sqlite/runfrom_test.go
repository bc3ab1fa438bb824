package sqlite

import (
	"context"
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
// its first_seq on, without an index by run: a live run's first_seq is
// its transcript's next seq less runSeqSlack when its row is stored (so
// that a chat command's reply, recorded under the run id just before, is
// found with it), a run stored ended bounds nothing, first_seq moves with
// a run that starts or is updated into another transcript, and a run that
// goes on writing after its transcript was deleted (seqs start over) is
// found all the same; messages of a run id with no run row are found by a
// walk of the whole transcript.
func TestRunMessagesFromFirstSeq(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	now := time.Now()
	const sid, other = "sid-a", "sid-b"
	if !strings.Contains(firstSeq3, "+ 1 - "+strconv.Itoa(runSeqSlack)+", 0)") {
		t.Fatalf("firstSeq3 %q does not reach back runSeqSlack (%d) entries", firstSeq3, runSeqSlack)
	}
	post := func(sid string, msgs ...store.Message) {
		t.Helper()
		if _, err := s.AppendMessages(ctx, sid, msgs); err != nil {
			t.Fatal(err)
		}
	}
	pad := func(sid string, n int) {
		t.Helper()
		for range n {
			post(sid, chatMsg(transcript.RoleUser, "pad", ""))
		}
	}
	seqs := func(ns ...int) string {
		var b strings.Builder
		for i, n := range ns {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(n))
		}
		return b.String()
	}
	const p = 2 * runSeqSlack
	pad(sid, p)
	post(sid, chatMsg(transcript.RoleUser, "post", "post-1")) // p+1

	// Opened with its input (p+2), then a reply around a post (p+3, p+5).
	run := &store.Run{RunID: "run-1", SessionKey: "k", SessionID: sid, Status: store.RunRunning, StartedAt: now}
	if _, _, err := s.OpenRun(ctx, run, []store.Message{chatMsg(transcript.RoleUser, "hi", "run-1")}); err != nil {
		t.Fatal(err)
	}
	if got, want := firstSeq(t, s, "run-1"), int64(p+2-runSeqSlack); got != want {
		t.Errorf("first_seq of an opened run = %d, want %d (its input's seq less the slack)", got, want)
	}
	post(sid, chatMsg(transcript.RoleAssistant, "a", "run-1"), chatMsg(transcript.RoleUser, "post", "post-1"),
		chatMsg(transcript.RoleAssistant, "b", "run-1"))
	if all, tail := runSeqs(t, s, sid, "run-1"); all != seqs(p+2, p+3, p+5) || tail != seqs(p+3, p+5) {
		t.Errorf("run-1: %s / %s, want %s / %s", all, tail, seqs(p+2, p+3, p+5), seqs(p+3, p+5))
	}
	if all, _ := runSeqs(t, s, sid, "post-1"); all != seqs(p+1, p+4) {
		t.Errorf("a run id with no run row: %s, want %s", all, seqs(p+1, p+4))
	}

	// A command answered under run id cmd-1 (p+6, p+7), then stored ended
	// (EndCommand): it bounds nothing. A command's reply under new-1
	// (p+8), then a run under the same id ("/new hello"): the slack
	// reaches it.
	post(sid, chatMsg(transcript.RoleUser, "/status", "cmd-1"), chatMsg(transcript.RoleAssistant, "ok", "cmd-1"))
	if err := s.CreateRun(ctx, &store.Run{RunID: "cmd-1", SessionKey: "k", SessionID: sid, Status: store.RunOK, StartedAt: now, EndedAt: now}); err != nil {
		t.Fatal(err)
	}
	if got := firstSeq(t, s, "cmd-1"); got != 0 {
		t.Errorf("first_seq of a run stored ended = %d, want 0", got)
	}
	if all, _ := runSeqs(t, s, sid, "cmd-1"); all != seqs(p+6, p+7) {
		t.Errorf("cmd-1: %s, want %s", all, seqs(p+6, p+7))
	}
	post(sid, chatMsg(transcript.RoleAssistant, "new session", "new-1"))
	if _, _, err := s.OpenRun(ctx, &store.Run{RunID: "new-1", SessionKey: "k", SessionID: sid, Status: store.RunRunning, StartedAt: now},
		[]store.Message{chatMsg(transcript.RoleUser, "hello", "new-1")}); err != nil {
		t.Fatal(err)
	}
	if all, _ := runSeqs(t, s, sid, "new-1"); all != seqs(p+8, p+9) {
		t.Errorf("new-1: %s, want %s", all, seqs(p+8, p+9))
	}

	// Queued for sid, started in other: its first_seq moves there.
	if err := s.CreateRun(ctx, &store.Run{RunID: "run-2", SessionKey: "k", SessionID: sid}); err != nil {
		t.Fatal(err)
	}
	if got, want := firstSeq(t, s, "run-2"), int64(p+10-runSeqSlack); got != want {
		t.Errorf("first_seq of a queued run = %d, want %d", got, want)
	}
	pad(other, p)
	if _, _, err := s.StartRun(ctx, "run-2", now, other, []store.Message{chatMsg(transcript.RoleUser, "go", "run-2")}); err != nil {
		t.Fatal(err)
	}
	if got, want := firstSeq(t, s, "run-2"), int64(p+1-runSeqSlack); got != want {
		t.Errorf("first_seq of a run started in another transcript = %d, want %d", got, want)
	}
	if all, _ := runSeqs(t, s, other, "run-2"); all != seqs(p+1) {
		t.Errorf("run-2 in %s: %s, want %s", other, all, seqs(p+1))
	}

	// Moved to sid by UpdateRun: first_seq is forgotten (0), and its
	// messages there are found by a walk of the transcript.
	post(sid, chatMsg(transcript.RoleAssistant, "early", "run-3")) // p+10, long before run-3's row
	pad(sid, p)
	if err := s.CreateRun(ctx, &store.Run{RunID: "run-3", SessionKey: "k", SessionID: other}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateRun(ctx, "run-3", func(r *store.Run) error { r.SessionID = sid; return nil }); err != nil {
		t.Fatal(err)
	}
	if got := firstSeq(t, s, "run-3"); got != 0 {
		t.Errorf("first_seq after UpdateRun moved the run = %d, want 0", got)
	}
	if all, _ := runSeqs(t, s, sid, "run-3"); all != seqs(p+10) {
		t.Errorf("run-3 after the move: %s, want %s", all, seqs(p+10))
	}
	// An UpdateRun that keeps the transcript keeps first_seq.
	if _, err := s.UpdateRun(ctx, "run-1", func(r *store.Run) error { r.Lane = "x"; return nil }); err != nil {
		t.Fatal(err)
	}
	if got, want := firstSeq(t, s, "run-1"), int64(p+2-runSeqSlack); got != want {
		t.Errorf("first_seq after an UpdateRun in place = %d, want %d", got, want)
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
	path := filepath.Join(t.TempDir(), "store.db")
	var qs []string
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
	writeAtVersion(t, path, 15, qs...)

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
