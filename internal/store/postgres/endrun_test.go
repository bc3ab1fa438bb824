package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// TestEndRun: a run's last messages and its end are one transaction: both
// land (the run's counts include the new messages, the messages chain
// after the transcript's tail), or, for a run that is not live or a
// fenced node, neither does.
func TestEndRun(t *testing.T) {
	ctx := context.Background()
	s := openNodes(t, 1)[0]
	const key = "agent:main:end"
	fctx, stale := claimedSession(t, s, key)
	for _, id := range []string{"r1", "r2"} {
		queue(t, s, id, key)
		in := userMsg("hi " + id)
		in.RunID = id
		if _, _, err := s.StartRun(fctx, id, time.Now(), "sid", []store.Message{in}); err != nil {
			t.Fatal(err)
		}
	}

	// A fenced node's end writes nothing.
	if _, stored, err := s.EndRun(stale, "r1", store.RunResult{Status: store.RunOK}, "sid", []store.Message{reply("r1", "late")}); !errors.Is(err, store.ErrFenced) || stored != nil {
		t.Fatalf("fenced EndRun = %v, %v; want ErrFenced and nothing stored", stored, err)
	}
	if n, _ := s.CountMessages(ctx, "sid"); n != 2 {
		t.Fatalf("%d messages after a fenced end, want the 2 inputs", n)
	}

	run, stored, err := s.EndRun(fctx, "r1", store.RunResult{Status: store.RunOK,
		Outbox: []store.OutboxItem{{ID: "ob-r1", Kind: "announce", SessionKey: key}}}, "sid", []store.Message{reply("r1", "hello")})
	if err != nil || run.Status != store.RunOK || len(stored) != 1 || stored[0].Seq != 3 || stored[0].Entry.ParentID == nil {
		t.Fatalf("EndRun = %+v, %+v, %v", run, stored, err)
	}
	var stats store.RunStats
	var raw string
	if err := s.pool.QueryRow(ctx, `SELECT stats::text FROM runs WHERE run_id = 'r1'`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(raw), &stats); err != nil || stats.User != 1 || stats.Assistant != 1 {
		t.Fatalf("r1 stats %s (%v), want its user message and its reply", raw, err)
	}
	if _, err := s.GetOutbox(ctx, "ob-r1"); err != nil {
		t.Fatalf("outbox item of the end: %v", err)
	}

	// A run that already ended appends nothing and queues no outbox item
	// (they travel with the end, in its round trip).
	again := store.RunResult{Status: store.RunOK, Outbox: []store.OutboxItem{{ID: "ob-again", Kind: "announce", SessionKey: key}}}
	if _, stored, err := s.EndRun(fctx, "r1", again, "sid", []store.Message{reply("r1", "again")}); !errors.Is(err, store.ErrConflict) || stored != nil {
		t.Fatalf("second EndRun = %v, %v; want ErrConflict and nothing stored", stored, err)
	}
	if n, _ := s.CountMessages(ctx, "sid"); n != 3 {
		t.Fatalf("%d messages, want 3", n)
	}
	if _, err := s.GetOutbox(ctx, "ob-again"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("outbox item of a refused end: %v, want ErrNotFound", err)
	}
	// Without messages it is FinishRun.
	if run, stored, err := s.EndRun(fctx, "r2", store.RunResult{Status: store.RunAborted}, "sid", nil); err != nil || run.Status != store.RunAborted || stored != nil {
		t.Fatalf("EndRun without messages = %+v, %v, %v", run, stored, err)
	}
}

