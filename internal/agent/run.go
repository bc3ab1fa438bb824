package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/telemetry"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// execute runs one queued run to its end. Errors never escape: every
// outcome is recorded on the run.
//
// collected are collect-mode runs queued behind runID: their messages join
// runID's in one collected turn, and they end with it. created is the run's
// record as this node's Submit stored it, or nil: then it is read.
//
// runCtx and cancel are the run's: drain registers cancel in r.active in
// the same critical section that makes the run its lane's active one, so
// an Abort or an interrupt that finds the run active always finds its
// cancel func too.
func (r *Runner) execute(runCtx context.Context, cancel context.CancelCauseFunc, runID string, collected []string, created *store.Run) {
	defer cancel(nil)
	defer func() {
		r.mu.Lock()
		delete(r.active, runID)
		r.mu.Unlock()
	}()

	// A run this node just stored need not be read back: StartRun checks
	// in its transaction that it is still queued. What may act on a run
	// aborted meanwhile before that check (a compaction, re-creating a
	// vanished session) reads it first.
	queued := created
	readQueued := func() bool {
		err := r.untilStoreAnswers(runID, "read", func(ctx context.Context) error {
			var err error
			queued, err = r.cfg.Store.GetRun(ctx, runID)
			return err
		})
		if err != nil {
			r.log.Error("run start failed", "runId", runID, "err", err)
			return false
		}
		return queued.Status == store.RunQueued // else aborted while queued, or a duplicate enqueue
	}
	if queued == nil && !readQueued() {
		return
	}
	if err := r.holdFence(runID, queued.SessionKey); err != nil {
		// The run stays queued for the node that holds its lane now.
		r.log.Warn("run not started: this node no longer holds its lane", "runId", runID, "err", err)
		return
	}
	defer r.dropFence(runID)
	bg := r.writeCtx(runID) // store writes that must land even after cancel
	var in Input
	if err := json.Unmarshal(queued.Input, &in); err != nil {
		r.finish(&runState{run: queued}, nil, store.RunError, "decode run input: "+err.Error(), provider.StopError, transcript.Usage{})
		return
	}
	if in.Compact != nil {
		if created != nil && !readQueued() {
			return
		}
		r.executeCompact(runCtx, queued, &in)
		return
	}
	// The session normally exists (Submit made it); SystemSent is recorded
	// with the run's end.
	var sess *store.Session
	err := r.untilStoreAnswers(runID, "session", func(ctx context.Context) error {
		var err error
		sess, err = r.cfg.Store.GetSession(ctx, queued.SessionKey)
		if err != nil || sess.SessionID == "" {
			if created != nil {
				created = nil
				if !readQueued() {
					return errNotQueued
				}
			}
			sess, err = r.ensureRunSession(ctx, queued)
		}
		return err
	})
	if errors.Is(err, errNotQueued) {
		return
	}
	if err != nil && r.storeDown(runID) {
		r.log.Warn("run left queued: the store does not answer", "runId", runID, "err", err)
		return
	}
	if err != nil {
		r.finish(&runState{run: queued}, nil, store.RunError, err.Error(), provider.StopError, transcript.Usage{})
		return
	}
	summary := r.takeOverflow(queued.SessionKey)
	var msgs []store.Message
	if len(collected) > 0 {
		texts := []string{in.Message}
		for _, id := range collected {
			if c, err := r.cfg.Store.GetRun(bg, id); err == nil && c.Status == store.RunQueued {
				var cin Input
				if json.Unmarshal(c.Input, &cin) == nil {
					texts = append(texts, cin.Message)
				}
			}
		}
		in.Message = policy.CollectPrompt(summary, texts)
	} else if summary != "" {
		// The summary of what the cap dropped is a synthetic followup
		// ahead of this run's input.
		sm := r.inputMessage(&Input{Message: summary, Provenance: &Provenance{Kind: "queue_overflow"}}, runID)
		msgs = append(msgs, sm)
	}
	// The run starts and its input enters the transcript in one
	// transaction: whatever happens next (a model that cannot run, a crash),
	// the accepted message is in the session's history exactly once.
	um := r.inputMessage(&in, runID)
	if len(collected) > 0 {
		// The collected runs are answered by this one: the message says
		// so, for whoever looks for their reply (a waiting sessions_send).
		if ids, err := json.Marshal(collected); err == nil {
			um.Entry.Message.Meta.Extra = map[string]json.RawMessage{transcript.MetaCarries: ids}
		}
	}
	msgs = append(msgs, um)
	var (
		run    *store.Run
		stored []store.Message
	)
	err = r.untilStoreAnswers(runID, "start", func(ctx context.Context) error {
		var err error
		run, stored, err = r.cfg.Store.StartRun(ctx, runID, r.now(), sess.SessionID, msgs)
		return err
	})
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrFenced) {
		return // aborted or started meanwhile
	}
	if err != nil && r.storeDown(runID) {
		// Still queued in the store: it runs when the store answers
		// again (after a restart, or on the node that adopts the lane);
		// no client is told it failed.
		r.log.Warn("run left queued: the store does not answer", "runId", runID, "err", err)
		return
	}
	if err != nil {
		r.log.Error("run start failed", "runId", runID, "err", err)
		r.finish(&runState{run: queued}, nil, store.RunError, err.Error(), provider.StopError, transcript.Usage{})
		return
	}
	r.begin(runCtx, cancel, run, stored, &in, sess, collected)
}

