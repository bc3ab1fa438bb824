package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlite/walvfs"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// lingerSession creates the session the linger tests open runs in.
func lingerSession(t *testing.T, s *Store) {
	t.Helper()
	if err := s.CreateSession(context.Background(), &store.Session{Key: "agent:main:l", SessionID: "sid-l", AgentID: "main"}); err != nil {
		t.Fatal(err)
	}
}

// openLingering opens run id in the linger tests' session with ctx asking
// to linger for d, and returns the Pending (nil: committed already).
func openLingering(t *testing.T, s *Store, ctx context.Context, id string, d time.Duration) (store.Pending, error) {
	t.Helper()
	now := time.Now()
	u := transcript.NewUserMessage("hi "+id, now)
	run := &store.Run{RunID: id, SessionKey: "agent:main:l", SessionID: "sid-l", AgentID: "main",
		Status: store.RunRunning, StartedAt: now, Input: []byte(`{}`)}
	l := &store.Linger{For: d}
	_, _, err := s.OpenRun(store.WithLinger(ctx, l), run, []store.Message{{Entry: transcript.MessageEntry(u, now), Role: u.Role, RunID: id}})
	return l.Pending, err
}

// mustLinger is openLingering of a run that must linger.
func mustLinger(t *testing.T, s *Store, ctx context.Context, id string, d time.Duration) store.Pending {
	t.Helper()
	p, err := openLingering(t, s, ctx, id, d)
	if err != nil || p == nil {
		t.Fatalf("OpenRun(%s) = %v, Pending %v; want a lingering open", id, err, p)
	}
	return p
}

// endWithReply ends run id with a reply, in one EndRun.
func endWithReply(t *testing.T, s *Store, id string) {
	t.Helper()
	a := transcript.NewAssistantMessage([]transcript.Block{transcript.TextBlock("ok")}, time.Now())
	reply := []store.Message{{Entry: transcript.MessageEntry(a, time.Now()), Role: a.Role, RunID: id}}
	if _, _, err := s.EndRun(context.Background(), id, store.RunResult{Status: store.RunOK}, "sid-l", reply); err != nil {
		t.Fatal(err)
	}
}

// TestLingerSharesEndCommit: an open asked to linger leaves its
// transaction uncommitted, unseen by readers, until the run's end joins
// it: the turn is one WAL write, and the Pending then reports the commit.
func TestLingerSharesEndCommit(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{checkpointEvery: -1})
	lingerSession(t, s)
	before := walvfs.Writes()
	p := mustLinger(t, s, ctx, "r1", time.Hour)
	if _, err := s.GetRun(ctx, "r1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetRun of a lingering open = %v, want ErrNotFound (not committed)", err)
	}
	if n, err := s.CountMessages(ctx, "sid-l"); err != nil || n != 0 {
		t.Fatalf("CountMessages before the commit = %d, %v; want 0", n, err)
	}
	endWithReply(t, s, "r1")
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := walvfs.Writes() - before; got != 1 {
		t.Errorf("open and end made %d WAL writes, want 1", got)
	}
	if r, err := s.GetRun(ctx, "r1"); err != nil || r.Status != store.RunOK {
		t.Fatalf("GetRun after the end = %+v, %v", r, err)
	}
	if n, err := s.CountMessages(ctx, "sid-l"); err != nil || n != 2 {
		t.Fatalf("CountMessages after the end = %d, %v; want 2", n, err)
	}
	if !writerFree(s.commits) {
		t.Fatal("writer still busy after the shared commit")
	}
}

