package store

import (
	"context"
	"errors"
	"sync/atomic"
)

// ChildCreator is a Store that can store a spawned sub-agent's session row
// and its registry row in one transaction: a spawn then costs one commit
// before its child's run is queued instead of two.
type ChildCreator interface {
	// CreateChild applies fn to session key's row (a new row when it does
	// not exist, as UpdateSession with create) and inserts r as PutSubagent
	// does, in one transaction: on any error, fn's included, nothing is
	// written. An error of fn is returned as it is; ErrConflict when
	// r.ChildRunID exists. It returns the stored session. A store that
	// cannot (a wrapper around a store that is no ChildCreator) returns
	// errors.ErrUnsupported.
	CreateChild(ctx context.Context, key string, fn func(*Session) error, r *SubagentRun) (*Session, error)
}

// CreateChild is st's CreateChild when st is a ChildCreator, else
// errors.ErrUnsupported with nothing written: for wrappers, which keep
// the wrapped store's one-transaction spawn visible.
func CreateChild(ctx context.Context, st any, key string, fn func(*Session) error, r *SubagentRun) (*Session, error) {
	if c, ok := st.(ChildCreator); ok {
		return c.CreateChild(ctx, key, fn, r)
	}
	return nil, errors.ErrUnsupported
}

// ChildOpen is a spawned child's session row and registry row carried by
// the context of its first run's admission (WithChildOpen): the runner
// stores them in the transaction that opens that run (ChildRunOpener),
// so a spawn costs one commit on its requester's path instead of two (the
// child, then its run). Where the run is not opened so (a store that
// cannot, a run that is queued instead), Create stores them first, on
// their own, as a spawn without a ChildOpen does.
type ChildOpen struct {
	// Session is the child's new session row (Key set).
	Session *Session
	// Row is the child's registry row.
	Row *SubagentRun
	// Create stores Session and Row without the run.
	Create func(ctx context.Context) error

	stored atomic.Bool
}

// Stored reports whether the child's rows were stored (MarkStored).
func (c *ChildOpen) Stored() bool { return c.stored.Load() }

// MarkStored records that the child's rows were stored.
func (c *ChildOpen) MarkStored() { c.stored.Store(true) }

type childOpenKey struct{}

// WithChildOpen returns ctx carrying c, for the admission of the child's
// first run.
func WithChildOpen(ctx context.Context, c *ChildOpen) context.Context {
	return context.WithValue(ctx, childOpenKey{}, c)
}

// ChildOpenOf returns the ChildOpen ctx carries for session key, nil when
// none.
func ChildOpenOf(ctx context.Context, key string) *ChildOpen {
	c, _ := ctx.Value(childOpenKey{}).(*ChildOpen)
	if c == nil || c.Session == nil || c.Session.Key != key {
		return nil
	}
	return c
}

// ChildRunOpener is a Store that can store a spawned child's rows (c's
// Session, inserted as UpdateSession with create inserts a new row, and
// Row, as PutSubagent inserts it) in the transaction that opens its first
// run (as RunOpener.OpenRun). On any error nothing is written; a run id
// that exists is ErrConflict with no run returned (a child's run is new).
// A store that cannot (a wrapper around a store that is none) returns
// errors.ErrUnsupported.
type ChildRunOpener interface {
	OpenChildRun(ctx context.Context, c *ChildOpen, r *Run, msgs []Message) (*Run, []Message, error)
}

// OpenChildRun is st's OpenChildRun when st is a ChildRunOpener, else
// errors.ErrUnsupported with nothing written.
func OpenChildRun(ctx context.Context, st any, c *ChildOpen, r *Run, msgs []Message) (*Run, []Message, error) {
	if o, ok := st.(ChildRunOpener); ok {
		return o.OpenChildRun(ctx, c, r, msgs)
	}
	return nil, nil, errors.ErrUnsupported
}
