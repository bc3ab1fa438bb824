package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// Queue modes as stored in Input.QueueMode ("" behaves as followup).
const (
	ModeSteer     = string(policy.QueueSteer)
	ModeFollowup  = string(policy.QueueFollowup)
	ModeCollect   = string(policy.QueueCollect)
	ModeInterrupt = string(policy.QueueInterrupt)
)

// SkippedToolResult is the synthetic result of a tool call that was not
// started because a steered message came in (the reference's text).
const SkippedToolResult = "Skipped to process an incoming message."

// droppedByCap is the error recorded on a queued run dropped at the cap.
const droppedByCap = "dropped: session queue is at its cap"

// errInterrupted is the cancellation cause of a run interrupted by a newer
// message; it is an abort whose partial reply is not kept.
var errInterrupted error = interruptedError{}

// interruptedError is errInterrupted's type: it wraps errAborted as
// fmt.Errorf("interrupted by a newer message: %w", errAborted) did, as a
// value the linker lays out (a call would run at every process start).
type interruptedError struct{}

func (interruptedError) Error() string { return "interrupted by a newer message: aborted" }
func (interruptedError) Unwrap() error { return errAborted }

// ErrQueueFull is returned by Submit when the session's queue is at its cap
// and the input's drop policy is "new"; nothing is stored.
var ErrQueueFull = errors.New("queue full")

// overflowState is what drop "summarize" keeps of dropped messages.
type overflowState struct {
	dropped int
	lines   []string
}

// admit applies the input's cap to its session's queue: at the cap, drop
// "new" refuses the input, "old" and "summarize" drop the oldest queued
// runs first (recorded aborted, so the sender sees it).
//
// A repeated input (dup) refuses and drops nothing: it is answered with
// its existing run (errDuplicate).
func (r *Runner) admit(ctx context.Context, in *Input, dup *dupCheck) error {
	if in.QueueCap <= 0 {
		return nil
	}
	r.mu.Lock()
	l, busy := r.lanes[in.SessionKey]
	if !busy {
		r.mu.Unlock()
		return nil
	}
	d := policy.ApplyQueueCap(len(l.queue), in.QueueCap, policy.QueueDrop(in.QueueDrop))
	if (d.Refuse || d.DropOldest > 0) && !dup.checked() {
		r.mu.Unlock()
		if err := dup.check(ctx); err != nil {
			return err
		}
		return r.admit(ctx, in, dup) // the lane moved on meanwhile: look again
	}
	if d.Refuse {
		r.mu.Unlock()
		return fmt.Errorf("agent.Submit: %w: %s", ErrQueueFull, policy.QueueFullError(in.QueueCap))
	}
	// The oldest droppable runs go; kept ones (announced results) stay
	// in place however full the queue is.
	var victims []string
	if d.DropOldest > 0 {
		kept := l.queue[:0:0]
		for _, id := range l.queue {
			if len(victims) < d.DropOldest && !l.keep[id] {
				victims = append(victims, id)
				continue
			}
			kept = append(kept, id)
		}
		if victims != nil {
			l.queue = kept
		}
	}
	for _, id := range victims {
		l.forget(id)
	}
	r.mu.Unlock()
	for _, id := range victims {
		run, err := r.cfg.Store.GetRun(ctx, id)
		if err != nil || run.Status != store.RunQueued {
			continue
		}
		if d.Summarize {
			var vin Input
			if json.Unmarshal(run.Input, &vin) == nil {
				r.mu.Lock()
				l.overflow.dropped++
				l.overflow.lines = append(l.overflow.lines, policy.QueueSummaryLine(vin.Message))
				r.mu.Unlock()
			}
		}
		if err := r.finishQueued(ctx, run, droppedByCap); err != nil {
			return fmt.Errorf("agent.Submit: %w", err)
		}
	}
	return nil
}

// emitQueued tells subscribers that run waits at position behind its
// session's active run.
func (r *Runner) emitQueued(run *store.Run, in *Input, position int) {
	subs := r.subList.Load()
	if subs == nil {
		return
	}
	ev := Event{
		RunID: run.RunID, SessionKey: run.SessionKey, SessionID: run.SessionID, AgentID: run.AgentID, Lane: run.Lane,
		SpawnedBy: in.SpawnedBy, Time: r.now(), Stream: StreamLifecycle, Phase: PhaseQueued,
		Queue: &QueueEvent{Position: position, Mode: cmp.Or(in.QueueMode, ModeFollowup), Message: in.Message},
	}
	for _, sub := range *subs {
		sub.fn(ev)
	}
}

