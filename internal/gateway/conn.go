package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/safeerr"
	"github.com/switchboardhq/switchboard/internal/store"
)

// Causes of a connection's end, recorded as its context's cause.
var (
	errConnClosed       = errors.New("connection closed")
	errSlowConsumer     = errors.New("slow consumer: outbound queue over maxBufferedBytes")
	errPongTimeout      = errors.New("ping timed out")
	errHandshakeTimeout = errors.New("handshake timeout")
	// errRequestCancelled is the cause of a request cancelled by a cancel
	// frame.
	errRequestCancelled = errors.New("request cancelled")
)

// conn is one client connection. The reader runs on the ServeHTTP
// goroutine; a writer goroutine drains the outbound queue; each request
// runs on its own goroutine.
type conn struct {
	s      *Server
	ws     *websocket.Conn
	log    *slog.Logger
	id     string
	remote string
	origin string    // the browser page's Origin header, "" for other clients
	sock   *sockConn // the socket; nil in tests without one
	local  net.Addr

	ctx    context.Context // ends when the connection does
	cancel context.CancelCauseFunc

	wake       chan struct{} // signals the writer; capacity 1
	writerDone chan struct{}
	wg         sync.WaitGroup // request handlers and the keepalive loop

	// Set by the handshake before ready; read-only afterwards.
	protocol    int
	role        string
	scopes      []string
	client      wire.ClientInfo
	connectedAt time.Time
	scoped      bool // session-scoped events (set with ready, under mu)
	approvals   bool // answers exec approvals (set with ready, under mu)
	// catalogTarget is the Control UI's connect modelCatalog when it
	// asked for a models.snapshot; nil otherwise.
	catalogTarget json.RawMessage

	// mu guards the fields that follow.
	mu          sync.Mutex
	ready       bool       // hello-ok is queued: events may flow
	queue       []outFrame // frames not yet handed to the writer
	queued      int64      // bytes queued or being written
	ownQueued   int64      // of those, the bytes not in shared payloads
	closing     bool       // nothing more is queued
	follows     bool       // the writer reads the feed (see feed)
	feedEnd     int64      // once closing, the feed's position where the writer stops
	idle        bool       // the writer took an empty queue and waits for a wake-up (see wakeLocked)
	closeCode   websocket.StatusCode
	closeReason string
	pending     map[string]context.CancelCauseFunc // by request id
	subs        map[string]bool                    // session keys subscribed to: true by sessions.messages.subscribe, false as a scoped sender
	sessionsSub bool                               // sessions.subscribe: receives sessions.changed

	// unindexed is set when the connection is removed from Server.subs,
	// which then never adds it again; guarded by Server.subs.mu.
	unindexed bool

	writing atomic.Int64 // unix ns when the writer began its current batch; 0 when idle

	// The connection's place in the feed. fon and fwait are guarded by
	// the feed's mu (it follows the feed; its writer is a waiter); fnext
	// and fnextTotal are the writer's (set by join before follows), the
	// position of the next entry it takes and the feed's total through
	// it; fpos and fdone are what it has written through, published for
	// the feed's trim and the budget.
	fon, fwait        bool
	fnext, fnextTotal int64
	fpos, fdone       atomic.Int64

	// wseq is the seq of the last event the writer wrote. Only writeLoop
	// uses it and the arrays that follow, reused: the feed's entries it
	// took, and its merge of them with its own frames.
	wseq   int64
	taken  []outFrame
	merged []outFrame

	// The writer's batch of messages and its vectored write, reused; only
	// writeLoop uses them.
	wbuf []byte
	wvec net.Buffers

	// rbuf holds the message read last, reused for the next (readMessage);
	// only serve's loop uses it.
	rbuf []byte
}

// maxReadBuf bounds the read buffer a connection keeps between messages:
// a larger message's buffer is dropped after it.
const maxReadBuf = 64 << 10

