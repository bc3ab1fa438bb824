package sqlite

import (
	"context"
	"fmt"
	"testing"

	"github.com/switchboardhq/switchboard/internal/store"
)

// TestWriterCommitFails: a COMMIT that fails (here a deferred foreign key
// left dangling) reports its error, keeps nothing of the transaction, and
// leaves the writer's connection out of it, so the next write commits.
func TestWriterCommitFails(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	exec := func(q string) func(context.Context, wtx) error {
		return func(ctx context.Context, tx wtx) error {
			_, err := tx.ExecContext(ctx, q)
			return err
		}
	}
	if err := s.writeTx(ctx, exec(`CREATE TABLE parent (id INTEGER PRIMARY KEY);
		CREATE TABLE child (id INTEGER PRIMARY KEY,
			parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)`)); err != nil {
		t.Fatal(err)
	}
	if err := s.writeTx(ctx, exec(`INSERT INTO child (id, parent) VALUES (1, 7)`)); err == nil {
		t.Fatal("a commit with a dangling deferred foreign key succeeded")
	}
	if err := s.writeTx(ctx, exec(`INSERT INTO parent (id) VALUES (7)`)); err != nil {
		t.Fatalf("the write after a failed commit: %v", err)
	}
	var children, parents int
	if err := s.r.QueryRow(`SELECT (SELECT count(*) FROM child), (SELECT count(*) FROM parent)`).Scan(&children, &parents); err != nil {
		t.Fatal(err)
	}
	if children != 0 || parents != 1 {
		t.Errorf("%d children and %d parents stored, want 0 and 1", children, parents)
	}
}

// TestWriterPreparesAtFirstUse: Open prepares none of the store's writer
// statements; a statement is prepared on the writer's connection at its
// first use and kept there, still open after the transaction that
// prepared it, for every later transaction.
func TestWriterPreparesAtFirstUse(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	var w *writerConn
	if err := s.writeTx(ctx, func(_ context.Context, tx wtx) error { w = tx.w; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(w.kept) != 0 {
		t.Fatalf("Open prepared %d writer statements, want none", len(w.kept))
	}
	var kept []*keptStmt
	for i, key := range []string{"agent:main:a", "agent:main:b"} {
		sess := &store.Session{Key: key, SessionID: fmt.Sprintf("0195d2a4-0000-7000-8000-00000000000%d", i), AgentID: "main"}
		if err := s.CreateSession(ctx, sess); err != nil {
			t.Fatalf("write %d: %v", i+1, err)
		}
		st := w.kept[s.q.insertSession]
		if st == nil {
			t.Fatalf("after write %d the insert is not kept (kept: %d statements)", i+1, len(w.kept))
		}
		kept = append(kept, st)
	}
	if kept[0] != kept[1] {
		t.Error("the second write prepared the insert again")
	}
	for _, key := range []string{"agent:main:a", "agent:main:b"} {
		if got, err := s.GetSession(ctx, key); err != nil || got == nil {
			t.Errorf("GetSession(%q) = %v, %v after its write", key, got, err)
		}
	}
}
