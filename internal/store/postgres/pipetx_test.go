package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard/internal/store"
)

// TestPipeTx: a store transaction's BEGIN and fence check travel with its
// first statement, whatever that is (Exec, QueryRow, Query, a batch); a
// fence that no longer holds refuses the first statement with ErrFenced
// and nothing of the transaction lands; an error rolls back what the first
// statement did; a transaction that sent nothing commits nothing; the
// connections go back to the pool usable.
func TestPipeTx(t *testing.T) {
	ctx := context.Background()
	s := openNodes(t, 1)[0]
	s.SetNode("a")
	register(t, s, "a", time.Minute)
	const key = "agent:main:p"
	owner, epoch, err := s.ClaimLane(ctx, "a", key)
	if err != nil || owner != "a" {
		t.Fatalf("ClaimLane = %q, %v", owner, err)
	}
	held := store.WithFence(ctx, store.Fence{Node: "a", SessionKey: key, Epoch: epoch})
	stale := store.WithFence(ctx, store.Fence{Node: "a", SessionKey: key, Epoch: epoch - 1})
	if _, err := s.pool.Exec(ctx, `CREATE TABLE pipe_probe (v text)`); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		var n int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pipe_probe`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	firsts := map[string]func(tx pgx.Tx) error{
		"Exec": func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO pipe_probe VALUES ('x')`)
			return err
		},
		"QueryRow": func(tx pgx.Tx) error {
			var v string
			return tx.QueryRow(ctx, `INSERT INTO pipe_probe VALUES ('x') RETURNING v`).Scan(&v)
		},
		"Query": func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `INSERT INTO pipe_probe VALUES ('x') RETURNING v`)
			if err != nil {
				return err
			}
			_, err = pgx.CollectRows(rows, pgx.RowTo[string])
			return err
		},
		"SendBatch": func(tx pgx.Tx) error {
			var b pgx.Batch
			b.Queue(`INSERT INTO pipe_probe VALUES ('x')`)
			b.Queue(`INSERT INTO pipe_probe VALUES ('y')`)
			return tx.SendBatch(ctx, &b).Close()
		},
	}
	for name, first := range firsts {
		t.Run(name, func(t *testing.T) {
			n0 := count()
			// A fence that holds: the statement and a second one land.
			if err := s.writeTx(held, func(tx pgx.Tx) error {
				if err := first(tx); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `INSERT INTO pipe_probe VALUES ('z')`)
				return err
			}); err != nil {
				t.Fatalf("held: %v", err)
			}
			n1 := count()
			if n1 <= n0+1 {
				t.Fatalf("held: %d rows after, %d before", n1, n0)
			}
			// A stale fence: refused at the first statement.
			err := s.writeTx(stale, first)
			if !errors.Is(err, store.ErrFenced) {
				t.Fatalf("stale fence = %v, want ErrFenced", err)
			}
			// No fence, and fn fails after its first statement: rolled back.
			boom := errors.New("boom")
			if err := s.writeTx(ctx, func(tx pgx.Tx) error {
				if err := first(tx); err != nil {
					return err
				}
				return boom
			}); !errors.Is(err, boom) {
				t.Fatalf("failing fn = %v", err)
			}
			if n := count(); n != n1 {
				t.Errorf("rows after a refused and a failed transaction = %d, want %d", n, n1)
			}
		})
	}
	// sendLast: COMMIT with the last batch, first statement or not; a
	// failed statement in it, or a stale fence, leaves nothing.
	for _, lead := range []bool{false, true} {
		last := func(vals ...string) func(tx pgx.Tx) error {
			return func(tx pgx.Tx) error {
				if lead {
					if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
						return err
					}
				}
				var b pgx.Batch
				for _, v := range vals {
					b.Queue(`INSERT INTO pipe_probe VALUES ($1)`, v)
				}
				return sendLast(ctx, tx, &b).Close()
			}
		}
		n0 := count()
		if err := s.writeTx(held, last("a", "b")); err != nil {
			t.Fatalf("sendLast (after a statement: %v): %v", lead, err)
		}
		if n := count(); n != n0+2 {
			t.Fatalf("sendLast (after a statement: %v): %d rows, want %d", lead, n, n0+2)
		}
		if err := s.writeTx(stale, last("c")); !errors.Is(err, store.ErrFenced) {
			t.Errorf("sendLast under a stale fence = %v, want ErrFenced", err)
		}
		if err := s.writeTx(held, func(tx pgx.Tx) error {
			var b pgx.Batch
			b.Queue(`INSERT INTO pipe_probe VALUES ('d')`)
			b.Queue(`INSERT INTO no_such_table VALUES (1)`)
			return sendLast(ctx, tx, &b).Close()
		}); err == nil {
			t.Error("sendLast with a failing statement succeeded")
		}
		if n := count(); n != n0+2 {
			t.Errorf("rows after a refused and a failed sendLast = %d, want %d", n, n0+2)
		}
	}
	// Nothing sent: nothing to commit, even under a stale fence.
	if err := s.writeTx(stale, func(pgx.Tx) error { return nil }); err != nil {
		t.Errorf("empty transaction = %v", err)
	}
	// A statement error in the pipeline surfaces as itself, and the
	// connections stay usable (more transactions than the pool holds).
	for range 2 * int(s.pool.Config().MaxConns) {
		err := s.writeTx(held, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO no_such_table VALUES (1)`)
			return err
		})
		if err == nil || errors.Is(err, store.ErrFenced) {
			t.Fatalf("statement error = %v", err)
		}
	}
	if _, err := s.AppendMessages(held, "sid-p", []store.Message{userMsg("after")}); err != nil {
		t.Fatalf("fenced append after failures: %v", err)
	}
}

// TestLeadLock: a transaction whose fence check takes an advisory lock
// (leadLock) holds it from its first statement to its end, and under a
// stale fence takes nothing; a transaction that has begun, or has no
// fence, does not offer to take it.
func TestLeadLock(t *testing.T) {
	ctx := context.Background()
	s := openNodes(t, 1)[0]
	s.SetNode("a")
	register(t, s, "a", time.Minute)
	const key = "agent:main:lock"
	_, epoch, err := s.ClaimLane(ctx, "a", key)
	if err != nil {
		t.Fatal(err)
	}
	const lockKey = int64(0x5eed)
	// held reports whether another session finds the lock taken.
	held := func() bool {
		var free bool
		if err := s.pool.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, lockKey).Scan(&free); err != nil {
			t.Fatal(err)
		}
		if free {
			if _, err := s.pool.Exec(ctx, `SELECT pg_advisory_unlock($1)`, lockKey); err != nil {
				t.Fatal(err)
			}
		}
		return !free
	}
	fenced := store.WithFence(ctx, store.Fence{Node: "a", SessionKey: key, Epoch: epoch})
	if err := s.writeTx(fenced, func(tx pgx.Tx) error {
		if !leadLock(tx, lockKey) {
			t.Fatal("leadLock refused a fenced transaction that sent nothing")
		}
		if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
			return err
		}
		if !held() {
			t.Error("the lock is not held after the first statement")
		}
		if leadLock(tx, lockKey) {
			t.Error("leadLock offered on a transaction that has begun")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if held() {
		t.Error("the lock is still held after the commit")
	}
	stale := store.WithFence(ctx, store.Fence{Node: "a", SessionKey: key, Epoch: epoch - 1})
	err = s.writeTx(stale, func(tx pgx.Tx) error {
		leadLock(tx, lockKey)
		_, err := tx.Exec(ctx, `SELECT 1`)
		return err
	})
	if !errors.Is(err, store.ErrFenced) || held() {
		t.Errorf("stale fence: %v, lock held %v; want ErrFenced and no lock", err, held())
	}
	if err := s.writeTx(ctx, func(tx pgx.Tx) error {
		if leadLock(tx, lockKey) {
			t.Error("leadLock offered on a transaction without a fence")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestLastBatchImplicit: a transaction whose only batch is sendLast's goes
// without BEGIN and COMMIT (the batch's Sync commits it), its fence check
// still first (without the idle timeout: it is never idle); one that sent
// a statement before ends its last batch with COMMIT.
func TestLastBatchImplicit(t *testing.T) {
	sqls := func(b *pgx.Batch) []string {
		var out []string
		for _, q := range b.QueuedQueries {
			out = append(out, q.SQL)
		}
		return out
	}
	var b pgx.Batch
	b.Queue(`INSERT INTO t VALUES (1)`)
	fence := &store.Fence{Node: "a", SessionKey: "k", Epoch: 1}
	tx := &pipeTx{fence: fence}
	full, led := tx.lastBatch(&b)
	if got := sqls(full); !led || len(got) != 2 || got[0] != qFenceGuardOnly || got[1] != `INSERT INTO t VALUES (1)` {
		t.Errorf("first and last batch = %q (led %v); want the fence check and the insert only", got, led)
	}
	if !tx.closed || !tx.implicit {
		t.Error("an implicit transaction's pipeTx is not closed after its batch")
	}
	tx = &pipeTx{fence: fence, begun: true}
	full, led = tx.lastBatch(&b)
	if got := sqls(full); led || len(got) != 2 || got[1] != "commit" {
		t.Errorf("last batch after a statement = %q (led %v); want the insert and COMMIT", got, led)
	}
}
