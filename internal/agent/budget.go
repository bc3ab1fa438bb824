package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// summaryAllowance is the room a summary takes in the prompt (the cap on
// its length, in tokens).
const summaryAllowance = compaction.MaxSummaryChars / 4

// budget is one run's context budget for one model.
type budget struct {
	window    int
	threshold int // projected prompt size that compacts first
	// overflows counts compactions after provider refusals in this run.
	overflows int
	lastErr   error
	// pruned is set when tool-result pruning changed the last request.
	pruned bool
}

// newBudget checks the model's window (refused below 4,000 tokens, logged
// below 8,000) and returns the run's budget.
func (r *Runner) newBudget(m Model) (*budget, error) {
	w := modelWindow(m)
	if msg := w.Blocked(); msg != "" {
		return nil, errors.New(msg)
	}
	if msg := w.Warning(modelKey(m)); msg != "" {
		if _, dup := r.warned.LoadOrStore(modelKey(m), true); !dup {
			r.log.Warn(msg)
		}
	}
	return &budget{window: w.Tokens, threshold: compaction.Threshold(w.Tokens, r.cfg.Compaction.ReserveTokens)}, nil
}

// prepare fills req.Messages from the session's context view, compacting
// first when the projected prompt reaches the window minus the reserve. It
// returns the raw (uncalibrated) estimate of the request it built.
//
// At a turn start (ft set) it first applies a background summary that is
// ready, and runs the memory flush when the prompt passed the flush
// threshold. st receives the compaction events and notices.
func (r *Runner) prepare(ctx context.Context, st *runState, sess *store.Session, m Model, b *budget, req *provider.Request, ft *flushTurn) (int, error) {
	if ft != nil {
		r.applyReady(ctx, st, sess, m)
	}
	v, err := r.turnView(ctx, sess.SessionID, st.run.RunID)
	if err != nil {
		return 0, err
	}
	req.Messages = v.turnMessages(r.windows, sess.SessionID)
	cnt := r.counter(m)
	est := cnt.Request(req)
	key := modelKey(m)
	if !r.calib.Known(key) {
		r.seedCalibration(key, cnt, req, v)
	}
	if ft != nil && !r.cfg.Compaction.Disabled && r.calib.Scale(key, est) >= r.flushThreshold(m) && r.flushDue(ctx, ft) {
		// The flush's tools write memory files: not before the run's
		// open is committed (store.Linger).
		if err := store.CommitPending(ctx); err != nil {
			return 0, err
		}
		r.memoryFlush(ctx, st, ft, m, withoutPendingInput(req.Messages))
	}
	overBytes := r.cfg.Compaction.MaxActiveBytes > 0 && messageBytes(req.Messages) >= r.cfg.Compaction.MaxActiveBytes
	if !r.cfg.Compaction.Disabled && (r.calib.Scale(key, est) >= b.threshold || overBytes) {
		fixed := r.calib.Scale(key, est) - r.viewTokens(m, req.Messages)
		opts := compactOpts{ifAbove: b.threshold - fixed, maxTail: r.tailRoom(b, fixed)}
		if overBytes {
			opts.ifAbove = 0 // the byte guard, not the token estimate, asks for it
		}
		r.compactionStart(st, "threshold")
		res, cerr := r.compact(ctx, sess, m, opts)
		r.compactionEnd(st, "threshold", res, cerr, false)
		switch {
		case cerr != nil:
			r.log.Warn("auto-compaction failed; sending the turn as it is", "sessionKey", sess.Key, "err", cerr)
		case res.Compacted:
			r.log.Info("embedded run auto-compaction complete", "sessionKey", sess.Key, "tokensBefore", res.TokensBefore, "tokensAfter", res.TokensAfter)
		}
		if cerr == nil {
			// Re-read even when this call skipped: a background summary
			// may have been applied while it waited.
			if v, err = r.view(ctx, sess.SessionID); err != nil {
				return 0, err
			}
			req.Messages = v.messages()
			est = cnt.Request(req)
		}
	}
	if b.pruned = r.prune(sess.SessionID, m, b, req); b.pruned {
		est = cnt.Request(req)
	}
	if b.overflows > 0 && v.compacted {
		// After a recovery compaction, a view that no longer ends with
		// input for the model continues the task explicitly.
		if n := len(req.Messages); n == 0 || req.Messages[n-1].Role == provider.RoleAssistant ||
			(n == 1 && req.Messages[0].Role == provider.RoleUser) {
			req.Messages = append(req.Messages, provider.Message{Role: provider.RoleUser, Text: compaction.ContinuationPrompt})
			est = cnt.Request(req)
		}
	}
	return est, nil
}

// withoutPendingInput is msgs without the user input at its end (the
// turn's own message, which the flush does not answer).
func withoutPendingInput(msgs []provider.Message) []provider.Message {
	n := len(msgs)
	for n > 0 && msgs[n-1].Role == provider.RoleUser {
		n--
	}
	return msgs[:n:n]
}

