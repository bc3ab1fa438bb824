package sqlite

import (
	"context"
	"errors"
	"runtime"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// lingerTx is a write transaction whose first body ran and whose commit
// waits, for up to a deadline, for company (store.Linger): the next body
// handed to the committer runs in it, with any others queued, and commits
// it. It is the store.Pending of that first body.
type lingerTx struct {
	c        *committer
	tx       wtx
	req      *writeReq // the first body; its after runs at the commit
	deadline time.Time

	done chan struct{} // closed once err is set
	err  error         // nil: req's work is committed
}

var _ store.Pending = (*lingerTx)(nil)

// Wait implements store.Pending.
func (l *lingerTx) Wait() error {
	<-l.done
	return l.err
}

// Commit implements store.Pending: the caller commits the transaction
// itself when it still waits.
func (l *lingerTx) Commit() error {
	select {
	case <-l.done:
		return l.err
	default:
	}
	c := l.c
	c.mu.Lock()
	if c.lingering == l {
		c.lingering = nil
		c.mu.Unlock()
		c.endLinger(l, nil)
	} else {
		c.mu.Unlock()
	}
	return l.Wait()
}

// finish records the outcome of l's first body and tells its waiters.
func (l *lingerTx) finish(err error) {
	if err == nil && l.req.after != nil {
		l.req.after()
	}
	l.err = err
	close(l.done)
}

// runLinger is run for a body whose commit may wait up to d for company:
// when the writer is free and nothing waits for it, fn runs at once on
// the caller's goroutine, in a transaction left open, and runLinger
// returns fn's outcome with the Pending commit. Otherwise (the writer is
// busy, or bodies queued while fn ran) the body commits as run's do and
// the Pending is nil. after runs at the commit, as run's.
func (c *committer) runLinger(ctx context.Context, fn func(ctx context.Context, tx wtx) error, after func(), d time.Duration) (*lingerTx, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.closed || c.busy || len(c.queue) > 0 {
		c.mu.Unlock()
		return nil, c.run(ctx, fn, after)
	}
	c.busy = true
	c.mu.Unlock()
	req := &writeReq{ctx: ctx, fn: fn, after: after}
	tx, err := c.begin()
	if err != nil {
		c.release(nil)
		return nil, err
	}
	c.memo.bodyBegins()
	if err := fn(context.WithoutCancel(ctx), tx); err != nil {
		c.memo.txDone(false)
		rerr := tx.w.rollbackTx()
		c.release(nil)
		return nil, errors.Join(err, rerr)
	}
	c.memo.bodyDone(true)
	l := &lingerTx{c: c, tx: tx, req: req, deadline: time.Now().Add(d), done: make(chan struct{})}
	c.mu.Lock()
	if c.closed || len(c.queue) > 0 {
		// Company came while fn ran, or the store closes: commit now.
		c.mu.Unlock()
		c.endLinger(l, nil)
		if err := l.Wait(); err != nil {
			return nil, err
		}
		return nil, nil
	}
	if c.timer == nil {
		c.timer = time.AfterFunc(d, c.signal)
	} else {
		c.timer.Reset(d)
	}
	c.lingering = l
	c.mu.Unlock()
	return l, nil
}

// endLinger runs first (may be nil) and the bodies queued in l's
// transaction, each in its own savepoint, and commits it. The caller took
// l from c.lingering and so has the writer. Should the transaction break
// or its commit fail, every body runs again on its own, l's first
// included, as commit's batches do.
func (c *committer) endLinger(l *lingerTx, first *writeReq) {
	if c.timer != nil {
		c.timer.Stop()
	}
	var (
		buf  [8]*writeReq
		ebuf [8]error
	)
	batch := buf[:0]
	yielded := false
	if first != nil {
		batch = append(batch, first)
		// As a lead does: the goroutines that are ready to run hand in
		// their bodies first, to share the commit (yieldGate).
		if yielded = c.gate.yield(); yielded {
			c.yields.Add(1)
			runtime.Gosched()
		}
	}
	c.mu.Lock()
	if !c.closed { // else close answers the queued bodies
		batch = c.takeLocked(batch)
	}
	c.mu.Unlock()
	errs := ebuf[:0]
	if len(batch) > len(ebuf) {
		errs = make([]error, len(batch))
	} else {
		errs = errs[:len(batch)]
	}
	var broken bool
	if len(batch) == 1 && batch[0].ctx.Err() == nil {
		// One body, a run's end as a rule, runs without a savepoint:
		// should it fail, the transaction is redone without it below.
		errs[0] = c.runBody(batch[0], l.tx)
		broken = errs[0] != nil
	} else {
		broken = c.bodies(l.tx, batch, errs)
	}
	committed := false
	if !broken {
		err := l.tx.w.commitTx()
		c.memo.txDone(err == nil)
		committed = err == nil
	} else {
		l.tx.w.rollbackTx()
		c.memo.txDone(false)
	}
	if committed {
		if len(batch) > 0 {
			c.shared.Add(1)
		}
		l.finish(nil)
		for i, r := range batch {
			r.answer(errs[i])
		}
	} else {
		l.finish(c.single(l.req))
		for _, r := range batch {
			r.answer(c.single(r))
		}
	}
	if c.ran != nil {
		c.ran(len(batch)+1, wtx{c.w})
	}
	clear(batch)
	c.release(func(queued bool) { c.gate.observe(yielded, len(batch) > 1, queued) })
}