// readMessage reads the next message into c.rbuf, which the next call
// reuses: its frame is handled (decoded, which copies what it keeps) before
// the next read. io.ReadAll, which the WebSocket library's Read uses, made
// a new buffer for every message and grew it twice for a chat.send.
func (c *conn) readMessage() ([]byte, error) {
	_, r, err := c.ws.Reader(context.Background())
	if err != nil {
		return nil, err
	}
	b := c.rbuf[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grown as append grows it
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	c.rbuf = b
	if cap(b) > maxReadBuf {
		c.rbuf = nil
	}
	return b, nil
}

func newConn(s *Server, ws *websocket.Conn, remote string, local net.Addr) *conn {
	c := &conn{
		s:          s,
		ws:         ws,
		id:         s.newID(),
		remote:     remote,
		local:      local,
		wake:       make(chan struct{}, 1),
		writerDone: make(chan struct{}),
		pending:    make(map[string]context.CancelCauseFunc),
	}
	c.log = s.log.With("connId", c.id, "remote", remote)
	// Not derived from the server's context: Close lets the connection
	// flush its shutdown event and close handshake first.
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	return c
}

// serve runs the connection until it ends, then waits for every goroutine
// it started.
func (c *conn) serve() {
	go func() {
		defer close(c.writerDone)
		c.writeLoop()
	}()
	defer func() {
		c.cancel(errConnClosed)
		c.ws.CloseNow()
		<-c.writerDone
		c.mu.Lock()
		c.closing = true
		for _, cancel := range c.pending {
			cancel(errConnClosed)
		}
		// What was never written leaves the budget with the queue.
		c.s.queuedTotal.Add(-c.ownQueued)
		for _, f := range c.queue {
			f.release()
		}
		c.queued, c.ownQueued, c.queue = 0, 0, nil
		c.mu.Unlock()
		c.wg.Wait()
		c.log.Info("client disconnected", "cause", context.Cause(c.ctx))
	}()

	c.ws.SetReadLimit(wire.MaxPreConnectPayload)
	c.sendChallenge()
	handshakeDone := make(chan struct{})
	c.wg.Go(func() { c.handshakeDeadline(handshakeDone) })

	// Frames are read without a context, as they are written (see
	// writeLoop): given one, the WebSocket library registered and stopped
	// a callback on it for each frame's header and payload (four
	// allocations a request). The connection's end closes the socket,
	// which ends a read under way.
	stopRead := context.AfterFunc(c.ctx, func() { c.ws.CloseNow() })
	defer stopRead()
	for {
		data, err := c.readMessage()
		if err != nil {
			if st := websocket.CloseStatus(err); st == websocket.StatusMessageTooBig {
				c.log.Info("frame over the size limit; connection closed")
			}
			return
		}
		c.mu.Lock()
		ready, closing := c.ready, c.closing
		c.mu.Unlock()
		switch {
		case closing:
			// The close handshake is under way; frames are ignored.
		case !ready:
			if c.handshake(data) {
				close(handshakeDone)
				c.ws.SetReadLimit(c.s.cfg.MaxPayload)
				c.wg.Go(c.keepalive)
				if !ephemeralClient(c.client.Mode) {
					c.wg.Go(c.sendHealth)
				}
				if c.catalogTarget != nil {
					c.wg.Go(c.sendModelsSnapshot)
				}
			}
		default:
			c.handleFrame(data)
		}
	}
}

// handshakeDeadline closes the connection with 1008 when no connect
// succeeded within the handshake timeout, and ends it outright when the
// peer does not answer the close either.
func (c *conn) handshakeDeadline(done <-chan struct{}) {
	t := time.NewTimer(c.s.cfg.HandshakeTimeout)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-c.ctx.Done():
		return
	case <-t.C:
	}
	c.log.Debug("handshake timed out")
	c.closeAfterFlush(websocket.StatusPolicyViolation, "handshake timeout")
	t.Reset(c.s.cfg.PongTimeout)
	select {
	case <-c.ctx.Done():
	case <-t.C:
		c.cancel(errHandshakeTimeout)
	}
}

