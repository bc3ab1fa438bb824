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
	var want int64
	for _, f := range batch {
		want += f.size()
		if f.wireSize() > f.size() {
			t.Fatalf("a frame of %d bytes on the wire counts %d in the budget", f.wireSize(), f.size())
		}
	}
	if written != want || own != written {
		t.Errorf("writeBatch counted %d bytes, %d own; the frames' sizes sum to %d", written, own, want)
	}
	if got := readMessages(t, sock.buf.Bytes()); len(got) != len(batch) || got[49] != `{"type":"event","event":"chat","payload":{"text":"hi"},"seq":50}` {
		t.Errorf("the socket got %d messages, the last %q", len(got), got[len(got)-1])
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
	if want := 10*3 + batch[0].wireSize() + batch[1].wireSize() + batch[2].wireSize(); int64(sock.buf.Len()) != want {
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

// testWriter runs a connection's writer on a signallingConn whose
// writes are signalled on a channel of capacity wrote. stop ends the
// writer, through a failed write and so through cancel (its context,
// which would close the WebSocket, which these tests have not, never
// ends), and checks that it ended so.
func testWriter(t *testing.T, s *Server, wrote int) (c *conn, sock *signallingConn, stop func()) {
	sock = &signallingConn{stopAfter: 1 << 20, wrote: make(chan struct{}, wrote)}
	ended := make(chan error, 1)
	c = &conn{s: s, sock: &sockConn{Conn: sock}, ctx: context.Background(), cancel: func(err error) { ended <- err },
		wake: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.writeLoop()
	}()
	stop = func() {
		sock.mu.Lock()
		sock.stopAfter = len(sock.writes)
		sock.mu.Unlock()
		c.enqueue([]byte(`{"type":"res","id":"end","ok":true}`), false)
		<-done
		if err := <-ended; !errors.Is(err, errTestSocketClosed) {
			t.Errorf("the writer ended with %v", err)
		}
	}
	return c, sock, stop
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
	c, sock, stop := testWriter(t, s, 2)
	defer stop()
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
}

// blockConns connects n plain connections to the gateway of e, past their
// handshake and following the feed, with room in their wake channels to
// count wake-ups. With scoped, they are session-scoped instead, each
// subscribed to the session agent:main:main.
func blockConns(t *testing.T, e *env, n int, scoped ...bool) []*conn {
	t.Helper()
	s := e.gw
	conns := make([]*conn, n)
	for i := range conns {
		ctx, cancel := context.WithCancelCause(t.Context())
		c := &conn{s: s, ctx: ctx, cancel: cancel, log: s.log, wake: make(chan struct{}, 16), ready: true, idle: true}
		if !s.addConn(c) {
			t.Fatal("the gateway is closing")
		}
		t.Cleanup(func() { s.removeConn(c) })
		if len(scoped) > 0 && scoped[0] {
			c.scoped = true
			c.subscribe("agent:main:main", false)
		} else {
			c.mu.Lock()
			s.addPlain(c)
			c.mu.Unlock()
		}
		conns[i] = c
	}
	return conns
}

// TestFanOutQueuesOneBlock: the frames of a fan-out that reaches several
// connections on their own queues (here session-scoped ones) are queued
// on each as one block, woken once and counted in the budgets as the
// bytes each will write (seqRoom for each seq); the writer numbers the
// block from the connection's own next seq. A fan-out with a shared
// payload goes frame by frame.
func TestFanOutQueuesOneBlock(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.gw
	conns := blockConns(t, e, 3, true)
	conns[1].wseq = 8 // its block crosses from one digit to two
	before := s.queuedTotal.Load()
	payloads := []string{`{"a":1}`, `{"b":"two"}`, `{"c":[3]}`}
	frames := make([]outFrame, len(payloads))
	for i, p := range payloads {
		frames[i] = outFrame{raw: eventHead(wire.EventAgent, true), body: json.RawMessage(p)}
	}
	s.fanOutSession("agent:main:main", frames, false)
	var total int64
	for i, c := range conns {
		if len(c.queue) != 1 || c.queue[0].messages() != 3 {
			t.Fatalf("connection %d: %d queue entries, want one block of 3", i, len(c.queue))
		}
		if len(c.wake) != 1 {
			t.Errorf("connection %d woken %d times, want once", i, len(c.wake))
		}
		var want int64
		for _, p := range payloads {
			want += int64(len(`{"type":"event","event":"agent","payload":`+p) + seqRoom)
		}
		if c.queued != want || c.ownQueued != want {
			t.Errorf("connection %d counts %d bytes queued (%d own), want %d", i, c.queued, c.ownQueued, want)
		}
		total += want
		first := int64(1)
		if i == 1 {
			first = 9
		}
		if out := c.merge(c.queue, nil); out[0].seq != first || c.wseq != first+2 {
			t.Errorf("connection %d: block from seq %d, writer at %d; want %d and %d", i, out[0].seq, c.wseq, first, first+2)
		}
	}
	if got := s.queuedTotal.Load() - before; got != total {
		t.Errorf("the gateway counts %d bytes queued, want %d", got, total)
	}

	big := outFrame{raw: eventHead(wire.EventChat, true), body: json.RawMessage(`"` + strings.Repeat("x", sharedMin) + `"`)}
	s.fanOutSession("agent:main:main", []outFrame{frames[0], big}, false)
	for i, c := range conns {
		if len(c.queue) != 3 || c.queue[1].blk != nil || c.queue[2].shared == nil {
			t.Errorf("connection %d: a fan-out with a shared payload queued %d entries, want 2 frames of their own", i, len(c.queue)-1)
		}
	}
}

// TestBlockRefusedWhole: a block past a connection's budget is dropped
// whole with dropIfSlow, each of its events counted as dropped; without
// it, the connection is dropped as a slow consumer.
func TestBlockRefusedWhole(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.gw
	conns := blockConns(t, e, 2)
	c := conns[0]
	blk := newBlock([]outFrame{
		{raw: eventHead(wire.EventAgent, true), body: json.RawMessage(`{"a":1}`)},
		{raw: eventHead(wire.EventChat, true), body: json.RawMessage(`{"b":2}`)},
	})
	c.queued = s.cfg.MaxBufferedBytes - 10 // room for less than the block
	dropped := s.eventsDropped.Load()
	if n := c.queueEvents([]outFrame{{blk: blk}}, "", true); n != 0 || len(c.queue) != 0 {
		t.Fatalf("a refused block: %d bytes counted, %d entries queued", n, len(c.queue))
	}
	if got := s.eventsDropped.Load() - dropped; got != 2 {
		t.Errorf("a refused block of two events counted %d dropped", got)
	}
	if c.queueEvents([]outFrame{{blk: blk}}, "", false) != 0 || !c.closing {
		t.Error("a block past the budget without dropIfSlow did not drop the connection")
	}
	if n, want := conns[1].queueEvents([]outFrame{{blk: blk}}, "", false), int64(len(blk.b)+2*seqRoom); n != want {
		t.Errorf("a block queued within the budget counts %d bytes, want %d", n, want)
	}
}

// TestBlockWrittenAsMessages: a queued block leaves as one WebSocket
// message per event, each with its seq, in the batch's one write, with the
// byte counts the budget expects.
func TestBlockWrittenAsMessages(t *testing.T) {
	s := &Server{}
	sock := &countingConn{}
	c := &conn{s: s, sock: &sockConn{Conn: sock}, ctx: t.Context()}
	payloads := []string{`{"a":1}`, `{"long":"` + strings.Repeat("y", 200) + `"}`, `{"c":3}`}
	var frames []outFrame
	for _, p := range payloads {
		frames = append(frames, outFrame{raw: eventHead(wire.EventChat, true), body: json.RawMessage(p)})
	}
	blk := newBlock(frames)
	batch := []outFrame{
		{raw: []byte(`{"type":"res","id":"1","ok":true}`)},
		{blk: blk, event: true, seq: 99},
		{raw: eventHead(wire.EventAgent, true), body: json.RawMessage(`{}`), event: true, seq: 102},
	}
	var want []string
	want = append(want, string(batch[0].raw))
	for i, p := range payloads {
		want = append(want, `{"type":"event","event":"chat","payload":`+p+`,"seq":`+strconv.Itoa(99+i)+`}`)
	}
	want = append(want, `{"type":"event","event":"agent","payload":{},"seq":102}`)
	var size int64
	for _, f := range batch {
		size += f.size()
	}
	written, own, err := c.writeBatch(batch)
	if err != nil {
		t.Fatal(err)
	}
	if written != size || own != size {
		t.Errorf("writeBatch counted %d bytes (%d own), the frames' sizes sum to %d", written, own, size)
	}
	if sock.writes != 1 {
		t.Errorf("the batch took %d writes, want 1", sock.writes)
	}
	got := readMessages(t, sock.buf.Bytes())
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("messages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// readMessages splits unmasked server-to-client WebSocket text messages.
func readMessages(t *testing.T, b []byte) []string {
	t.Helper()
	var msgs []string
	for len(b) > 0 {
		if len(b) < 2 || b[0] != 0x81 {
			t.Fatalf("not a final text frame: % x", b[:min(len(b), 4)])
		}
		n, off := int(b[1]), 2
		switch n {
		case 126:
			n, off = int(b[2])<<8|int(b[3]), 4
		case 127:
			t.Fatal("a 64-bit length in a test of small messages")
		}
		msgs = append(msgs, string(b[off:off+n]))
		b = b[off+n:]
	}
	return msgs
}

// TestWriterWaitsWhileFramesJoin: on one processor, frames that a
// goroutine queues one by one, yielding between them (as the runs of many
// sessions fan out to the same connection), while the writer it woke
// waits for its turn, leave in one write when the gateway is busy (the
// writer yields again for as long as the queue grows), and in several
// when it is not (a few runs: the writer writes at once). Not every round
// goes the way its case wants (see
// TestWriterLetsReadyGoroutinesQueueFirst): half of them must. Without
// the yields, 0 of 40 busy rounds left in one write; without the gate,
// 40 of 40 quiet ones did.
func TestWriterWaitsWhileFramesJoin(t *testing.T) {
	for _, tc := range []struct {
		name    string
		runs    int64
		wantOne bool
	}{{"busy", yieldRuns, true}, {"quiet", 1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			s := &Server{}
			s.cfg.MaxBufferedBytes = 1 << 20
			s.liveRuns.Store(tc.runs)
			c, sock, stop := testWriter(t, s, 16)
			defer stop()
			const rounds, frames = 40, maxYields
			oneWrite := 0
			for range rounds {
				runtime.Gosched() // the writer finds nothing queued and waits
				sock.mu.Lock()
				before := len(sock.writes)
				sock.mu.Unlock()
				queued := make(chan struct{})
				go func() {
					for i := range frames {
						c.enqueue([]byte(`{"type":"res","id":"`+strconv.Itoa(i)+`","ok":true}`), false)
						runtime.Gosched()
					}
					close(queued)
				}()
				<-queued
				for n := 0; n < frames; { // frames written this round
					<-sock.wrote
					sock.mu.Lock()
					n = 0
					for _, w := range sock.writes[before:] {
						n += bytes.Count(w, []byte(`"type":"res"`))
					}
					if n == frames && len(sock.writes)-before == 1 {
						oneWrite++
					}
					sock.mu.Unlock()
				}
				for len(sock.wrote) > 0 {
					<-sock.wrote // the round's other writes, counted above
				}
			}
			if tc.wantOne && oneWrite < rounds/2 {
				t.Errorf("%d frames queued one by one left in one write in %d of %d rounds, want at least half", frames, oneWrite, rounds)
			}
			if !tc.wantOne && oneWrite > rounds/2 {
				t.Errorf("%d frames queued one by one left in one write in %d of %d rounds of a quiet gateway, want at most half", frames, oneWrite, rounds)
			}
		})
	}
}

// TestBusyWriterNotSignalled: a frame queued for a writer that waits
// wakes it once; frames queued while it has not taken the queue since
// (woken already, or busy writing) do not signal it again, and the first
// after it took an empty queue does.
func TestBusyWriterNotSignalled(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := blockConns(t, e, 1)[0]
	ev := func() outFrame { return outFrame{raw: eventHead(wire.EventAgent, true), body: json.RawMessage(`{}`)} }
	for range 3 {
		c.queueEvent(ev(), false)
	}
	if len(c.wake) != 1 {
		t.Fatalf("three frames for a waiting writer: %d wake-ups, want 1", len(c.wake))
	}
	<-c.wake
	// The writer takes the queue (not empty): it is busy, not waiting.
	c.mu.Lock()
	c.queue, c.idle = nil, false
	c.mu.Unlock()
	c.queueEvent(ev(), false)
	if len(c.wake) != 0 {
		t.Fatal("a busy writer was signalled")
	}
	// It takes the queue again, finds the frame, then an empty queue.
	c.mu.Lock()
	c.queue, c.idle = nil, true
	c.mu.Unlock()
	blk := newBlock([]outFrame{ev(), ev()})
	c.queueEvents([]outFrame{{blk: blk}}, "", false)
	c.queueEvents([]outFrame{{blk: blk}}, "", false)
	if len(c.wake) != 1 {
		t.Fatalf("two blocks for a writer that waits again: %d wake-ups, want 1", len(c.wake))
	}
}
