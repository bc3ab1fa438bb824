package store

import (
	"context"
	"time"
)

// A warm turn on an idle lane writes twice: the run's open (its input
// message) and its end (the reply). With a model that answers within a
// few milliseconds both fit in one commit, if the open's transaction waits
// for the end before it commits: a Linger asks a RunOpener for that.
//
// The run goes on while its open waits uncommitted, and nobody is told the
// run exists until the commit (the runner waits for it before Submit
// returns): a crash meanwhile loses nothing anybody was told of. Whatever
// writes next (the run's end, a tool call's message, another session's
// write) joins the open's transaction and commits it; so does a read made
// with the run's context (WithPending), and For's end.

// Linger asks a RunOpener, through the context of OpenRun (WithLinger), to
// leave the open's commit ahead for up to For after its statements ran.
// The store sets Pending when it did; nil means the open committed before
// OpenRun returned, as without a Linger.
type Linger struct {
	For     time.Duration
	Pending Pending
}

// Pending is a write whose statements ran in a transaction not yet
// committed.
type Pending interface {
	// Wait returns once the write is committed (nil), or with the error
	// that left it uncommitted: nothing of it is stored then.
	Wait() error
	// Commit commits the write now, with whatever waits for the writer,
	// unless it is committed already, and returns as Wait.
	Commit() error
}

type lingerKey struct{}

// WithLinger returns ctx asking the OpenRun it is given to linger (l).
func WithLinger(ctx context.Context, l *Linger) context.Context {
	return context.WithValue(ctx, lingerKey{}, l)
}

// LingerOf returns the Linger ctx carries, or nil.
func LingerOf(ctx context.Context) *Linger {
	l, _ := ctx.Value(lingerKey{}).(*Linger)
	return l
}

type pendingKey struct{}

// WithPending returns ctx carrying p: a store's reads made with it commit
// p first (CommitPending), so that they see what p wrote.
func WithPending(ctx context.Context, p Pending) context.Context {
	return context.WithValue(ctx, pendingKey{}, p)
}

// CommitPending commits the Pending ctx carries, if any (Pending.Commit),
// and returns its outcome; nil without one.
func CommitPending(ctx context.Context) error {
	if p, ok := ctx.Value(pendingKey{}).(Pending); ok {
		return p.Commit()
	}
	return nil
}
