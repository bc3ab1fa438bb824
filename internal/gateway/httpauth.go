package gateway

import (
	"crypto/subtle"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/config"
)

// HTTPAuth is the outcome of AuthorizeHTTP: OK, or refused (401), or
// refused because the client is locked out after too many wrong secrets
// (429 with RetryAfter).
type HTTPAuth struct {
	OK          bool
	RateLimited bool
	RetryAfter  time.Duration
}

// AuthorizeHTTP checks an HTTP request against gateway.auth the way the
// WebSocket handshake does, for the HTTP front doors on the gateway port:
// "Authorization: Bearer <token or password>" compared in constant time,
// auth mode "none" only on a loopback listener, and wrong secrets counted
// by the same per-client limiter (gateway.auth.rateLimit), so a client
// locked out on one surface is locked out on both. Safe for concurrent use.
func (s *Server) AuthorizeHTTP(r *http.Request) HTTPAuth {
	auth := s.cfg.Config.GatewayAuth()
	switch auth.Mode {
	case config.AuthNone:
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		return HTTPAuth{OK: isLoopback(local)}
	case config.AuthToken, config.AuthPassword:
	default:
		return HTTPAuth{}
	}
	secret := auth.Token
	if auth.Mode == config.AuthPassword {
		secret = auth.Password
	}
	given := bearer(r.Header.Get("Authorization"))
	key := s.authLimit.key(r.RemoteAddr, r.Header.Get("Origin"))
	if left, locked := s.authLimit.blocked(key); locked {
		return HTTPAuth{RateLimited: true, RetryAfter: left}
	}
	if given == "" {
		return HTTPAuth{}
	}
	if secret == "" || subtle.ConstantTimeCompare([]byte(given), []byte(secret)) != 1 {
		if s.authLimit.fail(key) {
			return HTTPAuth{RateLimited: true, RetryAfter: s.authLimit.cfg.Lockout}
		}
		return HTTPAuth{}
	}
	s.authLimit.succeed(key)
	return HTTPAuth{OK: true}
}

// bearer returns the credential of an "Authorization: Bearer <x>" header
// ("" when there is none).
func bearer(h string) string {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(cred)
}
