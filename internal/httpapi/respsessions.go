package httpapi

import (
	"container/list"
	"sync"
	"time"
)

// Limits of the previous_response_id map (the reference's).
const (
	responseSessionTTL = 30 * time.Minute
	maxResponseEntries = 500
)

// responseScope is who may continue a response: the same auth subject,
// agent and requested session key.
type responseScope struct {
	authSubject  string
	agentID      string
	requestedKey string
}

type responseEntry struct {
	id         string
	sessionKey string
	scope      responseScope
	at         time.Time
}

// responseSessions maps response ids to their sessions for
// previous_response_id, oldest first, bounded in age and count. Safe for
// concurrent use.
type responseSessions struct {
	now func() time.Time

	mu    sync.Mutex // guards the fields that follow
	order *list.List // of *responseEntry, oldest first
	byID  map[string]*list.Element
}

func newResponseSessions(now func() time.Time) *responseSessions {
	return &responseSessions{now: now, order: list.New(), byID: make(map[string]*list.Element)}
}

func (rs *responseSessions) store(id, sessionKey string, scope responseScope) {
	now := rs.now()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if el, ok := rs.byID[id]; ok {
		rs.order.Remove(el)
	}
	rs.byID[id] = rs.order.PushBack(&responseEntry{id: id, sessionKey: sessionKey, scope: scope, at: now})
	for el := rs.order.Front(); el != nil; el = rs.order.Front() {
		e := el.Value.(*responseEntry)
		if now.Sub(e.at) <= responseSessionTTL && rs.order.Len() <= maxResponseEntries {
			break
		}
		rs.order.Remove(el)
		delete(rs.byID, e.id)
	}
}

// lookup returns the session of response id when it is known, not
// expired and scope matches; "" otherwise.
func (rs *responseSessions) lookup(id string, scope responseScope) string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	el, ok := rs.byID[id]
	if !ok {
		return ""
	}
	e := el.Value.(*responseEntry)
	if rs.now().Sub(e.at) > responseSessionTTL {
		rs.order.Remove(el)
		delete(rs.byID, id)
		return ""
	}
	if e.scope != scope {
		return ""
	}
	return e.sessionKey
}
