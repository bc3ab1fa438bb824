package gateway

import (
	"log/slog"
	"net/netip"
	"sync"
	"time"
)

// AuthRateLimit bounds failed authentication attempts per client address
// (the reference's gateway.auth.rateLimit): after MaxAttempts wrong
// secrets within Window the address is locked out for Lockout. Loopback
// clients are exempt unless ExemptLoopback is false, except browser pages,
// which are never exempt (a page on localhost must not brute-force the
// token).
type AuthRateLimit struct {
	MaxAttempts    int
	Window         time.Duration
	Lockout        time.Duration
	ExemptLoopback bool
}

// DefaultAuthRateLimit is the reference's default: 10 failures per minute,
// then 5 minutes locked out; loopback exempt.
var DefaultAuthRateLimit = AuthRateLimit{MaxAttempts: 10, Window: time.Minute, Lockout: 5 * time.Minute, ExemptLoopback: true}

// maxTrackedAddrs bounds the limiter's memory; past it, expired entries are
// dropped, then the oldest.
const maxTrackedAddrs = 10_000

// authLimiter tracks failures per key (client IP, or page origin for
// browsers on loopback). Safe for concurrent use.
type authLimiter struct {
	cfg AuthRateLimit
	now func() time.Time
	log *slog.Logger

	mu      sync.Mutex // guards entries
	entries map[string]*authEntry
}

type authEntry struct {
	windowStart time.Time
	failures    int
	lockedUntil time.Time
	logged      bool // a lockout of this window was logged
}

func newAuthLimiter(cfg AuthRateLimit, now func() time.Time, log *slog.Logger) *authLimiter {
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultAuthRateLimit.MaxAttempts
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultAuthRateLimit.Window
	}
	if cfg.Lockout <= 0 {
		cfg.Lockout = DefaultAuthRateLimit.Lockout
	}
	return &authLimiter{cfg: cfg, now: now, log: log, entries: make(map[string]*authEntry)}
}

// key returns the limiter key of a client, or "" when it is exempt.
func (l *authLimiter) key(remote, origin string) string {
	ip := remote
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		ip = ap.Addr().Unmap().String()
	}
	loopback := false
	if a, err := netip.ParseAddr(ip); err == nil {
		loopback = a.IsLoopback()
	}
	switch {
	case loopback && origin != "":
		return "origin " + origin // browsers on loopback, per page origin
	case loopback && l.cfg.ExemptLoopback:
		return ""
	}
	return "ip " + ip
}

// blocked reports whether key is locked out, and for how long still.
func (l *authLimiter) blocked(key string) (time.Duration, bool) {
	if key == "" {
		return 0, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entries[key]
	if e == nil {
		return 0, false
	}
	if left := e.lockedUntil.Sub(l.now()); left > 0 {
		return left, true
	}
	return 0, false
}

// fail records a wrong secret from key and reports whether it locked the
// key out. The lockout is logged once, not each attempt.
func (l *authLimiter) fail(key string) bool {
	if key == "" {
		return false
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entries[key]
	if e == nil {
		l.pruneLocked(now)
		e = &authEntry{windowStart: now}
		l.entries[key] = e
	}
	if now.Sub(e.windowStart) > l.cfg.Window {
		e.windowStart, e.failures, e.logged = now, 0, false
	}
	e.failures++
	if e.failures < l.cfg.MaxAttempts {
		return false
	}
	e.lockedUntil = now.Add(l.cfg.Lockout)
	if !e.logged {
		e.logged = true
		l.log.Warn("too many failed authentication attempts; locked out", "client", key, "failures", e.failures, "lockout", l.cfg.Lockout)
	}
	return true
}

// succeed clears key's failures.
func (l *authLimiter) succeed(key string) {
	if key == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.entries, key)
}

func (l *authLimiter) pruneLocked(now time.Time) {
	if len(l.entries) < maxTrackedAddrs {
		return
	}
	var oldestKey string
	var oldest time.Time
	for k, e := range l.entries {
		if now.Sub(e.windowStart) > l.cfg.Window && now.After(e.lockedUntil) {
			delete(l.entries, k)
			continue
		}
		if oldestKey == "" || e.windowStart.Before(oldest) {
			oldestKey, oldest = k, e.windowStart
		}
	}
	if len(l.entries) >= maxTrackedAddrs && oldestKey != "" {
		delete(l.entries, oldestKey)
	}
}
