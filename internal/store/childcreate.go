package store

import (
	"context"
	"errors"
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
