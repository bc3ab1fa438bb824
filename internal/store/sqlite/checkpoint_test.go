package sqlite

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// walState is what a PASSIVE checkpoint on its own connection reports:
// the frames in the WAL and how many of them are in the database file.
func walState(t *testing.T, s *Store) (frames, copied int) {
	t.Helper()
	var busy int
	if err := s.ckpt.db.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied); err != nil {
		t.Fatal(err)
	}
	return frames, copied
}

// TestWriterNeverCheckpoints: with the checkpointer held back, the WAL
// keeps every frame the writer appends, past the 1,000 pages at which the
// writer's own automatic checkpoint would have copied it back and started
// it again.
func TestWriterNeverCheckpoints(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{checkpointEvery: -1})
	err := s.writeTx(ctx, func(ctx context.Context, tx wtx) error { // about 1,200 pages
		_, err := tx.ExecContext(ctx, `CREATE TABLE filler (b BLOB);
			WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1200)
			INSERT INTO filler SELECT randomblob(3900) FROM n`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSession(ctx, &store.Session{Key: "agent:main:x", SessionID: "sx"}); err != nil {
		t.Fatal(err)
	}
	if frames, _ := walState(t, s); frames < 1200 {
		t.Fatalf("the WAL holds %d frames after 1,200 pages were written: the writer checkpointed", frames)
	}
}

// TestCheckpointerCopiesTheWAL: after checkpointEvery write bodies the
// checkpointer copies the WAL into the database file, on its own.
func TestCheckpointerCopiesTheWAL(t *testing.T) {
	ctx := context.Background()
	ran := make(chan struct{})
	s := openTest(t, Options{checkpointEvery: 3, checkpointAfter: -1, checkpointed: ran})
	for i, key := range []string{"agent:main:a", "agent:main:b", "agent:main:c"} {
		if err := s.CreateSession(ctx, &store.Session{Key: key, SessionID: "s" + key}); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			if n := s.ckpt.passes.Load(); n != 0 {
				t.Fatalf("%d checkpoints after %d bodies, want none before the third", n, i+1)
			}
		}
	}
	<-ran
	if frames, copied := walState(t, s); frames == 0 || copied != frames {
		t.Fatalf("WAL after the checkpoint: %d frames, %d copied", frames, copied)
	}
	if got, err := s.GetSession(ctx, "agent:main:c"); err != nil || got.Key != "agent:main:c" {
		t.Fatalf("GetSession after the checkpoint = %+v, %v", got, err)
	}
}

// TestQuietCommitIsCheckpointed: a body that fewer than checkpointEvery
// follow is checkpointed checkpointAfter after it (on a quiet gateway it
// waited for hundreds more before), and the next body starts the timer
// again.
func TestQuietCommitIsCheckpointed(t *testing.T) {
	ctx := context.Background()
	ran := make(chan struct{})
	s := openTest(t, Options{checkpointEvery: 1 << 30, checkpointAfter: time.Millisecond, checkpointed: ran})
	for i, key := range []string{"agent:main:a", "agent:main:b"} {
		if err := s.CreateSession(ctx, &store.Session{Key: key, SessionID: "s" + key}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ran:
		case <-time.After(time.Minute):
			t.Fatalf("no checkpoint after body %d", i+1)
		}
		if frames, copied := walState(t, s); frames == 0 || copied != frames {
			t.Fatalf("WAL after the checkpoint of body %d: %d frames, %d copied", i+1, frames, copied)
		}
		if n := s.ckpt.passes.Load(); n != int64(i+1) {
			t.Fatalf("%d checkpoints after %d bodies, want one a body", n, i+1)
		}
	}
	// A body that writes nothing to the WAL starts no timer: an idle
	// gateway's sweeps would open the checkpointer's connection.
	if err := s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
		_, err := tx.ExecContext(ctx, `UPDATE sessions SET label = 'x' WHERE key = 'agent:main:none'`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if s.ckpt.pending.Load() {
		t.Fatal("a body that wrote nothing started the checkpoint timer")
	}
}

// TestOpenLeavesTheCheckpointerIdle: Open copies what the migrations wrote
// into the database file on the writer, so the checkpointer opens no
// connection (one more parse of the schema) before its first due
// checkpoint.
func TestOpenLeavesTheCheckpointerIdle(t *testing.T) {
	s := openTest(t, Options{})
	if n := s.ckpt.db.Stats().OpenConnections; n != 0 {
		t.Fatalf("the checkpointer has %d connections after Open, want none", n)
	}
	if frames, copied := walState(t, s); copied != frames {
		t.Fatalf("WAL after Open: %d frames, %d copied", frames, copied)
	}
}

// TestCloseStopsTheCheckpointer: Close ends the checkpointer's goroutine,
// even when nobody takes its reports.
func TestCloseStopsTheCheckpointer(t *testing.T) {
	s := openTest(t, Options{checkpointed: make(chan struct{})})
	c := s.ckpt
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.done:
	default:
		t.Fatal("the checkpointer still runs after Close")
	}
}

// TestWALStaysBounded: under a steady stream of commits from several
// sessions the WAL is still started again from its beginning (the writer
// finishes a checkpoint once it passes restartFrames), instead of growing
// by every page written, as it did with background checkpoints alone.
func TestWALStaysBounded(t *testing.T) {
	ctx := context.Background()
	s, wal, n := turnStore(t, Options{})
	const senders, turns = 4, 400
	var wg sync.WaitGroup
	for g := range senders {
		key, sid := fmt.Sprintf("agent:main:g%d", g), fmt.Sprintf("sid-g%d", g)
		if err := s.CreateSession(ctx, &store.Session{Key: key, SessionID: sid, AgentID: "main"}); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for i := range turns {
				if err := warmTurn(ctx, s, key, sid, n+(g+1)*turns+i); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	// About 18 pages a turn are written: 29,000 in all.
	if frames := walFrames(t, s, wal); frames > 14000 {
		t.Errorf("the WAL reached %.0f pages for %d turns (%d finishing checkpoints)", frames, senders*turns, s.ckpt.finishes.Load())
	}
}

// TestWALBoundedWithoutTheCheckpointer: when the background checkpoint
// does not run (here never kicked; on a loaded machine its goroutine can
// wait while the writer's runs), the writer still finishes a checkpoint
// after restartBodies bodies and the WAL starts again, instead of growing
// by every page written (TestWALStaysBounded failed 1 run in 4 on a busy
// machine).
func TestWALBoundedWithoutTheCheckpointer(t *testing.T) {
	ctx := context.Background()
	s, wal, n := turnStore(t, Options{checkpointEvery: 1 << 30, checkpointAfter: -1})
	const turns = 2 * restartBodies // about 49,000 pages written
	for i := range turns {
		if err := warmTurn(ctx, s, turnKey, turnSID, n+i); err != nil {
			t.Fatal(err)
		}
	}
	if s.ckpt.passes.Load() != 0 {
		t.Fatalf("the background checkpoint ran %d times", s.ckpt.passes.Load())
	}
	// At most restartBodies bodies of about nine pages each (9.2 of 1 KiB)
	// since the log last started again.
	if frames := walFrames(t, s, wal); frames > 10*restartBodies {
		t.Errorf("the WAL reached %.0f pages for %d turns with the background checkpoint idle (%d finishing checkpoints)", frames, turns, s.ckpt.finishes.Load())
	}
}
