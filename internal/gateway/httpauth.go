package gateway

import (
	"crypto/subtle"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/settings"
)

// RequireBearer wraps an HTTP handler served on the gateway port (the MCP
// endpoint) with the gateway's shared-secret auth: "Authorization: Bearer
// <gateway.auth.token or password>", the same failed-attempt limits as the
// WebSocket handshake, and the same Host and browser origin policies. With auth mode
// "none" only loopback listeners are served without a secret.
func (s *Server) RequireBearer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status, reason := s.browserRefusal(r); status != 0 {
			httpError(w, status, reason, 0)
			return
		}
		switch a := s.checkBearer(r); {
		case a.ok:
			next.ServeHTTP(w, r)
		case a.forbidden != "":
			httpError(w, http.StatusForbidden, a.forbidden, 0)
		case a.missing:
			w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard"`)
			httpError(w, http.StatusUnauthorized, "unauthorized: missing bearer token (Authorization: Bearer <gateway token>)", 0)
		case a.locked:
			httpError(w, http.StatusTooManyRequests, msgAuthRateLimited, a.retryAfter.Milliseconds())
		default:
			w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard", error="invalid_token"`)
			httpError(w, http.StatusUnauthorized, a.wrong, 0)
		}
	})
}

// bearerAuth is an HTTP request checked against gateway.auth.
type bearerAuth struct {
	ok bool
	// forbidden is the reason a request is refused whatever it sends: auth
	// mode "none" off loopback, or a mode HTTP cannot serve.
	forbidden string
	// missing: no bearer credential was sent.
	missing bool
	// locked: the client is locked out for retryAfter after too many
	// wrong secrets.
	locked     bool
	retryAfter time.Duration
	// wrong is the mismatch message of a wrong secret.
	wrong string
}

// checkBearer is the one shared-secret check of the HTTP surfaces: the
// bearer credential compared in constant time, wrong secrets counted by
// the same per-client limiter as the WebSocket handshake.
func (s *Server) checkBearer(r *http.Request) bearerAuth {
	auth := s.conf.Auth
	switch auth.Mode {
	case settings.AuthNone:
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		if !isLoopback(local) {
			return bearerAuth{forbidden: msgAuthNoneRemote}
		}
		return bearerAuth{ok: true}
	case settings.AuthToken, settings.AuthPassword:
	default:
		return bearerAuth{forbidden: msgAuthUnsupported}
	}
	secret, msg := auth.Token, msgTokenMismatch
	if auth.Mode == settings.AuthPassword {
		secret, msg = auth.Password, msgPasswordMismatch
	}
	given, sent := bearer(r.Header.Get("Authorization"))
	key := s.authLimit.key(r.RemoteAddr, r.Header.Get("Origin"))
	if left, locked := s.authLimit.blocked(key); locked {
		return bearerAuth{missing: !sent, locked: true, retryAfter: left}
	}
	if !sent {
		return bearerAuth{missing: true}
	}
	if secret == "" || subtle.ConstantTimeCompare([]byte(given), []byte(secret)) != 1 {
		if s.authLimit.fail(key) {
			return bearerAuth{locked: true, retryAfter: s.authLimit.cfg.Lockout}
		}
		return bearerAuth{wrong: msg}
	}
	s.authLimit.succeed(key)
	return bearerAuth{ok: true}
}

// bearer returns the token of an "Authorization: Bearer <token>" value.
func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// httpError writes a JSON error body {error:{message}} with the status.
func httpError(w http.ResponseWriter, status int, msg string, retryAfterMs int64) {
	if retryAfterMs > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt((retryAfterMs+999)/1000, 10))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg}})
	w.Write(append(b, '\n'))
}

// CanonicalKey resolves a session key as the gateway's methods do: "main"
// and the configured main key name the default agent's main session, other
// keys are normalised to the default agent's store keys.
func (s *Server) CanonicalKey(raw string) string { return s.canonicalKey(raw, "") }

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
	a := s.checkBearer(r)
	return HTTPAuth{OK: a.ok, RateLimited: a.locked, RetryAfter: a.retryAfter}
}
