package gateway

import (
	"context"
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/coder/websocket"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/jsonenc"
	"github.com/switchboardhq/switchboard/internal/lazy"
)

// sharedMin is the payload size from which a broadcast event's payload is
// counted once in the outbound budget for every connection instead of in
// each one's.
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

// outFrame is one queued frame: raw bytes, or an event. An event is its
// head ({"type":"event","event":<name>,"payload":) in raw, its payload in
// body or shared, and this connection's seq, written as ,"seq":<seq>}.
// Head and payload are encoded once per broadcast and read (never
// written) by every connection it reaches; a body counts in each
// connection's budget as a copy would, a shared payload once in all.
//
// A block (blk) is several event frames of one fan-out, encoded once for
// every connection it reaches: the connection queues it as one frame,
// seq being its first event's, and writes each of its events as a
// message of its own.
//
// The writer gives events their seqs as it writes them (see
// conn.merge): the budget counts seqRoom bytes for each event's seq.
// at is the feed's position when the frame was queued on a connection
// that follows the feed; fed marks a frame the writer took from the feed,
// whose payload reference the feed holds.
type outFrame struct {
	raw    []byte
	body   []byte
	shared *sharedPayload
	blk    *eventBlock
	seq    int64
	at     int64
	event  bool
	fed    bool
}

// seqRoom is what an event's seq end, ,"seq":<seq>}, counts in the
// outbound budget: a seq of up to eight digits. The budget is settled
// when the frame is queued, before the writer numbers it.
const seqRoom = len(`,"seq":}`) + 8

// eventBlock is the event frames of one fan-out without their seqs, each
// its head and payload, back to back in b; the frame i ends at ends[i].
// It is never changed once queued.
type eventBlock struct {
	b    []byte
	ends []int
	room [6]int // ends' first array: most fan-outs send one to four frames
}

// newBlock encodes frames (heads and payloads set, none shared) as a
// block.
func newBlock(frames []outFrame) *eventBlock {
	n := 0
	for _, f := range frames {
		n += len(f.raw) + len(f.body)
	}
	k := &eventBlock{b: make([]byte, 0, n)}
	k.ends = k.room[:0]
	for _, f := range frames {
		k.b = append(append(k.b, f.raw...), f.body...)
		k.ends = append(k.ends, len(k.b))
	}
	return k
}

// frame is the i-th frame's head and payload.
func (k *eventBlock) frame(i int) []byte {
	start := 0
	if i > 0 {
		start = k.ends[i-1]
	}
	return k.b[start:k.ends[i]]
}

// size is the length on the wire of the i-th frame of a block numbered
// from seq.
func (k *eventBlock) size(i int, seq int64) int64 {
	return int64(len(k.frame(i)) + seqTail(seq+int64(i)))
}

// messages is how many WebSocket messages the frame is.
func (f outFrame) messages() int {
	if f.blk != nil {
		return len(f.blk.ends)
	}
	return 1
}

// seqTail is the length of ,"seq":<seq>}. It runs several times for each
// frame of each connection, so it counts digits by comparison, not
// division.
func seqTail(seq int64) int {
	n := len(`,"seq":}`) + 1
	if seq < 0 {
		if seq == math.MinInt64 {
			return n + 19
		}
		n, seq = n+1, -seq
	}
	for p := int64(10); seq >= p; p *= 10 {
		n++
		if p > math.MaxInt64/10 {
			break // seq has 19 digits
		}
	}
	return n
}

// size is what the frame counts in its connection's budget: its length
// on the wire, but for the seqs (seqRoom each).
func (f outFrame) size() int64 {
	n := f.ownSize()
	if f.shared != nil {
		n += int64(len(f.shared.b))
	}
	return n
}

// ownSize is what the frame counts in its connection's share of the
// outbound budget: all but a shared payload.
func (f outFrame) ownSize() int64 {
	if f.blk != nil {
		return int64(len(f.blk.b) + seqRoom*len(f.blk.ends))
	}
	n := len(f.raw) + len(f.body)
	if f.event {
		n += seqRoom
	}
	return int64(n)
}

