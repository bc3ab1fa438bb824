package gateway

import (
	"slices"
	"sync"

	"github.com/switchboardhq/switchboard/internal/agent"
)

// subIndex lists which connections may receive a session's events: the
// ready connections that receive every session's (not session-scoped),
// those that subscribed to the session (by sending to it or by
// sessions.messages.subscribe) and those that called sessions.subscribe.
// A broadcast of one session's event then visits those connections only,
// not every connection. The index may name more connections than want an
// event (each one is still asked under its own lock); it never names
// fewer. The lists are copy-on-write: a reader keeps a snapshot after
// the lock is released. Lock order: conn.mu before subIndex.mu (a
// subscription changes both under conn.mu); subIndex.mu is never held
// while a conn.mu is taken.
type subIndex struct {
	mu       sync.Mutex
	all      []*conn            // ready connections that are not session-scoped
	keys     map[string][]*conn // connections with the key in their subs
	scoped   map[string][]*conn // of those, the session-scoped ones
	sessions []*conn            // connections that called sessions.subscribe

	// want, when set, asks the other nodes for the events of a session's
	// runs (agent.Runner.WantRemote) while a connection here may receive
	// them: held per key with subscribers (wanted), and for every session
	// while a connection receives every session's events or
	// sessions.changed (wantedAll).
	want      func(sessionKey string) (release func())
	wanted    map[string]func()
	wantedAll func()
}

// setWant sets want (nil: releases every key held).
func (x *subIndex) setWant(want func(sessionKey string) (release func())) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, release := range x.wanted {
		release()
	}
	if x.wantedAll != nil {
		x.wantedAll()
	}
	x.wanted, x.wantedAll, x.want = nil, nil, want
	if want == nil {
		return
	}
	for key := range x.keys {
		x.syncKeyLocked(key)
	}
	x.syncAllLocked()
}

// syncKeyLocked holds a want of key while it has subscribers.
func (x *subIndex) syncKeyLocked(key string) {
	if x.want == nil {
		return
	}
	release, held := x.wanted[key]
	switch has := len(x.keys[key]) > 0; {
	case has && !held:
		if x.wanted == nil {
			x.wanted = make(map[string]func())
		}
		x.wanted[key] = x.want(key)
	case !has && held:
		release()
		delete(x.wanted, key)
	}
}

// syncAllLocked holds a want of every session while a connection receives
// every session's events or sessions.changed.
func (x *subIndex) syncAllLocked() {
	if x.want == nil {
		return
	}
	switch has := len(x.all)+len(x.sessions) > 0; {
	case has && x.wantedAll == nil:
		x.wantedAll = x.want(agent.WantAll)
	case !has && x.wantedAll != nil:
		x.wantedAll()
		x.wantedAll = nil
	}
}

// forKey returns the connections that may receive key's events, in two
// disjoint lists: every unscoped ready connection, and the session-scoped
// connections that subscribed to key.
func (x *subIndex) forKey(key string) (all, scoped []*conn) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.all, x.scoped[key]
}

// subscribers returns the connections that subscribed to key.
func (x *subIndex) subscribers(key string) []*conn {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.keys[key]
}

// sessionsSubs returns the connections that called sessions.subscribe.
func (x *subIndex) sessionsSubs() []*conn {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.sessions
}

// addAll records c, past its handshake and not session-scoped, as
// receiving every session's events.
func (x *subIndex) addAll(c *conn) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !c.unindexed {
		x.all = with(x.all, c)
		x.syncAllLocked()
	}
}

// addKey records c as subscribed to key; scoped is c's session-scoped
// flag.
func (x *subIndex) addKey(key string, c *conn, scoped bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if c.unindexed {
		return
	}
	if x.keys == nil {
		x.keys, x.scoped = make(map[string][]*conn), make(map[string][]*conn)
	}
	x.keys[key] = with(x.keys[key], c)
	if scoped {
		x.scoped[key] = with(x.scoped[key], c)
	}
	x.syncKeyLocked(key)
}

// removeKey forgets c's subscription to key.
func (x *subIndex) removeKey(key string, c *conn) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dropKeyLocked(key, c)
}

func (x *subIndex) dropKeyLocked(key string, c *conn) {
	for _, m := range [...]map[string][]*conn{x.keys, x.scoped} {
		if l := without(m[key], c); len(l) > 0 {
			m[key] = l
		} else {
			delete(m, key)
		}
	}
	x.syncKeyLocked(key)
}

// setSessions records whether c receives sessions.changed.
func (x *subIndex) setSessions(c *conn, on bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if on && !c.unindexed {
		x.sessions = with(x.sessions, c)
	} else if !on {
		x.sessions = without(x.sessions, c)
	}
	x.syncAllLocked()
}

// remove forgets c, a closed connection, together with its subscriptions
// to keys; later additions of c are ignored.
func (x *subIndex) remove(c *conn, keys []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	c.unindexed = true
	x.all = without(x.all, c)
	x.sessions = without(x.sessions, c)
	for _, k := range keys {
		x.dropKeyLocked(k, c)
	}
	x.syncAllLocked()
}

// with returns l and c, as a new slice when c is not in l yet.
func with(l []*conn, c *conn) []*conn {
	if slices.Contains(l, c) {
		return l
	}
	return append(slices.Clip(l), c)
}

// without returns l without c, as a new slice when c was in it.
func without(l []*conn, c *conn) []*conn {
	i := slices.Index(l, c)
	if i < 0 {
		return l
	}
	out := make([]*conn, 0, len(l)-1)
	return append(append(out, l[:i]...), l[i+1:]...)
}
