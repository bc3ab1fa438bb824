package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// agentFrames makes event frames of the given payloads.
func agentFrames(payloads ...string) []outFrame {
	frames := make([]outFrame, len(payloads))
	for i, p := range payloads {
		frames[i] = outFrame{raw: eventHead(wire.EventAgent, true), body: json.RawMessage(p)}
	}
	return frames
}

// writerTakes does what a follower's writer does with the feed: takes
// what it holds for c and, once written, publishes c's position.
func writerTakes(c *conn) []outFrame {
	fd := &c.s.feed
	fed, _ := fd.take(c, fd.head.Load(), nil, false)
	c.fpos.Store(c.fnext)
	c.fdone.Store(c.fnextTotal)
	return fed
}

// TestFanOutFeed: a session's fan-out to several plain connections is one
// entry in the feed, counted once in the outbound total, and queued on
// none of them; a session-scoped subscriber gets it on its own queue. A
// writer that waits is woken once, a busy one not at all. Each writer
// takes the entry and numbers it from its own seq; once all have written
// it, the feed forgets it and the total falls back.
func TestFanOutFeed(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.gw
	plain := blockConns(t, e, 3)
	scoped := blockConns(t, e, 1, true)[0]
	// plain[0]'s writer waits; the others are busy.
	if _, wait := s.feed.take(plain[0], s.feed.head.Load(), nil, true); !wait {
		t.Fatal("an empty feed has entries to take")
	}
	plain[1].wseq = 8
	before := s.queuedTotal.Load()
	frames := agentFrames(`{"a":1}`, `{"b":"two"}`, `{"c":[3]}`)
	s.fanOutSession("agent:main:main", frames, false)
	if n := len(s.feed.entries); n != 1 || s.feed.entries[0].f.messages() != 3 {
		t.Fatalf("the feed holds %d entries, want one block of 3", n)
	}
	size := s.feed.entries[0].f.size()
	for i, c := range plain {
		if len(c.queue) != 0 {
			t.Errorf("plain connection %d: %d frames queued on its own", i, len(c.queue))
		}
		if want := min(1, 1-i); len(c.wake) != max(want, 0) {
			t.Errorf("plain connection %d woken %d times", i, len(c.wake))
		}
	}
	if len(scoped.queue) != 1 || len(scoped.wake) != 1 {
		t.Errorf("the scoped subscriber: %d frames queued, %d wake-ups; want 1, 1", len(scoped.queue), len(scoped.wake))
	}
	if got := s.queuedTotal.Load() - before; got != 2*size {
		t.Errorf("the outbound total grew by %d, want %d (the feed's entry once, the scoped queue's copy)", got, 2*size)
	}
	if got := s.feed.backlog(plain[2]); got != size {
		t.Errorf("a follower's backlog is %d, want %d", got, size)
	}
	for i, c := range plain {
		fed := writerTakes(c)
		if len(fed) != 1 || !fed[0].fed || fed[0].blk == nil {
			t.Fatalf("plain connection %d took %v, want the block", i, fed)
		}
		first := int64(1)
		if i == 1 {
			first = 9
		}
		if out := c.merge(nil, fed); out[0].seq != first || c.wseq != first+2 {
			t.Errorf("plain connection %d: block from seq %d, writer at %d; want %d and %d", i, out[0].seq, c.wseq, first, first+2)
		}
		if s.feed.backlog(c) != 0 {
			t.Errorf("plain connection %d has a backlog after writing all", i)
		}
	}
	s.feed.trim()
	if len(s.feed.entries) != 0 {
		t.Errorf("the feed holds %d entries every follower wrote", len(s.feed.entries))
	}
	if got := s.queuedTotal.Load() - before; got != size {
		t.Errorf("the outbound total is %d over the start, want %d (the scoped queue's)", got, size)
	}

	// A shared payload: an entry per frame, the feed holding a reference
	// to the payload until the followers wrote it.
	big := outFrame{raw: eventHead(wire.EventChat, true), body: json.RawMessage(`"` + strings.Repeat("x", sharedMin) + `"`)}
	s.fanOutSession("agent:main:main", []outFrame{frames[0], big}, false)
	if n := len(s.feed.entries); n != 2 || s.feed.entries[1].f.shared == nil || s.feed.entries[1].f.shared.refs.Load() != 2 {
		t.Fatalf("a fan-out with a shared payload: %d entries, want 2 frames, the shared one referred to by the feed and the scoped queue", n)
	}
	for _, c := range plain {
		if fed := writerTakes(c); len(fed) != 2 {
			t.Fatalf("a follower took %d entries, want 2", len(fed))
		}
	}
	p := s.feed.entries[1].f.shared
	s.feed.trim()
	if n := p.refs.Load(); n != 1 {
		t.Errorf("the shared payload has %d references after the feed forgot it, want the scoped queue's", n)
	}
}

