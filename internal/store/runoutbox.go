package store

import (
	"context"
	"sync/atomic"
)

// RunOutbox is an outbox item to store in the transaction that stores a
// run, carried by the context of the run's admission (WithRunOutbox): a
// sessions_send's agent-to-agent flow record is then written in the commit
// that opens or queues the target's run, not in a commit of its own, and a
// crash finds both or neither. A store that can (SQLite's OpenRun and
// CreateRun) inserts Item beside the run, as PutOutbox does except that an
// item with Item.ID that exists is kept, and marks it stored once the
// transaction committed. Where none does (a store that cannot, a run that
// is stored by other means or not at all), Stored stays false and the
// caller stores the item on its own.
type RunOutbox struct {
	// RunID is the run whose transaction carries the item.
	RunID string
	// Item is the outbox item (PutOutbox's defaults apply).
	Item *OutboxItem

	stored atomic.Bool
}

// Stored reports whether the item was stored with its run (MarkStored).
func (o *RunOutbox) Stored() bool { return o.stored.Load() }

// MarkStored records that the item was committed with its run.
func (o *RunOutbox) MarkStored() { o.stored.Store(true) }

type runOutboxKey struct{}

// WithRunOutbox returns ctx carrying o, for the admission of o.RunID.
func WithRunOutbox(ctx context.Context, o *RunOutbox) context.Context {
	return context.WithValue(ctx, runOutboxKey{}, o)
}

// RunOutboxOf returns the RunOutbox ctx carries for run runID, nil when
// none (or when it is stored already).
func RunOutboxOf(ctx context.Context, runID string) *RunOutbox {
	o, _ := ctx.Value(runOutboxKey{}).(*RunOutbox)
	if o == nil || o.Item == nil || o.RunID != runID || o.Stored() {
		return nil
	}
	return o
}