// afterEnqueue carries out the mode of a freshly queued input: interrupt
// aborts the session's active run (its model call is cancelled), and the
// new input runs next.
func (r *Runner) afterEnqueue(_ context.Context, in *Input) {
	if in.QueueMode != ModeInterrupt {
		return
	}
	r.mu.Lock()
	var cancel context.CancelCauseFunc
	if l, ok := r.lanes[in.SessionKey]; ok && l.active != "" && l.active != in.RunID {
		cancel = r.active[l.active]
	}
	r.mu.Unlock()
	if cancel != nil {
		cancel(errInterrupted)
	}
}

// collectQuiet waits until no run has joined the lane for its collect
// debounce window (or the runner shuts down).
func (r *Runner) collectQuiet(l *lane) {
	for {
		r.mu.Lock()
		wait := l.debounce - time.Since(l.lastArrival)
		r.mu.Unlock()
		if wait <= 0 {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-r.ctx.Done():
			t.Stop()
			return
		}
	}
}

// takeCollectLocked removes the collect-mode runs queued after head and
// returns them in order. r.mu is held.
func (l *lane) takeCollectLocked(head string) []string {
	var ids []string
	kept := make([]string, 0, len(l.queue))
	for _, id := range l.queue {
		if id != head && l.modes[id] == ModeCollect && l.untrusted[id] == l.untrusted[head] {
			ids = append(ids, id)
			l.forget(id)
			continue
		}
		kept = append(kept, id)
	}
	l.queue = kept
	return ids
}

// forget drops what the lane knows of a run that left its queue.
func (l *lane) forget(id string) {
	if l.modes[id] == ModeSteer {
		l.steers--
	}
	delete(l.modes, id)
	delete(l.keep, id)
	delete(l.untrusted, id)
	delete(l.delivered, id)
	delete(l.created, id)
}

// steersLocked reports whether queued run id steers into the active run:
// it is in steer mode, and its input is not less trusted than the active
// run's (outside input waits for a turn of its own). r.mu is held.
func (l *lane) steersLocked(id string) bool {
	return l.modes[id] == ModeSteer && (!l.untrusted[id] || l.activeUntrusted)
}

// takeOverflow returns and clears the lane's overflow summary text.
func (r *Runner) takeOverflow(sessionKey string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.lanes[sessionKey]
	if !ok || l.overflow.dropped == 0 {
		return ""
	}
	s := policy.OverflowSummary(l.overflow.dropped, l.overflow.lines)
	l.overflow = overflowState{}
	return s
}

// takeSteers moves the steer-mode runs queued behind the active run st into
// it: each starts with its message entering the transcript (one store
// transaction per message), and ends when st ends. It returns how many it
// took; the caller appends them before its next model call.
func (r *Runner) takeSteers(st *runState, sessionID string) int {
	if st.step {
		return 0 // an internal step: steered input waits for the next turn
	}
	r.mu.Lock()
	l, ok := r.lanes[st.run.SessionKey]
	if !ok || l.active != st.run.RunID || l.steers == 0 {
		r.mu.Unlock()
		return 0
	}
	var ids []string
	kept := l.queue[:0:0]
	for _, id := range l.queue {
		if l.steersLocked(id) {
			ids = append(ids, id)
			l.forget(id)
			continue
		}
		kept = append(kept, id)
	}
	if ids != nil {
		l.queue = kept
	}
	r.mu.Unlock()
	n := 0
	for _, id := range ids {
		if r.carry(st, sessionID, id, true) {
			n++
		}
	}
	return n
}

