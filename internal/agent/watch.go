package agent

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// Event log bounds.
const (
	// logRetention is how long the events of an ended run stay in the
	// log: a watcher that resumes later gets the final from the store.
	logRetention = time.Minute
	// logIdle is how long the log keeps a run it heard nothing of (one
	// whose end never reached this node).
	logIdle = 10 * time.Minute
	// maxLogEvents bounds one run's logged events; past it the oldest
	// half is dropped (a watcher resuming from before them sees a gap
	// in the sequence numbers; assistant events carry the whole text of
	// their model turn, so the text is not lost).
	maxLogEvents = 8192
	// pruneEvery is how often adding an event looks for runs to drop.
	pruneEvery = 10 * time.Second
	// endCheckEvery is how often RecoverEnds looks in the store for the
	// end of one quiet run.
	endCheckEvery = 5 * time.Second
	// maxEndChecks bounds the runs one RecoverEnds looks at.
	maxEndChecks = 500
	// maxEndedRuns bounds the ended runs the log keeps: past it the run
	// that ended first is dropped before its minute is up (a watcher
	// resuming it gets the end from the store). Kept a minute each, the
	// runs of a busy gateway grew the heap without bound: one client's
	// warm turns, 1,300 a second, held 70 MB of events after 30 seconds
	// (RSS 232 MiB after 35). About 2 KB a run, this is some 1 MB. At
	// 4,096 the log was two thirds of a busy gateway's live heap, which
	// the collector marks on every cycle: a third of a warm turn's GC
	// work (docs/benchmarks.md, twenty-first round).
	maxEndedRuns = 512
)

// eventLog keeps the recent events of every run this node executes or
// hears of from other nodes, in sequence order, so that a watcher can
// start or resume at any sequence number (Runner.Watch). It holds one end
// per run: a second end (an adoption's, after the run's own relayed one)
// is dropped, and an end numbered at or below events already logged is
// renumbered after them.
type eventLog struct {
	mu     sync.Mutex
	runs   map[string]*runLog
	pruned time.Time
	// sessions indexes the logged events by session (Runner.WatchSession),
	// numbered by sessSeq, which rises across all sessions.
	sessions map[string]*sessionLog
	sessSeq  int64
	// ends holds the logged runs that ended, in the order their ends were
	// logged, from index endsHead on: the oldest is dropped past
	// maxEndedRuns. An entry whose run was pruned since is skipped.
	ends     []*runLog
	endsHead int
	// sessEvs holds the events logged in session logs, in the order they
	// were logged, from index sessHead on: the oldest is dropped past
	// maxSessionEvents.
	sessEvs  []*logEvent
	sessHead int
}

// runLog is one run's logged events. An event is allocated once (in its
// compact form, logEvent) and shared with its session's log (sessionLog),
// which numbers it with SessionSeq; run watchers get copies without that
// number.
type runLog struct {
	events []*logEvent
	// id is the identity of the run's last logged event, which the next
	// one shares when it carries the same.
	id      *eventIdent
	last    int64 // highest seq logged
	ended   bool
	touched time.Time
	checked time.Time // last looked at by RecoverEnds
	// wake is closed when an event is logged or the log is pruned; made
	// only when a watcher waits (nil: none does).
	wake chan struct{}
}

func newEventLog() *eventLog {
	return &eventLog{runs: make(map[string]*runLog), sessions: make(map[string]*sessionLog)}
}

func isEnd(ev Event) bool { return ev.Stream == StreamLifecycle && ev.Phase == PhaseEnd }

// runLocked returns runID's log, creating it.
func (l *eventLog) runLocked(runID string, now time.Time) *runLog {
	rl := l.runs[runID]
	if rl == nil {
		rl = &runLog{touched: now, events: make([]*logEvent, 0, 8)}
		l.runs[runID] = rl
	}
	return rl
}

