package agent

import (
	"context"
	"fmt"
	"iter"
	"sort"
	"time"
)

// maxPostScan bounds how far back a session's log is searched for a post
// relayed twice.
const maxPostScan = 64

// maxSessionEvents bounds the events all session logs hold together: past
// it the event logged first is dropped from its session's log. Each
// session's log was bounded only by maxLogEvents: 100 busy sessions held
// 56 MB of events after 20 seconds and would have held some 300 MB. About
// 400 bytes an event (those of ended runs shared with their run's log),
// this is some 1.6 MB; a busy session's log keeps its last
// maxSessionEvents/(active sessions) events or so, minutes of a session
// that streams a reply every few seconds. At 32,768 (13 MB) the logs held
// most of a busy gateway's live heap, marked on every GC cycle, and 21 MiB
// of its RSS under one client's load (docs/benchmarks.md, twenty-first
// round).
const maxSessionEvents = 4096

// sessionLog is one session's logged events, in the order this node
// logged them, each numbered with SessionSeq.
type sessionLog struct {
	events  []*logEvent // shared with the run logs
	touched time.Time
	// wake is closed when an event is logged or the log is pruned; made
	// only when a watcher waits (nil: none does).
	wake chan struct{}
}

// wakeLocked wakes the session's watchers.
func (sl *sessionLog) wakeLocked() {
	if sl.wake != nil {
		close(sl.wake)
		sl.wake = nil
	}
}

// addSessionLocked logs ev in its session's log under the next session
// sequence number, which it sets in ev (logged by this call or shared with
// a run's log). Posts (which the run logs skip) are logged here, once per
// post id. l.mu is held.
func (l *eventLog) addSessionLocked(ev *logEvent, now time.Time) {
	key := ev.id.SessionKey
	if key == "" {
		return
	}
	sl := l.sessions[key]
	if sl == nil {
		sl = &sessionLog{events: make([]*logEvent, 0, 8)}
		l.sessions[key] = sl
	}
	if ev.isPostOf(ev.id.RunID) {
		for i := len(sl.events) - 1; i >= 0 && i >= len(sl.events)-maxPostScan; i-- {
			if sl.events[i].isPostOf(ev.id.RunID) {
				return // relayed twice
			}
		}
	}
	l.sessSeq++
	ev.sessionSeq = l.sessSeq
	sl.events = appendBounded(sl.events, ev)
	sl.touched = now
	sl.wakeLocked()
	l.sessEvs = append(l.sessEvs, ev)
	for len(l.sessEvs)-l.sessHead > maxSessionEvents {
		old := l.sessEvs[l.sessHead]
		l.sessEvs[l.sessHead] = nil
		l.sessHead++
		// Its session's oldest event, unless that log dropped it since
		// (appendBounded) or was pruned.
		if sl := l.sessions[old.id.SessionKey]; sl != nil && len(sl.events) > 0 && sl.events[0] == old {
			sl.events[0] = nil // the backing array must not keep it
			sl.events = sl.events[1:]
		}
	}
	if l.sessHead >= maxSessionEvents {
		n := copy(l.sessEvs, l.sessEvs[l.sessHead:])
		clear(l.sessEvs[n:])
		l.sessEvs, l.sessHead = l.sessEvs[:n], 0
	}
}

// sessionSince returns key's logged events with a SessionSeq above after;
// wake is closed when more is logged.
func (l *eventLog) sessionSince(key string, after int64, now time.Time) (evs []Event, wake <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sl := l.sessions[key]
	if sl == nil {
		// Made for the watcher to wait on; pruned like any idle log.
		sl = &sessionLog{touched: now}
		l.sessions[key] = sl
	}
	if sl.wake == nil {
		sl.wake = make(chan struct{})
	}
	i := sort.Search(len(sl.events), func(i int) bool { return sl.events[i].sessionSeq > after })
	return copyEvents(evs, sl.events[i:], false), sl.wake
}

// sessionPosition is the SessionSeq of the last event logged.
func (l *eventLog) sessionPosition() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sessSeq
}

// pruneSessionsLocked drops the session logs idle for logIdle; their
// watchers are woken and wait on a fresh log. l.mu is held.
func (l *eventLog) pruneSessionsLocked(now time.Time) {
	pruned := false
	for key, sl := range l.sessions {
		if now.Sub(sl.touched) >= logIdle {
			delete(l.sessions, key)
			sl.wakeLocked()
			pruned = true
		}
	}
	if !pruned {
		return
	}
	// Forget the events of the logs just dropped: an entry would keep its
	// log.
	kept := l.sessEvs[:0]
	for _, ev := range l.sessEvs[l.sessHead:] {
		if l.sessions[ev.id.SessionKey] != nil {
			kept = append(kept, ev)
		}
	}
	clear(l.sessEvs[len(kept):])
	l.sessEvs, l.sessHead = kept, 0
}

// SessionPosition is the session sequence number of the last event this
// node logged: WatchSession(ctx, key, SessionPosition()) streams what is
// logged after the call to SessionPosition, however late the iteration
// starts.
func (r *Runner) SessionPosition() int64 { return r.events.sessionPosition() }

// WatchSession streams the events of every run of the session key (and
// the messages posted into it), in the order this node logged them, from
// the first with a SessionSeq above afterSeq (0: every event the log
// holds; negative: only events logged after the call), and then as they
// come, until ctx ends (it then yields ctx's
// error and stops). Every event yielded carries SessionSeq: a watcher that
// reconnects passes the last one it saw and resumes without gap or
// duplicate while the log holds the session's events (its runs' events up
// to maxLogEvents, among the last maxSessionEvents of all sessions, for
// logIdle after the session was last active). The numbers are this
// node's: they rise across all sessions, so consecutive events of one
// session need not have consecutive numbers. A run that executes on
// another node is seen through the events relayed here.
//
// Queued notices are not logged (they carry no run sequence number); a
// run's start follows when it leaves the queue.
func (r *Runner) WatchSession(ctx context.Context, sessionKey string, afterSeq int64) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		defer r.WantRemote(sessionKey)()
		next := afterSeq
		if next < 0 {
			next = r.events.sessionPosition()
		}
		for {
			evs, wake := r.events.sessionSince(sessionKey, next, r.now())
			for _, ev := range evs {
				next = ev.SessionSeq
				if full, ok := r.decoded(ev); ok && !yield(full, nil) {
					return
				}
			}
			select {
			case <-wake:
			case <-ctx.Done():
				yield(Event{}, fmt.Errorf("agent.WatchSession: %w", ctx.Err()))
				return
			}
		}
	}
}