// writeLoop hands queued frames to the socket in order and performs a
// requested close once the queue is empty. It merges the connection's own
// frames with the feed's entries (see feed) and numbers the events.
func (c *conn) writeLoop() {
	// Frames are written without a context (see write): the connection's
	// end closes the socket, which ends a write blocked on a stalled peer.
	stop := context.AfterFunc(c.ctx, func() { c.ws.CloseNow() })
	defer stop()
	fd := &c.s.feed
	var spare []outFrame // the last batch's array, handed back to the queue
	for {
		c.mu.Lock()
		batch := c.queue
		c.queue = spare
		spare = nil
		closing, code, reason := c.closing, c.closeCode, c.closeReason
		c.idle = len(batch) == 0
		// The feed up to its head now: whatever c queues from here on
		// is at that position or past it (see queueLocked).
		follows, limit := c.follows, int64(0)
		if follows {
			limit = fd.head.Load()
			if closing {
				limit = min(limit, c.feedEnd)
			}
		}
		c.mu.Unlock()
		fed, rest := c.taken[:0], true
		if follows {
			fed, rest = fd.take(c, limit, fed, len(batch) == 0)
		}
		out := c.merge(batch, fed)
		if len(out) > 0 {
			c.writing.Store(time.Now().UnixNano())
		}
		written, own, err := c.writeAll(out)
		if err != nil {
			c.cancel(err)
			return
		}
		c.writing.Store(0)
		if len(fed) > 0 {
			c.fpos.Store(c.fnext)
			c.fdone.Store(c.fnextTotal)
		}
		if len(batch) > 0 && len(fed) > 0 { // merge's own array
			clear(out)
			c.merged = nil
			if cap(out) <= maxSpare {
				c.merged = out[:0]
			}
		}
		if cap(batch) <= maxSpare {
			clear(batch)
			spare = batch[:0]
		}
		clear(fed)
		c.taken = nil
		if cap(fed) <= maxSpare {
			c.taken = fed[:0]
		}
		c.mu.Lock()
		c.queued -= written
		c.ownQueued -= own
		c.mu.Unlock()
		c.s.queuedTotal.Add(-own)
		if len(out) > 0 || (!rest && !closing) {
			continue
		}
		if closing && code != 0 {
			fd.leave(c) // written through feedEnd: nothing more to hold for it
			c.ws.Close(code, reason)
			return
		}
		select {
		case <-c.wake:
			// Let the goroutines that are ready to run go first: the run
			// that a chat.send's answer started queues its first events
			// before it waits for its model, so that they leave in the
			// answer's write. On one processor (package procs) the writer,
			// woken last, would otherwise run first and write the answer
			// alone: a warm turn took three writes instead of two, and 100
			// clients' fan-out wrote smaller batches (server CPU per turn
			// 0.52–0.54 → 0.42 ms).
			runtime.Gosched()
			c.yieldWhileQueued()
		case <-c.ctx.Done():
			return
		}
	}
}

// merge returns the connection's own frames (batch) and the feed's
// entries it took (fed, from the position c.fnext-len(fed) on) in the
// order they were queued, each own frame after the entries before its
// position (at) and before the rest, and gives the events their seqs.
func (c *conn) merge(batch, fed []outFrame) []outFrame {
	var out []outFrame
	switch {
	case len(fed) == 0:
		out = batch
	case len(batch) == 0:
		out = fed
	default:
		out = c.merged[:0]
		pos, k := c.fnext-int64(len(fed)), 0
		for _, f := range batch {
			for ; k < len(fed) && pos+int64(k) < f.at; k++ {
				out = append(out, fed[k])
			}
			out = append(out, f)
		}
		out = append(out, fed[k:]...)
	}
	for i := range out {
		if f := &out[i]; f.event {
			f.seq = c.wseq + 1
			c.wseq += int64(f.messages())
		}
	}
	return out
}

