package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard/internal/gateway/wire"
)

// A connection whose client declared the session-scoped-events capability
// receives the chat and agent events only of sessions it subscribed to
// (sessions.messages.subscribe) or sent a turn to; other clients receive
// every session's, as the reference does.

// subscribe adds key to the connection's subscriptions.
// messages marks an explicit sessions.messages.subscribe, which also
// receives the session's session.message events; a scoped sender's own
// subscription does not (and never loses an explicit one).
func (c *conn) subscribe(key string, messages bool) {
	c.mu.Lock()
	if c.subs == nil {
		c.subs = make(map[string]bool)
	}
	was, had := c.subs[key]
	c.subs[key] = was || messages
	if !had {
		// Under c.mu, so that a concurrent unsubscribe's removal is
		// ordered with it.
		c.s.subs.addKey(key, c, c.scoped)
	}
	c.mu.Unlock()
}

// wants reports whether the connection receives the events of session key.
// c.mu is held.
func (c *conn) wantsLocked(key string) bool {
	if !c.ready {
		return false // events start after hello-ok
	}
	if !c.scoped || key == "" {
		return true
	}
	_, ok := c.subs[key]
	return ok
}

// wantsMessagesLocked reports whether the connection receives the
// session.message events of session key: it subscribed to them, or (a
// scoped client) sent a turn there. c.mu is held.
func (c *conn) wantsMessagesLocked(key string) bool {
	return c.ready && c.subs[key]
}

// subscribeSender subscribes a scoped client to the session it is sending
// to, so that it sees its own turn.
func (cl *call) subscribeSender(key string) {
	cl.c.mu.Lock()
	scoped := cl.c.scoped
	cl.c.mu.Unlock()
	if scoped {
		cl.c.subscribe(key, false)
	}
}

type subscribeParams struct {
	Key     string `json:"key"`
	AgentID string `json:"agentId"`
}

func (s *Server) handleSessionsMessagesSubscribe(ctx context.Context, cl *call) (any, error) {
	var p subscribeParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	key := s.canonicalKey(p.Key, s.agentID(p.AgentID))
	cl.c.subscribe(key, true)
	return map[string]any{"subscribed": true, "key": key}, nil
}

func (s *Server) handleSessionsMessagesUnsubscribe(ctx context.Context, cl *call) (any, error) {
	var p subscribeParams
	if err := cl.decode(&p); err != nil {
		return nil, err
	}
	key := s.canonicalKey(p.Key, s.agentID(p.AgentID))
	cl.c.mu.Lock()
	delete(cl.c.subs, key)
	s.subs.removeKey(key, cl.c)
	cl.c.mu.Unlock()
	return map[string]any{"subscribed": false, "key": key}, nil
}

// broadcastSession sends an event of session key to every connection that
// receives that session's events.
func (s *Server) broadcastSession(event, key string, payload json.RawMessage, dropIfSlow bool) {
	frames := [1]outFrame{{raw: eventHead(event, payload != nil), body: payload}}
	s.fanOutSession(key, frames[:], dropIfSlow)
}

// scopedCaps reports whether connect caps ask for session-scoped events.
func scopedCaps(caps []string) bool {
	return slices.ContainsFunc(caps, func(c string) bool { return strings.TrimSpace(c) == wire.CapSessionScopedEvents })
}