// compactionStart emits the compaction start event (and, with notifyUser,
// the reference's notice).
func (r *Runner) compactionStart(st *runState, reason string) {
	if st == nil {
		return
	}
	r.emit(st, Event{Stream: StreamCompaction, Phase: PhaseStart, Compaction: &CompactionEvent{Reason: reason}})
	if r.cfg.Compaction.NotifyUser {
		r.notice(st, compaction.NoticeStart)
	}
}

// compactionEnd emits the compaction end event with its outcome (and the
// notice).
func (r *Runner) compactionEnd(st *runState, reason string, res *CompactResult, err error, willRetry bool) {
	if st == nil {
		return
	}
	ev := &CompactionEvent{Reason: reason, Outcome: "failed"}
	switch {
	case err != nil:
		ev.Error = err.Error()
	case res.Compacted:
		ev.Completed, ev.Outcome, ev.WillRetry = true, "completed", willRetry
	default:
		ev.Outcome, ev.Error = "skipped", res.Reason
	}
	if res != nil {
		ev.TokensBefore, ev.TokensAfter = res.TokensBefore, res.TokensAfter
	}
	r.emit(st, Event{Stream: StreamCompaction, Phase: PhaseEnd, Compaction: ev})
	if r.cfg.Compaction.NotifyUser {
		text := compaction.NoticeEnd
		if !ev.Completed {
			text = compaction.NoticeIncomplete
		}
		r.notice(st, text)
	}
}

// messageBytes is the size of what the model sees of the transcript: the
// text, tool arguments and image data of its messages.
func messageBytes(msgs []provider.Message) int64 {
	var n int64
	for i := range msgs {
		m := &msgs[i]
		n += int64(len(m.Text))
		for _, c := range m.ToolCalls {
			n += int64(len(c.Arguments))
		}
		for _, img := range m.Images {
			n += int64(len(img.Data))
		}
	}
	return n
}

// tailRoom is the most the verbatim tail may weigh beside the fixed part
// of the prompt and a summary.
func (r *Runner) tailRoom(b *budget, fixed int) int {
	return max(b.threshold-fixed-summaryAllowance, 1000)
}

// recoverOverflow compacts after the provider refused a request for its
// size, keeping less verbatim on every attempt. It returns the run's error
// when the turn cannot be recovered.
func (r *Runner) recoverOverflow(ctx context.Context, st *runState, sess *store.Session, m Model, b *budget, refusal error) error {
	b.lastErr = refusal
	if b.overflows >= maxOverflowRetries {
		return unrecoverable(fmt.Sprintf("the provider refused the turn again after %d compactions: %v", b.overflows, refusal))
	}
	b.overflows++
	r.log.Warn("context overflow; compacting and retrying", "sessionKey", sess.Key, "attempt", b.overflows, "err", refusal)
	keep := r.cfg.Compaction.keepRecent() >> b.overflows
	// The refused request was too big: its size bounds the tail.
	r.compactionStart(st, "overflow")
	res, err := r.compact(ctx, sess, m, compactOpts{force: true, keepRecent: keep, maxTail: max(b.threshold/(1<<b.overflows)-summaryAllowance, 500)})
	r.compactionEnd(st, "overflow", res, err, err == nil && res.Compacted)
	if err != nil {
		return unrecoverable(fmt.Sprintf("compaction failed: %v (provider: %v)", err, refusal))
	}
	if !res.Compacted {
		return unrecoverable(fmt.Sprintf("nothing left to compact (provider: %v)", refusal))
	}
	return nil
}

// unrecoverable is the run error of an overflow compaction could not fix.
func unrecoverable(why string) error {
	return errors.New(compaction.UnrecoverableText + " (auto-compaction tried: " + why + ")")
}

// seedCalibration calibrates a model not seen since the gateway started
// from the usage recorded on the view's last assistant message: the
// prompt tokens its provider counted against the estimate of what that
// request held.
func (r *Runner) seedCalibration(key string, cnt compaction.Counter, req *provider.Request, v *contextView) {
	for j := len(v.entries) - 1; j >= 0; j-- {
		msg := v.entries[j].Entry.Message
		if msg == nil || msg.Role != transcript.RoleAssistant || msg.Usage == nil || msg.Usage.Input <= 0 ||
			msg.Provider+"/"+msg.Model != key {
			continue
		}
		before := &contextView{summary: v.summary, entries: v.entries[:j]}
		prev := &provider.Request{System: req.System, Tools: req.Tools, Messages: before.messages()}
		u := msg.Usage
		r.calib.Observe(key, int64(cnt.Request(prev)), u.Input+u.CacheRead+u.CacheWrite)
		return
	}
}