// wireSize is the length on the wire of a frame that is not a block, its
// seq given.
func (f outFrame) wireSize() int64 {
	n := len(f.raw) + len(f.payload())
	if f.event {
		n += seqTail(f.seq)
	}
	return int64(n)
}

// release drops the frame's reference to its shared payload; a frame
// taken from the feed has none of its own.
func (f outFrame) release() {
	if f.shared != nil && !f.fed {
		f.shared.release()
	}
}

// payload is an event frame's payload, shared or not.
func (f outFrame) payload() []byte {
	if f.shared != nil {
		return f.shared.b
	}
	return f.body
}

// appendTo appends the frame's JSON text to b: of its i-th message, for
// a block.
func (f outFrame) appendTo(b []byte, i int) []byte {
	if f.blk != nil {
		return appendSeq(append(b, f.blk.frame(i)...), f.seq+int64(i))
	}
	b = append(b, f.raw...)
	if !f.event {
		return b
	}
	b = append(b, f.payload()...)
	return appendSeq(b, f.seq)
}

// appendSeq appends an event frame's end, ,"seq":<seq>}, the digits
// written in place (it runs for each frame of each connection).
func appendSeq(b []byte, seq int64) []byte {
	if seq < 0 {
		b = strconv.AppendInt(append(b, `,"seq":`...), seq, 10)
		return append(b, '}')
	}
	n, tail := len(b), seqTail(seq)
	b = append(slices.Grow(b, tail), `,"seq":`...)
	b = b[:n+tail]
	b[len(b)-1] = '}'
	for i := len(b) - 2; ; i-- {
		b[i] = byte('0' + seq%10)
		if seq /= 10; seq == 0 {
			break
		}
	}
	return b
}

// eventHead is the start of an event frame up to its payload (or, for an
// event without one, up to its seq).
func eventHead(event string, payload bool) []byte {
	if payload {
		// The events of every run: one head each, shared by their
		// frames, which only read it (capped, so that an append copies).
		switch event {
		case wire.EventChat:
			return chatHead.Get()
		case wire.EventAgent:
			return agentHead.Get()
		}
	}
	return buildEventHead(event, payload)
}

// The heads of the chat and agent events with a payload.
var (
	chatHead  = lazy.Value[[]byte]{New: func() []byte { return buildEventHead(wire.EventChat, true) }}
	agentHead = lazy.Value[[]byte]{New: func() []byte { return buildEventHead(wire.EventAgent, true) }}
)

// buildEventHead builds eventHead(event, payload) in a slice of its own,
// its capacity its length.
func buildEventHead(event string, payload bool) []byte {
	b := append(make([]byte, 0, 48+len(event)), `{"type":"event","event":`...)
	b = jsonenc.AppendString(b, event)
	if payload {
		b = append(b, `,"payload":`...)
	}
	return b[:len(b):len(b)]
}

// appendHeader appends the header of an unmasked, unfragmented WebSocket
// text message of n bytes (RFC 6455, section 5.2), as a server sends it.
func appendHeader(b []byte, n int64) []byte {
	switch {
	case n < 126:
		return append(b, 0x81, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, 0x81, 126), uint16(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, 0x81, 127), uint64(n))
	}
}

