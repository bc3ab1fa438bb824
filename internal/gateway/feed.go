package gateway

import (
	"slices"
	"sync"
	"sync/atomic"
)

// The feed carries the run events of every session to the plain
// connections: those past their handshake that are not session-scoped,
// which receive every session's events (as the reference's clients do).
//
// A fan-out of a run's events to them appends its frames to the feed
// once, and each plain connection's writer reads the feed from its own
// position, giving the events its connection's seqs as it writes them. A
// fan-out touches no plain connection's state but to wake a writer that
// waits for one. Queueing the frames on every connection instead (lock,
// queue, count, seq, wake-up) was the gateway's largest cost after the
// socket writes at 100 plain clients: stalls on cache lines that each
// connection's writer had written last, 13% of its CPU.
//
// Order: what a connection queues on its own (answers, the events sent to
// it alone or by fan-outs that do not use the feed) carries the feed's
// position when it was queued (outFrame.at), and the writer writes the
// feed's earlier entries before it and the later ones after. A run's
// events held back until chat.send's answer is queued thus follow that
// answer on every connection.
//
// Budget: an entry counts once in the gateway's outbound total, from its
// append until every plain connection has written it. A connection whose
// backlog in the feed and in its own queue passes maxBufferedBytes is
// disconnected as a slow consumer, as one whose own queue passes it is.
type feed struct {
	s *Server

	// head is the position of the next entry; total the budget size of
	// every entry appended, through head. Both are set under mu and read
	// without it.
	head  atomic.Int64
	total atomic.Int64

	mu        sync.Mutex
	entries   []feedEntry // the entry at position base+i
	base      int64
	baseTotal int64 // total through base: the entries before it are gone
	appended  int   // appends since the last trim
	followers []*conn
	waiters   []*conn // followers whose writers wait for a wake-up
}

// feedEntry is one appended frame: a block, or one event frame (its
// payload shared or not), without a seq.
type feedEntry struct {
	f   outFrame
	end int64 // feed.total through this entry
}

// feedMin is how many plain connections a fan-out must reach to go
// through the feed; a lone one is queued on as before, without the
// feed's bookkeeping.
const feedMin = 2

// trimEvery is how many appends pass between two looks at the followers'
// positions to forget what they all wrote (sooner when the feed holds
// more than a connection's budget).
const trimEvery = 64

// addPlain records c, ready and not session-scoped, as receiving every
// session's events: in the subscription index and as a follower of the
// feed. c.mu is held.
func (s *Server) addPlain(c *conn) {
	s.subs.addAll(c)
	s.feed.join(c)
}

// join makes c, ready and not session-scoped, a follower from the feed's
// head on. c.mu is held.
func (fd *feed) join(c *conn) {
	fd.mu.Lock()
	defer fd.mu.Unlock()
	if c.fon || c.closing {
		return
	}
	head := fd.head.Load()
	c.fnext, c.fnextTotal = head, fd.total.Load()
	c.fpos.Store(head)
	c.fdone.Store(c.fnextTotal)
	c.fon, c.follows = true, true
	fd.followers = append(fd.followers, c)
}

// leave forgets c as a follower, and the entries only c had not
// written.
func (fd *feed) leave(c *conn) {
	fd.mu.Lock()
	defer fd.mu.Unlock()
	fd.dropLocked(c)
	fd.forgetLocked()
}

func (fd *feed) dropLocked(c *conn) {
	if !c.fon {
		return
	}
	c.fon = false
	fd.followers = slices.DeleteFunc(fd.followers, func(x *conn) bool { return x == c })
	if c.fwait {
		c.fwait = false
		fd.waiters = slices.DeleteFunc(fd.waiters, func(x *conn) bool { return x == c })
	}
}

// appendFrames adds a fan-out's frames to the feed: blk as one entry, or
// else each of frames (taking a reference to a shared payload), and wakes
// the followers' writers that wait. It disconnects the followers that
// are too far behind.
func (fd *feed) appendFrames(blk *eventBlock, frames []outFrame) {
	fd.mu.Lock()
	total, queued := fd.total.Load(), int64(0)
	add := func(f outFrame) {
		f.event = true
		total += f.size()
		queued += f.ownSize()
		fd.entries = append(fd.entries, feedEntry{f: f, end: total})
	}
	if blk != nil {
		add(outFrame{blk: blk})
	} else {
		for _, f := range frames {
			if f.shared != nil {
				f.shared.refs.Add(1)
			}
			add(f)
		}
	}
	fd.total.Store(total)
	fd.head.Store(fd.base + int64(len(fd.entries)))
	fd.s.queuedTotal.Add(queued)
	for _, c := range fd.waiters {
		c.fwait = false
		c.signal()
	}
	clear(fd.waiters)
	fd.waiters = fd.waiters[:0]
	var slow []*conn
	if fd.appended++; fd.appended >= trimEvery || total-fd.baseTotal > fd.s.cfg.MaxBufferedBytes {
		slow = fd.slowLocked()
		fd.forgetLocked()
	}
	fd.mu.Unlock()
	disconnectSlow(slow)
}