// begin runs a run stored as started, with its input messages stored, to
// its end; the collected runs join it.
func (r *Runner) begin(runCtx context.Context, cancel context.CancelCauseFunc, run *store.Run, stored []store.Message, in *Input, sess *store.Session, collected []string) {
	r.runStarted(runCtx, r.started(cancel, run, stored, in, sess, collected), in, sess)
}

// started is the start of begin, up to the run's lifecycle start event:
// its state, the collected runs joined, the start emitted.
func (r *Runner) started(cancel context.CancelCauseFunc, run *store.Run, stored []store.Message, in *Input, sess *store.Session, collected []string) *runState {
	for _, m := range stored {
		r.windows.appended(m)
	}
	// One INFO line per run ("run ended" below, which names the agent
	// too): the start is DEBUG, its two writes (console and log file)
	// were 2% of a warm turn's CPU.
	logStarted(r.log, run)
	r.setLive(run.RunID)
	st := &runState{run: run, spawnedBy: sess.SpawnedBy, cancel: cancel, step: in.Step}
	for _, id := range collected {
		r.carry(st, sess.SessionID, id, false)
	}
	r.emit(st, Event{Stream: StreamLifecycle, Phase: PhaseStart})
	return st
}

// inputMessage is the transcript entry of a run's input: a user message
// with the input's idempotency key and provenance, tagged with the run id.
func (r *Runner) inputMessage(in *Input, runID string) store.Message {
	now := r.now()
	user := transcript.NewUserMessage(in.Message, now)
	for _, img := range in.Images {
		user.Content.Blocks = append(user.Content.Blocks, transcript.Block{Type: transcript.BlockImage, Data: img.Data, MimeType: img.MimeType})
	}
	user.IdempotencyKey = in.IdempotencyKey
	if p := in.Provenance; p != nil {
		user.Provenance = &transcript.Provenance{Kind: p.Kind, SourceSessionKey: p.SourceSessionKey, SourceChannel: p.SourceChannel, SourceTool: p.SourceTool}
		if c := in.Chain; c != nil {
			user.Provenance.ChainID, user.Provenance.ChainHops = c.ID, c.Hops
		}
		user.Provenance.Untrusted = in.Untrusted()
	}
	user.Meta = &transcript.Meta{RunID: runID}
	return store.Message{Entry: transcript.MessageEntry(user, now), Role: user.Role, RunID: runID}
}

// ensureRunSession re-creates the session of a run if it vanished.
func (r *Runner) ensureRunSession(ctx context.Context, run *store.Run) (*store.Session, error) {
	return r.cfg.Store.UpdateSession(ctx, run.SessionKey, true, func(s *store.Session) error {
		if s.SessionID == "" {
			s.SessionID = r.newID()
		}
		if s.AgentID == "" {
			s.AgentID = run.AgentID
		}
		s.UpdatedAt = r.now()
		return nil
	})
}

