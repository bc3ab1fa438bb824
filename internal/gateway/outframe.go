package gateway

import (
	"context"
	"strconv"
	"sync/atomic"

	"github.com/coder/websocket"

	"github.com/switchboardhq/switchboard/internal/jsonenc"
)

// sharedMin is the payload size from which a broadcast event's payload is
// shared by every connection instead of copied into each one's frame.
const sharedMin = 64 << 10

// sharedPayload is an event payload queued on several connections at once.
// It counts once against the outbound budget, from the broadcast until the
// last connection has written or dropped it.
type sharedPayload struct {
	b    []byte
	refs atomic.Int32
	s    *Server
}

// newShared makes a shared payload holding one reference for the caller,
// which releases it when it has queued it everywhere.
func (s *Server) newShared(b []byte) *sharedPayload {
	p := &sharedPayload{b: b, s: s}
	p.refs.Store(1)
	s.queuedTotal.Add(int64(len(b)))
	return p
}

func (p *sharedPayload) release() {
	if p.refs.Add(-1) == 0 {
		p.s.queuedTotal.Add(-int64(len(p.b)))
	}
}

// outFrame is one queued frame: raw bytes, or (for a shared payload) the
// event's head, the shared payload and this connection's tail.
type outFrame struct {
	raw    []byte
	shared *sharedPayload
	tail   []byte
}

// size is the frame's length on the wire.
func (f outFrame) size() int64 {
	n := int64(len(f.raw) + len(f.tail))
	if f.shared != nil {
		n += int64(len(f.shared.b))
	}
	return n
}

// ownSize is what the frame holds that no other connection shares.
func (f outFrame) ownSize() int64 { return int64(len(f.raw) + len(f.tail)) }

func (f outFrame) release() {
	if f.shared != nil {
		f.shared.release()
	}
}

// sharedEventFrame is an event frame around a shared payload: head is
// {"type":"event","event":<name>,"payload": and tail ,"seq":<seq>}.
func sharedEventFrame(event string, p *sharedPayload, seq int64) outFrame {
	head := jsonenc.AppendString([]byte(`{"type":"event","event":`), event)
	head = append(head, `,"payload":`...)
	tail := strconv.AppendInt([]byte(`,"seq":`), seq, 10)
	tail = append(tail, '}')
	return outFrame{raw: head, shared: p, tail: tail}
}

// write sends one frame; a shared frame goes out as one message in three
// writes, with no copy of the payload.
//
// It writes without a context: a write with one registers (and removes) a
// cancel callback on it per frame, a tenth of the gateway's CPU when it
// fans events out to many connections. writeLoop closes the socket once
// for all when c.ctx ends, which ends a blocked write the same way.
func (c *conn) write(f outFrame) error {
	if f.shared == nil {
		return c.ws.Write(context.Background(), websocket.MessageText, f.raw)
	}
	defer f.shared.release()
	w, err := c.ws.Writer(context.Background(), websocket.MessageText)
	if err != nil {
		return err
	}
	for _, part := range [][]byte{f.raw, f.shared.b, f.tail} {
		if _, err := w.Write(part); err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}

// sendShared queues an event with a shared payload and the connection's
// next seq.
func (c *conn) sendShared(event string, p *sharedPayload, dropIfSlow bool) {
	c.mu.Lock()
	if !c.ready {
		c.mu.Unlock()
		return
	}
	ok := c.enqueueLocked(sharedEventFrame(event, p, c.seq+1), dropIfSlow)
	if ok {
		c.seq++
	}
	c.mu.Unlock()
	if ok {
		c.signal()
	}
}