// userSteerWaiting reports whether a steer-mode run from a person waits
// behind st: only such a steer skips the tool calls of st's current
// assistant message that have not started. Deliveries (announces,
// messages from other sessions) join after the whole batch of calls, and
// an internal step takes no steered input at all.
func (r *Runner) userSteerWaiting(st *runState) bool {
	if st.step {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.lanes[st.run.SessionKey]
	if !ok || l.active != st.run.RunID || l.steers == 0 {
		return false
	}
	for _, id := range l.queue {
		if l.steersLocked(id) && !l.delivered[id] {
			return true
		}
	}
	return false
}

// carry starts the queued run id as part of st. With withInput its input
// message enters the transcript as the run starts.
func (r *Runner) carry(st *runState, sessionID, id string, withInput bool) bool {
	bg := r.writeCtx(st.run.RunID)
	queued, err := r.cfg.Store.GetRun(bg, id)
	if err != nil || queued.Status != store.RunQueued {
		return false
	}
	var msgs []store.Message
	if withInput {
		var in Input
		if err := json.Unmarshal(queued.Input, &in); err != nil {
			r.log.Error("steered input unreadable", "runId", id, "err", err)
			return false
		}
		msgs = append(msgs, r.inputMessage(&in, id))
	}
	run, stored, err := r.cfg.Store.StartRun(bg, id, r.now(), sessionID, msgs)
	if err != nil {
		if !errors.Is(err, store.ErrConflict) {
			r.log.Error("carried run start failed", "runId", id, "err", err)
		}
		return false
	}
	for _, m := range stored {
		r.windows.appended(m)
	}
	r.shareFence(id, r.fenceOf(st.run.RunID))
	cst := &runState{run: run, spawnedBy: st.spawnedBy, cancel: st.cancel}
	r.mu.Lock()
	if st.cancel != nil {
		r.active[id] = st.cancel
	}
	r.mu.Unlock()
	st.carried = append(st.carried, cst)
	r.emit(cst, Event{Stream: StreamLifecycle, Phase: PhaseStart})
	return true
}

// finishCarried ends the runs st carried with st's result.
func (r *Runner) finishCarried(st *runState, last *transcript.Message, res store.RunResult) {
	bg := r.writes
	results := make([]store.RunResult, len(st.carried))
	for i, c := range st.carried {
		results[i] = res
		results[i].Outbox = nil
		if r.cfg.OnFinish != nil {
			r.cfg.OnFinish(bg, c.run, &results[i], last)
		}
	}
	fins, errs := r.finishRuns(st.carried, results)
	for i, c := range st.carried {
		fin, err := fins[i], errs[i]
		r.dropFence(c.run.RunID)
		if err != nil {
			if !errors.Is(err, store.ErrFenced) {
				r.log.Error("carried run finish failed", "runId", c.run.RunID, "err", err)
			}
			fin = c.run.Clone()
		}
		c.run = fin
		r.mu.Lock()
		delete(r.active, fin.RunID)
		r.mu.Unlock()
		if !fin.Status.Terminal() {
			continue // its end is recorded and told by the node that adopts the lane
		}
		r.emit(c, Event{Stream: StreamLifecycle, Phase: PhaseEnd, Run: fin, Message: last})
		r.wakeEnded(fin.RunID, fin)
	}
}

// finishRuns records the ends of runs (results[i] for runs[i]) at the
// same time: their writes share one commit of a store that groups its
// writes (the carrier's lane waits for them before its next run), where
// one after the other took a commit each.
func (r *Runner) finishRuns(runs []*runState, results []store.RunResult) ([]*store.Run, []error) {
	fins, errs := make([]*store.Run, len(runs)), make([]error, len(runs))
	if len(runs) == 1 {
		fins[0], errs[0] = r.finishRun(runs[0].run.RunID, results[0])
		return fins, errs
	}
	var wg sync.WaitGroup
	for i, c := range runs {
		wg.Go(func() { fins[i], errs[i] = r.finishRun(c.run.RunID, results[i]) })
	}
	wg.Wait()
	return fins, errs
}

// skipCalls records the reference's synthetic skipped result for each
// tool call that did not start because a steered message came in.
func (r *Runner) skipCalls(st *runState, sessionID string, calls []transcript.Block) error {
	for _, call := range calls {
		r.emit(st, Event{Stream: StreamTool, Phase: PhaseStart, Tool: &ToolEvent{Name: call.Name, CallID: call.ID, Args: call.Arguments}})
		msg := transcript.NewToolResult(call.ID, call.Name, SkippedToolResult, nil, true, r.now())
		if err := r.append(sessionID, st.run.RunID, msg); err != nil {
			return err
		}
		res := &tools.Result{Text: SkippedToolResult, IsError: true}
		r.emit(st, Event{Stream: StreamTool, Phase: PhaseResult, Tool: &ToolEvent{Name: call.Name, CallID: call.ID, Args: call.Arguments, Result: res}})
	}
	return nil
}

// PendingInput is an accepted message that has not run yet (or was
// cancelled before it ran).
type PendingInput struct {
	// RunID is the run that carries the input.
	RunID string
	// AcceptedAt is when Submit stored it.
	AcceptedAt time.Time
	// State is "queued" or "cancelled".
	State string
	// Message is the input's text.
	Message string
	// Mode is the queue mode it was accepted with.
	Mode string
}

// PendingInputs returns the session's queued inputs in arrival order,
// followed by up to limit of the most recent ones cancelled before they
// ran (aborted, dropped at the cap).
func (r *Runner) PendingInputs(ctx context.Context, sessionKey string, limit int) ([]PendingInput, error) {
	runs, err := r.cfg.Store.ListRuns(ctx, store.RunFilter{SessionKey: sessionKey, Statuses: []store.RunStatus{store.RunQueued}})
	if err != nil {
		return nil, fmt.Errorf("agent.PendingInputs: %w", err)
	}
	aborted, err := r.cfg.Store.ListRuns(ctx, store.RunFilter{SessionKey: sessionKey, Statuses: []store.RunStatus{store.RunAborted}})
	if err != nil {
		return nil, fmt.Errorf("agent.PendingInputs: %w", err)
	}
	var cancelled []*store.Run
	for _, run := range aborted {
		if run.StartedAt.IsZero() {
			cancelled = append(cancelled, run)
		}
	}
	if len(cancelled) > limit {
		cancelled = cancelled[len(cancelled)-limit:]
	}
	out := make([]PendingInput, 0, len(runs)+len(cancelled))
	add := func(run *store.Run, state string) {
		var in Input
		_ = json.Unmarshal(run.Input, &in)
		if in.Compact != nil {
			return // a compaction, not a message
		}
		out = append(out, PendingInput{RunID: run.RunID, AcceptedAt: run.CreatedAt, State: state, Message: in.Message, Mode: in.QueueMode})
	}
	for _, run := range runs {
		add(run, "queued")
	}
	for _, run := range cancelled {
		add(run, "cancelled")
	}
	return out, nil
}

// AbortQueued cancels every queued run of the session (newest first is
// irrelevant: none of them starts) and returns their ids in arrival order.
func (r *Runner) AbortQueued(ctx context.Context, sessionKey string) ([]string, error) {
	runs, err := r.cfg.Store.ListRuns(ctx, store.RunFilter{SessionKey: sessionKey, Statuses: []store.RunStatus{store.RunQueued}})
	if err != nil {
		return nil, fmt.Errorf("agent.AbortQueued: %w", err)
	}
	var ids []string
	for _, run := range runs {
		ok, err := r.Abort(ctx, run.RunID)
		if err != nil {
			return ids, err
		}
		if ok {
			ids = append(ids, run.RunID)
		}
	}
	return ids, nil
}

// AbortActive aborts the session's running run (and what it carries) and
// returns its id, "" when none runs.
func (r *Runner) AbortActive(ctx context.Context, sessionKey string) (string, error) {
	runs, err := r.cfg.Store.ListRuns(ctx, store.RunFilter{SessionKey: sessionKey, Statuses: []store.RunStatus{store.RunRunning}})
	if err != nil {
		return "", fmt.Errorf("agent.AbortActive: %w", err)
	}
	id := ""
	for _, run := range runs {
		ok, err := r.Abort(ctx, run.RunID)
		if err != nil {
			return id, err
		}
		if ok && id == "" {
			id = run.RunID
		}
	}
	return id, nil
}

// sessionQueue is a session's stored /queue override, kept in the session
// entry's extra fields under the reference's SessionEntry names.
type sessionQueue struct {
	QueueMode       string `json:"queueMode,omitempty"`
	QueueDebounceMs *int   `json:"queueDebounceMs,omitempty"`
	QueueCap        *int   `json:"queueCap,omitempty"`
	QueueDrop       string `json:"queueDrop,omitempty"`
}

// SessionQueueOverride returns the /queue override stored on sess (zero
// when none or sess is nil). Every chat.send asks, so the decoding is
// memoised by the extra's content (extraQueue); the numbers it points to
// are copies of the memo's, which the caller may keep or change.
func SessionQueueOverride(sess *store.Session) policy.QueueOverride {
	o := extraQueue.get(sessionExtra(sess))
	if o.DebounceMs != nil {
		v := *o.DebounceMs
		o.DebounceMs = &v
	}
	if o.Cap != nil {
		v := *o.Cap
		o.Cap = &v
	}
	return o
}

// extraQueue is SessionQueueOverride's decoding of a session's extra.
var extraQueue = extraMemo[policy.QueueOverride]{decode: func(extra json.RawMessage) policy.QueueOverride {
	var q sessionQueue
	if len(extra) == 0 || json.Unmarshal(extra, &q) != nil {
		return policy.QueueOverride{}
	}
	o := policy.QueueOverride{DebounceMs: q.QueueDebounceMs, Cap: q.QueueCap}
	o.Mode, _ = policy.NormalizeQueueMode(q.QueueMode)
	o.Drop, _ = policy.NormalizeQueueDrop(q.QueueDrop)
	return o
}}

// SetSessionQueueOverride writes o into sess's extra fields, replacing the
// previous override and keeping every other field.
func SetSessionQueueOverride(sess *store.Session, o policy.QueueOverride) error {
	m := map[string]json.RawMessage{}
	if len(sess.Extra) > 0 {
		if err := json.Unmarshal(sess.Extra, &m); err != nil {
			return fmt.Errorf("session extra fields: %w", err)
		}
	}
	for _, k := range []string{"queueMode", "queueDebounceMs", "queueCap", "queueDrop"} {
		delete(m, k)
	}
	b, err := json.Marshal(sessionQueue{QueueMode: string(o.Mode), QueueDebounceMs: o.DebounceMs, QueueCap: o.Cap, QueueDrop: string(o.Drop)})
	if err != nil {
		return err
	}
	var add map[string]json.RawMessage
	if err := json.Unmarshal(b, &add); err != nil {
		return err
	}
	maps.Copy(m, add)
	if len(m) == 0 {
		sess.Extra = nil
		return nil
	}
	sess.Extra, err = json.Marshal(m)
	return err
}

// QueueSettings resolves what a message to sessionKey does while the
// session is busy: requestMode, the session's /queue override, the
// channel's and the configured messages.queue, the defaults.
func (r *Runner) QueueSettings(ctx context.Context, sessionKey, requestMode, channel string) (policy.QueueSettings, error) {
	sess, err := r.cfg.Store.GetSession(ctx, sessionKey)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return policy.QueueSettings{}, fmt.Errorf("agent.QueueSettings: %w", err)
	}
	return policy.ResolveQueue(policy.QueueInput{
		Request: requestMode, Session: SessionQueueOverride(sess), Channel: channel, Config: r.cfg.Queue,
	}), nil
}

