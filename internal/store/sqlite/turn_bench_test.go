package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlite/walvfs"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// warmTurn stores one chat turn as the runner does on an idle lane with
// a model slower than its open's linger: the run opened with its user
// message (one transaction), then ended with the reply (a second one).
func warmTurn(ctx context.Context, s *Store, key, sid string, i int) error {
	return storeTurn(ctx, s, key, sid, i, false)
}

// storeTurn is warmTurn; with linger the open waits for the end, which
// commits both (a model that answers within the runner's OpenLinger).
func storeTurn(ctx context.Context, s *Store, key, sid string, i int, linger bool) error {
	runID := fmt.Sprintf("run-%08d", i)
	now := time.Now()
	u := transcript.NewUserMessage(fmt.Sprintf("message %d", i), now)
	run := &store.Run{RunID: runID, SessionKey: key, SessionID: sid, AgentID: "main",
		Status: store.RunRunning, StartedAt: now, Input: []byte(`{"message":"hi"}`)}
	octx := ctx
	l := &store.Linger{For: time.Hour}
	if linger {
		octx = store.WithLinger(ctx, l)
	}
	if _, _, err := s.OpenRun(octx, run, []store.Message{{Entry: transcript.MessageEntry(u, now), Role: u.Role, RunID: runID}}); err != nil {
		return err
	}
	a := transcript.NewAssistantMessage([]transcript.Block{transcript.TextBlock("ok")}, now)
	a.Usage = &transcript.Usage{Input: 10, Output: 2, TotalTokens: 12}
	reply := []store.Message{{Entry: transcript.MessageEntry(a, now), Role: a.Role, RunID: runID}}
	if _, _, err := s.EndRun(ctx, runID, store.RunResult{Status: store.RunOK, StopReason: "stop",
		Usage: transcript.Usage{Input: 10, Output: 2, TotalTokens: 12}}, sid, reply); err != nil {
		return err
	}
	if l.Pending != nil {
		return l.Pending.Wait()
	}
	return nil
}

