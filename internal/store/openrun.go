package store

import (
	"context"
	"errors"
)

// RunOpener is a Store that can store a new run already started, with its
// input message, in one transaction: a turn that finds its session's lane
// idle is queued and started in one commit instead of two.
type RunOpener interface {
	// OpenRun inserts r (Status RunRunning, StartedAt and SessionID set;
	// a zero CreatedAt means now) and appends msgs to transcript
	// r.SessionID as AppendMessages does, in one transaction: on any error
	// nothing is written. When a run with r.RunID exists it returns that
	// run with ErrConflict (the insert itself finds it: no read first). It
	// returns the stored run (a copy: it does not keep r) and messages. A
	// store that cannot (a wrapper around a store that is no RunOpener)
	// returns errors.ErrUnsupported.
	OpenRun(ctx context.Context, r *Run, msgs []Message) (*Run, []Message, error)
}

// OpenRun is st's OpenRun when st is a RunOpener, else
// errors.ErrUnsupported with nothing written: for wrappers, which keep
// the wrapped store's one-transaction start visible.
func OpenRun(ctx context.Context, st any, r *Run, msgs []Message) (*Run, []Message, error) {
	if o, ok := st.(RunOpener); ok {
		return o.OpenRun(ctx, r, msgs)
	}
	return nil, nil, errors.ErrUnsupported
}