// runStarted runs a started run to its end.
func (r *Runner) runStarted(runCtx context.Context, st *runState, in *Input, sess *store.Session) {
	run := st.run
	runID := run.RunID
	timeout := in.Timeout
	if timeout == 0 {
		timeout = r.cfg.DefaultTimeout
	}
	if timeout > 0 {
		var cancelT context.CancelFunc
		runCtx, cancelT = context.WithTimeoutCause(runCtx, timeout, errTimedOut{timeout})
		defer cancelT()
	}

	link := telemetry.Link{ChainID: runID}
	if c := in.Chain; c != nil && c.ID != "" {
		link = telemetry.Link{ChainID: c.ID, Parent: c.Span, Hops: c.Hops}
	}
	runCtx, span := r.cfg.Tracer.StartRun(runCtx, telemetry.Run{Link: link, SessionKey: run.SessionKey, AgentID: sess.AgentID, RunID: runID, Lane: run.Lane})
	defer func() {
		span.SetString(telemetry.AttrStatus, string(st.run.Status))
		if st.run.Status != store.RunOK {
			span.Fail(st.run.Error)
		}
		span.End(nil)
	}()

	// The run counts against its session tree's budgets (and its spawn
	// ancestors'); they are checked before each model call.
	path, err := r.budgetPath(runCtx, sess, runID)
	if err != nil {
		r.finish(st, nil, store.RunError, err.Error(), provider.StopError, transcript.Usage{})
		return
	}
	r.budgetStart(path)
	st.budget = path

	info := RunInfo{RunID: runID, SessionKey: run.SessionKey, AgentID: sess.AgentID, Lane: run.Lane, Session: sess, Input: in}
	last, usage, stop, err := r.loop(runCtx, st, info)
	status, errText := store.RunOK, ""
	if err != nil {
		status, errText = classify(runCtx, err)
		if stop == "" || stop == provider.StopEnd {
			stop = provider.StopError
			if status == store.RunAborted || status == store.RunTimeout {
				stop = provider.StopAborted
			}
		}
	}
	// The background summary is marked in flight before the run is final,
	// so whoever waits for the run sees it (and the session's next turn
	// finds it) rather than racing its start.
	r.maybeBackground(st)
	r.finish(st, last, status, errText, stop, usage)
}

// errNotQueued ends a run's start: the run is no longer queued.
var errNotQueued = errors.New("run no longer queued")

type errTimedOut struct{ d time.Duration }

func (e errTimedOut) Error() string { return "run timed out after " + e.d.String() }

// classify maps a run error to a terminal status and error text.
func classify(ctx context.Context, err error) (store.RunStatus, string) {
	cause := context.Cause(ctx)
	var to errTimedOut
	switch {
	case errors.As(cause, &to):
		return store.RunTimeout, to.Error()
	case errors.Is(cause, errAborted):
		return store.RunAborted, "aborted"
	case errors.Is(cause, errShutdown):
		return store.RunAborted, errShutdown.Error()
	case errors.Is(cause, errFenced), errors.Is(err, errFenced):
		return store.RunAborted, InterruptedError
	}
	return store.RunError, err.Error()
}

// logStarted logs a run's DEBUG line. The level is asked first: the
// arguments of a dropped line were boxed (three allocations a turn) all
// the same.
func logStarted(log *slog.Logger, run *store.Run) {
	ctx := context.Background()
	if !log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	log.LogAttrs(ctx, slog.LevelDebug, "run started",
		slog.String("runId", run.RunID), slog.String("sessionKey", run.SessionKey), slog.String("agentId", run.AgentID))
}

// logEnded logs a run's one INFO line. Its attributes are typed and in an
// array of their own: no []any grown past its first size, no boxed
// numbers.
func logEnded(log *slog.Logger, fin *store.Run) {
	var buf [9]slog.Attr
	attrs := append(buf[:0], slog.String("runId", fin.RunID), slog.String("sessionKey", fin.SessionKey),
		slog.String("agentId", fin.AgentID), slog.String("status", string(fin.Status)),
		slog.Int64("inputTokens", fin.Usage.Input), slog.Int64("outputTokens", fin.Usage.Output),
		slog.Int64("totalTokens", fin.Usage.TotalTokens))
	if !fin.StartedAt.IsZero() && !fin.EndedAt.IsZero() {
		attrs = append(attrs, slog.Int64("durationMs", fin.EndedAt.Sub(fin.StartedAt).Milliseconds()))
	}
	if fin.Error != "" {
		attrs = append(attrs, slog.String("error", fin.Error))
	}
	log.LogAttrs(context.Background(), slog.LevelInfo, "run ended", attrs...)
}

