package store

import "sync/atomic"

// OutboxChange is a change to one outbox item made in the transaction of
// another write, which carries it: a run's claims (RunClaims), a post's
// settle (PostSettle). Apply changes the stored item as UpdateOutbox's fn
// does.
type OutboxChange struct {
	// ID is the outbox item's id.
	ID string
	// Apply changes the stored item; its error refuses the carrying write
	// (or, for a PostSettle, the post).
	Apply func(*OutboxItem) error
}

// carried records whether changes carried by a write were committed with
// it; RunClaims and PostSettle embed it.
type carried struct{ stored atomic.Bool }

// Stored reports whether the changes were committed with their write.
func (c *carried) Stored() bool { return c.stored.Load() }

// MarkStored records that the changes were committed with their write.
func (c *carried) MarkStored() { c.stored.Store(true) }
