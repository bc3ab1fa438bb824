package sqlite

import (
	"context"
	"database/sql"
	"testing"
)

// TestWriterCommitFails: a COMMIT that fails (here a deferred foreign key
// left dangling) reports its error, keeps nothing of the transaction, and
// leaves the writer's connection out of it, so the next write commits.
func TestWriterCommitFails(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	exec := func(q string) func(context.Context, *sql.Tx) error {
		return func(ctx context.Context, tx *sql.Tx) error {
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
	if err := s.w.QueryRow(`SELECT (SELECT count(*) FROM child), (SELECT count(*) FROM parent)`).Scan(&children, &parents); err != nil {
		t.Fatal(err)
	}
	if children != 0 || parents != 1 {
		t.Errorf("%d children and %d parents stored, want 0 and 1", children, parents)
	}
}