// finish records the terminal state, wakes waiters and emits lifecycle end.
func (r *Runner) finish(st *runState, last *transcript.Message, status store.RunStatus, errText, stop string, usage transcript.Usage) {
	bg := r.writeCtx(st.run.RunID)
	res := store.RunResult{Status: status, Error: errText, StopReason: stop, Usage: usage, EndedAt: r.now()}
	if r.cfg.OnFinish != nil {
		r.cfg.OnFinish(bg, st.run, &res, last)
	}
	fin, err := r.endRun(st.run.RunID, res, st.final)
	st.final = nil
	if err != nil && openLost(st) {
		// Its caller was told the run did not start; it ends here,
		// unseen.
		r.log.Warn("run dropped: its start was not stored", "runId", st.run.RunID)
		r.notLive(st.run.RunID)
		return
	}
	if err != nil {
		if !errors.Is(err, store.ErrFenced) {
			r.log.Error("run finish failed", "runId", st.run.RunID, "err", err)
		}
		if got, gerr := r.cfg.Store.GetRun(bg, st.run.RunID); gerr == nil {
			fin = got
		} else {
			fin = st.run.Clone()
		}
	}
	st.run = fin
	if !fin.Status.Terminal() {
		// This node could not record the end (it lost the lane, or the
		// store went away as it shut down): the node that adopts the
		// lane, or the next start, records it and tells the clients.
		r.log.Warn("run end left to the node that adopts its lane", "runId", fin.RunID, "status", fin.Status)
		r.notLive(fin.RunID)
		r.finishCarried(st, last, res)
		return
	}
	if !fin.StartedAt.IsZero() && !fin.EndedAt.IsZero() {
		r.durations.observe(fin.SessionKey, fin.EndedAt.Sub(fin.StartedAt))
	}
	logEnded(r.log, fin)
	// Subscribers see the end before waiters wake, so a client that waited
	// has already been sent the final events.
	r.emit(st, Event{Stream: StreamLifecycle, Phase: PhaseEnd, Run: fin, Message: last})
	r.wakeEnded(fin.RunID, fin)
	r.finishCarried(st, last, res)
}