// add logs ev and reports whether it was new. Events without a sequence
// number (queued notices) are not logged; posts go to their session's log
// only (reported as not new).
func (l *eventLog) add(ev Event, now time.Time) bool {
	if ev.RunID != "" && ev.Stream == StreamPost {
		l.mu.Lock()
		l.addSessionLocked(packEvent(&ev, identOf(&ev, nil)), now)
		l.mu.Unlock()
		return false
	}
	if ev.RunID == "" || (ev.Seq <= 0 && !isEnd(ev)) {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	rl := l.runLocked(ev.RunID, now)
	switch {
	case ev.remote && !isEnd(ev) && (rl.ended || ev.Seq <= rl.last):
		// An earlier event of a run executing elsewhere, sent again (a
		// catch-up or a replay, wants.go in package cluster): it fills
		// its gap in the log, for watchers; it is not new to subscribers.
		l.backfillLocked(rl, ev, now)
		return false
	case rl.ended:
		return false // one end per run, and nothing after it
	case isEnd(ev):
		if ev.Seq <= rl.last {
			ev.Seq = rl.last + 1
		}
		rl.ended = true
	case ev.Seq <= rl.last:
		return false // seen already (or late)
	}
	rl.last = ev.Seq
	rl.id = identOf(&ev, rl.id)
	logged := packEvent(&ev, rl.id)
	rl.events = appendBounded(rl.events, logged)
	rl.touched = now
	rl.wakeLocked()
	if rl.ended {
		l.endedLocked(rl)
	}
	l.addSessionLocked(logged, now)
	if now.Sub(l.pruned) >= pruneEvery {
		l.pruneLocked(now)
	}
	return true
}

// backfillLocked puts ev, an event of a run executing elsewhere numbered
// at or below what rl logged (or sent after its end), in its place in rl,
// unless its number is logged already. It is not added to its session's
// log (session watchers number events as they arrive). An end recovered
// from the store, which carries no number of the run's, is renumbered
// after it.
func (l *eventLog) backfillLocked(rl *runLog, ev Event, now time.Time) {
	i := sort.Search(len(rl.events), func(i int) bool { return rl.events[i].seq >= ev.Seq })
	var recovered *logEvent // the run's end, when it came from the store
	if rl.ended && len(rl.events) > 0 {
		if end := rl.events[len(rl.events)-1]; end.flags&logRecovered != 0 {
			recovered = end
			i = min(i, len(rl.events)-1)
		} else if ev.Seq >= end.seq {
			return // after the run's own end
		}
	}
	switch {
	case i < len(rl.events) && rl.events[i].seq == ev.Seq && rl.events[i] != recovered:
		return // logged already
	case len(rl.events) >= maxLogEvents && i == 0:
		return // before what the bounded log keeps
	}
	rl.events = slices.Insert(rl.events, i, packEvent(&ev, identOf(&ev, rl.id)))
	if recovered != nil && recovered.seq <= ev.Seq {
		recovered.seq = ev.Seq + 1
	}
	if len(rl.events) > maxLogEvents {
		rl.events = append([]*logEvent(nil), rl.events[len(rl.events)-maxLogEvents/2:]...)
	}
	rl.last = max(rl.last, rl.events[len(rl.events)-1].seq)
	rl.touched = now
	rl.wakeLocked()
}

// appendBounded appends ev to a log's events, dropping the oldest half
// past maxLogEvents into a copy with room for the appends until the next
// drop: a copy of its length was grown (copied again) by the next append,
// and twice more before the next drop.
func appendBounded(evs []*logEvent, ev *logEvent) []*logEvent {
	if evs = append(evs, ev); len(evs) > maxLogEvents {
		evs = append(make([]*logEvent, 0, maxLogEvents+1), evs[len(evs)-maxLogEvents/2:]...)
	}
	return evs
}

// copyEvents appends copies of logged to evs, without their SessionSeq
// when runView (a run watcher's view: the number is a session watcher's).
func copyEvents(evs []Event, logged []*logEvent, runView bool) []Event {
	for _, p := range logged {
		evs = append(evs, p.event())
		if runView {
			evs[len(evs)-1].SessionSeq = 0
		}
	}
	return evs
}

// endedLocked records that rl logged its run's end, and drops the run
// that ended first when more than maxEndedRuns did; its watchers are woken
// to look at the store.
func (l *eventLog) endedLocked(rl *runLog) {
	l.ends = append(l.ends, rl)
	for len(l.ends)-l.endsHead > maxEndedRuns {
		old := l.ends[l.endsHead]
		l.ends[l.endsHead] = nil
		l.endsHead++
		if old.id != nil && l.runs[old.id.RunID] == old { // not pruned (and made again) since
			delete(l.runs, old.id.RunID)
			old.wakeLocked()
		}
	}
	if l.endsHead >= maxEndedRuns {
		// Move the live part to the front, so the slice stays about
		// twice the bound.
		n := copy(l.ends, l.ends[l.endsHead:])
		clear(l.ends[n:])
		l.ends, l.endsHead = l.ends[:n], 0
	}
}

// pruneLocked drops the runs that ended logRetention ago or were idle for
// logIdle; their watchers are woken to look at the store.
func (l *eventLog) pruneLocked(now time.Time) {
	l.pruned = now
	for id, rl := range l.runs {
		age := now.Sub(rl.touched)
		if age >= logIdle || (rl.ended && age >= logRetention) {
			delete(l.runs, id)
			rl.wakeLocked()
		}
	}
	// Forget the ended runs just dropped: an entry would keep its log.
	kept := l.ends[:0]
	for _, rl := range l.ends[l.endsHead:] {
		if rl.id != nil && l.runs[rl.id.RunID] == rl {
			kept = append(kept, rl)
		}
	}
	clear(l.ends[len(kept):])
	l.ends, l.endsHead = kept, 0
	l.pruneSessionsLocked(now)
}

// unended returns up to maxEndChecks runs without a logged end that were
// quiet and not looked at for endCheckEvery (all: every such run), and
// marks them looked at.
func (l *eventLog) unended(now time.Time, all bool) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ids []string
	for id, rl := range l.runs {
		if rl.ended || (!all && (now.Sub(rl.touched) < endCheckEvery || now.Sub(rl.checked) < endCheckEvery)) {
			continue
		}
		rl.checked = now
		if ids = append(ids, id); len(ids) == maxEndChecks {
			break
		}
	}
	return ids
}

