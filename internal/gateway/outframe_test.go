package gateway

import (
	"bytes"
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// countingConn records what is written to it and in how many calls.
type countingConn struct {
	net.Conn
	writes int
	buf    bytes.Buffer
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes++
	return c.buf.Write(p)
}

// TestBatchIsOneWrite: a batch of queued frames leaves in one socket
// write; large payloads are written from where they are, not copied, and
// shared ones are released once written.
func TestBatchIsOneWrite(t *testing.T) {
	s := &Server{}
	sock := &countingConn{}
	c := &conn{s: s, sock: &sockConn{Conn: sock}, ctx: t.Context()}
	payload := json.RawMessage(`{"text":"hi"}`)
	var batch []outFrame
	for i := range 50 {
		batch = append(batch, outFrame{raw: eventHead("chat", true), body: payload, event: true, seq: int64(i + 1)})
	}
	if err := c.writeBatch(batch); err != nil {
		t.Fatal(err)
	}
	if sock.writes != 1 {
		t.Fatalf("50 small frames took %d writes, want 1", sock.writes)
	}

	big := s.newShared(json.RawMessage(`"` + strings.Repeat("x", batchLimit) + `"`))
	batch = batch[:0]
	for i := range 3 {
		big.refs.Add(1)
		batch = append(batch, outFrame{raw: eventHead("chat", true), shared: big, event: true, seq: int64(i + 1)})
	}
	big.release()
	sock.buf.Reset()
	if err := c.writeBatch(batch); err != nil {
		t.Fatal(err)
	}
	if want := 3 * (10 + batch[0].size()); int64(sock.buf.Len()) != want {
		t.Fatalf("wrote %d bytes, want %d", sock.buf.Len(), want)
	}
	if cap(c.wbuf) >= sharedMin {
		t.Fatalf("the writer's buffer grew to %d bytes: large payloads are not copied", cap(c.wbuf))
	}
	if n := s.queuedTotal.Load(); n != 0 {
		t.Fatalf("%d bytes still counted after the shared payload was written", n)
	}
}

// TestBatchedMessagesArriveWhole: events of every header size (7-bit,
// 16-bit and 64-bit lengths, at their edges), small and shared payloads,
// broadcast back to back so that they leave in batches, reach a client as
// whole messages, in order, with consecutive seqs.
func TestBatchedMessagesArriveWhole(t *testing.T) {
	e := newEnv(t, envOptions{})
	a, b := e.operator(), e.operator() // two connections: large payloads are shared
	head := len(`{"type":"event","event":"chat","payload":`) + len(`,"seq":}`)
	var sizes []int
	for _, edge := range []int{126, 1 << 16, sharedMin} {
		for n := edge - 3; n <= edge+3; n++ {
			sizes = append(sizes, n)
		}
	}
	sizes = append(sizes, 2, batchLimit+10, 40)
	var sent []json.RawMessage
	for _, n := range sizes {
		// {"t":"xxx"} with the whole frame about n bytes long.
		p := json.RawMessage(`{"t":"` + strings.Repeat("x", max(n-head-10, 0)) + `"}`)
		sent = append(sent, p)
		e.gw.broadcast(wire.EventChat, p, false)
	}
	for _, c := range []*client{a, b} {
		var seq int64
		for i, p := range sent {
			f := c.expectEvent(wire.EventChat)
			if !bytes.Equal(f.Payload, p) {
				t.Fatalf("event %d: payload of %d bytes, want %d", i, len(f.Payload), len(p))
			}
			if seq != 0 && *f.Seq != seq+1 {
				t.Fatalf("event %d: seq %d after %d", i, *f.Seq, seq)
			}
			seq = *f.Seq
		}
	}
	a.ok(wire.MethodHealth, nil, nil) // responses still pass after the batches
}

func TestSeqTail(t *testing.T) {
	for _, seq := range []int64{0, 1, 9, 10, 99, 100, 12345, -1, -10, 1 << 62} {
		if got, want := seqTail(seq), len(appendSeq(nil, seq)); got != want {
			t.Errorf("seqTail(%d) = %d, want %d", seq, got, want)
		}
	}
}

// TestAnswerWakesTheWriterOnce: a call's response and what its
// releaseAfterResponse queues (a run's held events) are in the queue
// before the writer is woken, so that they leave in one write.
func TestAnswerWakesTheWriterOnce(t *testing.T) {
	s := &Server{}
	s.cfg.MaxBufferedBytes = 1 << 20
	c := &conn{s: s, ctx: t.Context(), wake: make(chan struct{}, 1)}
	cl := &call{c: c, id: "1"}
	woken := func() bool {
		select {
		case <-c.wake:
			return true
		default:
			return false
		}
	}
	cl.releaseAfterResponse = func() {
		if woken() {
			t.Error("the writer was woken before the held events were queued")
		}
		c.push(eventHead("agent", true), false)
	}
	c.answer(cl, map[string]string{"status": "started"}, nil)
	if !woken() {
		t.Fatal("the writer was not woken")
	}
	if len(c.queue) != 2 || !bytes.Contains(c.queue[0].raw, []byte(`"type":"res"`)) {
		t.Fatalf("queue = %d frames, want the response, then the event", len(c.queue))
	}
}