// TestFeedOrder: a follower's writer writes its own frames and the
// feed's entries in the order they were queued and appended, however its
// goroutine interleaves with the test's, numbering the events from 1 on.
func TestFeedOrder(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.gw
	for range 20 {
		sock := &signallingConn{stopAfter: 1 << 20, wrote: make(chan struct{}, 64)}
		ended := make(chan error, 1)
		c := &conn{s: s, sock: &sockConn{Conn: sock}, ctx: context.Background(), cancel: func(err error) { ended <- err },
			wake: make(chan struct{}, 1), ready: true}
		c.mu.Lock()
		s.addPlain(c)
		c.mu.Unlock()
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.writeLoop()
		}()
		var want []string
		seq := 0
		event := func(p string) string {
			seq++
			return `{"type":"event","event":"agent","payload":` + p + `,"seq":` + strconv.Itoa(seq) + `}`
		}
		for i := range 5 {
			id := strconv.Itoa(i)
			c.enqueue([]byte(`{"type":"res","id":"`+id+`","ok":true}`), false)
			want = append(want, `{"type":"res","id":"`+id+`","ok":true}`)
			s.feed.appendFrames(newBlock(agentFrames(`{"f":`+id+`}`, `{"g":`+id+`}`)), nil)
			want = append(want, event(`{"f":`+id+`}`), event(`{"g":`+id+`}`))
			c.sendEvent(wire.EventAgent, json.RawMessage(`{"own":`+id+`}`), false)
			want = append(want, event(`{"own":`+id+`}`))
			s.feed.appendFrames(nil, agentFrames(`{"h":`+id+`}`))
			want = append(want, event(`{"h":`+id+`}`))
		}
		var got []string
		for len(got) < len(want) {
			<-sock.wrote
			sock.mu.Lock()
			got = got[:0]
			for _, w := range sock.writes {
				got = append(got, readMessages(t, w)...)
			}
			if len(got) >= len(want) {
				sock.stopAfter = len(sock.writes) // the next write fails: the writer ends
			}
			sock.mu.Unlock()
		}
		c.enqueue([]byte(`{"type":"res","id":"end","ok":true}`), false)
		<-done
		if err := <-ended; !errors.Is(err, errTestSocketClosed) {
			t.Fatalf("the writer ended with %v", err)
		}
		s.removeConn(c)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("written:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestFeedSlowFollower: a follower whose writer falls more than
// maxBufferedBytes behind in the feed is disconnected as a slow consumer,
// its unwritten events counted as dropped, and the feed forgets what only
// it held back; a follower that keeps up stays.
func TestFeedSlowFollower(t *testing.T) {
	e := newEnv(t, envOptions{gateway: func(c *Config) { c.MaxBufferedBytes = 4 << 10 }})
	s := e.gw
	conns := blockConns(t, e, 2)
	slow, quick := conns[0], conns[1]
	dropped := s.eventsDropped.Load()
	frame := `{"pad":"` + strings.Repeat("p", 1000) + `"}`
	n := 0
	for !slow.closing {
		s.fanOutSession("agent:main:main", agentFrames(frame, frame), false)
		writerTakes(quick)
		if n++; n > 10 {
			t.Fatal("a follower more than maxBufferedBytes behind was not dropped")
		}
	}
	if !errors.Is(context.Cause(slow.ctx), errSlowConsumer) || quick.closing {
		t.Errorf("slow connection ended with %v; quick closing %v", context.Cause(slow.ctx), quick.closing)
	}
	if got := s.eventsDropped.Load() - dropped; got != int64(2*n) {
		t.Errorf("%d events counted as dropped, want the slow follower's %d", got, 2*n)
	}
	if slow.fon || len(s.feed.followers) != 1 {
		t.Errorf("the slow connection still follows the feed (%d followers)", len(s.feed.followers))
	}
	s.feed.trim()
	if len(s.feed.entries) != 0 {
		t.Errorf("the feed holds %d entries the remaining follower wrote", len(s.feed.entries))
	}
	// The quick follower's own queue counts its backlog in the feed: 2 KB
	// there and 2.6 KB of its own pass its 4 KiB.
	s.fanOutSession("agent:main:main", agentFrames(frame, frame), false)
	res := outFrame{raw: []byte(`{"type":"res","id":"1","ok":true,"payload":[` + frame + `,` + frame[:1000] + `"}]}`)}
	quick.mu.Lock()
	ok := quick.queueLocked(res, true)
	closing := quick.closing
	quick.mu.Unlock()
	if ok || closing {
		t.Errorf("a frame past the budget with the feed's backlog: queued %v, connection closing %v", ok, closing)
	}
	writerTakes(quick)
	quick.mu.Lock()
	ok = quick.queueLocked(res, true)
	quick.mu.Unlock()
	if !ok {
		t.Error("the frame was refused with the backlog written")
	}
}

// TestFeedWaiters: an append wakes the followers' writers that wait,
// once, and none that took entries and has not come back for more.
func TestFeedWaiters(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.gw
	conns := blockConns(t, e, 2)
	waiting, busy := conns[0], conns[1]
	s.feed.take(waiting, s.feed.head.Load(), nil, true)
	s.feed.take(waiting, s.feed.head.Load(), nil, true) // recorded once
	for range 3 {
		s.feed.appendFrames(nil, agentFrames(`{}`))
	}
	if len(waiting.wake) != 1 || len(busy.wake) != 0 {
		t.Fatalf("three appends: %d and %d wake-ups, want 1 and 0", len(waiting.wake), len(busy.wake))
	}
	<-waiting.wake
	// It takes entries: until it comes back, appends do not signal it.
	if fed, wait := s.feed.take(waiting, s.feed.head.Load(), nil, true); len(fed) != 3 || !wait {
		t.Fatalf("took %d entries (may wait: %v), want 3", len(fed), wait)
	}
	s.feed.appendFrames(nil, agentFrames(`{}`))
	if len(waiting.wake) != 0 {
		t.Fatal("a writer that was writing was signalled")
	}
	// Entries past the limit it read: it must come back, not wait.
	if _, wait := s.feed.take(waiting, s.feed.head.Load()-1, nil, true); wait {
		t.Error("a writer with an entry past its limit may wait")
	}
}

// TestFeedWrittenBeforeClose: when the gateway closes its connections,
// each plain client's writer writes what the feed held for it before the
// shutdown event, and then closes.
func TestFeedWrittenBeforeClose(t *testing.T) {
	e := newEnv(t, envOptions{})
	a, b := e.operator(), e.operator() // two plain connections: the feed carries their events
	for _, c := range []*client{a, b} {
		c.ok(wire.MethodHealth, nil, nil) // past hello-ok and the first events
	}
	e.gw.fanOutSession("agent:main:main", agentFrames(`{"n":1}`, `{"n":2}`), false)
	e.gw.fanOutSession("agent:main:main", agentFrames(`{"n":3}`), false)
	if err := e.gw.Close(); err != nil {
		t.Fatal(err)
	}
	for i, c := range []*client{a, b} {
		var got []string
		for f := c.nextEvent(10 * time.Second); f.Event != wire.EventShutdown; f = c.nextEvent(10 * time.Second) {
			if f.Event == wire.EventAgent {
				got = append(got, string(f.Payload))
			}
		}
		if want := `{"n":1} {"n":2} {"n":3}`; strings.Join(got, " ") != want {
			t.Errorf("client %d got %q before the shutdown event, want %s", i, got, want)
		}
	}
}
