package postgres

import "sync"

// maxTails bounds tailCache: past it the cache starts again empty.
const maxTails = 4096

// tailCache remembers the tail (last seq and entry id) of the transcripts
// this store last appended to at a run's open or end, so that the next
// open of a run on the session can append its input without reading the
// tail first (OpenRun). A remembered tail is a guess: the open checks it
// under the transcript's lock (qTailIs) and, when another writer appended
// meanwhile (another node, another path), forgets it and reads the tail.
type tailCache struct {
	mu sync.Mutex
	m  map[string]tail
}

// get returns sessionID's remembered tail.
func (c *tailCache) get(sessionID string) (tail, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.m[sessionID]
	return t, ok
}

// put remembers t as sessionID's tail; a zero t (empty transcript) is
// not remembered.
func (c *tailCache) put(sessionID string, t tail) {
	if t.seq == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxTails {
		c.m = make(map[string]tail)
	}
	c.m[sessionID] = t
}

// drop forgets sessionID's tail.
func (c *tailCache) drop(sessionID string) {
	c.mu.Lock()
	delete(c.m, sessionID)
	c.mu.Unlock()
}
