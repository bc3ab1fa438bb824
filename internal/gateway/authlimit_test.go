package gateway

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

func TestAuthLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	var logs strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	l := newAuthLimiter(AuthRateLimit{MaxAttempts: 3, Window: time.Minute, Lockout: 5 * time.Minute, ExemptLoopback: true}, func() time.Time { return now }, log)

	if k := l.key("127.0.0.1:5000", ""); k != "" {
		t.Errorf("loopback CLI key = %q, want exempt", k)
	}
	if k := l.key("[::1]:5000", "http://localhost:3000"); k != "origin http://localhost:3000" {
		t.Errorf("loopback browser key = %q", k)
	}
	k := l.key("203.0.113.9:4444", "")
	if k != "ip 203.0.113.9" || l.key("203.0.113.9:5555", "") != k {
		t.Fatalf("remote key = %q (ports must not matter)", k)
	}
	for i := range 2 {
		if l.fail(k) {
			t.Fatalf("locked after %d failures", i+1)
		}
	}
	if _, b := l.blocked(k); b {
		t.Fatal("blocked before the limit")
	}
	for range 5 { // the limit, then more attempts while locked
		l.fail(k)
	}
	left, b := l.blocked(k)
	if !b || left != 5*time.Minute {
		t.Fatalf("blocked = %v, %v", left, b)
	}
	if n := strings.Count(logs.String(), "locked out"); n != 1 {
		t.Errorf("lockout logged %d times, want once", n)
	}
	now = now.Add(5*time.Minute + time.Second)
	if _, b := l.blocked(k); b {
		t.Error("still blocked after the lockout")
	}
	// A success clears the count.
	l.fail(k)
	l.fail(k)
	l.succeed(k)
	if l.fail(k) {
		t.Error("locked right after a success")
	}
	// Failures spread over more than the window do not add up.
	k2 := l.key("198.51.100.1:1", "")
	for range 10 {
		l.fail(k2)
		now = now.Add(61 * time.Second)
	}
	if _, b := l.blocked(k2); b {
		t.Error("slow failures locked the client out")
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// Wrong tokens past the limit lock the client out with the reference's
// error, and while locked out even the right token is refused.
func TestAuthRateLimited(t *testing.T) {
	e := newEnv(t, envOptions{config: `{gateway: {auth: {mode: "token", token: "` + testToken + `",
		rateLimit: {maxAttempts: 3, exemptLoopback: false}}}}`, gateway: func(c *Config) {
		c.AuthRateLimit = &AuthRateLimit{MaxAttempts: 3, Window: time.Minute, Lockout: time.Minute}
	}})
	try := func(tok string) *wire.Frame {
		c := e.dial()
		c.expectEvent(wire.EventConnectChallenge)
		return c.call(wire.MethodConnect, connectParams(tok, wire.ScopeRead))
	}
	for i := range 2 {
		if f := try("wrong"); f.OK || f.Error.Message != msgTokenMismatch {
			t.Fatalf("attempt %d: %+v", i+1, f.Error)
		}
	}
	f := try("wrong") // the third: locks out
	if f.OK || f.Error.Message != msgAuthRateLimited || f.Error.RetryAfterMs == nil || *f.Error.RetryAfterMs <= 0 {
		t.Fatalf("third wrong token: %+v", f.Error)
	}
	if d := details(t, f.Error); d["code"] != "AUTH_RATE_LIMITED" || d["recommendedNextStep"] != "wait_then_retry" {
		t.Errorf("details = %v", d)
	}
	if f := try(testToken); f.OK || f.Error.Message != msgAuthRateLimited {
		t.Errorf("right token while locked out: %+v", f)
	}
}
