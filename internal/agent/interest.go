package agent

import (
	"sync"
	"sync/atomic"
)

// Interest reports whether this node has a use for the events of run
// runID, a run of session sessionKey that executes on another node (for
// example: a client here receives that session's events).
type Interest func(sessionKey, runID string) bool

// interests is the set of registered Interest funcs, with a
// copy-on-write snapshot for WantsRelayed.
type interests struct {
	mu   sync.Mutex
	next uint64
	set  map[uint64]Interest
	list atomic.Pointer[[]Interest]
}

// AddInterest registers wants, which WantsRelayed asks; the returned func
// removes it. A subscriber (Subscribe) that needs the events of some runs
// executing on other nodes beyond their ends registers one.
func (r *Runner) AddInterest(wants Interest) (remove func()) {
	in := &r.interests
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.set == nil {
		in.set = make(map[uint64]Interest)
	}
	id := in.next
	in.next++
	in.set[id] = wants
	in.publishLocked()
	return func() {
		in.mu.Lock()
		defer in.mu.Unlock()
		delete(in.set, id)
		in.publishLocked()
	}
}

func (in *interests) publishLocked() {
	list := make([]Interest, 0, len(in.set))
	for id := range in.next {
		if w, ok := in.set[id]; ok {
			list = append(list, w)
		}
	}
	in.list.Store(&list)
}

// WantsRelayed reports whether a subscriber here wants the events of
// runID, a run of sessionKey executing on another node, other than its
// end and the messages posted into its session (which every node always
// takes): whether a registered Interest says so. The cluster hands the
// runner such events through Relay when wanted, through RelayLogged when
// not.
func (r *Runner) WantsRelayed(sessionKey, runID string) bool {
	if list := r.interests.list.Load(); list != nil {
		for _, wants := range *list {
			if wants(sessionKey, runID) {
				return true
			}
		}
	}
	return false
}

// RelayLogged hands the runner an event of a run executing on another
// node that no subscriber here wants (WantsRelayed): the event numbered
// seq of runID (of sessionKey), which is neither an end nor a post, not
// decoded yet. It is logged for watchers (Watch, WatchSession), who get
// it decoded by decode when they read it, in its place; it reaches no
// subscriber. Events without a number (queued notices) are not logged.
func (r *Runner) RelayLogged(runID, sessionKey string, seq int64, decode func() (Event, error)) {
	r.events.add(Event{RunID: runID, SessionKey: sessionKey, Seq: seq, remote: true, lazy: decode}, r.now())
}

// decoded returns ev, or the event a lazily logged one (RelayLogged)
// stands for, in its place (its numbers kept); false when it does not
// decode (the watcher sees a gap).
func (r *Runner) decoded(ev Event) (Event, bool) {
	if ev.lazy == nil {
		return ev, true
	}
	full, err := ev.lazy()
	if err != nil {
		r.log.Warn("relayed event undecodable", "runId", ev.RunID, "seq", ev.Seq, "err", err)
		return ev, false
	}
	full.RunID, full.SessionKey, full.Seq, full.SessionSeq, full.remote = ev.RunID, ev.SessionKey, ev.Seq, ev.SessionSeq, true
	full.lazy = nil
	return full, true
}