// turnStore is a store with 1,000 sessions (a fifth of them spawned and
// labelled) and one session of 1,000 warm turns, its WAL checkpointed.
// It returns the store, the WAL's path and the next turn's number.
func turnStore(tb testing.TB, opts Options) (*Store, string, int) {
	tb.Helper()
	ctx := context.Background()
	path := filepath.Join(tb.TempDir(), "turn.db")
	s, err := Open(ctx, path, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	if err := seedSessions(s, 1000); err != nil {
		tb.Fatal(err)
	}
	if err := s.CreateSession(ctx, &store.Session{Key: turnKey, SessionID: turnSID, AgentID: "main", Kind: "direct"}); err != nil {
		tb.Fatal(err)
	}
	n := 0
	for ; n < 1000; n++ {
		if err := warmTurn(ctx, s, turnKey, turnSID, n); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := s.ckpt.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		tb.Fatal(err)
	}
	return s, path + "-wal", n
}

const turnKey, turnSID = "agent:main:main", "sid-warm"

// walFrames is how many page frames the WAL at path holds (a 32-byte
// header, then frames of a 24-byte header and a page each).
func walFrames(tb testing.TB, s *Store, path string) float64 {
	tb.Helper()
	var pageSize int64
	if err := s.r.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		tb.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return float64(max(fi.Size()-32, 0)) / float64(pageSize+24)
}

// TestWarmTurnPages: a warm turn's two commits write at most 19 pages of
// 1 KiB (pageSize; 18.3 now). With 4 KiB pages a turn wrote 15.2, before
// migration 16 dropped messages_run 17.5, before migration 15 dropped
// sessions_kind 18.5, and before the partial indexes of migration 14 22.7:
// the run's end moved its entries in runs_status and runs_ended, and the
// session's new updated_at its entries in sessions_spawned_by and
// sessions_label.
func TestWarmTurnPages(t *testing.T) {
	ctx := context.Background()
	s, wal, n := turnStore(t, Options{checkpointEvery: -1}) // the WAL only grows
	const turns = 200
	for i := range turns {
		if err := warmTurn(ctx, s, turnKey, turnSID, n+i); err != nil {
			t.Fatal(err)
		}
	}
	if got := walFrames(t, s, wal) / turns; got > 19 {
		t.Errorf("a warm turn wrote %.1f pages, want at most 19", got)
	} else {
		t.Logf("a warm turn wrote %.1f pages", got)
	}
}

// TestWarmTurnPagesOneCommit: a warm turn whose open waits for its end
// writes at most 15 pages of 1 KiB (14.1 now): the pages both commits
// wrote (the transcript's and the runs' last leaves, the run's row) go
// out once.
func TestWarmTurnPagesOneCommit(t *testing.T) {
	ctx := context.Background()
	s, wal, n := turnStore(t, Options{checkpointEvery: -1})
	const turns = 200
	for i := range turns {
		if err := storeTurn(ctx, s, turnKey, turnSID, n+i, true); err != nil {
			t.Fatal(err)
		}
	}
	if got := walFrames(t, s, wal) / turns; got > 15 {
		t.Errorf("a warm turn wrote %.1f pages, want at most 15", got)
	} else {
		t.Logf("a warm turn wrote %.1f pages", got)
	}
}

// TestWarmTurnWrites: a warm turn's two commits reach the WAL in one
// write each (package walvfs); SQLite's unix VFS makes two a page, 30 a
// turn.
func TestWarmTurnWrites(t *testing.T) {
	ctx := context.Background()
	s, _, n := turnStore(t, Options{checkpointEvery: -1})
	if err := warmTurn(ctx, s, turnKey, turnSID, n); err != nil { // the log restarts after the checkpoint
		t.Fatal(err)
	}
	const turns = 50
	before := walvfs.Writes()
	for i := 1; i <= turns; i++ {
		if err := warmTurn(ctx, s, turnKey, turnSID, n+i); err != nil {
			t.Fatal(err)
		}
	}
	if got := walvfs.Writes() - before; got != 2*turns {
		t.Errorf("%d warm turns made %d WAL writes, want %d", turns, got, 2*turns)
	}
}

// BenchmarkWarmTurn is the store's part of a warm chat turn on a session
// with 1,000 turns before it, among 1,000 other sessions, checkpoints
// included (TestWarmTurnPages logs the pages a turn writes): the run's
// open and end in two commits.
func BenchmarkWarmTurn(b *testing.B) { benchWarmTurn(b, false) }

// BenchmarkWarmTurnOneCommit is BenchmarkWarmTurn with the open lingering
// until the end, which commits both (store.Linger).
func BenchmarkWarmTurnOneCommit(b *testing.B) { benchWarmTurn(b, true) }

func benchWarmTurn(b *testing.B, linger bool) {
	// A cancellable context, as the runner's are.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, _, n := turnStore(b, Options{})
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime(b)
	for i := range b.N {
		if err := storeTurn(ctx, s, turnKey, turnSID, n+i, linger); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkWarmTurnsShared is BenchmarkWarmTurn with 100 sessions
// taking turns at once (as 100 session-scoped clients do), so their
// writes share commits; it reports the WAL pages a turn wrote.
func BenchmarkWarmTurnsShared(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, wal, n := turnStore(b, Options{checkpointEvery: -1}) // the WAL only grows
	const clients = 100
	for c := range clients {
		key := fmt.Sprintf("agent:main:load-%d", c)
		if err := s.CreateSession(ctx, &store.Session{Key: key, SessionID: "sid-" + key, AgentID: "main", Kind: "direct"}); err != nil {
			b.Fatal(err)
		}
	}
	frames := walFrames(b, s, wal)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime(b)
	var wg sync.WaitGroup
	errs := make([]error, clients)
	for c := range clients {
		wg.Go(func() {
			key := fmt.Sprintf("agent:main:load-%d", c)
			for i := c; i < b.N && errs[c] == nil; i += clients {
				errs[c] = warmTurn(ctx, s, key, "sid-"+key, n+i)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric((walFrames(b, s, wal)-frames)/float64(b.N), "pages/op")
}

// cpuTime is the CPU time (user and system) the process has used so far,
// the checkpointer's included.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