// ApplyQueue stores resolved queue settings on the input.
func (in *Input) ApplyQueue(q policy.QueueSettings) {
	in.QueueMode, in.QueueCap, in.QueueDrop, in.QueueDebounceMs = string(q.Mode), q.Cap, string(q.Drop), q.DebounceMs
}

// ApplyInterSessionQueue stores the settings for a message from another
// session (an agent-to-agent send, an announced result): it follows the
// receiving session's mode, except that it never interrupts that
// session's run (interrupt queues it as a followup, as the reference does
// for announces), and with keep it is never dropped at the cap either.
func (in *Input) ApplyInterSessionQueue(q policy.QueueSettings, keep bool) {
	if q.Mode == policy.QueueInterrupt {
		q.Mode = policy.QueueFollowup
	}
	in.ApplyQueue(q)
	if keep {
		in.QueueCap, in.QueueDrop, in.QueueKeep = 0, "", true
	}
}

// SessionElevatedLevel returns the elevated level stored on sess (the
// reference's SessionEntry elevatedLevel: "on", "ask", "full", "off"), ""
// when none is.
func SessionElevatedLevel(sess *store.Session) string {
	return extraElevated.get(sessionExtra(sess))
}

// SetSessionElevatedLevel stores level on sess ("" clears it), keeping
// every other extra field.
func SetSessionElevatedLevel(sess *store.Session, level string) error {
	m := map[string]json.RawMessage{}
	if len(sess.Extra) > 0 {
		if err := json.Unmarshal(sess.Extra, &m); err != nil {
			return fmt.Errorf("session extra fields: %w", err)
		}
	}
	delete(m, "elevatedLevel")
	if level != "" {
		b, err := json.Marshal(level)
		if err != nil {
			return err
		}
		m["elevatedLevel"] = b
	}
	if len(m) == 0 {
		sess.Extra = nil
		return nil
	}
	var err error
	sess.Extra, err = json.Marshal(m)
	return err
}
