package sqlite

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// TestGroupCommit checks the writer's group commit: bodies that queue
// while the writer is busy share commits, a failing body loses only its own
// writes, a cancelled body writes nothing, and a body that breaks the
// shared transaction makes the others run again alone, each exactly once.
// A body's after runs once its writes are committed, in commit order, and
// never for a body that failed.
func TestGroupCommit(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	if err := s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	insert := func(k string) func(ctx context.Context, tx wtx) error {
		return func(ctx context.Context, tx wtx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO kv (k, v) VALUES (?, 1)`, k)
			return err
		}
	}
	errBody := errors.New("body failed")
	var (
		aftersMu sync.Mutex
		afters   []string
	)
	after := func(k string) func() {
		return func() {
			aftersMu.Lock()
			afters = append(afters, k)
			aftersMu.Unlock()
		}
	}

	// Hold the writer so that the next bodies queue up into one batch.
	hold := func(bodies func()) { t.Helper(); holdWriter(t, s, bodies) }

	cancelled, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	results := make([]error, 40)
	hold(func() {
		for i := range results {
			wg.Go(func() {
				k := fmt.Sprintf("k%02d", i)
				switch {
				case i%10 == 3: // writes, then fails: its row must not stay
					results[i] = s.writeTxThen(ctx, func(ctx context.Context, tx wtx) error {
						if err := insert(k)(ctx, tx); err != nil {
							return err
						}
						return errBody
					}, after(k))
				case i == 7:
					results[i] = s.writeTxThen(cancelled, insert(k), after(k))
				default:
					results[i] = s.writeTxThen(ctx, insert(k), after(k))
				}
			})
		}
		// Let the bodies reach the writer's queue before it is released.
		for s.commits.reqsWaiting() < len(results) {
			runtime.Gosched()
		}
		cancel()
	})
	wg.Wait()
	for i, err := range results {
		switch {
		case i%10 == 3 && !errors.Is(err, errBody):
			t.Errorf("body %d: err %v, want its own failure", i, err)
		case i == 7 && !errors.Is(err, context.Canceled):
			t.Errorf("cancelled body: err %v", err)
		case i%10 != 3 && i != 7 && err != nil:
			t.Errorf("body %d: %v", i, err)
		}
	}
	if n := s.commits.shared.Load(); n == 0 {
		t.Error("no commit carried more than one body")
	}
	var rows int
	if err := s.r.QueryRow(`SELECT count(*) FROM kv`).Scan(&rows); err != nil || rows != 40-4-1 {
		t.Errorf("rows = %d (%v), want %d", rows, err, 40-4-1)
	}
	if got, want := afters, committedKeys(t, s, "k%"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("afters ran for %v, want the committed bodies in commit order %v", got, want)
	}

	// A body that ends the shared transaction: the others still commit,
	// once each.
	var wg2 sync.WaitGroup
	var breakErr error
	okErrs := make([]error, 5)
	afters = nil
	hold(func() {
		wg2.Go(func() {
			breakErr = s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
				_, err := tx.ExecContext(ctx, `ROLLBACK`)
				return err
			})
		})
		for i := range okErrs {
			k := fmt.Sprintf("again%d", i)
			wg2.Go(func() { okErrs[i] = s.writeTxThen(ctx, insert(k), after(k)) })
		}
		for s.commits.reqsWaiting() < 6 {
			runtime.Gosched()
		}
	})
	wg2.Wait()
	if breakErr == nil {
		t.Error("the body that ended the transaction reported success")
	}
	for i, err := range okErrs {
		if err != nil {
			t.Errorf("body %d after a broken batch: %v", i, err)
		}
	}
	if err := s.r.QueryRow(`SELECT count(*) FROM kv WHERE k LIKE 'again%'`).Scan(&rows); err != nil || rows != 5 {
		t.Errorf("rows after a broken batch = %d (%v), want 5", rows, err)
	}
	if got, want := afters, committedKeys(t, s, "again%"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("afters after a broken batch ran for %v, want %v, once each", got, want)
	}
}

// committedKeys returns the kv keys like pattern in the order they were
// written.
func committedKeys(t *testing.T, s *Store, pattern string) []string {
	t.Helper()
	rows, err := s.r.Query(`SELECT k FROM kv WHERE k LIKE ? ORDER BY rowid`, pattern)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		out = append(out, k)
	}
	return out
}

// TestIdleWriterRunsOnCaller checks that a body handed in while the writer
// is free runs on its caller's goroutine, not the committer's: one after
// the other, no body is handed over.
func TestIdleWriterRunsOnCaller(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	for i := range 20 {
		if err := s.writeTx(ctx, func(ctx context.Context, tx wtx) error {
			_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS kv (k INTEGER PRIMARY KEY)`)
			if err == nil {
				_, err = tx.ExecContext(ctx, `INSERT INTO kv (k) VALUES (?)`, i)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.commits.taken.Load(); n != 0 {
		t.Errorf("the committer's goroutine ran %d of 20 bodies handed in one after the other", n)
	}
	var rows int
	if err := s.r.QueryRow(`SELECT count(*) FROM kv`).Scan(&rows); err != nil || rows != 20 {
		t.Errorf("rows = %d (%v), want 20", rows, err)
	}
}

// TestYieldGate checks when a lead yields first: at first and while yields
// bring company, not after fruitlessToSkip yields in a row that brought
// none (but every probeEvery-th lead), and at once again after a shared
// batch or a body that queued meanwhile.
func TestYieldGate(t *testing.T) {
	var g yieldGate
	lead := func(shared, queued bool) bool {
		y := g.yield()
		g.observe(y, shared, queued)
		return y
	}
	for i := range fruitlessToSkip {
		if !lead(false, false) {
			t.Fatalf("lead %d did not yield: fewer than %d fruitless yields so far", i, fruitlessToSkip)
		}
	}
	for round := range 3 {
		for i := range probeEvery - 1 {
			if lead(false, false) {
				t.Fatalf("round %d, lead %d yielded after %d fruitless yields", round, i, fruitlessToSkip)
			}
		}
		if !lead(false, false) {
			t.Fatalf("round %d: the probe lead did not yield", round)
		}
	}
	lead(false, false) // skipping: no yield, and company shows all the same
	g.observe(false, false, true)
	if !lead(false, false) {
		t.Fatal("no yield right after a body queued while one committed")
	}
	for range fruitlessToSkip + probeEvery {
		lead(false, false)
	}
	g.observe(true, true, false) // the committer's goroutine ran a batch
	for i := range fruitlessToSkip {
		if !lead(false, false) {
			t.Fatalf("lead %d after a shared batch did not yield", i)
		}
	}
}

// TestLeadYieldsOnlyForCompany checks the yield of a lead on the writer:
// bodies handed in one after the other stop yielding after
// fruitlessToSkip leads (only the probes do), and bodies that queue behind
// a busy writer bring the yield back for the next lead.
func TestLeadYieldsOnlyForCompany(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	body := func(ctx context.Context, tx wtx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS kv (k INTEGER PRIMARY KEY)`)
		return err
	}
	c := s.commits
	const n = 200
	before := c.yields.Load()
	for range n {
		if err := s.writeTx(ctx, body); err != nil {
			t.Fatal(err)
		}
	}
	// The gate may have started anywhere (Open writes too): at most the
	// fruitless yields, and a probe in every probeEvery leads after them.
	if got, most := c.yields.Load()-before, int64(fruitlessToSkip+n/probeEvery+1); got > most {
		t.Fatalf("%d of %d leads one after the other yielded, want at most %d", got, n, most)
	}

	// Hold the writer; a second body queues behind it and is run by the
	// committer's goroutine: the next lead yields again.
	queued := make(chan error, 1)
	holdWriter(t, s, func() {
		go func() { queued <- s.writeTx(ctx, body) }()
		for c.reqsWaiting() == 0 {
			runtime.Gosched()
		}
	})
	if err := <-queued; err != nil {
		t.Fatal(err)
	}
	// The queued body is answered inside its commit, before the
	// committer's goroutine releases the writer: a body handed in before
	// the release would queue behind it and never lead.
	for !writerFree(c) {
		runtime.Gosched()
	}
	before = c.yields.Load()
	if err := s.writeTx(ctx, body); err != nil {
		t.Fatal(err)
	}
	if c.yields.Load() == before {
		t.Fatal("the lead after a queued body did not yield")
	}
}

// writerFree reports whether c's writer is free, with no body queued: a
// body handed in now leads.
func writerFree(c *committer) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.busy && len(c.queue) == 0
}

// holdWriter runs bodies while a write transaction holds the writer, and
// returns once it is released: bodies handed in meanwhile queue up.
func holdWriter(t *testing.T, s *Store, bodies func()) {
	t.Helper()
	started, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := s.writeTx(context.Background(), func(ctx context.Context, tx wtx) error { close(started); <-release; return nil }); err != nil {
			t.Error(err)
		}
	})
	<-started
	bodies()
	close(release)
	wg.Wait()
}
