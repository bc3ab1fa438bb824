package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
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
	written, own, err := c.writeBatch(batch)
	if err != nil {
		t.Fatal(err)
	}
	if int(written) != sock.buf.Len()-2*len(batch) || own != written {
		// (2: each message's header)
		t.Errorf("writeBatch counted %d bytes, %d own; the socket got %d in %d messages", written, own, sock.buf.Len(), len(batch))
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
	written, own, err = c.writeBatch(batch)
	if err != nil {
		t.Fatal(err)
	}
	if written != 3*batch[0].size() || own != 3*batch[0].ownSize() {
		t.Errorf("writeBatch counted %d bytes, %d own, want %d, %d", written, own, 3*batch[0].size(), 3*batch[0].ownSize())
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
	seqs := []int64{0, 1, 9, 10, 99, 100, 12345, -1, -9, -10, 1 << 62, math.MaxInt64, math.MinInt64}
	for p := int64(1); p <= math.MaxInt64/10; p *= 10 {
		seqs = append(seqs, p-1, p, p+1, 10*p-1, 10*p, -p, -10*p)
	}
	for _, seq := range seqs {
		want := `,"seq":` + strconv.FormatInt(seq, 10) + "}"
		if got := string(appendSeq([]byte("x"), seq)); got != "x"+want {
			t.Errorf("appendSeq(x, %d) = %s, want x%s", seq, got, want)
		}
		if got := seqTail(seq); got != len(want) {
			t.Errorf("seqTail(%d) = %d, want %d", seq, got, len(want))
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

// signallingConn is a socket that reports each write and fails the writes
// after stopAfter of them (ending the writer's loop).
type signallingConn struct {
	net.Conn
	mu        sync.Mutex
	writes    [][]byte
	stopAfter int
	wrote     chan struct{}
}

var errTestSocketClosed = errors.New("test socket closed")

func (c *signallingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.writes) >= c.stopAfter {
		return 0, errTestSocketClosed
	}
	c.writes = append(c.writes, bytes.Clone(p))
	c.wrote <- struct{}{}
	return len(p), nil
}

// TestWriterLetsReadyGoroutinesQueueFirst: on one processor, a frame
// queued by a goroutine that was ready to run when the writer was woken
// leaves in the same write as the frame that woke it, as a chat.send's
// answer and the first events of the run it started do. Not every round
// joins: the scheduler takes the writer back first when its periodic look
// at the global run queue falls on that moment (about one time in 61), and
// on a loaded machine, where this process's thread waits for a CPU, when
// the monitor preempts a goroutine it finds running too long (14 of 20
// rounds joined beside two busy loops and another test binary). Without
// the writer's yield, 0–1 of 20 join: half of 60 rounds tells the two
// apart with a wide margin either way.
func TestWriterLetsReadyGoroutinesQueueFirst(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	s := &Server{}
	s.cfg.MaxBufferedBytes = 1 << 20
	sock := &signallingConn{stopAfter: 1 << 20, wrote: make(chan struct{}, 2)}
	// The writer ends on a failed write, through cancel; its context
	// (which would close the WebSocket, which this test has not) never
	// ends.
	ended := make(chan error, 1)
	c := &conn{s: s, sock: &sockConn{Conn: sock}, ctx: context.Background(), cancel: func(err error) { ended <- err },
		wake: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.writeLoop()
	}()
	const rounds = 60
	joined := 0
	for range rounds {
		// The only processor passes to the writer, which finds nothing
		// queued and waits for a wake-up.
		runtime.Gosched()
		sock.mu.Lock()
		before := len(sock.writes)
		sock.mu.Unlock()
		// A run made ready before its answer wakes the writer: the
		// writer, readied last, is the one the scheduler would run next.
		queued := make(chan struct{})
		go func() {
			c.enqueue(eventHead("agent", true), false)
			close(queued)
		}()
		c.enqueue([]byte(`{"type":"res","id":"1","ok":true}`), false)
		<-queued
		<-sock.wrote
		sock.mu.Lock()
		first := sock.writes[before]
		sock.mu.Unlock()
		if !bytes.Contains(first, []byte(`"type":"res"`)) {
			t.Fatalf("the first write holds %q, want the answer first", first)
		}
		if bytes.Contains(first, []byte(`"event":"agent"`)) {
			joined++
		} else {
			<-sock.wrote // the event, alone
		}
	}
	if joined < rounds/2 {
		t.Errorf("the answer and the run's event left in one write in %d of %d rounds, want at least half", joined, rounds)
	}
	// End the writer: its next write fails.
	sock.mu.Lock()
	sock.stopAfter = len(sock.writes)
	sock.mu.Unlock()
	c.enqueue([]byte(`{"type":"res","id":"2","ok":true}`), false)
	<-done
	if err := <-ended; !errors.Is(err, errTestSocketClosed) {
		t.Errorf("the writer ended with %v", err)
	}
}