// writeAll writes a batch of frames and releases them: to the socket in
// one write when the connection has its own (see writeBatch), else
// through the WebSocket library frame by frame. It returns what
// writeBatch does.
func (c *conn) writeAll(batch []outFrame) (written, own int64, err error) {
	if len(batch) == 0 {
		return 0, 0, nil
	}
	if c.sock != nil {
		return c.writeBatch(batch)
	}
	for i, f := range batch {
		written, own = written+f.size(), own+f.ownSize()
		if err := c.write(f); err != nil {
			for _, rest := range batch[i+1:] {
				rest.release()
			}
			return written, own, err
		}
	}
	return written, own, nil
}

// yieldWhileQueued lets the other ready goroutines run again, up to
// maxYields times, while frames keep joining the queue, when the gateway
// is busy: yieldRuns or more runs send events at once. The writer of a
// connection that receives the events of many sessions (a plain operator
// client) is behind the runs that fan out to it then, and each write it
// saves is a system call, a TCP segment and a wake-up of the reader: at
// 100 plain clients, 9–13 socket writes a turn fell to 5.4–7. With a
// few runs (one chat, one sessions_send flow) it writes at once: waiting
// there for the goroutines of the other runs of the flow delayed the
// flow's final by a millisecond.
func (c *conn) yieldWhileQueued() {
	if c.s.liveRuns.Load() < yieldRuns {
		return
	}
	n := c.queueLen()
	for range maxYields {
		runtime.Gosched()
		m := c.queueLen()
		if m == n {
			return
		}
		n = m
	}
}

// yieldRuns and maxYields bound yieldWhileQueued.
const (
	yieldRuns = 16
	maxYields = 4
)

// queueLen is a count that grows as frames join the connection's queue
// or the feed it follows.
func (c *conn) queueLen() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := int64(len(c.queue))
	if c.follows {
		n += c.s.feed.head.Load()
	}
	return n
}

// maxSpare is the largest queue array the writer hands back for reuse.
const maxSpare = 1024

// wakeLocked reports whether the writer must be signalled for a frame
// just queued: it found the queue empty and waits, or is about to. A
// writer that is busy, or woken already, finds the frame when it next
// takes the queue; not signalling it spares a channel operation on a
// cache line the writer's goroutine owns (at 100 plain clients each run
// event signals every connection). c.mu is held.
func (c *conn) wakeLocked() bool {
	w := c.idle
	c.idle = false
	return w
}

