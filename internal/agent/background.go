package agent

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/store"
)

// BackgroundConfig configures background summaries: once a turn ends with
// the session's prompt past a soft threshold below the compaction
// threshold, its summary is written after the turn, so the next turn does
// not wait for it; the next turn start applies it.
type BackgroundConfig struct {
	Enabled bool
	// SoftThresholdTokens is the gap below the compaction threshold at
	// which the summary starts (default: a quarter of the threshold, at
	// most 20,000 tokens).
	SoftThresholdTokens int
}

// maxReadySummaries bounds the summaries kept for sessions that have not
// run again (a reset session's summary is never applied).
const maxReadySummaries = 1024

// bgTrigger is what a run leaves for the background summary after it.
type bgTrigger struct {
	sess   *store.Session
	model  Model
	budget *budget
	flush  *flushTurn
	// est is the calibrated size of the run's last request; fixed that of
	// its system prompt and tools.
	est, fixed int
}

// readySummary is a summary written in the background, waiting for the
// next turn start of its transcript.
type readySummary struct {
	// boundaryID is the compaction or reset entry that bounded the view
	// the summary was written from ("" for none); a different boundary at
	// apply time (a reset, another compaction) discards it.
	boundaryID string
	fields     compactionFields
}

// backgroundState tracks background summaries: at most one in flight per
// transcript, and the finished ones until they are applied.
type backgroundState struct {
	mu       sync.Mutex
	inflight map[string]bool          // by session id
	ready    map[string]*readySummary // by session id
}

// take removes and returns the ready summary of sessionID.
func (b *backgroundState) take(sessionID string) *readySummary {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.ready[sessionID]
	delete(b.ready, sessionID)
	return s
}

// start marks a summary of sessionID in flight; false when one already is
// or one is waiting.
func (b *backgroundState) start(sessionID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inflight == nil {
		b.inflight, b.ready = make(map[string]bool), make(map[string]*readySummary)
	}
	if b.inflight[sessionID] || b.ready[sessionID] != nil {
		return false
	}
	b.inflight[sessionID] = true
	return true
}

// done ends the summary of sessionID in flight, storing s when not nil.
func (b *backgroundState) done(sessionID string, s *readySummary) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.inflight, sessionID)
	if s == nil {
		return
	}
	if len(b.ready) >= maxReadySummaries {
		for k := range b.ready { // drop an arbitrary stale one
			delete(b.ready, k)
			break
		}
	}
	b.ready[sessionID] = s
}

// bgThreshold is the calibrated prompt size at which a background summary
// starts.
func (r *Runner) bgThreshold(b *budget) int {
	gap := r.cfg.Compaction.Background.SoftThresholdTokens
	if gap <= 0 {
		gap = min(20000, b.threshold/4)
	}
	return max(b.threshold-gap, 1)
}

// maybeBackground starts the background summary of the run's session
// when the run's last request passed the soft threshold.
func (r *Runner) maybeBackground(st *runState) {
	cc := &r.cfg.Compaction
	t := st.bg
	if !cc.Background.Enabled || cc.Disabled || t == nil || t.budget == nil || t.est < r.bgThreshold(t.budget) {
		return
	}
	id := t.sess.SessionID
	if !r.bg.start(id) {
		return
	}
	if err := r.storeFinal(st); err != nil {
		// The summary reads the transcript without the last reply; the
		// run's end stores it.
		r.log.Warn("background summary: store the last reply first failed", "sessionKey", t.sess.Key, "err", err)
	}
	// The calling run goroutine is counted in r.wg, so adding here never
	// races with Shutdown's Wait.
	r.wg.Go(func() {
		// The session's compaction lock is held while the summary is
		// written and until it is published as ready, so an inline
		// compaction waits for it and then finds it, instead of writing a
		// second summary.
		unlock := r.compactLocks.lock(id)
		defer unlock()
		r.bg.done(id, r.backgroundSummary(r.bgCtx, t))
	})
}

