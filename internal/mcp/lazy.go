package mcp

import (
	"errors"
	"net/http"
	"sync"
)

// Lazy is the gateway port's /mcp, built on its first request: most
// gateways never serve an MCP client, and building the server (every
// tool's schema through the SDK) was a
// tenth of the start.
type Lazy struct {
	// Build makes the server, on the first request.
	Build func() (*Server, error)

	mu     sync.Mutex // guards srv, err and closed
	srv    *Server
	err    error
	closed bool
}

// Server returns the server, building it the first time.
func (l *Lazy) Server() (*Server, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errors.New("the gateway is shutting down")
	}
	if l.srv == nil && l.err == nil {
		l.srv, l.err = l.Build()
	}
	return l.srv, l.err
}

// ServeHTTP serves an MCP request (streamable HTTP).
func (l *Lazy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	srv, err := l.Server()
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	srv.Handler().ServeHTTP(w, r)
}

// Close closes the server if it was built; later requests are refused.
func (l *Lazy) Close() error {
	l.mu.Lock()
	srv := l.srv
	l.closed = true
	l.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Close()
}

// Inflight reports the MCP tool calls running now (none before the first
// request).
func (l *Lazy) Inflight() int64 {
	l.mu.Lock()
	srv := l.srv
	l.mu.Unlock()
	if srv == nil {
		return 0
	}
	return srv.Inflight()
}