// wakeLocked wakes the run's watchers.
func (rl *runLog) wakeLocked() {
	if rl.wake != nil {
		close(rl.wake)
		rl.wake = nil
	}
}

// since returns runID's logged events after seq after. seen reports that
// the run's end is logged at or before after (the watcher had it). An end
// recovered from the store carries no number the watcher could have seen,
// so it is returned, numbered after after, whatever after is. wake is
// closed when more is logged.
func (l *eventLog) since(runID string, after int64, now time.Time) (evs []Event, seen bool, wake <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rl := l.runLocked(runID, now)
	if rl.wake == nil {
		rl.wake = make(chan struct{})
	}
	i := sort.Search(len(rl.events), func(i int) bool { return rl.events[i].seq > after })
	evs = copyEvents(evs, rl.events[i:], true)
	if rl.ended && len(evs) == 0 {
		end := rl.events[len(rl.events)-1].event()
		end.SessionSeq = 0
		if !end.recovered {
			return nil, true, rl.wake
		}
		end.Seq = after + 1
		evs = append(evs, end)
	}
	return evs, false, rl.wake
}

// Watch streams runID's events with a sequence number above afterSeq, in
// order, ending with the run's end (lifecycle end, Run set), which it
// yields exactly once: from the events this node logged (its own runs'
// and, with several nodes, the ones relayed to it), else from the store,
// where every run's final status is recorded. A watcher that reconnects
// resumes with the last Seq it saw and gets what followed, without gap or
// duplicate while this node's log holds the run's events (a minute after
// its end, or until maxEndedRuns runs ended after it; events lost in a
// relay show as a gap, the end never goes missing). With several nodes, a run executing elsewhere has its events
// other than its end here only while this node wants them (WantRemote:
// a Watch wants every session's, and is sent the running runs' events so
// far); of a run that ended before that, the node that ran it is asked
// to send its events again (RemoteReplayer), which it can while it logs
// them (as above); else the watcher gets the end only. A
// watcher that saw the end gets nothing more. Watch starts at
// any time: the run need not have started, and events emitted before the
// call are in the log.
//
// It yields an error and stops when ctx ends or the run does not exist.
// A store that does not answer is waited for.
func (r *Runner) Watch(ctx context.Context, runID string, afterSeq int64) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		// Another node sends this one a run's events beyond its end only
		// while some use here wants them (the run's session is not known
		// here yet).
		defer r.WantRemote(WantAll)()
		next := afterSeq
		look := true
		// A run executing on another node: its events are relayed, and
		// the end of one whose relay was lost comes from the store
		// (RecoverEnds, which the cluster calls).
		var retry <-chan time.Time
		replayed := false
		for {
			evs, seen, wake := r.events.since(runID, next, r.now())
			if !replayed && missesRemote(evs, next) {
				// The run ended on another node before this one logged
				// all its events: that node sends them again.
				replayed = true
				r.replayRemote(ctx, runID)
				continue
			}
			for _, ev := range evs {
				next = ev.Seq
				full, ok := r.decoded(ev)
				if !ok {
					continue
				}
				if !yield(full, nil) || isEnd(full) {
					return
				}
			}
			if seen {
				return
			}
			if look {
				look, retry = false, nil
				end, err := r.storedEnd(ctx, runID)
				switch {
				case errors.Is(err, store.ErrNotFound):
					yield(Event{}, fmt.Errorf("agent.Watch: run %s: %w", runID, err))
					return
				case err != nil && ctx.Err() == nil:
					r.log.Warn("watch: run unreadable; looking again", "runId", runID, "err", err)
					retry = time.After(waitPoll)
				case end != nil && r.running(runID):
					// Its end is being emitted here; look again in case the
					// emit went to a log since pruned.
					retry = time.After(waitPoll)
				case end != nil:
					r.deliverRecovered(*end)
					continue
				}
			}
			woken := r.newWaiter(runID)
			select {
			case <-wake:
			case <-woken.ch:
				look = true
			case <-retry:
				look = true
			case <-ctx.Done():
				r.dropWaiter(runID, woken)
				yield(Event{}, fmt.Errorf("agent.Watch: %w", ctx.Err()))
				return
			}
			r.dropWaiter(runID, woken)
		}
	}
}

