package store

import (
	"context"
	"errors"
	"sync"
)

// ErrSessionMoved is returned by a run's open or creation made under a
// session check (WithSessionCheck) when the session row its caller was
// served from a store's memory is no longer the stored row: nothing was
// written, and the caller reads the session again (a context without the
// check) and starts over.
var ErrSessionMoved = errors.New("store: session changed since it was served from memory")

// SessionCheck records the session row a store served from its memory
// instead of reading it, for the store to check, in the transaction that
// opens or creates the caller's run, that it is still the stored row
// (PostgreSQL: the row version's xmin). It is safe for concurrent use.
type SessionCheck struct {
	mu  sync.Mutex
	key string
	ver int64
	set bool
}

type sessionCheckKey struct{}

// WithSessionCheck returns ctx carrying a new SessionCheck: a store may
// then serve GetSession from its memory, and a run opened or created with
// ctx is refused with ErrSessionMoved when that row moved. A context
// without one is always served from the database.
func WithSessionCheck(ctx context.Context) context.Context {
	return context.WithValue(ctx, sessionCheckKey{}, &SessionCheck{})
}

// SessionCheckOf returns the SessionCheck ctx carries, nil when none.
func SessionCheckOf(ctx context.Context) *SessionCheck {
	c, _ := ctx.Value(sessionCheckKey{}).(*SessionCheck)
	return c
}

// Served records that the row of session key at version ver was served
// from memory.
func (c *SessionCheck) Served(key string, ver int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.key, c.ver, c.set = key, ver, true
}

// Forget drops what was recorded of session key (its row was read or
// written since, by the database).
func (c *SessionCheck) Forget(key string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.set && c.key == key {
		c.key, c.ver, c.set = "", 0, false
	}
}

// Version returns the version of session key's row served from memory,
// ok false when none was.
func (c *SessionCheck) Version(key string) (ver int64, ok bool) {
	if c == nil {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.set || c.key != key {
		return 0, false
	}
	return c.ver, true
}
