package gateway

import (
	"github.com/switchboardhq/switchboard/internal/agent"
)

// follow subscribes the gateway to the runner's events, and tells the
// runner which events of runs executing on other nodes it wants
// (wantsRelayed); the returned func undoes both.
func (s *Server) follow(r Runner) (stop func()) {
	unsub := r.Subscribe(s.onRunEvent)
	unwant := r.AddInterest(s.wantsRelayed)
	// The other nodes send the events wantsRelayed may want: of the
	// sessions connections here may receive (subIndex).
	s.subs.setWant(r.WantRemote)
	return func() {
		s.subs.setWant(nil)
		unwant()
		unsub()
	}
}

// wantsRelayed is the gateway's agent.Interest: it translates the events
// of a run executing on another node while a connection here receives
// its session's events, a client follows the session list
// (sessions.changed tells runs' starts), or the run's translation is
// under way (its events were wanted before, or a call here holds them
// back until its answer).
func (s *Server) wantsRelayed(key, runID string) bool {
	s.runsMu.Lock()
	_, translating := s.runs[runID]
	s.runsMu.Unlock()
	if translating {
		return true
	}
	if _, ok := s.timings.Load(runID); ok {
		return true
	}
	all, scoped := s.subs.forKey(key)
	for _, l := range [...][]*conn{all, scoped, s.subs.sessionsSubs()} {
		for _, c := range l {
			c.mu.Lock()
			want := c.wantsLocked(key) || c.ready && c.sessionsSub
			c.mu.Unlock()
			if want {
				return true
			}
		}
	}
	return false
}

// skipRelayed reports whether ev, an event of a run executing on another
// node, goes to no connection here and so needs no translation; of such a
// run's end, only what does not depend on a connection is done (the
// session's change, which also forgets what session.message sent of the
// run). The cluster hands the runner the events of such runs only when
// something else here wants them (a watcher), and every run's end.
func (s *Server) skipRelayed(ev agent.Event) bool {
	if s.wantsRelayed(ev.SessionKey, ev.RunID) {
		return false
	}
	if ev.Stream == agent.StreamLifecycle && ev.Phase == agent.PhaseEnd && ev.Run != nil {
		s.runChanged(ev.SessionKey, ev.RunID, "lifecycle", "end", true)
	}
	return true
}
