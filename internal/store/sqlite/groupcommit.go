package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardhq/switchboard/internal/stackstart"
)

// maxBatch bounds how many transaction bodies one group commit carries.
const maxBatch = 64

// writeReq is one transaction body waiting for the committer.
type writeReq struct {
	ctx context.Context
	// fn is the body. The context it is given carries ctx's values but
	// not its cancellation: a body's statements take microseconds, and a
	// cancellable context costs a goroutine per statement (the driver's
	// interrupt watch) and per transaction and query (database/sql's).
	// ctx is checked before the body runs.
	fn func(ctx context.Context, tx wtx) error
	// after, when set, runs once fn's work is committed, on the
	// committer, before done is answered: the afters of all bodies run in
	// commit order.
	after func()
	done  chan error // capacity 1; the committer answers exactly once
}

// answer runs r's after once its body is committed (err nil), then
// answers.
func (r *writeReq) answer(err error) {
	if err == nil && r.after != nil {
		r.after()
	}
	r.done <- err
}

// committer is the writer's group commit: writeTx hands it transaction
// bodies, and it runs every body that is waiting when it becomes free in one
// transaction, each inside its own savepoint, and commits once. Under load
// many sessions' writes share one commit (one WAL append instead of one per
// body); an idle store runs each body at once, with no timer. A body that
// fails rolls back to its savepoint only; the others commit.
//
// A body handed in while the writer is free and nothing waits runs on its
// caller's goroutine (with the bodies handed in meanwhile: lead): the turn
// of an idle session then costs no hand-over to the committer's goroutine
// and back (two wake-ups per commit). Bodies handed in while the writer is
// busy queue for that goroutine, which takes them all once it is free.
//
// The committer has the writer's connection to itself: it takes it out of
// the writer's pool (db, MaxOpenConns 1) at its first transaction and holds
// it until close, so database/sql never uses it meanwhile, and runs its
// transactions and their statements on it directly (wtx). A connection
// that is no longer usable (closed, or interrupted) goes back to the pool
// as broken, which closes it, and the next transaction takes a new one, as
// the pool's BeginTx did. (database/sql documents the connection Conn.Raw
// lends as not to be used after Raw returns: it guards the connection only
// while a Conn or Tx has it, and the committer's Conn has it until close.)
type committer struct {
	db *sql.DB
	// conn holds the writer's connection, w, out of db's pool; both nil
	// until the first transaction and after the connection broke. Only
	// the goroutine that has the writer (busy) uses them.
	conn *sql.Conn
	w    *writerConn

	mu     sync.Mutex
	cond   sync.Cond   // on mu: busy went false (close waits for it)
	queue  []*writeReq // handed in, not yet taken
	busy   bool        // a body or a batch is running (on a caller or the goroutine)
	closed bool
	wake   chan struct{} // capacity 1: the queue has bodies and the writer is free
	stop   chan struct{}
	done   chan struct{}

	// memo follows each body's and transaction's outcome.
	memo *writeMemo

	shared atomic.Int64 // commits that carried more than one body
	taken  atomic.Int64 // bodies the committer's goroutine ran (tests)
	yields atomic.Int64 // leads that yielded before taking the queue (tests)

	// gate decides whether a lead yields first; only the goroutine that
	// has the writer (busy) uses it.
	gate yieldGate

	// lingering is the transaction a body left uncommitted (runLinger),
	// nil when none waits: while it is set the writer is busy and nobody
	// uses it, and whoever takes it (run, the loop, its Commit) owns the
	// writer until it is committed. timer ends its wait; only the owner of
	// the writer arms or stops it.
	lingering *lingerTx
	timer     *time.Timer

	// ran, when set, is told how many bodies each batch carried, after
	// the batch, and given the writer's connection outside any
	// transaction (zero when it has none).
	ran func(bodies int, w wtx)
}

// reqsWaiting reports how many bodies wait for the committer to take them.
func (c *committer) reqsWaiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

// The statements around each body of a shared commit.
const (
	qSavepoint  = "SAVEPOINT body"
	qRollbackTo = "ROLLBACK TO body"
	qRelease    = "RELEASE body"
)

func newCommitter(db *sql.DB, memo *writeMemo, ran func(bodies int, w wtx)) *committer {
	c := &committer{db: db, memo: memo, wake: make(chan struct{}, 1), stop: make(chan struct{}),
		done: make(chan struct{}), ran: ran}
	c.cond.L = &c.mu
	stackstart.Go(nil, c.loop) // its bodies run SQLite, whose frames are deep
	return c
}

// close stops the committer after the batch or body in progress; bodies
// handed in after that, and bodies still queued, get net.ErrClosed. Then
// last (may be nil) runs on the writer's connection, outside any
// transaction, and the connection goes back to the pool.
func (c *committer) close(last func(w *writerConn)) error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	close(c.stop)
	<-c.done
	c.mu.Lock()
	for c.busy {
		c.cond.Wait()
	}
	queued := c.queue
	c.queue = nil
	c.mu.Unlock()
	for _, r := range queued {
		r.answer(net.ErrClosed)
	}
	if last != nil {
		if w, err := c.writer(); err == nil {
			last(w)
		}
	}
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn, c.w = nil, nil
	return err
}

