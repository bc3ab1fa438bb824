package agent

import (
	"context"
	"time"
)

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

// RemoteReplayer is what a RemoteWanter may also implement (*cluster.Node
// does): Replay has the other nodes send this one again the events of run
// runID that the node which executed it still logs, and returns once
// every node answered (the events are then in this runner's log), or
// with an error when some did not in time.
type RemoteReplayer interface {
	Replay(ctx context.Context, runID string) error
}

// Executing returns the logged events of the runs that execute on this
// node, of sessionKey (WantAll: of every session), in sequence order per
// run: what a node that starts wanting them mid-run is sent to catch up
// (it drops the ones it has already). A run that has not ended is always
// there; one that ended, without its end (every node gets ends), only
// when endedSince is set and its end came at or after it (the peer
// started wanting the session before the run ended, and heard nothing of
// its last events).
func (r *Runner) Executing(sessionKey string, endedSince time.Time) []Event {
	return r.events.executing(sessionKey, endedSince)
}

func (l *eventLog) executing(key string, endedSince time.Time) []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var evs []Event
	for _, rl := range l.runs {
		if len(rl.events) == 0 {
			continue
		}
		first, last := rl.events[0], rl.events[len(rl.events)-1]
		if first.flags&logRemote != 0 || (key != WantAll && first.id.SessionKey != key) {
			continue
		}
		if !rl.ended {
			evs = copyEvents(evs, rl.events, true)
		} else if !endedSince.IsZero() && !last.time.Before(endedSince) {
			evs = copyEvents(evs, rl.events[:len(rl.events)-1], true)
		}
	}
	return evs
}

// RunEvents returns the logged events of run runID, which executes or
// executed on this node, without its end: what a node that asks for
// them again (Replay) is sent. nil when the run is not logged here.
func (r *Runner) RunEvents(runID string) []Event {
	l := r.events
	l.mu.Lock()
	defer l.mu.Unlock()
	rl := l.runs[runID]
	if rl == nil || len(rl.events) == 0 || rl.events[0].flags&logRemote != 0 {
		return nil
	}
	logged := rl.events
	if rl.ended {
		logged = logged[:len(logged)-1]
	}
	return copyEvents(nil, logged, true)
}

// replayRemote has the other nodes send again the events of runID they
// logged as its executor (RemoteReplayer), when there are such nodes.
func (r *Runner) replayRemote(ctx context.Context, runID string) {
	if rp, ok := r.cfg.Lanes.(RemoteReplayer); ok {
		if err := rp.Replay(ctx, runID); err != nil && ctx.Err() == nil {
			r.log.Warn("watch: events of a run that ended elsewhere not replayed", "runId", runID, "err", err)
		}
	}
}
