package postgres

import (
	"maps"
	"sync"

	"github.com/switchboardhq/switchboard/internal/store"
)

// maxTails bounds tailCache: past it the cache starts again empty.
const maxTails = 4096

// tailCache remembers the tail (last seq and entry id) of the transcripts
// this store last appended to at a run's open or end, so that the next
// open of a run on the session can append its input without reading the
// tail first (OpenRun). After an open it also remembers the run opened and
// the counts of the messages the open stored for it, so that the run's end
// needs neither the tail nor the run's messages read (EndRun). A
// remembered tail is a guess: the open and the end check it under the
// transcript's lock (qTailIs) and, when another writer appended meanwhile
// (another node, another path), forget it and read the tail.
type tailCache struct {
	mu sync.Mutex
	m  map[string]tailEntry
}

// tailEntry is what tailCache remembers of one transcript.
type tailEntry struct {
	t tail
	// runID, when set, is the run whose open left t; stats counts the
	// messages of it that the open stored (store.RunStats).
	runID string
	stats store.RunStats
}

// get returns sessionID's remembered tail.
func (c *tailCache) get(sessionID string) (tail, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[sessionID]
	return e.t, ok
}

// opened returns sessionID's remembered tail when run runID's open left
// it, and the counts of what that open stored for the run (a copy).
func (c *tailCache) opened(sessionID, runID string) (tail, store.RunStats, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[sessionID]
	if !ok || e.runID == "" || e.runID != runID {
		return tail{}, store.RunStats{}, false
	}
	stats := e.stats
	stats.Tools = maps.Clone(stats.Tools)
	return e.t, stats, true
}

// put remembers t as sessionID's tail; a zero t (empty transcript) is
// not remembered.
func (c *tailCache) put(sessionID string, t tail) { c.putEntry(sessionID, tailEntry{t: t}) }

// putOpened remembers t as sessionID's tail, left by the open of run
// runID, which stored messages of the run counting stats (putOpened keeps
// stats: the caller gives it up).
func (c *tailCache) putOpened(sessionID string, t tail, runID string, stats store.RunStats) {
	c.putEntry(sessionID, tailEntry{t: t, runID: runID, stats: stats})
}

func (c *tailCache) putEntry(sessionID string, e tailEntry) {
	if e.t.seq == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxTails {
		c.m = make(map[string]tailEntry)
	}
	c.m[sessionID] = e
}

// noteAppend records that stored messages were appended to transcript
// sessionID after its entry after (AppendMessages, PostMessage, read under
// the transcript's lock): when that is the remembered tail, the tail moves
// past them and a remembered run counts those of its messages, so that a
// run's end after its tool results still needs no read (EndRun); when it
// is not, the remembered tail was stale, and is forgotten.
func (s *Store) noteAppend(sessionID string, after tail, stored []store.Message) {
	if len(stored) == 0 {
		return
	}
	c := &s.tails
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[sessionID]
	if !ok {
		return
	}
	if e.t != after {
		delete(c.m, sessionID)
		return
	}
	if e.runID != "" {
		if err := countRun(&e.stats, stored, e.runID); err != nil {
			delete(c.m, sessionID)
			return
		}
	}
	e.t = lastOf(stored)
	c.m[sessionID] = e
}

// drop forgets sessionID's tail.
func (c *tailCache) drop(sessionID string) {
	c.mu.Lock()
	delete(c.m, sessionID)
	c.mu.Unlock()
}
