package channel

import (
	"sync"
	"time"
)

// Bot-loop protection defaults (channels.defaults.botLoopProtection).
const (
	DefaultLoopMaxEvents = 20
	DefaultLoopWindow    = 60 * time.Second
	DefaultLoopCooldown  = 60 * time.Second
)

// LoopConfig is a resolved botLoopProtection block.
type LoopConfig struct {
	Enabled   bool
	MaxEvents int
	Window    time.Duration
	Cooldown  time.Duration
}

// DefaultLoopConfig is the reference's built-in guard.
func DefaultLoopConfig() LoopConfig {
	return LoopConfig{Enabled: true, MaxEvents: DefaultLoopMaxEvents, Window: DefaultLoopWindow, Cooldown: DefaultLoopCooldown}
}

// LoopGuard is the bot-pair loop guard: messages between two bot
// identities in one conversation (either direction counts for the pair)
// get a sliding-window budget; a pair over budget is suppressed for the
// cooldown. It is safe for concurrent use.
type LoopGuard struct {
	cfg   LoopConfig
	mu    sync.Mutex
	pairs map[string]*pairState
}

type pairState struct {
	events []time.Time
	until  time.Time
}

// NewLoopGuard returns a guard with cfg.
func NewLoopGuard(cfg LoopConfig) *LoopGuard {
	return &LoopGuard{cfg: cfg, pairs: map[string]*pairState{}}
}

// Enabled reports whether the guard limits anything.
func (g *LoopGuard) Enabled() bool { return g.cfg.Enabled && g.cfg.MaxEvents > 0 }

// Allow records one message from bot a to bot b in scope (account and
// conversation) at now and reports whether it may be dispatched.
func (g *LoopGuard) Allow(scope, a, b string, now time.Time) bool {
	if !g.cfg.Enabled || g.cfg.MaxEvents <= 0 {
		return true
	}
	if b < a {
		a, b = b, a
	}
	key := scope + "\x00" + a + "\x00" + b
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sweep(now)
	p := g.pairs[key]
	if p == nil {
		p = &pairState{}
		g.pairs[key] = p
	}
	if now.Before(p.until) {
		return false
	}
	p.events = prune(p.events, now.Add(-g.cfg.Window))
	p.events = append(p.events, now)
	if len(p.events) > g.cfg.MaxEvents {
		p.events = p.events[:0]
		p.until = now.Add(g.cfg.Cooldown)
		return false
	}
	return true
}

// prune drops the times at or before cutoff (ts is sorted).
func prune(ts []time.Time, cutoff time.Time) []time.Time {
	i := 0
	for i < len(ts) && !ts[i].After(cutoff) {
		i++
	}
	return append(ts[:0], ts[i:]...)
}

// sweep forgets pairs with nothing in the window and no cooldown, so the
// map stays bounded by the active pairs.
func (g *LoopGuard) sweep(now time.Time) {
	if len(g.pairs) < 1024 {
		return
	}
	for k, p := range g.pairs {
		if !now.Before(p.until) && (len(p.events) == 0 || !p.events[len(p.events)-1].After(now.Add(-g.cfg.Window))) {
			delete(g.pairs, k)
		}
	}
}
