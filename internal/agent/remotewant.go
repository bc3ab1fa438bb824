package agent

// RemoteWanter is what a Lanes that shares lanes with other nodes may
// also implement (*cluster.Node does): while a Want is held, the other
// nodes send this node the events of their runs of sessionKey ("*": of
// every session) beyond the ends and posts they always send.
type RemoteWanter interface {
	Want(sessionKey string) (release func())
}

// WantAll is the key of a RemoteWanter.Want of every session's events.
const WantAll = "*"

// WantRemote asks the other nodes for the events of their runs of
// sessionKey (WantAll: of every session) until release is called; a
// runner without such nodes needs nothing (release does nothing). Every
// consumer of other nodes' events beyond their ends holds one: a
// subscriber translating a session's events (the gateway), a watcher
// (Watch, WatchSession).
func (r *Runner) WantRemote(sessionKey string) (release func()) {
	if w, ok := r.cfg.Lanes.(RemoteWanter); ok {
		return w.Want(sessionKey)
	}
	return func() {}
}

// Executing returns the logged events of the runs that execute on this
// node and have not ended, of sessionKey (WantAll: of every session), in
// sequence order per run: what a node that starts wanting them mid-run is
// sent to catch up (it drops the ones it has already).
func (r *Runner) Executing(sessionKey string) []Event {
	return r.events.executing(sessionKey)
}

func (l *eventLog) executing(key string) []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var evs []Event
	for _, rl := range l.runs {
		if rl.ended || len(rl.events) == 0 {
			continue
		}
		first := rl.events[0]
		if first.flags&logRemote != 0 || (key != WantAll && first.id.SessionKey != key) {
			continue
		}
		evs = copyEvents(evs, rl.events, true)
	}
	return evs
}
