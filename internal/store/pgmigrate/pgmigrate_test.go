package pgmigrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/postgres"
	"github.com/switchboardhq/switchboard/internal/store/postgres/pgtest"
	"github.com/switchboardhq/switchboard/internal/store/sqlite"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var t0 = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

func msg(role, text string) store.Message {
	return store.Message{Entry: transcript.Entry{
		Type:    transcript.TypeMessage,
		Message: &transcript.Message{Role: role, Content: transcript.StringContent(text)},
	}}
}

// fill writes a gateway's worth of state of every kind into s.
func fill(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	for i := range 30 {
		key := fmt.Sprintf("agent:main:s%02d", i)
		if i%5 == 0 {
			key = fmt.Sprintf("agent:main:subagent:c%d", i)
		}
		sess := &store.Session{
			Key: key, SessionID: fmt.Sprintf("sid-%d", i), AgentID: "main", Kind: "direct",
			Label: fmt.Sprintf("Label Ü%d", i), DisplayName: "Disp", SpawnDepth: i % 3,
			SystemSent: i%2 == 0, AbortedLastRun: i%3 == 0, InputTokens: int64(i),
			CreatedAt: t0, UpdatedAt: t0.Add(time.Duration(i) * time.Second),
		}
		if i%4 == 0 {
			sess.DeliveryContext = &store.DeliveryContext{Channel: "telegram", To: "u"}
			sess.Extra = json.RawMessage(`{"origin": {"provider": "x"}, "n": [1, 2]}`)
		}
		if err := s.CreateSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendMessages(ctx, sess.SessionID, []store.Message{msg("user", "hello <&> \u00e9"), msg("assistant", "hi")}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.PostMessage(ctx, sess.SessionID, fmt.Sprintf("idem-%d", i), msg("user", "posted")); err != nil {
			t.Fatal(err)
		}
		run := &store.Run{RunID: fmt.Sprintf("run-%d", i), SessionKey: key, AgentID: "main", Lane: "main",
			Input: json.RawMessage(`{"message": "go"}`), CreatedAt: t0}
		if err := s.CreateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if _, _, err := s.StartRun(ctx, run.RunID, t0.Add(time.Second), sess.SessionID, []store.Message{msg("user", "go")}); err != nil {
				t.Fatal(err)
			}
		}
		if i%4 == 0 {
			res := store.RunResult{Status: store.RunOK, EndedAt: t0.Add(2 * time.Second),
				Usage:  transcript.Usage{Input: 3, Output: 4, TotalTokens: 7, Cost: &transcript.Cost{Total: 0.5}},
				Outbox: []store.OutboxItem{{ID: "announce:" + run.RunID, Kind: "announce", SessionKey: "agent:main:s01", Payload: json.RawMessage(`{"text": "done"}`)}}}
			if _, err := s.FinishRun(ctx, run.RunID, res); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.PutOutbox(ctx, &store.OutboxItem{ID: "a2a:1", Kind: "a2a", SessionKey: "agent:main:s02", Status: store.OutboxDead, Attempts: 5, LastError: "gone"}); err != nil {
		t.Fatal(err)
	}
}

// sameState compares everything two stores return through the contract.
func sameState(t *testing.T, a, b store.Store) {
	t.Helper()
	ctx := context.Background()
	opts := cmpopts.EquateEmpty()
	jsonCmp := cmp.FilterValues(func(x, y json.RawMessage) bool { return len(x) > 0 || len(y) > 0 },
		cmp.Comparer(func(x, y json.RawMessage) bool {
			var u, v any
			if json.Unmarshal(x, &u) != nil || json.Unmarshal(y, &v) != nil {
				return string(x) == string(y)
			}
			return cmp.Equal(u, v)
		}))
	sa, err := a.ListSessions(ctx, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.ListSessions(ctx, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sa, sb, opts, jsonCmp); diff != "" {
		t.Fatalf("sessions differ (-sqlite +postgres):\n%s", diff)
	}
	for _, s := range sa {
		ha, _ := a.History(ctx, s.SessionID, store.HistoryOptions{})
		hb, err := b.History(ctx, s.SessionID, store.HistoryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(ha, hb, opts, jsonCmp); diff != "" {
			t.Fatalf("transcript %s differs (-sqlite +postgres):\n%s", s.SessionID, diff)
		}
	}
	ra, _ := a.ListRuns(ctx, store.RunFilter{})
	rb, err := b.ListRuns(ctx, store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ra, rb, opts, jsonCmp); diff != "" {
		t.Fatalf("runs differ (-sqlite +postgres):\n%s", diff)
	}
	oa, _ := a.ListOutbox(ctx, store.OutboxFilter{})
	ob, err := b.ListOutbox(ctx, store.OutboxFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(oa, ob, opts, jsonCmp); diff != "" {
		t.Fatalf("outbox differs (-sqlite +postgres):\n%s", diff)
	}
}

func count(rep Report, table string) (inserted, updated, rows int64) {
	for _, tr := range rep.Tables {
		if tr.Table == table {
			return tr.Inserted, tr.Updated, tr.DestRows
		}
	}
	return -1, -1, -1
}

func TestCopy(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	src, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	fill(t, src)
	dsn := pgtest.DB(t)

	rep, err := Copy(ctx, path, dsn)
	if err != nil {
		t.Fatalf("Copy: %v (%+v)", err, rep)
	}
	if ins, upd, rows := count(rep, "messages"); ins != 30*4-15 || upd != 0 || rows != ins {
		t.Errorf("messages: inserted %d, updated %d, rows %d", ins, upd, rows)
	}
	dst, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	sameState(t, src, dst)
	// Idempotency keys came along: a retried post is still a no-op.
	if _, posted, err := dst.PostMessage(ctx, "sid-3", "idem-3", msg("user", "posted")); err != nil || posted {
		t.Errorf("PostMessage with a copied key: posted %v, %v", posted, err)
	}
	// Listing filters work on copied rows (derived columns were written).
	// (Labels Ü1 and Ü10-Ü19, less the sub-agents 10 and 15.)
	if n, err := dst.CountSessions(ctx, store.ListOptions{Search: "label ü1", Exclude: store.ClassSubagent}); err != nil || n != 9 {
		t.Errorf("search and exclude on copied rows = %d, %v; want 9", n, err)
	}

	// Re-running changes nothing.
	rep2, err := Copy(ctx, path, dsn)
	if err != nil {
		t.Fatalf("second Copy: %v", err)
	}
	for i, tr := range rep2.Tables {
		if tr.Inserted != 0 || tr.Updated != 0 || tr.DestSum != rep.Tables[i].DestSum || tr.DestRows != rep.Tables[i].DestRows {
			t.Errorf("second copy of %s: %+v, first %+v", tr.Table, tr, rep.Tables[i])
		}
	}

	// The source moves on; another run brings the copy up to it.
	if _, err := src.AppendMessages(ctx, "sid-1", []store.Message{msg("user", "later")}); err != nil {
		t.Fatal(err)
	}
	if _, err := src.FinishRun(ctx, "run-2", store.RunResult{Status: store.RunAborted, EndedAt: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	rep3, err := Copy(ctx, path, dsn)
	if err != nil {
		t.Fatalf("third Copy: %v", err)
	}
	if ins, upd, _ := count(rep3, "messages"); ins != 1 || upd != 0 {
		t.Errorf("third copy inserted %d messages and updated %d, want 1 and 0", ins, upd)
	}
	if ins, upd, _ := count(rep3, "runs"); ins != 0 || upd != 1 {
		t.Errorf("third copy inserted %d runs and updated %d, want 0 and 1 (the run that ended)", ins, upd)
	}
	sameState(t, src, dst)

	// A row only the database has fails verification, named.
	if err := dst.PutOutbox(ctx, &store.OutboxItem{ID: "only-in-pg"}); err != nil {
		t.Fatal(err)
	}
	rep4, err := Copy(ctx, path, dsn)
	if !errors.Is(err, ErrMismatch) {
		t.Fatalf("Copy with an extra row = %v, want ErrMismatch", err)
	}
	for _, tr := range rep4.Tables {
		if tr.Match() != (tr.Table != "outbox") {
			t.Errorf("%s: match %v (%+v)", tr.Table, tr.Match(), tr)
		}
	}
}

// TestCopyRefusesBusyDatabase checks that a database a gateway serves from
// is not written, and a missing source is reported.
func TestCopyRefusesBusyDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	src, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, src)
	src.Close()
	dsn := pgtest.DB(t)
	gw, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	if err := gw.RegisterNode(ctx, postgres.NodeInfo{ID: "n1"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := Copy(ctx, path, dsn); !errors.Is(err, postgres.ErrInUse) {
		t.Errorf("Copy into a served database = %v, want ErrInUse", err)
	}
	if n, _ := gw.CountSessions(ctx, store.ListOptions{}); n != 0 {
		t.Errorf("%d sessions written into a served database", n)
	}
	if _, err := Copy(ctx, filepath.Join(t.TempDir(), "missing.db"), dsn); err == nil {
		t.Error("Copy from a missing file succeeded")
	}
}