func (c *conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// enqueue queues one frame. A frame that would take the queue over
// maxBufferedBytes is dropped when dropIfSlow is set; otherwise the client
// is disconnected as a slow consumer. It reports whether the frame was
// queued. Never blocks.
func (c *conn) enqueue(b []byte, dropIfSlow bool) bool {
	ok := c.push(b, dropIfSlow)
	if ok {
		c.signal()
	}
	return ok
}

// push is enqueue without waking the writer (see queueResponse).
func (c *conn) push(b []byte, dropIfSlow bool) bool {
	c.mu.Lock()
	ok := c.enqueueLocked(outFrame{raw: b}, dropIfSlow)
	c.mu.Unlock()
	return ok
}

func (c *conn) enqueueLocked(f outFrame, dropIfSlow bool) bool {
	if !c.queueLocked(f, dropIfSlow) {
		return false
	}
	c.s.queuedTotal.Add(f.ownSize())
	return true
}

// queueLocked is enqueueLocked leaving the frame out of the gateway's
// outbound total: the caller adds its ownSize there. A broadcast adds what
// it queued on every connection at once, so that it does not update the
// shared counter once per connection (a contended atomic add on every
// connection's queue, 7% of the gateway's CPU at 100 clients).
func (c *conn) queueLocked(f outFrame, dropIfSlow bool) bool {
	if c.closing {
		return false
	}
	size := f.size()
	overOwn := c.queued+c.s.feed.backlog(c)+size > c.s.cfg.MaxBufferedBytes
	// Past the global budget, a connection whose writer is stuck with a
	// backlog gives way; one that keeps up is never blamed.
	// (The connection's own state first: the shared total is read only
	// for a stalled writer.)
	overAll := c.stalled() && c.s.queuedTotal.Load() > c.s.cfg.MaxQueuedBytes
	if overOwn || overAll {
		c.s.eventsDropped.Add(int64(f.messages()))
		if dropIfSlow {
			return false
		}
		c.dropSlowLocked()
		return false
	}
	if f.shared != nil {
		f.shared.refs.Add(1)
	}
	if c.follows {
		f.at = c.s.feed.head.Load() // after the feed's entries so far (see merge)
	}
	c.queue = append(c.queue, f)
	c.queued += size
	c.ownQueued += f.ownSize()
	return true
}

// dropSlowLocked disconnects the connection as a slow consumer. c.mu is
// held.
func (c *conn) dropSlowLocked() {
	if c.closing {
		return
	}
	c.closing = true
	c.s.slowDropped.Add(1)
	n := 0
	for _, f := range c.queue {
		n += f.messages()
	}
	c.s.eventsDropped.Add(int64(n)) // never written now
	c.s.feed.dropSlow(c)
	c.log.Warn("disconnecting slow consumer", "queuedBytes", c.queued, "gatewayQueuedBytes", c.s.queuedTotal.Load())
	c.cancel(errSlowConsumer)
}

// stallAfter is how long a writer may sit on one batch before its
// connection counts as stalled when the outbound budget is spent.
const stallAfter = time.Second

// stalled reports whether the writer has been stuck on a batch with a
// backlog past slowShare for stallAfter. c.mu is held.
func (c *conn) stalled() bool {
	// The backlog first: writing is stored by the writer at every batch,
	// a cache line a fan-out need not read for a connection that keeps up.
	if c.queued+c.s.feed.backlog(c) <= slowShare {
		return false
	}
	since := c.writing.Load()
	return since != 0 && time.Since(time.Unix(0, since)) > stallAfter
}

// slowShare is the backlog past which a connection counts as slow when the
// gateway's outbound budget is spent.
const slowShare = 1 << 20

// sendEvent queues an event with the connection's next seq. Events before
// hello-ok are dropped. The frame refers to payload until it is written:
// the caller must not change it.
func (c *conn) sendEvent(event string, payload json.RawMessage, dropIfSlow bool) {
	c.s.queuedTotal.Add(c.queueEvent(outFrame{raw: eventHead(event, payload != nil), body: payload}, dropIfSlow))
}

// closeAfterFlush asks the writer to close the socket with code and reason
// once everything queued so far is written; nothing more is queued.
func (c *conn) closeAfterFlush(code websocket.StatusCode, reason string) {
	c.mu.Lock()
	if !c.closing {
		c.closing = true
		c.feedEnd = c.s.feed.head.Load() // what the feed held before: written first
		c.closeCode = code
		c.closeReason = truncateReason(reason)
	}
	c.mu.Unlock()
	c.signal()
}

// maxCloseReason is the longest close reason a close frame carries.
const maxCloseReason = 123

func truncateReason(s string) string {
	if len(s) <= maxCloseReason {
		return s
	}
	s = s[:maxCloseReason]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// keepalive pings the client every tick interval and drops it when a pong
// does not come back in time.
func (c *conn) keepalive() {
	t := time.NewTicker(c.s.cfg.TickInterval)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(c.ctx, c.s.cfg.PongTimeout)
			err := c.ws.Ping(ctx)
			cancel()
			if err != nil && c.ctx.Err() == nil {
				c.log.Info("client missed a pong; disconnecting")
				c.cancel(errPongTimeout)
				return
			}
		}
	}
}

// respond queues the response to request id: payload marshalled as JSON
// when err is nil, else the error shape of err.
func (c *conn) respond(id string, payload any, err error) {
	if c.queueResponse(id, payload, err) {
		c.signal()
	}
}

// queueResponse is respond without waking the writer: the caller signals
// once it has queued what goes out with the response. It reports whether
// the response was queued.
func (c *conn) queueResponse(id string, payload any, err error) bool {
	if err == nil {
		b, merr := json.Marshal(payload)
		if merr == nil {
			return c.push(wire.AppendResponse(make([]byte, 0, len(b)+64), id, b), false)
		}
		err = merr
	}
	var payloadBytes json.RawMessage
	var ep *errorWithPayload
	if errors.As(err, &ep) {
		payloadBytes, _ = json.Marshal(ep.payload)
		err = ep.err
	}
	we := c.wireError(err)
	c.log.Info("request refused", "id", id, "code", we.Code, "reason", we.Message)
	return c.push(wire.AppendErrorResponse(nil, id, payloadBytes, we), false)
}

