package gateway

import (
	"bufio"
	"net"
	"net/http"
	"sync"
)

// corkLimit is how many bytes a corked connection holds before it writes
// them out anyway.
const corkLimit = 256 << 10

// corkConn is the socket under a WebSocket connection. The WebSocket
// library flushes every message to the socket; while the connection's
// writer drains a batch of queued frames it corks the socket, so the whole
// batch leaves in one write system call (nats-server's per-client flusher
// does the same). Outside a batch writes go straight through. Safe for
// concurrent use.
type corkConn struct {
	net.Conn

	mu     sync.Mutex // guards the fields that follow; held across socket writes
	corked bool
	buf    []byte
}

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.corked {
		return c.Conn.Write(p)
	}
	c.buf = append(c.buf, p...)
	if len(c.buf) >= corkLimit {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// cork holds writes until uncork.
func (c *corkConn) cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// uncork writes what was held, in one write, and lets later writes through.
func (c *corkConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	return c.flushLocked()
}

func (c *corkConn) flushLocked() error {
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.buf)
	if cap(c.buf) > 4*corkLimit {
		c.buf = nil // do not pin a large buffer after a burst
	} else {
		c.buf = c.buf[:0]
	}
	return err
}

// corkWriter hands the WebSocket library a corkConn when it hijacks the
// connection.
type corkWriter struct {
	http.ResponseWriter
	conn *corkConn // set by Hijack
}

// Hijack implements http.Hijacker.
func (w *corkWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
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
	w.conn = &corkConn{Conn: c}
	return w.conn, bufio.NewReadWriter(brw.Reader, bufio.NewWriterSize(w.conn, brw.Writer.Size())), nil
}