// loop is the provider↔tool loop. It returns the last assistant message, the
// summed usage and the last stop reason.
func (r *Runner) loop(ctx context.Context, st *runState, info RunInfo) (last *transcript.Message, usage transcript.Usage, stop string, err error) {
	in := info.Input
	model, err := r.cfg.Models.ResolveModel(info.AgentID, cmp.Or(in.Model, info.Session.Model))
	if err != nil {
		return nil, usage, "", err
	}
	if r.cfg.Preflight != nil {
		if err := r.cfg.Preflight(ctx, info); err != nil {
			return nil, usage, "", err
		}
	}
	var toolSet *tools.Set
	if r.cfg.Tools != nil {
		toolSet = r.cfg.Tools(ctx, info)
	}
	var system string
	if r.cfg.SystemPrompt != nil {
		system = r.cfg.SystemPrompt(ctx, info)
	}
	if in.ExtraSystemPrompt != "" {
		if system != "" {
			system += "\n\n"
		}
		system += in.ExtraSystemPrompt
	}
	sessionID := info.Session.SessionID

	defs, clientTools, err := withClientTools(r.toolDefs.of(toolSet, len(in.ClientTools)), in.ClientTools)
	if err != nil {
		return nil, usage, "", err
	}
	caller := tools.Caller{
		SessionKey: info.SessionKey, AgentID: info.AgentID, RunID: info.RunID,
		Channel: in.Channel, AccountID: in.AccountID, To: in.To, ThreadID: in.ThreadID,
		Chain: tools.Chain{ID: info.RunID, Path: []string{info.SessionKey}},
	}
	if in.Chain != nil && in.Chain.ID != "" {
		caller.Chain = *in.Chain
	}
	// Tools read who is speaking from the caller's chain (a run stored
	// before chains carried it gets its door's origin here).
	caller.Chain = caller.Chain.Taint(in.Untrusted())
	if r.cfg.Workspace != nil {
		caller.Workspace = r.cfg.Workspace(ctx, info)
	}
	budget, err := r.newBudget(model)
	if err != nil {
		return nil, usage, "", err
	}
	// The memory flush and a background summary act with the agent's own
	// tools (never the caller's) and the run's system prompt.
	ft := &flushTurn{info: info, system: system, defs: defs[: len(defs)-len(clientTools) : len(defs)-len(clientTools)], tools: toolSet, caller: caller}
	mkey := modelKey(model) // made once: each is an allocation
	st.bg = &bgTrigger{sess: info.Session, model: model, budget: budget, flush: ft,
		fixed: r.calib.Scale(mkey, r.counter(model).Request(&provider.Request{System: system, Tools: defs}))}
	for step := 0; ; step++ {
		if step >= r.cfg.MaxSteps {
			return last, usage, stop, fmt.Errorf("step limit reached (%d model turns)", r.cfg.MaxSteps)
		}
		// Steered messages waiting now join before the model call.
		r.takeSteers(st, sessionID)
		req := &provider.Request{
			Model:     model.ModelID,
			System:    system,
			Tools:     defs,
			MaxTokens: in.Sampling.CapMaxTokens(model.MaxTokens),
			Thinking:  cmp.Or(in.Thinking, info.Session.ThinkingLevel),
			Sampling:  in.Sampling,
		}
		if err := r.budgetCheck(st.budget); err != nil {
			return last, usage, StopBudget, err
		}
		if err := r.checkClaim(st.run.RunID); err != nil {
			return last, usage, stop, err
		}
		turnStart := ft
		if step > 0 {
			turnStart = nil
		}
		est, err := r.prepare(ctx, st, info.Session, model, budget, req, turnStart)
		if err != nil {
			return last, usage, stop, err
		}
		st.bg.est = r.calib.Scale(mkey, est)
		r.emit(st, Event{Stream: StreamLifecycle, Phase: PhaseModel, ProviderID: model.ProviderID, ModelID: model.ModelID})
		reqStart := r.now()
		mctx, mspan := r.cfg.Tracer.StartModel(ctx, model.ProviderID, model.ModelID)
		msg, turnUsage, terr := r.turn(mctx, st, model, req)
		mspan.Usage(turnUsage.Input, turnUsage.Output)
		mspan.End(terr)
		usage.Add(turnUsage)
		r.budgetCharge(st.budget, turnUsage)
		if terr == nil && r.cfg.Pruning.Enabled {
			r.prunes.record(sessionID, reqStart, budget.pruned)
		}
		if terr == nil && turnUsage.Input > 0 {
			r.calib.Observe(mkey, int64(est), turnUsage.Input+turnUsage.CacheRead+turnUsage.CacheWrite)
		}
		if terr != nil && msg == nil && ctx.Err() == nil && compaction.IsOverflow(terr.Error()) {
			if rerr := r.recoverOverflow(ctx, st, info.Session, model, budget, terr); rerr != nil {
				return last, usage, stop, rerr
			}
			step-- // the retried call is the same model turn
			continue
		}
		var calls []transcript.Block
		if msg != nil {
			calls = msg.Content.ToolCalls() // executed with their original arguments
			msg = r.redactCalls(msg)
			stop = msg.StopReason
			if terr == nil && len(calls) == 0 {
				// The run ends with this message: it is stored with
				// the run's end, one commit for the turn.
				st.final = r.runMessage(sessionID, st.run.RunID, msg)
			} else if err := r.append(sessionID, st.run.RunID, msg); err != nil {
				return last, usage, stop, err
			}
			last = msg
			if turnUsage != (transcript.Usage{}) {
				u := turnUsage
				r.emit(st, Event{Stream: StreamUsage, Usage: &u})
			}
		}
		if terr != nil {
			return last, usage, stop, terr
		}
		if len(calls) == 0 {
			return last, usage, stop, nil
		}
		// Calls of the caller's own tools are answered by the caller: the
		// run ends with them pending once the agent's calls are done.
		calls, pending := splitClientCalls(calls, clientTools)
		steered := false
		for i, call := range calls {
			// A steered message waiting before a call starts: the calls
			// not yet started are skipped, the message joins next.
			if r.userSteerWaiting(st) {
				if err := r.awaitResult(st); err != nil {
					return last, usage, stop, err
				}
				if err := r.skipCalls(st, sessionID, append(calls[i:], pending...)); err != nil {
					return last, usage, stop, err
				}
				steered = true
				break
			}
			if err := r.callTool(ctx, st, toolSet, caller, sessionID, call, i < len(calls)-1); err != nil {
				_ = r.awaitResult(st) // the call's error is the run's
				return last, usage, stop, err
			}
		}
		if err := r.awaitResult(st); err != nil {
			return last, usage, stop, err
		}
		if err := ctx.Err(); err != nil {
			return last, usage, stop, err
		}
		if len(pending) > 0 && !steered {
			return last, usage, stop, nil
		}
	}
}