// writeBatch writes a batch of frames to the socket as WebSocket messages
// in one write system call (or one per batchLimit bytes), and releases
// them. Frames are copied into the connection's buffer, except payloads of
// sharedMin bytes or more, which are written from where they are (a
// vectored write), so that a stalled connection holds no copy of them.
// The WebSocket library's own frames (pings, pongs, the close) go through
// the same socket whole, between these writes (see sockConn); the
// connection negotiates no extension, so a message is a plain frame.
//
// It returns what the frames written counted in the connection's budget
// (outFrame.size; the feed's entries count in the feed's, not here) and,
// of that, the bytes not in shared payloads (ownSize), counted as it
// goes: a batch can hold thousands of frames, and each pass over it
// costs.
func (c *conn) writeBatch(batch []outFrame) (written, own int64, err error) {
	shared := false // a frame with a shared payload was seen
	defer func() {
		if !shared && err == nil {
			return // nothing to release
		}
		for _, f := range batch {
			f.release()
		}
	}()
	buf, vec := c.wbuf[:0], c.wvec[:0]
	mark, n := 0, 0 // buf[mark:] is not in vec yet; n bytes wait in all
	for i, f := range batch {
		if !f.fed { // the feed's entries count in the feed's budget
			written, own = written+f.size(), own+f.ownSize()
			shared = shared || f.shared != nil
		}
		var size int64 // on the wire
		if f.blk != nil {
			for j := range f.blk.ends {
				m := f.blk.size(j, f.seq)
				size += m
				buf = f.appendTo(appendHeader(buf, m), j)
			}
		} else if size = f.wireSize(); len(f.payload()) >= sharedMin {
			buf = appendHeader(buf, size)
			p := f.payload()
			buf = append(buf, f.raw...)
			vec = append(vec, buf[mark:], p)
			mark = len(buf)
			buf = appendSeq(buf, f.seq)
		} else {
			buf = f.appendTo(appendHeader(buf, size), 0)
		}
		n += int(size)
		if n >= batchLimit || i == len(batch)-1 {
			if mark < len(buf) {
				vec = append(vec, buf[mark:])
			}
			if c.ctx.Err() != nil {
				// The connection ended (its reader met the peer's close,
				// which the library answered): no data after a close.
				err = context.Cause(c.ctx)
				break
			}
			if err = c.sock.writeVec(vec); err != nil {
				break
			}
			buf, vec, mark, n = buf[:0], vec[:0], 0, 0
		}
	}
	if cap(buf) > 4*batchLimit {
		buf = nil // do not pin a large buffer after a burst
	}
	clear(vec[:cap(vec)])
	c.wbuf, c.wvec = buf[:0], vec[:0]
	return written, own, err
}

// write sends one frame through the WebSocket library (for a connection
// with no socket of its own, in tests), and releases it.
//
// It writes without a context: a write with one registers (and removes) a
// cancel callback on it per frame, a tenth of the gateway's CPU when it
// fans events out to many connections. writeLoop closes the socket once
// for all when c.ctx ends, which ends a blocked write the same way.
func (c *conn) write(f outFrame) error {
	defer f.release()
	for i := range f.messages() {
		if err := c.ws.Write(context.Background(), websocket.MessageText, f.appendTo(nil, i)); err != nil {
			return err
		}
	}
	return nil
}

// queueEvent queues an event frame (head and payload set), and returns
// what the caller must add to the gateway's outbound total for it (its
// ownSize; 0 when it was not queued). Events before hello-ok are dropped.
func (c *conn) queueEvent(f outFrame, dropIfSlow bool) int64 {
	return c.queueEvents([]outFrame{f}, "", dropIfSlow)
}

// queueEvents queues event frames (heads and payloads set, or blocks),
// in order, if the connection receives the events of session key (any
// connection past hello-ok, for key ""), and wakes its writer once. It
// returns what the caller must add to the gateway's outbound total for
// them (see queueEvent). A frame the connection's budget refuses (a block
// whole) is dropped (dropIfSlow) or ends the connection, with the frames
// after it.
func (c *conn) queueEvents(frames []outFrame, key string, dropIfSlow bool) int64 {
	c.mu.Lock()
	if !c.wantsLocked(key) {
		c.mu.Unlock()
		return 0
	}
	var n int64
	for _, f := range frames {
		f.event = true
		if !c.queueLocked(f, dropIfSlow) {
			continue // (a closing connection refuses the rest)
		}
		n += f.ownSize()
	}
	wake := n > 0 && c.wakeLocked()
	c.mu.Unlock()
	if wake {
		c.signal()
	}
	return n
}
