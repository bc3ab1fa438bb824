package gateway

import (
	"net/http"
	"time"
)

// DefaultHookAuthRateLimit is the reference's limit of the /hooks ingress:
// 20 wrong tokens per minute per client address, then a minute locked
// out; loopback is not exempt.
var DefaultHookAuthRateLimit = AuthRateLimit{MaxAttempts: 20, Window: time.Minute, Lockout: time.Minute}

// LimitSecret wraps a door that checks a secret of its own (an A2A peer
// token, the hooks token, a chat channel's webhook secret) with the
// failed-attempt lockout of gateway auth: each 401 next answers counts as
// a wrong secret of the client's address (of the page's origin for a
// browser on loopback), any other answer clears its count, and an address
// locked out gets 429 with Retry-After before next sees the request, even
// with the right secret, until the lockout passes. The lockout is logged
// once per window, as door, not each miss. Each call has its own counts;
// zero fields of rl mean DefaultAuthRateLimit's. The clock is the
// server's.
func (s *Server) LimitSecret(door string, rl AuthRateLimit, next http.Handler) http.Handler {
	l := newAuthLimiter(rl, s.now, s.log.With("door", door))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := l.key(r.RemoteAddr, r.Header.Get("Origin"))
		if left, locked := l.blocked(key); locked {
			httpError(w, http.StatusTooManyRequests, msgAuthRateLimited, left.Milliseconds())
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		switch {
		case sw.status == http.StatusUnauthorized:
			l.fail(key)
		case sw.status != 0:
			l.succeed(key)
		}
	})
}

// statusWriter records the status of a response; it flushes and unwraps
// to the writer it wraps (for streamed answers).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= http.StatusOK { // not a 1xx
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush implements http.Flusher.
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap returns the wrapped writer, for http.ResponseController.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