// turn streams one model turn and builds the assistant message. On error
// the partial message (if any text or thinking arrived) is returned too so
// the transcript keeps it.
func (r *Runner) turn(ctx context.Context, st *runState, model Model, req *provider.Request) (*transcript.Message, transcript.Usage, error) {
	// What the stream brings is in one variable, and the sequence is
	// called with its yield function rather than ranged over: the body is
	// a closure the provider's iterator calls, so each variable it captures
	// is an allocation of its own (and a range adds its state's).
	var a turnAcc
	model.Provider.Stream(ctx, req)(func(ev *provider.Event, err error) bool {
		if a.err != nil {
			return false // a sequence that goes on after it was told to stop
		}
		if err != nil {
			a.err = err
			return false
		}
		switch ev.Type {
		case provider.EventTextDelta:
			a.text.WriteString(ev.Text)
			r.emit(st, Event{Stream: StreamAssistant, Text: a.text.String(), Delta: ev.Text})
		case provider.EventThinkingDelta:
			a.thinking.WriteString(ev.Text)
		case provider.EventToolCall:
			a.calls = append(a.calls, *ev.ToolCall)
		case provider.EventUsage:
			a.usage = *ev.Usage
		case provider.EventDone:
			a.done = ev
		}
		return true
	})
	text, thinking, calls, pu, done, streamErr := &a.text, &a.thinking, a.calls, a.usage, a.done, a.err
	if streamErr == nil && done == nil {
		streamErr = ctx.Err()
		if streamErr == nil {
			streamErr = errors.New("model stream ended without completing")
		}
	}
	usage := transcript.Usage{
		Input: pu.Input, Output: pu.Output, CacheRead: pu.CacheRead, CacheWrite: pu.CacheWrite, TotalTokens: pu.Total(),
	}
	usage.Cost = model.Price.Cost(usage)
	var blocks []transcript.Block
	if n := len(calls) + min(thinking.Len(), 1) + min(text.Len(), 1); n > 0 {
		blocks = make([]transcript.Block, 0, n)
	}
	if thinking.Len() > 0 {
		s := thinking.String()
		blocks = append(blocks, transcript.Block{Type: transcript.BlockThinking, Thinking: &s})
	}
	if text.Len() > 0 {
		blocks = append(blocks, transcript.TextBlock(text.String()))
	}
	if streamErr != nil {
		// An interrupted call's partial reply is not delivered.
		if len(blocks) == 0 || errors.Is(context.Cause(ctx), errInterrupted) {
			return nil, usage, streamErr
		}
		msg := r.assistant(model, blocks, usage)
		msg.StopReason = provider.StopError
		if ctx.Err() != nil {
			msg.StopReason = provider.StopAborted
		}
		msg.ErrorMessage = streamErr.Error()
		return msg, usage, streamErr
	}
	for _, c := range calls {
		blocks = append(blocks, transcript.ToolCallBlock(c.ID, c.Name, c.Arguments))
	}
	msg := r.assistant(model, blocks, usage)
	msg.StopReason = cmp.Or(done.StopReason, provider.StopEnd)
	if len(calls) > 0 {
		msg.StopReason = provider.StopToolUse
	}
	msg.ResponseID = done.ResponseID
	return msg, usage, nil
}

