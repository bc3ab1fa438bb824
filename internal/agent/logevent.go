package agent

import (
	"slices"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// logEvent is an Event as the event log keeps it (128 bytes where an
// Event is 288; the log holds every event of every run for a minute after
// its end (of the last maxEndedRuns runs to end), and of every session for
// logIdle): the identity each event of a
// run repeats is held once per run (eventIdent), stream and phase as
// codes, the two string pairs no event sets together in one pair of
// fields, and the pointer fields an event sets at most one of (besides an
// end's run and message) in one interface. An event that does not fit
// (a stream or phase of its own, or fields set together that the runner
// never sets together) is kept whole behind other.
type logEvent struct {
	id         *eventIdent
	seq        int64
	sessionSeq int64
	time       time.Time
	// s1 and s2 are Text and Delta, or ProviderID and ModelID
	// (logProvider).
	s1, s2 string
	run    *store.Run
	msg    *transcript.Message
	// other is the event's *ToolEvent, *QueueEvent, *transcript.Usage,
	// *CompactionEvent or lazy decoder, or the whole *Event (logWhole).
	other  any
	stream uint8 // index in logStreams
	phase  uint8 // index in logPhases
	flags  uint8
}

// logEvent flags.
const (
	logProvider  uint8 = 1 << iota // s1, s2 are ProviderID, ModelID
	logWhole                       // other is the whole *Event
	logRemote                      // Event.remote
	logRecovered                   // Event.recovered
)

// eventIdent is the identity every event of a run carries.
type eventIdent struct {
	RunID, SessionKey, SessionID, AgentID, Lane, SpawnedBy string
}

// logStreams and logPhases are the streams and phases a logEvent codes
// (index 0: none).
var (
	logStreams = [...]string{"", StreamLifecycle, StreamAssistant, StreamTool, StreamUsage, StreamPost, StreamCompaction}
	logPhases  = [...]string{"", PhaseStart, PhaseModel, PhaseEnd, PhaseQueued, PhaseResult}
)

// identOf returns ev's identity: last when ev carries the same (the run's
// earlier events), else a new one.
func identOf(ev *Event, last *eventIdent) *eventIdent {
	if last != nil && *last == (eventIdent{ev.RunID, ev.SessionKey, ev.SessionID, ev.AgentID, ev.Lane, ev.SpawnedBy}) {
		return last
	}
	return &eventIdent{ev.RunID, ev.SessionKey, ev.SessionID, ev.AgentID, ev.Lane, ev.SpawnedBy}
}

// packEvent makes ev's logged form, sharing id (identOf(ev, …)), with
// an end's run record without its input (logRun).
func packEvent(ev *Event, id *eventIdent) *logEvent {
	run := logRun(ev.Run)
	le := &logEvent{id: id, seq: ev.Seq, sessionSeq: ev.SessionSeq, time: ev.Time, run: run, msg: ev.Message}
	if ev.remote {
		le.flags |= logRemote
	}
	if ev.recovered {
		le.flags |= logRecovered
	}
	s, sok := code(logStreams[:], ev.Stream)
	p, pok := code(logPhases[:], ev.Phase)
	le.stream, le.phase = s, p
	le.s1, le.s2 = ev.Text, ev.Delta
	if ev.ProviderID != "" || ev.ModelID != "" {
		le.s1, le.s2 = ev.ProviderID, ev.ModelID
		le.flags |= logProvider
	}
	others := 0
	keep := func(o any) {
		le.other = o
		others++
	}
	if ev.Tool != nil {
		keep(ev.Tool)
	}
	if ev.Queue != nil {
		keep(ev.Queue)
	}
	if ev.Usage != nil {
		keep(ev.Usage)
	}
	if ev.Compaction != nil {
		keep(ev.Compaction)
	}
	if ev.lazy != nil {
		keep(ev.lazy)
	}
	text := ev.Text != "" || ev.Delta != ""
	if !sok || !pok || others > 1 || (text && le.flags&logProvider != 0) {
		whole := *ev
		whole.Run = run
		le.other, le.s1, le.s2, le.run, le.msg = &whole, "", "", nil, nil
		le.flags |= logWhole
	}
	return le
}

// logRun is the run record the log keeps of run: a copy without Input,
// which is the run's whole input (its message, images, client tools) and
// which no watcher reads; the log holds an ended run for minutes. run
// itself is shared with the event's subscribers and is not changed.
func logRun(run *store.Run) *store.Run {
	if run == nil || run.Input == nil {
		return run
	}
	c := *run
	c.Input = nil
	return &c
}

// code is s's index in names; false when names lacks it.
func code(names []string, s string) (uint8, bool) {
	i := slices.Index(names, s)
	return uint8(max(i, 0)), i >= 0
}

// event returns the Event le was made from, SessionSeq included.
func (le *logEvent) event() Event {
	if le.flags&logWhole != 0 {
		ev := *le.other.(*Event)
		ev.Seq, ev.SessionSeq = le.seq, le.sessionSeq
		return ev
	}
	id := le.id
	ev := Event{RunID: id.RunID, SessionKey: id.SessionKey, SessionID: id.SessionID, AgentID: id.AgentID,
		Lane: id.Lane, SpawnedBy: id.SpawnedBy, Seq: le.seq, SessionSeq: le.sessionSeq, Time: le.time,
		Stream: logStreams[le.stream], Phase: logPhases[le.phase], Run: le.run, Message: le.msg,
		remote: le.flags&logRemote != 0, recovered: le.flags&logRecovered != 0}
	if le.flags&logProvider != 0 {
		ev.ProviderID, ev.ModelID = le.s1, le.s2
	} else {
		ev.Text, ev.Delta = le.s1, le.s2
	}
	switch o := le.other.(type) {
	case *ToolEvent:
		ev.Tool = o
	case *QueueEvent:
		ev.Queue = o
	case *transcript.Usage:
		ev.Usage = o
	case *CompactionEvent:
		ev.Compaction = o
	case func() (Event, error):
		ev.lazy = o
	}
	return ev
}

// isEnd reports whether le is a run's end.
func (le *logEvent) isEnd() bool {
	if le.flags&logWhole != 0 {
		return isEnd(*le.other.(*Event))
	}
	return logStreams[le.stream] == StreamLifecycle && logPhases[le.phase] == PhaseEnd
}

// isPostOf reports whether le is the post runID.
func (le *logEvent) isPostOf(runID string) bool {
	if le.flags&logWhole != 0 {
		ev := le.other.(*Event)
		return ev.Stream == StreamPost && ev.RunID == runID
	}
	return logStreams[le.stream] == StreamPost && le.id.RunID == runID
}