// missesRemote reports whether evs, a watcher's events of a run after
// seq after, end with the end of a run that executed elsewhere and miss
// some of its events: their numbers (a run's rise by one) skip some
// after after, or the end came from the store (it carries no number of
// the run's).
func missesRemote(evs []Event, after int64) bool {
	if len(evs) == 0 {
		return false
	}
	end := evs[len(evs)-1]
	if !isEnd(end) || !end.remote {
		return false
	}
	if end.recovered {
		return true
	}
	for _, ev := range evs {
		if ev.Seq != after+1 {
			return true
		}
		after = ev.Seq
	}
	return false
}

// running reports whether runID executes on this runner: its end comes
// from the run itself, even when the store has it already.
func (r *Runner) running(runID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.active[runID]
	return ok
}

// deliverRecovered hands subscribers and watchers a run's end read from
// the store, as an end relayed from another node, unless one was seen.
func (r *Runner) deliverRecovered(end Event) {
	end.remote = true
	if !r.events.add(end, r.now()) {
		return
	}
	r.log.Info("run end recovered from the store", "runId", end.RunID, "status", end.Run.Status)
	r.publishRemote(end)
	r.wakeWaiters(end.RunID)
}

// publishRemote hands an event of a run executing elsewhere (relayed, or
// recovered from the store) to the subscribers of every event.
func (r *Runner) publishRemote(ev Event) {
	if subs := r.subList.Load(); subs != nil {
		for _, sub := range *subs {
			if !sub.local {
				sub.fn(ev)
			}
		}
	}
}

// RecoverEnds looks in the store for the ends of runs this node heard of
// (events relayed from the node that runs them, or a watcher following
// them) but never saw end, because the relay was lost (a database
// outage, a listener that reconnected), and hands each end found to
// subscribers and watchers, once. all looks at every such run (after a
// reconnect); otherwise only at runs quiet for endCheckEvery, each at most
// that often. Runs executing here are left to end themselves.
func (r *Runner) RecoverEnds(ctx context.Context, all bool) {
	for _, id := range r.events.unended(r.now(), all) {
		if ctx.Err() != nil {
			return
		}
		if r.running(id) {
			continue
		}
		end, err := r.storedEnd(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			r.log.Warn("run end recovery: store unreadable", "runId", id, "err", err)
			return
		}
		if end != nil {
			r.deliverRecovered(*end)
		}
	}
}

// storedEnd reads runID from the store and, when it is terminal, returns
// its end as an event (with the run's last assistant message); nil while
// the run is not terminal.
func (r *Runner) storedEnd(ctx context.Context, runID string) (*Event, error) {
	run, err := r.cfg.Store.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	if !run.Status.Terminal() {
		return nil, nil
	}
	ev := &Event{RunID: run.RunID, SessionKey: run.SessionKey, SessionID: run.SessionID, AgentID: run.AgentID,
		Lane: run.Lane, Time: run.EndedAt, Stream: StreamLifecycle, Phase: PhaseEnd, Run: run, recovered: true}
	if in, err := decodeInput(run.Input); err == nil {
		ev.SpawnedBy = in.SpawnedBy
	}
	if run.SessionID != "" {
		msgs, err := r.cfg.Store.History(ctx, run.SessionID, store.HistoryOptions{RunID: runID, Limit: 50})
		if err != nil {
			return nil, err
		}
		ev.Message = lastAssistant(msgs)
	}
	return ev, nil
}

// lastAssistant is the last assistant message of msgs (nil: none).
func lastAssistant(msgs []store.Message) *transcript.Message {
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i].Entry.Message; m != nil && m.Role == transcript.RoleAssistant {
			return m
		}
	}
	return nil
}

// EndMessage returns the last message of run runID when the run ended on
// this runner within the last minute: the message its end event carries,
// which is the last one the run wrote unless a run that carried it wrote
// it (then its Meta.RunID names that run). nil when the run's end is not
// logged here (it ended on another node, or longer ago) or carries no
// message: read the transcript then. The message is shared: do not change
// it.
func (r *Runner) EndMessage(runID string) *transcript.Message {
	return r.events.endMessage(runID)
}

func (l *eventLog) endMessage(runID string) *transcript.Message {
	l.mu.Lock()
	defer l.mu.Unlock()
	rl := l.runs[runID]
	if rl == nil || !rl.ended || len(rl.events) == 0 {
		return nil
	}
	end := rl.events[len(rl.events)-1].event()
	if !isEnd(end) || end.recovered || end.remote {
		return nil
	}
	return end.Message
}