// turnAcc is what a model turn's stream has brought so far.
type turnAcc struct {
	text, thinking strings.Builder
	calls          []provider.ToolCall
	usage          provider.Usage
	done           *provider.Event
	err            error
}

func (r *Runner) assistant(model Model, blocks []transcript.Block, usage transcript.Usage) *transcript.Message {
	msg := transcript.NewAssistantMessage(blocks, r.now())
	msg.API = model.API
	msg.Provider = model.ProviderID
	msg.Model = model.ModelID
	u := usage
	msg.Usage = &u
	return msg
}

// redactCalls returns msg with its tool-call arguments passed through
// Config.RedactToolCall (a copy when anything changes).
func (r *Runner) redactCalls(msg *transcript.Message) *transcript.Message {
	if r.cfg.RedactToolCall == nil || msg.Content.String != nil {
		return msg
	}
	var blocks []transcript.Block
	for i, b := range msg.Content.Blocks {
		if b.Type != transcript.BlockToolCall {
			continue
		}
		red := r.cfg.RedactToolCall(b.Name, b.Arguments)
		if string(red) == string(b.Arguments) {
			continue
		}
		if blocks == nil {
			blocks = append([]transcript.Block(nil), msg.Content.Blocks...)
		}
		blocks[i].Arguments = red
	}
	if blocks == nil {
		return msg
	}
	c := *msg
	c.Content = transcript.BlockContent(blocks...)
	return &c
}

