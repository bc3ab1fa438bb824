package agent

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// Event streams.
const (
	StreamLifecycle = "lifecycle"
	StreamAssistant = "assistant"
	StreamTool      = "tool"
	StreamUsage     = "usage"
	// StreamPost is a message posted into a session without a model turn
	// (Runner.Post); Message holds it and RunID is the post's own id.
	StreamPost = "post"
	// StreamCompaction marks a compaction of the run's session: phase
	// start, then phase end with Compaction set (the reference's
	// "compaction" agent stream).
	StreamCompaction = "compaction"
)

// Phases of lifecycle and tool events.
const (
	PhaseStart = "start" // lifecycle and tool
	PhaseModel = "model" // lifecycle: a model turn begins
	PhaseEnd   = "end"   // lifecycle: the run ended (any terminal status)
	// PhaseQueued (lifecycle) is an accepted run waiting behind its
	// session's active run; Queue says where. Its Seq is 0: the run's own
	// events count from 1 when it starts.
	PhaseQueued = "queued"
	PhaseResult = "result" // tool: the tool returned
)

// Event is one item of a run's event stream. Every event carries the run's
// identity; the other fields depend on Stream and Phase.
type Event struct {
	RunID      string
	SessionKey string
	SessionID  string
	AgentID    string
	Lane       string
	SpawnedBy  string
	// Seq counts events per run from 1.
	Seq int64
	// SessionSeq numbers the events Runner.WatchSession yields (0 on
	// others): rising on this node across all sessions, the position a
	// session watcher resumes after.
	SessionSeq int64
	Time       time.Time

	Stream string
	Phase  string

	// Assistant: Text is the cumulative text of the current model turn,
	// Delta the increment.
	Text  string
	Delta string

	// Model turn start: provider and model.
	ProviderID string
	ModelID    string

	// Tool events.
	Tool *ToolEvent

	// Lifecycle queued: where the run waits.
	Queue *QueueEvent

	// Usage events: the usage of the model turn that just ended.
	Usage *transcript.Usage

	// Compaction end: the outcome.
	Compaction *CompactionEvent

	// Lifecycle end: the final run record, and the last assistant message
	// of the run (nil when it produced none). The record of an end a
	// watcher gets from the event log (Runner.Watch, WatchSession) has no
	// Input: the log keeps it for minutes, and an input can be large
	// (images); the store has it.
	Run     *store.Run
	Message *transcript.Message

	// remote marks an event relayed from another node (see IsRemote).
	remote bool
	// recovered marks an end read from the store (Runner.Watch), whose
	// sequence number is this node's, not the run's.
	recovered bool
	// lazy, set on a relayed event logged undecoded (RelayLogged), makes
	// the event; only RunID, SessionKey and Seq are set until then.
	lazy func() (Event, error)
}

// QueueEvent describes an accepted message waiting for its session.
type QueueEvent struct {
	// Position counts the runs ahead of it, the active one included.
	Position int
	// Mode is the queue mode it was accepted with.
	Mode string
	// Message is its text.
	Message string
}

// ToolEvent describes a tool call (phase start) or its result (phase
// result).
type ToolEvent struct {
	Name   string
	CallID string
	Args   json.RawMessage
	// Result is set for phase result.
	Result *tools.Result
}

// CompactionEvent is the outcome of a compaction (phase end).
type CompactionEvent struct {
	// Reason is "threshold", "overflow" or "background" (a summary
	// written after an earlier turn, applied now).
	Reason    string
	Completed bool
	// WillRetry is set when the refused model call is retried after it.
	WillRetry bool
	// Outcome is "completed", "skipped" or "failed"; Error says why it
	// did not complete.
	Outcome      string
	Error        string
	TokensBefore int
	TokensAfter  int
}

// runState is the per-run state the emitter needs.
type runState struct {
	run       *store.Run
	spawnedBy string
	seq       int64
	// cancel cancels the run (nil for a run that never started).
	cancel context.CancelCauseFunc
	// carried are queued runs whose input this run took (steered in or
	// collected); they end with it.
	carried []*runState
	// budget are the budgeted session trees the run counts against.
	budget []*budgetNode
	// bg is what a background summary after the run needs (nil: none).
	bg *bgTrigger
	// step is set for an internal step (Input.Step): steered input never
	// joins it.
	step bool
	// final is the run's last assistant message while it waits to be
	// stored with the run's end, in one transaction (store.RunEnder).
	final *store.Message
	// open is the run's open while its commit may still be ahead
	// (store.Linger); nil when it was committed before the run started.
	open store.Pending
	// resultWrite is the outcome of the tool result write in flight
	// (callTool with more), nil when none is.
	resultWrite chan error
	// written is closed once the write of resultWrite returned (a tool
	// reading its own transcript waits for it, tools.AwaitWritten).
	written chan struct{}
	// emitMu guards seq, holding and held: the event of a tool result
	// written while the next call runs is sent from its write's
	// goroutine once stored, and the run's events meanwhile are held
	// (holding) and sent after it, in order.
	emitMu  sync.Mutex
	holding bool
	held    []Event
}

func (r *Runner) emit(st *runState, ev Event) {
	if ev.Time.IsZero() {
		ev.Time = r.now()
	}
	st.emitMu.Lock()
	defer st.emitMu.Unlock()
	if st.holding {
		st.held = append(st.held, ev)
		return
	}
	r.sendLocked(st, ev)
}

// hold holds st's events from now on until release (a tool result write
// is in flight).
func (st *runState) hold() {
	st.emitMu.Lock()
	st.holding = true
	st.emitMu.Unlock()
}

// release sends first (when not nil: the stored result) and then the
// events held since hold, and stops holding.
func (r *Runner) release(st *runState, first *Event) {
	st.emitMu.Lock()
	defer st.emitMu.Unlock()
	if first != nil {
		r.sendLocked(st, *first)
	}
	for _, ev := range st.held {
		r.sendLocked(st, ev)
	}
	st.held, st.holding = nil, false
}

// sendLocked numbers ev and sends it to the subscribers; st.emitMu is
// held.
func (r *Runner) sendLocked(st *runState, ev Event) {
	st.seq++
	ev.Seq = st.seq
	ev.RunID = st.run.RunID
	ev.SessionKey = st.run.SessionKey
	ev.SessionID = st.run.SessionID
	ev.AgentID = st.run.AgentID
	ev.Lane = st.run.Lane
	ev.SpawnedBy = st.spawnedBy
	if !r.events.add(ev, r.now()) && isEnd(ev) {
		return // the run's end was seen already (relayed, or from the store)
	}
	subs := r.subList.Load()
	if subs == nil {
		return
	}
	for _, sub := range *subs {
		sub.fn(ev)
	}
}