// TestEndRunAfterOpen: the end of a run this store opened counts the run's
// messages from what the open (and this store's appends since) stored,
// without reading them (one round trip), while the transcript's tail is
// still the one this store left; after another store's append it reads
// them, and a stale fence or a run that is no longer live writes nothing
// on either path.
func TestEndRunAfterOpen(t *testing.T) {
	ctx := context.Background()
	nodes := openNodes(t, 2)
	s, other := nodes[0], nodes[1]
	const key = "agent:main:endopen"
	fctx, stale := claimedSession(t, s, key)
	open := func(id string) {
		t.Helper()
		in := userMsg("hi " + id)
		in.RunID = id
		if _, _, err := s.OpenRun(fctx, &store.Run{RunID: id, SessionKey: key, SessionID: "sid", AgentID: "main",
			Status: store.RunRunning, StartedAt: time.Now(), Input: []byte(`{}`)}, []store.Message{in}); err != nil {
			t.Fatal(err)
		}
	}
	statsOf := func(id string) store.RunStats {
		t.Helper()
		var raw string
		if err := s.pool.QueryRow(ctx, `SELECT stats::text FROM runs WHERE run_id = $1`, id).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		var st store.RunStats
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	count := func(want int64) {
		t.Helper()
		if n, err := s.CountMessages(ctx, "sid"); err != nil || n != want {
			t.Fatalf("%d messages (%v), want %d", n, err, want)
		}
	}

	// r1: its input's row is changed behind the store's back (its role,
	// not its place): an end that read the run's messages would count no
	// user message; the end counts the open's.
	open("r1")
	if _, err := s.pool.Exec(ctx, `UPDATE messages SET role = 'system' WHERE run_id = 'r1'`); err != nil {
		t.Fatal(err)
	}
	if _, stored, err := s.EndRun(stale, "r1", store.RunResult{Status: store.RunOK}, "sid", []store.Message{reply("r1", "late")}); !errors.Is(err, store.ErrFenced) || stored != nil {
		t.Fatalf("fenced EndRun = %v, %v; want ErrFenced and nothing stored", stored, err)
	}
	count(1)
	run, stored, err := s.EndRun(fctx, "r1", store.RunResult{Status: store.RunOK}, "sid", []store.Message{reply("r1", "hello")})
	if err != nil || run.Status != store.RunOK || len(stored) != 1 || stored[0].Seq != 2 {
		t.Fatalf("EndRun = %+v, %+v, %v", run, stored, err)
	}
	if st := statsOf("r1"); st.User != 1 || st.Assistant != 1 {
		t.Errorf("r1 stats %+v, want the open's user message and the reply (counted without reading)", st)
	}

	// r2: this store appends a message of the run after its open (a tool
	// step): the end still counts without reading (the input's row is
	// changed behind its back again) and chains after that append.
	open("r2")
	mid, err := s.AppendMessages(ctx, "sid", []store.Message{reply("r2", "thinking")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE messages SET role = 'system' WHERE run_id = 'r2' AND role = 'user'`); err != nil {
		t.Fatal(err)
	}
	_, stored, err = s.EndRun(fctx, "r2", store.RunResult{Status: store.RunOK}, "sid", []store.Message{reply("r2", "done")})
	if err != nil || len(stored) != 1 || stored[0].Seq != 5 || stored[0].Entry.ParentID == nil || *stored[0].Entry.ParentID != mid[0].Entry.ID {
		t.Fatalf("EndRun after this store's append = %+v, %v; want seq 5 after %s", stored, err, mid[0].Entry.ID)
	}
	if st := statsOf("r2"); st.User != 1 || st.Assistant != 2 {
		t.Errorf("r2 stats %+v, want its input and both replies (counted without reading)", st)
	}

	// r4: another store (another node) appends a message of the run: the
	// remembered tail is stale, and the end reads the run's messages and
	// chains after that append.
	open("r4")
	mid, err = other.AppendMessages(ctx, "sid", []store.Message{reply("r4", "elsewhere")})
	if err != nil {
		t.Fatal(err)
	}
	_, stored, err = s.EndRun(fctx, "r4", store.RunResult{Status: store.RunOK}, "sid", []store.Message{reply("r4", "done")})
	if err != nil || len(stored) != 1 || stored[0].Seq != 8 || stored[0].Entry.ParentID == nil || *stored[0].Entry.ParentID != mid[0].Entry.ID {
		t.Fatalf("EndRun after another store's append = %+v, %v; want seq 8 after %s", stored, err, mid[0].Entry.ID)
	}
	if st := statsOf("r4"); st.User != 1 || st.Assistant != 2 {
		t.Errorf("r4 stats %+v, want its input and both replies", st)
	}

	// r3 ends without messages (FinishRun's path), and its end is asked
	// again with a message while the open's tail is still remembered:
	// nothing is appended.
	open("r3")
	if _, err := s.FinishRun(fctx, "r3", store.RunResult{Status: store.RunAborted}); err != nil {
		t.Fatal(err)
	}
	if _, stored, err := s.EndRun(fctx, "r3", store.RunResult{Status: store.RunOK}, "sid", []store.Message{reply("r3", "again")}); !errors.Is(err, store.ErrConflict) || stored != nil {
		t.Fatalf("EndRun of an ended run = %v, %v; want ErrConflict", stored, err)
	}
	count(9)
}

// claimedSession makes session key (id "sid") on s as node "a", claims its
// lane and returns a context fenced by the claim and one fenced by the
// epoch before it.
func claimedSession(t testing.TB, s *Store, key string) (fenced, stale context.Context) {
	t.Helper()
	ctx := context.Background()
	s.SetNode("a")
	register(t, s, "a", time.Minute)
	if err := s.CreateSession(ctx, &store.Session{Key: key, SessionID: "sid"}); err != nil {
		t.Fatal(err)
	}
	_, epoch, err := s.ClaimLane(ctx, "a", key)
	if err != nil {
		t.Fatal(err)
	}
	return store.WithFence(ctx, store.Fence{Node: "a", SessionKey: key, Epoch: epoch}),
		store.WithFence(ctx, store.Fence{Node: "a", SessionKey: key, Epoch: epoch - 1})
}

// openTurn opens run id of session key (transcript "sid") with a user
// message as its input, as a warm turn's open does.
func openTurn(ctx context.Context, s *Store, key, id string) error {
	in := userMsg("hi " + id)
	in.RunID = id
	_, _, err := s.OpenRun(ctx, &store.Run{RunID: id, SessionKey: key, SessionID: "sid", AgentID: "main",
		Status: store.RunRunning, StartedAt: time.Now(), Input: []byte(`{}`)}, []store.Message{in})
	return err
}

// reply is run runID's assistant message saying text.
func reply(runID, text string) store.Message {
	m := transcript.NewAssistantMessage([]transcript.Block{{Type: transcript.BlockText, Text: &text}}, time.Now())
	return store.Message{Entry: transcript.MessageEntry(m, time.Now()), RunID: runID}
}

// TestEndRunWritesSessionOnce: a run's end returns the session row as it
// wrote it (with the row's version) from its one statement: the next
// admission is served that row and the open on it is accepted; when the
// session row is gone, the end still ends the run and nothing is
// remembered.
func TestEndRunWritesSessionOnce(t *testing.T) {
	ctx := context.Background()
	s := openNodes(t, 1)[0]
	const key = "agent:main:once"
	fenced, _ := claimedSession(t, s, key)
	open := func(ctx context.Context, id string) error { return openTurn(ctx, s, key, id) }
	admit := func() (context.Context, *store.Session, bool) {
		t.Helper()
		actx := store.WithSessionCheck(fenced)
		sess, err := s.GetSession(actx, key)
		if err != nil {
			t.Fatal(err)
		}
		_, served := store.SessionCheckOf(actx).Version(key)
		return actx, sess, served
	}
	if err := open(fenced, "r1"); err != nil {
		t.Fatal(err)
	}
	run, _, err := s.EndRun(fenced, "r1", store.RunResult{Status: store.RunOK, Usage: transcript.Usage{Input: 4, Output: 2, TotalTokens: 6}},
		"sid", []store.Message{reply("r1", "one")})
	if err != nil || run.Status != store.RunOK || run.RunID != "r1" {
		t.Fatalf("EndRun = %+v, %v", run, err)
	}
	actx, sess, served := admit()
	if !served || sess.TotalTokens != 6 || !sess.SystemSent {
		t.Fatalf("after the end: served %v, %+v; want the end's row from memory", served, sess)
	}
	if err := open(actx, "r2"); err != nil {
		t.Fatalf("open on the row the end returned: %v (its version is not the row's)", err)
	}
	// The session row goes while r2 runs: r2 still ends.
	if _, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE key = $1`, key); err != nil {
		t.Fatal(err)
	}
	s.sessions.drop(key) // as another node's delete would leave it
	run, _, err = s.EndRun(fenced, "r2", store.RunResult{Status: store.RunError, Error: "x"}, "sid", []store.Message{reply("r2", "two")})
	if err != nil || run.Status != store.RunError {
		t.Fatalf("EndRun without its session = %+v, %v; want the run ended", run, err)
	}
	if _, _, ok := s.sessions.get(key); ok {
		t.Error("a session row was remembered for a session that is gone")
	}
	if got, err := s.GetRun(ctx, "r2"); err != nil || got.Status != store.RunError {
		t.Errorf("stored r2 = %+v, %v", got, err)
	}
}
