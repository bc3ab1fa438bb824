package sqlite

import (
	"sync"

	"github.com/switchboardhq/switchboard/internal/store"
)

// maxCachedSessions bounds the session row cache.
const maxCachedSessions = 4096

// sessionCache keeps decoded session rows, so the several reads of one
// session a turn makes (the gateway's send policy and queue settings, the
// runner's start) decode the row once. One gateway owns the database file
// (the state dir's lock), so every write passes through this Store: each
// write that changes session rows updates or drops them once it is committed,
// on the committer, in commit order. A read fills the cache only when no
// update or drop happened while it ran, so a row read before a commit is
// never cached after that commit.
type sessionCache struct {
	mu  sync.Mutex // guards gen and m
	gen uint64     // bumped by every drop
	m   map[string]*store.Session
}

// get returns a copy of the cached row of key.
func (c *sessionCache) get(key string) (*store.Session, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.m[key]
	if !ok {
		return nil, false
	}
	return s.Clone(), true
}

// generation is the value a read passes to fill when it is done.
func (c *sessionCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// fill caches a copy of s, read when the generation was gen, unless an update
// or drop happened since.
func (c *sessionCache) fill(gen uint64, s *store.Session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen == c.gen {
		c.storeLocked(s)
	}
}

func (c *sessionCache) storeLocked(s *store.Session) {
	if c.m == nil {
		c.m = make(map[string]*store.Session)
	}
	if _, ok := c.m[s.Key]; !ok && len(c.m) >= maxCachedSessions {
		for k := range c.m { // evict an arbitrary entry
			delete(c.m, k)
			break
		}
	}
	c.m[s.Key] = s.Clone()
}

// update applies fn to key's cached row, if any, as a write just did to
// the stored one. Writers call it from their after (Store.writeTxThen), in
// commit order.
func (c *sessionCache) update(key string, fn func(*store.Session)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if s, ok := c.m[key]; ok {
		fn(s)
	}
}

// put caches s, the row a write just stored, read back in its
// transaction. Writers call it from their after (Store.writeTxThen), in
// commit order.
func (c *sessionCache) put(s *store.Session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.storeLocked(s)
}

// drop forgets key's row (every row when key is empty). Writers call it
// from their after (Store.writeTxThen), in commit order.
func (c *sessionCache) drop(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if key == "" {
		clear(c.m)
		return
	}
	delete(c.m, key)
}
