package gateway

import (
	"bufio"
	"net"
	"net/http"
	"sync"
)

// batchLimit is how many bytes of messages the writer gathers before it
// writes them out, within a batch.
const batchLimit = 256 << 10

// sockConn is the socket under a WebSocket connection. The connection's
// writer writes each batch of queued messages to it whole, in one write
// system call (nats-server's per-client flusher does the same); the
// WebSocket library writes its control frames (pings, pongs, the close)
// through it too, each in one Write (a control frame is small, and the
// library flushes its buffer at the end of every frame). The mutex keeps
// the two from interleaving within a frame. Safe for concurrent use.
type sockConn struct {
	net.Conn

	mu sync.Mutex // held across socket writes
}

func (c *sockConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Conn.Write(p)
}

// writeVec writes the buffers in order, in one vectored write on a TCP
// socket, with no other write between them.
func (c *sockConn) writeVec(v net.Buffers) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	if len(v) == 1 {
		_, err = c.Conn.Write(v[0])
	} else {
		_, err = v.WriteTo(c.Conn)
	}
	return err
}

// sockWriter hands the WebSocket library a sockConn when it hijacks the
// connection.
type sockWriter struct {
	http.ResponseWriter
	conn *sockConn // set by Hijack
}

// Hijack implements http.Hijacker.
func (w *sockWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, http.ErrNotSupported
	}
	c, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	if n := brw.Writer.Buffered(); n > 0 {
		if err := brw.Writer.Flush(); err != nil {
			c.Close()
			return nil, nil, err
		}
	}
	w.conn = &sockConn{Conn: c}
	return w.conn, bufio.NewReadWriter(brw.Reader, bufio.NewWriterSize(w.conn, brw.Writer.Size())), nil
}