// writer returns the writer's connection, taking it out of the pool when
// the committer has none or its own is no longer usable.
func (c *committer) writer() (*writerConn, error) {
	if c.w != nil {
		if c.w.IsValid() {
			return c.w, nil
		}
		c.drop()
	}
	conn, err := c.db.Conn(context.Background())
	if err != nil {
		return nil, fmt.Errorf("writer connection: %w", err)
	}
	var w *writerConn
	conn.Raw(func(dc any) error {
		w, _ = dc.(*writerConn)
		return nil
	})
	if w == nil {
		conn.Close()
		return nil, errors.New("writer connection: not the writer's")
	}
	c.conn, c.w = conn, w
	return w, nil
}

// drop hands the committer's connection back to the pool as broken: the
// pool closes it.
func (c *committer) drop() {
	c.conn.Raw(func(any) error { return driver.ErrBadConn })
	c.conn, c.w = nil, nil
}

// begin begins a write transaction on the writer's connection. A
// connection that fails BEGIN as broken is dropped and BEGIN tried once on
// a new one, as database/sql's BeginTx retried.
func (c *committer) begin() (wtx, error) {
	for retried := false; ; retried = true {
		w, err := c.writer()
		if err != nil {
			return wtx{}, err
		}
		err = w.beginTx(context.Background())
		if err == nil {
			return wtx{w}, nil
		}
		if retried || !errors.Is(err, driver.ErrBadConn) {
			return wtx{}, err
		}
		c.drop()
	}
}

// run hands fn to the committer and waits for its outcome. after (may be
// nil) runs once fn's work is committed, before any later commit.
func (c *committer) run(ctx context.Context, fn func(ctx context.Context, tx wtx) error, after func()) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	req := &writeReq{ctx: ctx, fn: fn, after: after, done: make(chan error, 1)}
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return net.ErrClosed
	case c.lingering != nil:
		// A transaction waits for company: this body is that company,
		// run here with those that queued, and the commit is theirs.
		l := c.lingering
		c.lingering = nil
		c.mu.Unlock()
		c.endLinger(l, req)
		return <-req.done
	case !c.busy && len(c.queue) == 0:
		// The writer is free: run here, with the bodies that queue
		// meanwhile.
		c.busy = true
		c.mu.Unlock()
		c.lead(req)
		return <-req.done
	}
	c.queue = append(c.queue, req)
	if !c.busy {
		c.signal()
	}
	c.mu.Unlock()
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		c.mu.Lock()
		if i := slices.Index(c.queue, req); i >= 0 { // not taken: it never runs
			c.queue = slices.Delete(c.queue, i, i+1)
			c.mu.Unlock()
			return ctx.Err()
		}
		c.mu.Unlock()
		return <-req.done
	}
}

// lead runs first on the caller's goroutine, in one batch with the bodies
// handed in by the goroutines that were ready to run (the yield lets them):
// the caller does what the committer's goroutine would have done, without
// the hand-over. The yield is skipped while yields bring no company
// (yieldGate).
func (c *committer) lead(first *writeReq) {
	yielded := c.gate.yield()
	if yielded {
		c.yields.Add(1)
		runtime.Gosched()
	}
	var buf [8]*writeReq
	batch := append(buf[:0], first)
	c.mu.Lock()
	batch = c.takeLocked(batch)
	c.mu.Unlock()
	c.commit(batch)
	if c.ran != nil {
		c.ran(len(batch), wtx{c.w})
	}
	shared := len(batch) > 1
	clear(batch)
	c.release(func(queued bool) { c.gate.observe(yielded, shared, queued) })
}

// takeLocked moves queued bodies to batch, up to maxBatch in all.
func (c *committer) takeLocked(batch []*writeReq) []*writeReq {
	n := min(len(c.queue), maxBatch-len(batch))
	batch = append(batch, c.queue[:n]...)
	rest := copy(c.queue, c.queue[n:])
	clear(c.queue[rest:])
	c.queue = c.queue[:rest]
	return batch
}

// release ends a body or batch: the writer is free, and the goroutine is
// woken for the bodies that queued meanwhile. observe (may be nil) is told
// whether any did, while the writer is still the caller's.
func (c *committer) release(observe func(queued bool)) {
	c.mu.Lock()
	queued := len(c.queue) > 0
	if observe != nil {
		observe(queued)
	}
	c.busy = false
	if queued {
		c.signal()
	}
	c.cond.Broadcast()
	c.mu.Unlock()
}

// yieldGate decides whether a lead yields before it takes the queue. The
// yield lets the goroutines that are ready to run hand in their bodies
// first, so that under load one commit carries many; with one session
// at a time nothing is ready but the connection's writer, which then
// writes the turn's events so far on its own, and the run's final goes in
// a second write after the commit. So after fruitlessToSkip yields in a
// row that brought no company, leads stop yielding, except every
// probeEvery-th; a batch of several bodies, or a body queued while one
// committed, brings the yields back at once.
type yieldGate struct {
	fruitless int // yields in a row that brought no company, up to fruitlessToSkip
	skipped   int // leads since the last yield while skipping
}