// callTool runs one tool call and stores its result. With more (another
// call of the same model turn follows) the result is written while that
// call runs (its write and the next call's writes share a group commit),
// and the caller awaits it (awaitResult) before anything else of the run
// is stored or the model called. A result's event is sent once its write
// returned (never for a result a crash could lose): the last call's
// before callTool returns, an earlier one's by its write's goroutine,
// which holds the run's later events until then so that they keep their
// order.
func (r *Runner) callTool(ctx context.Context, st *runState, set *tools.Set, caller tools.Caller, sessionID string, call transcript.Block, more bool) error {
	r.emit(st, Event{Stream: StreamTool, Phase: PhaseStart, Tool: &ToolEvent{Name: call.Name, CallID: call.ID, Args: call.Arguments}})
	ctx, span := r.cfg.Tracer.StartTool(ctx, call.Name, call.ID)
	defer span.End(nil)
	if id := span.ID(); id != "" {
		caller.Chain.Span = id // messages and spawns this call makes continue under it
	}
	var res *tools.Result
	t, ok := set.Get(call.Name)
	if !ok {
		res = tools.ErrorResult(call.Name, tools.NotFoundError(call.Name))
	} else if err := r.checkClaim(st.run.RunID); err != nil {
		// The claim moved: the call does not start (and its result is
		// not recorded; the store would refuse it).
		return err
	} else {
		var err error
		caller.ToolCallID = call.ID
		cctx := tools.WithCaller(ctx, caller)
		if w := st.written; w != nil {
			cctx = tools.WithWritten(cctx, func(ctx context.Context) error {
				select {
				case <-w:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
		}
		res, err = callSafely(cctx, t, call.Arguments)
		if err != nil {
			res = tools.ErrorResult(call.Name, err)
		}
	}
	if res.IsError {
		span.Fail(res.Text)
	}
	details, err := json.Marshal(res.Details)
	if err != nil {
		details = nil
	}
	if mask := r.cfg.MaskText; mask != nil {
		res, details = maskResult(res, details, mask)
	}
	msg := transcript.NewToolResult(call.ID, call.Name, res.Text, details, res.IsError, r.now())
	if len(res.Blocks) > 0 {
		msg.Content = transcript.BlockContent(resultBlocks(res.Blocks)...)
	}
	// The previous call's result first: results are stored in call order.
	if err := r.awaitResult(st); err != nil {
		return err
	}
	ev := Event{Stream: StreamTool, Phase: PhaseResult, Tool: &ToolEvent{Name: call.Name, CallID: call.ID, Args: call.Arguments, Result: res}}
	if more {
		done, written := make(chan error, 1), make(chan struct{})
		runID := st.run.RunID
		st.hold()
		go func() {
			err := r.append(sessionID, runID, msg)
			if err == nil {
				r.release(st, &ev)
			} else {
				r.release(st, nil)
			}
			close(written)
			done <- err
		}()
		st.resultWrite, st.written = done, written
		return nil
	}
	if err := r.append(sessionID, st.run.RunID, msg); err != nil {
		return err
	}
	r.emit(st, ev)
	return nil
}

// awaitResult waits for the tool result write callTool left in flight,
// if any, and returns its error.
func (r *Runner) awaitResult(st *runState) error {
	if st.resultWrite == nil {
		return nil
	}
	err := <-st.resultWrite
	st.resultWrite, st.written = nil, nil
	return err
}

// maskResult returns res and its encoded details with mask applied to
// every text (a copy when anything changes; images are left alone).
func maskResult(res *tools.Result, details []byte, mask func(string) string) (*tools.Result, []byte) {
	out := *res
	out.Text = mask(res.Text)
	if len(res.Blocks) > 0 {
		out.Blocks = make([]tools.Block, len(res.Blocks))
		for i, b := range res.Blocks {
			if b.Type != transcript.BlockImage {
				b.Text = mask(b.Text)
			}
			out.Blocks[i] = b
		}
	}
	if len(details) > 0 {
		if m := mask(string(details)); m != string(details) && json.Valid([]byte(m)) {
			details = []byte(m)
			out.Details = json.RawMessage(details)
		}
	}
	return &out, details
}

// resultBlocks converts a tool's content blocks to transcript blocks.
func resultBlocks(bs []tools.Block) []transcript.Block {
	out := make([]transcript.Block, 0, len(bs))
	for _, b := range bs {
		if b.Type == transcript.BlockImage {
			out = append(out, transcript.Block{Type: transcript.BlockImage, Data: b.Data, MimeType: b.MimeType})
			continue
		}
		out = append(out, transcript.TextBlock(b.Text))
	}
	return out
}

// callSafely calls the tool, turning a panic into an error so one bad tool
// cannot take the gateway down.
func callSafely(ctx context.Context, t tools.Tool, args json.RawMessage) (res *tools.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("tool panicked: %v", p)
		}
	}()
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	res, err = t.Call(ctx, args)
	if err == nil && res == nil {
		res = tools.JSONResult(map[string]any{})
	}
	return res, err
}

// runMessage is m as a transcript entry of run runID in sessionID.
func (r *Runner) runMessage(sessionID, runID string, m *transcript.Message) *store.Message {
	if m.Meta == nil {
		m.Meta = &transcript.Meta{}
	}
	m.Meta.RunID = runID
	return &store.Message{
		SessionID: sessionID,
		Entry:     transcript.MessageEntry(m, r.now()),
		Role:      m.Role,
		RunID:     runID,
	}
}

// storeFinal stores the run's last message now rather than with its end
// (a background summary about to read the transcript needs it).
func (r *Runner) storeFinal(st *runState) error {
	m := st.final
	if m == nil {
		return nil
	}
	stored, err := r.cfg.Store.AppendMessages(r.writeCtx(st.run.RunID), m.SessionID, []store.Message{*m})
	if err != nil {
		return fmt.Errorf("store transcript: %w", err)
	}
	st.final = nil
	for _, m := range stored {
		r.windows.appended(m)
	}
	return nil
}

// append stores one message of the run. It uses a context that survives
// cancellation so an aborted run still records what it produced.
func (r *Runner) append(sessionID, runID string, m *transcript.Message) error {
	stored, err := r.cfg.Store.AppendMessages(r.writeCtx(runID), sessionID, []store.Message{*r.runMessage(sessionID, runID, m)})
	if err != nil {
		return fmt.Errorf("store transcript: %w", err)
	}
	for _, m := range stored {
		r.windows.appended(m)
	}
	return nil
}