// trim forgets the entries every follower has written and disconnects
// the followers too far behind. The budget loop calls it: with no append
// to trim the feed, the outbound total still falls once the followers
// have written what it holds.
func (fd *feed) trim() {
	fd.mu.Lock()
	slow := fd.slowLocked()
	fd.forgetLocked()
	fd.mu.Unlock()
	disconnectSlow(slow)
}

// disconnectSlow disconnects the followers slowLocked found, as slow
// consumers. No feed.mu is held.
func disconnectSlow(slow []*conn) {
	for _, c := range slow {
		c.mu.Lock()
		c.dropSlowLocked()
		c.mu.Unlock()
	}
}

// slowLocked returns the followers whose backlog passes
// maxBufferedBytes, to be disconnected (not under fd.mu: their conn.mu
// comes first).
func (fd *feed) slowLocked() (slow []*conn) {
	total, limit := fd.total.Load(), fd.s.cfg.MaxBufferedBytes
	if total-fd.baseTotal <= limit {
		return nil // no follower can be that far behind
	}
	for _, c := range fd.followers {
		if total-c.fdone.Load() > limit {
			slow = append(slow, c)
		}
	}
	return slow
}

// dropSlow forgets c, a follower disconnected as a slow consumer, counting
// the events it did not write as dropped. c.mu is held.
func (fd *feed) dropSlow(c *conn) {
	fd.mu.Lock()
	defer fd.mu.Unlock()
	if !c.fon {
		return
	}
	n := 0
	for p := max(c.fpos.Load(), fd.base); p < fd.head.Load(); p++ {
		n += fd.entries[p-fd.base].f.messages()
	}
	fd.s.eventsDropped.Add(int64(n))
	fd.dropLocked(c)
}

// forgetLocked forgets the entries every follower has written, which
// leave the outbound total.
func (fd *feed) forgetLocked() {
	fd.appended = 0
	low := fd.head.Load()
	for _, c := range fd.followers {
		low = min(low, c.fpos.Load())
	}
	k := int(low - fd.base)
	if k <= 0 {
		return
	}
	var own int64
	for _, e := range fd.entries[:k] {
		own += e.f.ownSize()
		e.f.release()
	}
	fd.s.queuedTotal.Add(-own)
	fd.baseTotal = fd.entries[k-1].end
	clear(fd.entries[:k])
	fd.entries = fd.entries[k:]
	fd.base = low
}

// take appends to dst, for c's writer, the entries from c.fnext up to
// limit (fed set), and moves c.fnext past them. It reports false when
// entries past limit are there already (the writer must come back for
// them). When it takes none and none is there, it records c's writer as
// waiting, if wait: the next append wakes it. A writer that took entries
// is not recorded: it comes back when it has written them, and the
// appends meanwhile need not signal it.
func (fd *feed) take(c *conn, limit int64, dst []outFrame, wait bool) ([]outFrame, bool) {
	fd.mu.Lock()
	defer fd.mu.Unlock()
	if !c.fon {
		return dst, true // dropped: the connection is ending
	}
	n := len(dst)
	for p := c.fnext; p < limit; p++ {
		e := &fd.entries[p-fd.base]
		f := e.f
		f.fed = true
		dst = append(dst, f)
		c.fnextTotal = e.end
	}
	c.fnext = max(c.fnext, limit)
	if c.fnext < fd.base+int64(len(fd.entries)) {
		return dst, false
	}
	if wait && len(dst) == n && !c.fwait {
		c.fwait = true
		fd.waiters = append(fd.waiters, c)
	}
	return dst, true
}

// backlog is what the feed holds for c that its writer has not written:
// bytes counted in c's budget. c.mu is held.
func (fd *feed) backlog(c *conn) int64 {
	if !c.follows {
		return 0
	}
	return fd.total.Load() - c.fdone.Load()
}