const (
	fruitlessToSkip = 8
	probeEvery      = 16
)

// yield reports whether the next lead yields first.
func (g *yieldGate) yield() bool {
	if g.fruitless < fruitlessToSkip {
		return true
	}
	g.skipped++
	if g.skipped >= probeEvery {
		g.skipped = 0
		return true
	}
	return false
}

// observe records how a batch went: whether its lead yielded, whether it
// carried several bodies, and whether bodies queued while it ran.
func (g *yieldGate) observe(yielded, shared, queued bool) {
	switch {
	case shared || queued:
		g.fruitless, g.skipped = 0, 0
	case yielded && g.fruitless < fruitlessToSkip:
		g.fruitless++
	}
}

// signal wakes the goroutine, unless a wake is pending already.
func (c *committer) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *committer) loop() {
	defer close(c.done)
	batch := make([]*writeReq, 0, maxBatch)
	for {
		select {
		case <-c.wake:
		case <-c.stop:
			c.mu.Lock()
			l := c.lingering
			c.lingering = nil
			c.mu.Unlock()
			if l != nil {
				c.endLinger(l, nil)
			}
			return
		}
		// Let the goroutines that are ready to run hand in their bodies
		// too: under load a batch then carries them (one commit for many).
		runtime.Gosched()
		c.mu.Lock()
		if l := c.lingering; l != nil {
			// Its wait ends with company or with its time; a wake from
			// an earlier wait's timer finds neither.
			if len(c.queue) > 0 || !time.Now().Before(l.deadline) {
				c.lingering = nil
				c.mu.Unlock()
				c.endLinger(l, nil)
				continue
			}
			c.mu.Unlock()
			continue
		}
		if c.busy || len(c.queue) == 0 || c.closed {
			c.mu.Unlock()
			continue
		}
		batch = c.takeLocked(batch[:0])
		c.busy = true
		c.mu.Unlock()
		c.taken.Add(int64(len(batch)))
		c.commit(batch)
		if c.ran != nil {
			c.ran(len(batch), wtx{c.w})
		}
		clear(batch)
		// Bodies that queued while the writer was busy: company for leads.
		c.release(func(bool) { c.gate.observe(true, true, true) })
	}
}

// commit runs a batch. One body runs in a plain transaction. Several run in
// one transaction with a savepoint each; should the shared transaction
// break (a body that ends it), the batch is rolled back and every body not
// yet answered runs again alone, so no body fails or commits because of
// another.
func (c *committer) commit(batch []*writeReq) {
	if len(batch) == 1 {
		batch[0].answer(c.single(batch[0]))
		return
	}
	tx, err := c.begin()
	if err != nil {
		for _, r := range batch {
			r.answer(c.single(r))
		}
		return
	}
	errs := make([]error, len(batch))
	broken := c.bodies(tx, batch, errs)
	if !broken {
		err := tx.w.commitTx()
		c.memo.txDone(err == nil)
		if err == nil {
			c.shared.Add(1)
			for i, r := range batch {
				r.answer(errs[i])
			}
			return
		}
	} else {
		tx.w.rollbackTx()
		c.memo.txDone(false)
	}
	// Nothing of the batch is stored: each body runs again on its own.
	for _, r := range batch {
		r.answer(c.single(r))
	}
}

// bodies runs the bodies of a shared transaction, each inside its own
// savepoint, and records their outcomes in errs; it reports true when the
// transaction broke (a savepoint statement failed), which leaves errs
// partly set.
func (c *committer) bodies(tx wtx, batch []*writeReq, errs []error) (broken bool) {
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		if _, err := tx.ExecContext(context.Background(), qSavepoint); err != nil {
			return true
		}
		errs[i] = c.runBody(r, tx)
		if errs[i] != nil {
			if _, err := tx.ExecContext(context.Background(), qRollbackTo); err != nil {
				return true
			}
		}
		if _, err := tx.ExecContext(context.Background(), qRelease); err != nil {
			return true
		}
	}
	return false
}

// runBody runs a request's body in tx, the memo's changes of it kept or
// undone with it.
func (c *committer) runBody(r *writeReq, tx wtx) error {
	c.memo.bodyBegins()
	err := r.fn(context.WithoutCancel(r.ctx), tx)
	c.memo.bodyDone(err == nil)
	return err
}

// single runs one body in its own transaction.
func (c *committer) single(r *writeReq) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	tx, err := c.begin()
	if err != nil {
		return err
	}
	c.memo.bodyBegins()
	if err := r.fn(context.WithoutCancel(r.ctx), tx); err != nil {
		c.memo.txDone(false)
		if rerr := tx.w.rollbackTx(); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	err = tx.w.commitTx()
	c.memo.txDone(err == nil)
	return err
}