// TestLingerEnds: a lingering open commits on its own once its time is
// up; before that, a read made with its Pending in the context commits it
// at once; and closing the store commits it too.
func TestLingerEnds(t *testing.T) {
	ctx := context.Background()
	t.Run("deadline", func(t *testing.T) {
		s := openTest(t, Options{})
		lingerSession(t, s)
		p := mustLinger(t, s, ctx, "r1", time.Millisecond)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if r, err := s.GetRun(ctx, "r1"); err != nil || r.Status != store.RunRunning {
			t.Fatalf("GetRun = %+v, %v; want the run running", r, err)
		}
	})
	t.Run("read", func(t *testing.T) {
		s := openTest(t, Options{})
		lingerSession(t, s)
		p := mustLinger(t, s, ctx, "r1", time.Hour)
		if n, err := s.CountMessages(store.WithPending(ctx, p), "sid-l"); err != nil || n != 1 {
			t.Fatalf("CountMessages with the Pending = %d, %v; want 1 (committed first)", n, err)
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if !writerFree(s.commits) {
			t.Fatal("writer still busy after the read's commit")
		}
	})
	t.Run("close", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "store.db")
		s, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		lingerSession(t, s)
		p := mustLinger(t, s, ctx, "r1", time.Hour)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(); err != nil {
			t.Fatalf("Pending after Close: %v", err)
		}
		s, err = Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if r, err := s.GetRun(ctx, "r1"); err != nil || r.Status != store.RunRunning {
			t.Fatalf("GetRun after a reopen = %+v, %v; want the run committed at Close", r, err)
		}
	})
}

// TestLingerCompany: any write that comes while an open lingers shares
// its commit, another open included (which then does not linger); an open
// that finds the writer busy commits as usual; one whose body fails
// leaves nothing lingering.
func TestLingerCompany(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{checkpointEvery: -1})
	lingerSession(t, s)
	p1 := mustLinger(t, s, ctx, "r1", time.Hour)
	before := walvfs.Writes()
	p2, err := openLingering(t, s, ctx, "r2", time.Hour)
	if err != nil || p2 != nil {
		t.Fatalf("second OpenRun = %v, Pending %v; want it committed with the first", err, p2)
	}
	if err := p1.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := walvfs.Writes() - before; got != 1 {
		t.Errorf("two opens made %d WAL writes, want 1", got)
	}
	for _, id := range []string{"r1", "r2"} {
		if _, err := s.GetRun(ctx, id); err != nil {
			t.Fatalf("GetRun(%s) = %v", id, err)
		}
	}

	// A body that fails as the open's company leaves nothing of its own,
	// and the open commits all the same.
	pf := mustLinger(t, s, ctx, "rf", time.Hour)
	boom := errors.New("boom")
	if err := s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET label = 'failed body' WHERE key = 'agent:main:l'`); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("failing company = %v, want boom", err)
	}
	if err := pf.Wait(); err != nil {
		t.Fatalf("open with a failing company: %v", err)
	}
	if _, err := s.GetRun(ctx, "rf"); err != nil {
		t.Fatalf("GetRun(rf) = %v", err)
	}
	if sess, err := s.GetSession(ctx, "agent:main:l"); err != nil || sess.Label != "" {
		t.Fatalf("session after the failed body: %+v, %v; want no label", sess, err)
	}

	// A repeated id fails in its body: nothing lingers, the writer is
	// free for the next body.
	if p, err := openLingering(t, s, ctx, "r1", time.Hour); !errors.Is(err, store.ErrConflict) || p != nil {
		t.Fatalf("OpenRun of an existing id = %v, Pending %v; want ErrConflict and none", err, p)
	}
	if !writerFree(s.commits) {
		t.Fatal("writer busy after a failed lingering open")
	}

	// With the writer busy the open queues and commits as run's bodies
	// do: no Pending.
	done := make(chan error, 1)
	holdWriter(t, s, func() {
		go func() {
			p, err := openLingering(t, s, ctx, "r3", time.Hour)
			if err == nil && p != nil {
				err = fmt.Errorf("Pending %v with the writer busy", p)
			}
			done <- err
		}()
		for s.commits.reqsWaiting() == 0 {
			runtime.Gosched()
		}
	})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetRun(ctx, "r3"); err != nil {
		t.Fatalf("GetRun(r3) = %v", err)
	}
}