// backgroundSummary runs the memory flush when it is due and writes the
// summary of the session's view as it is now. The caller holds the
// session's compaction lock.
func (r *Runner) backgroundSummary(ctx context.Context, t *bgTrigger) *readySummary {
	sess, m := t.sess, t.model
	v, err := r.view(ctx, sess.SessionID)
	if err != nil {
		r.log.Warn("background summary: read transcript failed", "sessionKey", sess.Key, "err", err)
		return nil
	}
	if t.flush != nil && r.flushDue(ctx, t.flush) {
		r.memoryFlush(ctx, nil, t.flush, m, v.messages())
	}
	items := make([]compaction.Item, len(v.entries))
	for i := range v.entries {
		items[i] = entryItem(&v.entries[i])
	}
	cc := &r.cfg.Compaction
	unscale := func(n int) int { return int(float64(n) / r.calib.Ratio(modelKey(m))) }
	// The tail kept must leave the session below the soft threshold, or
	// the next turn would start another summary at once.
	maxTail := unscale(max(r.bgThreshold(t.budget)-t.fixed-summaryAllowance, 1000))
	cut := compaction.Cut(items, unscale(cc.keepRecent()), maxTail)
	if cc.mode() == compaction.ModeSafeguard {
		cut = compaction.PreserveTurns(items, cut, cc.RecentTurnsPreserve, maxTail)
	}
	if cut == 0 || cut >= len(items) {
		return nil
	}
	latest := latestUserText(v.entries)
	summary, err := r.summarise(ctx, sess, m, v.summary, toProviderMessages(v.entries[:cut]), latest, "")
	if err != nil {
		r.log.Warn("background summary failed; the next turn compacts when it must", "sessionKey", sess.Key, "err", err)
		return nil
	}
	details := map[string]any{"readFiles": []string{}, "modifiedFiles": []string{}, "background": true}
	if latest != "" {
		details["latestUnresolvedUserRequest"] = compaction.LatestRequest(latest)
	}
	f := compactionFields{Summary: summary, FirstKeptEntryID: v.entries[cut].Entry.ID}
	f.Details, _ = json.Marshal(details)
	r.log.Info("background summary ready", "sessionKey", sess.Key, "summarised", cut, "kept", len(v.entries)-cut)
	return &readySummary{boundaryID: v.boundaryID, fields: f}
}

// applyReady applies the session's ready background summary, if any, with
// its compaction events.
func (r *Runner) applyReady(ctx context.Context, st *runState, sess *store.Session, m Model) {
	if !r.bg.has(sess.SessionID) {
		return
	}
	unlock := r.compactLocks.lock(sess.SessionID)
	defer unlock()
	r.applyReadyLocked(ctx, st, sess, m)
}

// has reports whether a summary of sessionID is ready.
func (b *backgroundState) has(sessionID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ready[sessionID] != nil
}

// applyReadyLocked appends the ready summary as a compaction entry (one
// append: the transcript has the old view or the summary and its tail).
// Entries appended since the summary was written are after its first kept
// entry, so they stay in the view. The session's compaction lock is held.
func (r *Runner) applyReadyLocked(ctx context.Context, st *runState, sess *store.Session, m Model) *CompactResult {
	rs := r.bg.take(sess.SessionID)
	if rs == nil {
		return nil
	}
	v, err := r.view(ctx, sess.SessionID)
	if err != nil {
		r.log.Warn("background summary: read transcript failed", "sessionKey", sess.Key, "err", err)
		return nil
	}
	from := -1
	for i := range v.entries {
		if v.entries[i].Entry.ID == rs.fields.FirstKeptEntryID {
			from = i
			break
		}
	}
	if v.boundaryID != rs.boundaryID || from < 0 {
		r.log.Info("background summary discarded: the session changed", "sessionKey", sess.Key)
		return nil
	}
	r.compactionStart(st, "background")
	if hook := r.cfg.OnCompact; hook != nil {
		hook(ctx, CompactBefore, sess, nil)
	}
	f := rs.fields
	f.TokensBefore = r.viewTokens(m, v.messages())
	after := &contextView{summary: f.Summary, compacted: true, entries: v.entries[from:]}
	f.TokensAfter = r.viewTokens(m, after.messages())
	res := &CompactResult{Window: modelWindow(m).Tokens, TokensBefore: f.TokensBefore, TokensAfter: f.TokensBefore}
	if err := r.appendCompaction(ctx, sess, f); err != nil {
		r.compactionEnd(st, "background", res, err, false)
		r.log.Warn("background summary: store failed", "sessionKey", sess.Key, "err", err)
		return nil
	}
	res.Compacted, res.TokensAfter, res.Summary, res.FirstKeptEntryID, res.Details, res.Kept =
		true, f.TokensAfter, f.Summary, f.FirstKeptEntryID, f.Details, len(v.entries)-from
	r.compactionEnd(st, "background", res, nil, false)
	if hook := r.cfg.OnCompact; hook != nil {
		hook(ctx, CompactAfter, sess, res)
	}
	r.log.Info("background compaction applied", "sessionKey", sess.Key, "tokensBefore", f.TokensBefore, "tokensAfter", f.TokensAfter)
	return res
}