// errorWithPayload is a failed response that also carries a payload (the
// agent method's final answer for a failed run).
type errorWithPayload struct {
	payload any
	err     *wire.Error
}

func (e *errorWithPayload) Error() string { return e.err.Error() }

// wireError maps a handler error to the error shape. Errors that are not
// user-safe are logged and reported as a generic UNAVAILABLE.
func (c *conn) wireError(err error) *wire.Error {
	var we *wire.Error
	if errors.As(err, &we) {
		return we
	}
	var pe *wire.ParamsError
	if errors.As(err, &pe) {
		return wire.NewError(wire.CodeInvalidRequest, pe.Error())
	}
	if msg, ok := safeerr.Message(err); ok {
		return wire.NewError(wire.CodeInvalidRequest, msg)
	}
	if errors.Is(err, errRequestCancelled) {
		return wire.NewError(wire.CodeUnavailable, "request cancelled").WithDetails(map[string]any{"code": wire.DetailRequestCancelled})
	}
	if msg, ok := storageFailure(err); ok {
		c.log.Error("request failed: storage", "err", err)
		return wire.NewError(wire.CodeUnavailable, msg).WithRetry(2000)
	}
	c.log.Error("request failed", "err", err)
	return wire.NewError(wire.CodeUnavailable, "internal error")
}

// storageFailure recognises an error of the state dir's storage (read-only,
// full, gone) or of a PostgreSQL store that does not answer, and says what
// failed, so that a client learns the cause instead of "internal error"
// (and, as wireError marks it, that a retry may succeed).
func storageFailure(err error) (string, bool) {
	if store.Unreachable(err) {
		return "database unreachable", true
	}
	for _, e := range []syscall.Errno{syscall.EROFS, syscall.ENOSPC, syscall.EACCES, syscall.EPERM, syscall.ENOENT} {
		if errors.Is(err, e) {
			return "state dir not writable: " + e.Error(), true
		}
	}
	msg := err.Error()
	for _, s := range []string{"readonly database", "read-only file system", "disk is full", "disk I/O error", "unable to open database file"} {
		if strings.Contains(msg, s) {
			return "state dir not writable: " + s, true
		}
	}
	return "", false
}

// sendHealth sends the connection the health snapshot once it is
// connected, as the reference does, so that a UI has it without asking;
// one-shot clients (CLI calls, probes) are spared the store reads.
func (c *conn) sendHealth() {
	if b, ok := c.s.healthEvent(); ok {
		c.sendEvent(wire.EventHealth, b, true)
	}
}

// sendModelsSnapshot sends the Control UI the model catalogue it asked
// for in connect (modelCatalog), as the reference does: the target as
// asked, the scope it names ({sessionKey}, else {agentId} of a configured
// agent or the default one), and models.list's answer. A target naming a
// session by short id is not resolved; the UI then asks models.list.
func (c *conn) sendModelsSnapshot() {
	var target struct {
		SessionKey string `json:"sessionKey"`
		AgentID    string `json:"agentId"`
		ShortID    string `json:"shortId"`
	}
	if json.Unmarshal(c.catalogTarget, &target) != nil || target.ShortID != "" {
		return
	}
	var scope any
	switch agent := c.s.agentID(target.AgentID); {
	case target.SessionKey != "":
		scope = c.catalogTarget
	case c.s.knownAgent(agent):
		scope = map[string]string{"agentId": agent}
	default:
		scope = map[string]string{"agentId": c.s.defaultAgent}
	}
	b, err := json.Marshal(map[string]any{"target": c.catalogTarget, "scope": scope, "catalog": c.s.modelsList("")})
	if err != nil {
		return
	}
	c.sendEvent(wire.EventModelsSnapshot, b, true)
}
