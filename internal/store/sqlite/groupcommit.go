package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"runtime"
	"sync/atomic"
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
	fn func(ctx context.Context, tx *sql.Tx) error
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
type committer struct {
	w    *sql.DB
	reqs chan *writeReq
	stop chan struct{}
	done chan struct{}

	// memo follows each body's and transaction's outcome.
	memo *writeMemo
	// exec runs a statement without arguments (the savepoints) in a
	// transaction of w.
	exec func(tx *sql.Tx, query string) error

	shared  atomic.Int64 // commits that carried more than one body
	waiting atomic.Int64 // bodies handed in and not yet taken

	// ran, when set, is told how many bodies each batch carried, after
	// the batch.
	ran func(bodies int)
}

// reqsWaiting reports how many bodies wait for the committer to take them.
func (c *committer) reqsWaiting() int { return int(c.waiting.Load()) }

// The statements around each body of a shared commit.
const (
	qSavepoint  = "SAVEPOINT body"
	qRollbackTo = "ROLLBACK TO body"
	qRelease    = "RELEASE body"
)

func newCommitter(w *sql.DB, memo *writeMemo, exec func(tx *sql.Tx, query string) error, ran func(bodies int)) *committer {
	c := &committer{w: w, memo: memo, exec: exec, reqs: make(chan *writeReq), stop: make(chan struct{}),
		done: make(chan struct{}), ran: ran}
	go c.loop()
	return c
}

// close stops the committer after the batch in progress; bodies handed in
// after that get net.ErrClosed.
func (c *committer) close() {
	close(c.stop)
	<-c.done
}

// run hands fn to the committer and waits for its outcome. after (may be
// nil) runs on the committer once fn's work is committed.
func (c *committer) run(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error, after func()) error {
	req := &writeReq{ctx: ctx, fn: fn, after: after, done: make(chan error, 1)}
	c.waiting.Add(1)
	select {
	case c.reqs <- req:
		c.waiting.Add(-1)
	case <-ctx.Done():
		c.waiting.Add(-1)
		return ctx.Err()
	case <-c.stop:
		c.waiting.Add(-1)
		return net.ErrClosed
	}
	return <-req.done
}

func (c *committer) loop() {
	defer close(c.done)
	batch := make([]*writeReq, 0, maxBatch)
	for {
		select {
		case req := <-c.reqs:
			batch = append(batch[:0], req)
		case <-c.stop:
			return
		}
		// Let the goroutines that are ready to run hand in their bodies
		// too: under load a batch then carries them (one commit for many),
		// and alone the committer goes on at once.
		runtime.Gosched()
	gather:
		for len(batch) < maxBatch {
			select {
			case req := <-c.reqs:
				batch = append(batch, req)
			default:
				break gather
			}
		}
		c.commit(batch)
		if c.ran != nil {
			c.ran(len(batch))
		}
		clear(batch)
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
	tx, err := c.w.BeginTx(context.Background(), nil)
	if err != nil {
		for _, r := range batch {
			r.answer(c.single(r))
		}
		return
	}
	errs := make([]error, len(batch))
	broken := false
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		if err := c.exec(tx, qSavepoint); err != nil {
			broken = true
			break
		}
		c.memo.bodyBegins()
		errs[i] = r.fn(context.WithoutCancel(r.ctx), tx)
		c.memo.bodyDone(errs[i] == nil)
		if errs[i] != nil {
			if err := c.exec(tx, qRollbackTo); err != nil {
				broken = true
				break
			}
		}
		if err := c.exec(tx, qRelease); err != nil {
			broken = true
			break
		}
	}
	if !broken {
		err := tx.Commit()
		c.memo.txDone(err == nil)
		if err == nil {
			c.shared.Add(1)
			for i, r := range batch {
				r.answer(errs[i])
			}
			return
		}
	} else {
		tx.Rollback()
		c.memo.txDone(false)
	}
	// Nothing of the batch is stored: each body runs again on its own.
	for _, r := range batch {
		r.answer(c.single(r))
	}
}

// single runs one body in its own transaction.
func (c *committer) single(r *writeReq) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	ctx := context.WithoutCancel(r.ctx)
	tx, err := c.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	c.memo.bodyBegins()
	if err := r.fn(ctx, tx); err != nil {
		c.memo.txDone(false)
		if rerr := tx.Rollback(); rerr != nil && !errors.Is(rerr, sql.ErrTxDone) {
			return errors.Join(err, rerr)
		}
		return err
	}
	err = tx.Commit()
	c.memo.txDone(err == nil)
	return err
}
