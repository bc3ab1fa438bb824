package gateway

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/switchboardhq/switchboard/internal/agent"
)

// TestSubIndexNeverMissesAConnection drives connections through random
// handshakes, subscriptions, unsubscriptions and closes, the way the
// gateway does (conn fields under conn.mu, then the index), and checks
// after every step that the index names every connection that wants a
// session's events, messages or sessions.changed, and that forKey's two
// lists never name a connection twice.
func TestSubIndexNeverMissesAConnection(t *testing.T) {
	s := &Server{}
	keys := []string{"agent:main:a", "agent:main:b", "agent:main:c"}
	var conns []*conn
	closed := map[*conn]bool{}
	rng := rand.New(rand.NewPCG(1, 2))
	for step := range 5000 {
		switch op := rng.IntN(7); {
		case op == 0 || len(conns) == 0: // a connection completes its handshake
			c := &conn{s: s, ready: true, scoped: rng.IntN(2) == 0}
			conns = append(conns, c)
			if !c.scoped {
				s.subs.addAll(c)
			}
		default:
			c := conns[rng.IntN(len(conns))]
			key := keys[rng.IntN(len(keys))]
			switch op {
			case 1: // sends a turn (scoped clients subscribe)
				if c.scoped {
					c.subscribe(key, false)
				}
			case 2: // sessions.messages.subscribe
				c.subscribe(key, true)
			case 3: // sessions.messages.unsubscribe
				c.mu.Lock()
				delete(c.subs, key)
				s.subs.removeKey(key, c)
				c.mu.Unlock()
			case 4, 5: // sessions.subscribe / unsubscribe
				c.mu.Lock()
				c.sessionsSub = op == 4
				s.subs.setSessions(c, op == 4)
				c.mu.Unlock()
			case 6: // closes (removeConn), and a late call still arrives
				if closed[c] {
					continue
				}
				closed[c] = true
				c.mu.Lock()
				var ks []string
				for k := range c.subs {
					ks = append(ks, k)
				}
				s.subs.remove(c, ks)
				c.mu.Unlock()
				c.subscribe(key, true)
				s.subs.setSessions(c, true)
			}
		}
		for _, key := range keys {
			all, scoped := s.subs.forKey(key)
			events := append(slices.Clone(all), scoped...)
			subscribed := s.subs.subscribers(key)
			for _, c := range events {
				if n := countOf(events, c); n != 1 {
					t.Fatalf("step %d: a connection is in forKey(%s) %d times", step, key, n)
				}
			}
			for _, c := range conns {
				if closed[c] {
					if slices.Contains(events, c) || slices.Contains(subscribed, c) || slices.Contains(s.subs.sessionsSubs(), c) {
						t.Fatalf("step %d: a closed connection is still indexed", step)
					}
					continue
				}
				c.mu.Lock()
				wants, msgs, sess := c.wantsLocked(key), c.wantsMessagesLocked(key), c.ready && c.sessionsSub
				c.mu.Unlock()
				if wants && !slices.Contains(events, c) {
					t.Fatalf("step %d: a connection wanting %s's events is not in forKey", step, key)
				}
				if msgs && !slices.Contains(subscribed, c) {
					t.Fatalf("step %d: a connection subscribed to %s's messages is not in subscribers", step, key)
				}
				if sess && !slices.Contains(s.subs.sessionsSubs(), c) {
					t.Fatalf("step %d: a sessions.subscribe connection is not in sessionsSubs", step)
				}
			}
		}
	}
}

func countOf(l []*conn, c *conn) (n int) {
	for _, x := range l {
		if x == c {
			n++
		}
	}
	return n
}

// TestSubIndexWantsWhatItsConnectionsReceive: the index holds a want of
// other nodes' events of each session a connection subscribed to, and of
// every session while a connection receives them all or follows
// sessions.changed; each is released when its last connection goes.
func TestSubIndexWantsWhatItsConnectionsReceive(t *testing.T) {
	var x subIndex
	held := map[string]int{}
	x.setWant(func(key string) func() {
		held[key]++
		return func() { held[key]-- }
	})
	want := func(step string, exp map[string]int) {
		t.Helper()
		for _, k := range []string{"k1", "k2", "k3", agent.WantAll} {
			if held[k] != exp[k] {
				t.Errorf("%s: %q held %d times, want %d", step, k, held[k], exp[k])
			}
		}
	}
	a, b, c := &conn{}, &conn{}, &conn{}
	x.addKey("k1", a, true)
	x.addKey("k1", b, true)
	x.addKey("k2", b, true)
	want("two keys", map[string]int{"k1": 1, "k2": 1})
	x.removeKey("k1", a)
	want("k1 still has b", map[string]int{"k1": 1, "k2": 1})
	x.addAll(c)
	want("an unscoped connection", map[string]int{"k1": 1, "k2": 1, agent.WantAll: 1})
	x.setSessions(b, true)
	x.remove(c, nil)
	want("b follows sessions.changed", map[string]int{"k1": 1, "k2": 1, agent.WantAll: 1})
	x.remove(b, []string{"k1", "k2"})
	want("every connection gone", map[string]int{})
	x.addKey("k3", a, true)
	x.setWant(nil)
	want("no want any more", map[string]int{})
}
