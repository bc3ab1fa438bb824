// Package httpserve owns the gateway port's HTTP server plumbing: the
// server's timeouts (headers, idle keep-alive, a request body's deadline
// that does not cut a long answer) and the listener that caps open
// connections per client address. The daemon serves its mux with it.
package httpserve

import (
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardhq/switchboard/internal/stackstart"
)

// Bounds of the gateway port's HTTP server (README "Limits").
const (
	// DefaultIdleTimeout closes a keep-alive connection that sends no
	// next request for this long.
	DefaultIdleTimeout = 60 * time.Second
	// DefaultBodyTimeout bounds the time from a request's headers to the
	// end of its body.
	DefaultBodyTimeout = 60 * time.Second
	// DefaultMaxConnsPerAddr bounds the open connections (HTTP and
	// WebSocket) of one client address; more are refused.
	DefaultMaxConnsPerAddr = 256
	// headerTimeout bounds the time to a request's headers.
	headerTimeout = 10 * time.Second
)

// connCapResponse answers a connection refused by the per-address cap.
const connCapResponse = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: 43\r\n\r\ntoo many connections from this address\r\n\r\n"

// capListener refuses connections beyond max open ones per remote IP: it
// answers them 503 and closes them. Connections are counted until closed,
// hijacked (WebSocket) ones included.
type capListener struct {
	net.Listener
	max int

	mu    sync.Mutex // guards open
	open  map[netip.Addr]int
	write time.Duration // the deadline of the refusal's write
}

// CapListener wraps ln to refuse connections beyond max open ones per
// remote IP (answered 503 and closed).
func CapListener(ln net.Listener, max int) net.Listener {
	return &capListener{Listener: ln, max: max, open: map[netip.Addr]int{}, write: time.Second}
}

// Accept returns the next connection within the cap.
func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c)
		l.mu.Lock()
		full := l.open[ip] >= l.max
		if !full {
			l.open[ip]++
		}
		l.mu.Unlock()
		if !full {
			return &cappedConn{Conn: c, release: func() { l.release(ip) }}, nil
		}
		c.SetWriteDeadline(time.Now().Add(l.write))
		io.WriteString(c, connCapResponse)
		c.Close()
	}
}

func (l *capListener) release(ip netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip]--; l.open[ip] <= 0 {
		delete(l.open, ip)
	}
}

func remoteIP(c net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// cappedConn gives its place back to the cap when closed.
type cappedConn struct {
	net.Conn
	once    sync.Once
	release func()
	grown   atomic.Bool
}

// RemoteAddr is the first method net/http calls on a connection in the
// connection's own goroutine, with few frames on its stack: the stack
// grows there, to the 32 KiB a WebSocket connect takes it to. Grown to
// 16 KiB only, the connect outgrew it and the copy walked some 30 deep
// frames: 0.5 MiB more of .gopclntab resident after the first hello-ok
// (docs/benchmarks.md, twelfth round).
func (c *cappedConn) RemoteAddr() net.Addr {
	if !c.grown.Load() && c.grown.CompareAndSwap(false, true) {
		stackstart.Grow32()
	}
	return c.Conn.RemoteAddr()
}

func (c *cappedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// bodyDeadline bounds the reading of a request body to d from the
// request's start: the connection's read deadline is set for it and
// cleared once the body is read to its end, so a slow or stalled body
// cannot hold the connection while a long answer (a stream) that follows
// is not cut.
func bodyDeadline(d time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if rc.SetReadDeadline(time.Now().Add(d)) != nil {
			next.ServeHTTP(w, r)
			return
		}
		r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody clears the connection's read deadline at the body's end.
type deadlineBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	cleared bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.cleared {
		b.cleared = true
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// New is the gateway port's server: handler behind the body
// deadline, and idle keep-alive connections closed after idle.
func New(handler http.Handler, idle, body time.Duration) *http.Server {
	return &http.Server{
		Handler:           bodyDeadline(body, handler),
		ReadHeaderTimeout: headerTimeout,
		IdleTimeout:       idle,
	}
}
