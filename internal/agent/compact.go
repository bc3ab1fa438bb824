package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tokenize"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// CompactionConfig configures context management. The zero value
// compacts proactively in safeguard mode with the reference's defaults
// except the quality guard, which is on only when QualityGuard is set.
type CompactionConfig struct {
	// Disabled turns off proactive (threshold) compaction; overflow
	// recovery and explicit compactions still run.
	Disabled bool
	// Mode is compaction.ModeSafeguard (default) or ModeDefault.
	Mode string
	// Model is a "<provider>/<model>" ref for summaries; "" uses the
	// session's model.
	Model string
	// Timeout bounds one summary call (default 180 s).
	Timeout time.Duration
	// KeepRecentTokens is the tail kept verbatim (default 20000).
	KeepRecentTokens int
	// RecentTurnsPreserve is how many of the last user turns stay verbatim
	// whatever their size, as long as the tail still fits (0: none).
	RecentTurnsPreserve int
	// MaxActiveBytes, when > 0, compacts before a run whose model-visible
	// transcript (since the last compaction or reset) reaches this many
	// bytes, whatever its token estimate.
	MaxActiveBytes int64
	// ReserveTokens is kept free below the window (default 20000, capped
	// at a quarter of the window).
	ReserveTokens int
	// IdentifierPolicy is "strict" (default) or "off".
	IdentifierPolicy string
	// QualityGuard audits safeguard summaries; a summary that fails after
	// QualityMaxRetries corrective attempts leaves the history unchanged.
	QualityGuard      bool
	QualityMaxRetries int
	// MaxConcurrent bounds summary calls across sessions (default 4).
	MaxConcurrent int
	// MemoryFlush is the silent turn before a compaction.
	MemoryFlush MemoryFlushConfig
	// NotifyUser shows the reference's compaction notices in the session.
	NotifyUser bool
	// Background writes summaries after a turn once the session passes a
	// soft threshold, to be applied at the next turn start.
	Background BackgroundConfig
}

// maxOverflowRetries is how often one model call is compacted and retried
// after the provider refused it for its size.
const maxOverflowRetries = 3

// CompactResult is the outcome of a compaction.
type CompactResult struct {
	Compacted        bool
	Reason           string // why nothing was compacted, when Compacted is false
	TokensBefore     int
	TokensAfter      int
	Summary          string
	FirstKeptEntryID string
	Details          json.RawMessage
	// Kept is the number of entries the model still sees verbatim.
	Kept int
	// Window is the model's context window.
	Window int
}

// Phases of Config.OnCompact.
const (
	CompactBefore = "before"
	CompactAfter  = "after"
)

// compactOpts shape one compaction.
type compactOpts struct {
	instructions string
	// keepRecent and maxTail override the config (0: config; maxTail 0:
	// no bound).
	keepRecent, maxTail int
	// force allows a compaction that keeps no tail (overflow recovery).
	force bool
	// ifAbove skips the compaction when the view is already below this
	// many tokens (another compaction got there first); 0 never skips.
	ifAbove int
	// truncate keeps the last maxLines entries without a summary.
	truncate bool
	maxLines int
	// manual is a compaction the user asked for (/compact,
	// sessions.compact): when the kept tail would hold the whole history
	// it keeps the smallest tail instead, as the reference's does.
	manual bool
}

func (c *CompactionConfig) keepRecent() int { return cmp.Or(c.KeepRecentTokens, 20000) }
func (c *CompactionConfig) timeout() time.Duration {
	return cmp.Or(c.Timeout, 180*time.Second)
}
func (c *CompactionConfig) mode() string {
	if c.Mode == compaction.ModeDefault {
		return compaction.ModeDefault
	}
	return compaction.ModeSafeguard
}

// sessionLocks serialise compactions per transcript, so concurrent
// triggers for one session never run two summary calls.
type sessionLocks struct {
	mu sync.Mutex // guards m
	m  map[string]*sessionLock
}

type sessionLock struct {
	mu   sync.Mutex
	refs int
}

func (l *sessionLocks) lock(id string) func() {
	l.mu.Lock()
	if l.m == nil {
		l.m = make(map[string]*sessionLock)
	}
	s := l.m[id]
	if s == nil {
		s = &sessionLock{}
		l.m[id] = s
	}
	s.refs++
	l.mu.Unlock()
	s.mu.Lock()
	return func() {
		s.mu.Unlock()
		l.mu.Lock()
		if s.refs--; s.refs == 0 {
			delete(l.m, id)
		}
		l.mu.Unlock()
	}
}

// counter counts tokens for m: with its own tokenizer when it is public
// (package tokenize), else with the estimate that calibration corrects.
func (r *Runner) counter(m Model) compaction.Counter {
	if c := tokenize.ForModel(m.ModelID); c != nil {
		return compaction.Counter{Text: c.Count}
	}
	return compaction.Counter{}
}

// modelKey names a model for calibration.
func modelKey(m Model) string { return m.ProviderID + "/" + m.ModelID }

// modelWindow returns the model's context window.
func modelWindow(m Model) compaction.Window {
	return compaction.ResolveWindow(m.ContextTokens, m.ContextWindow)
}

// viewTokens estimates the prompt tokens of a view's messages, calibrated
// for model.
func (r *Runner) viewTokens(m Model, msgs []provider.Message) int {
	n, cnt := 0, r.counter(m)
	for i := range msgs {
		n += cnt.Message(&msgs[i])
	}
	return r.calib.Scale(modelKey(m), n)
}

// ContextUsage returns the estimated prompt tokens of the session's
// current view (history only) and its model's window.
func (r *Runner) ContextUsage(ctx context.Context, sessionKey string) (used, window int, err error) {
	sess, model, err := r.sessionModel(ctx, sessionKey)
	if err != nil {
		return 0, 0, err
	}
	v, err := r.view(ctx, sess.SessionID)
	if err != nil {
		return 0, 0, err
	}
	return r.viewTokens(model, v.messages()), compaction.ResolveWindow(model.ContextTokens, model.ContextWindow).Tokens, nil
}

func (r *Runner) sessionModel(ctx context.Context, key string) (*store.Session, Model, error) {
	sess, err := r.cfg.Store.GetSession(ctx, key)
	if err != nil {
		return nil, Model{}, err
	}
	model, err := r.cfg.Models.ResolveModel(sess.AgentID, sess.Model)
	if err != nil {
		return nil, Model{}, err
	}
	return sess, model, nil
}

// compact runs one compaction of sess's transcript.
func (r *Runner) compact(ctx context.Context, sess *store.Session, model Model, o compactOpts) (*CompactResult, error) {
	hook := r.cfg.OnCompact
	if hook == nil {
		return r.compactLocked(ctx, sess, model, o)
	}
	hook(ctx, CompactBefore, sess, nil)
	res, err := r.compactLocked(ctx, sess, model, o)
	if err == nil && res != nil && res.Compacted {
		hook(ctx, CompactAfter, sess, res)
	}
	return res, err
}

// compactLocked is compact under the session's compaction lock.
func (r *Runner) compactLocked(ctx context.Context, sess *store.Session, model Model, o compactOpts) (*CompactResult, error) {
	unlock := r.compactLocks.lock(sess.SessionID)
	defer unlock()
	// A background summary finished while this waited: apply it first;
	// ifAbove then tells whether more is needed.
	applied := r.applyReadyLocked(ctx, nil, sess, model)
	cc := &r.cfg.Compaction
	win := modelWindow(model).Tokens
	res := &CompactResult{Window: win}
	v, err := r.view(ctx, sess.SessionID)
	if err != nil {
		return nil, err
	}
	before := r.viewTokens(model, v.messages())
	res.TokensBefore, res.TokensAfter = before, before
	if o.ifAbove > 0 && before < o.ifAbove {
		if applied != nil {
			return applied, nil // the background summary was enough
		}
		res.Reason = "below threshold"
		return res, nil
	}
	items := make([]compaction.Item, len(v.entries))
	for i := range v.entries {
		items[i] = entryItem(&v.entries[i])
	}
	ratio := r.calib.Ratio(modelKey(model))
	unscale := func(n int) int { return int(float64(n) / ratio) }
	var cut int
	switch {
	case o.truncate:
		cut = truncateCut(items, o.maxLines)
	default:
		cut = compaction.Cut(items, unscale(cmp.Or(o.keepRecent, cc.keepRecent())), unscale(o.maxTail))
		// recentTurnsPreserve belongs to the safeguard summariser, as in
		// the reference: mode default cuts at keepRecentTokens alone.
		if !o.force && cc.mode() == compaction.ModeSafeguard {
			cut = compaction.PreserveTurns(items, cut, cc.RecentTurnsPreserve, unscale(o.maxTail))
		}
		// What the user asked for compacts whatever can be summarised:
		// when keepRecentTokens and recentTurnsPreserve keep everything,
		// the tail shrinks to the last message (the reference's manual
		// compaction retries with keepRecentTokens 0).
		if o.manual && (cut == 0 || cut == len(items)) {
			cut = compaction.Cut(items, 0, unscale(o.maxTail))
		}
	}
	if cut == 0 || (cut == len(items) && !o.force && !o.truncate) {
		res.Reason = nothingReason(o, cc, len(items), v.compacted)
		res.Kept = len(items)
		return res, nil
	}
	toSummarize, kept := v.entries[:cut], v.entries[cut:]
	f := compactionFields{}
	if len(kept) > 0 {
		f.FirstKeptEntryID = kept[0].Entry.ID
	}
	if !o.truncate {
		latest := latestUserText(v.entries)
		summary, err := r.summarise(ctx, sess, model, v.summary, toProviderMessages(toSummarize), latest, o.instructions)
		if err != nil {
			return nil, fmt.Errorf("compaction: %w", err)
		}
		f.Summary = summary
		details := map[string]any{"readFiles": []string{}, "modifiedFiles": []string{}}
		if latest != "" {
			details["latestUnresolvedUserRequest"] = compaction.LatestRequest(latest)
		}
		f.Details, _ = json.Marshal(details)
	} else {
		f.Details = json.RawMessage(`{"readFiles":[],"modifiedFiles":[],"truncated":true}`)
	}
	after := &contextView{summary: f.Summary, compacted: true, entries: kept}
	f.TokensBefore, f.TokensAfter = before, r.viewTokens(model, after.messages())
	if err := r.appendCompaction(ctx, sess, f); err != nil {
		return nil, err
	}
	r.log.Info("compaction complete", "sessionKey", sess.Key, "tokensBefore", f.TokensBefore, "tokensAfter", f.TokensAfter,
		"summarised", len(toSummarize), "kept", len(kept))
	res.Compacted, res.TokensAfter, res.Summary, res.FirstKeptEntryID, res.Details, res.Kept =
		true, f.TokensAfter, f.Summary, f.FirstKeptEntryID, f.Details, len(kept)
	return res, nil
}

// nothingReason says why a compaction found nothing to summarise;
// compacted tells that the view already starts with a summary.
func nothingReason(o compactOpts, cc *CompactionConfig, entries int, compacted bool) string {
	switch {
	case compacted && (entries == 0 || o.manual):
		return "nothing to compact: the session is already compacted"
	case entries == 0:
		return "nothing to compact: the session has no history"
	case o.truncate:
		return fmt.Sprintf("nothing to compact: the history has %d entries, within maxLines", entries)
	case o.manual:
		return "nothing to compact: the session is too small (its last message stays verbatim)"
	case cc.mode() == compaction.ModeSafeguard && cc.RecentTurnsPreserve > 0:
		return fmt.Sprintf("nothing to compact: the history fits in the kept tail (keepRecentTokens %d, recentTurnsPreserve %d)",
			cmp.Or(o.keepRecent, cc.keepRecent()), cc.RecentTurnsPreserve)
	}
	return fmt.Sprintf("nothing to compact: the history fits in the kept tail (keepRecentTokens %d)", cmp.Or(o.keepRecent, cc.keepRecent()))
}

// truncateCut keeps the last maxLines entries, moved back so no tool
// result is kept without its call.
func truncateCut(items []compaction.Item, maxLines int) int {
	cut := max(len(items)-max(maxLines, 0), 0)
	for cut > 0 && cut < len(items) && items[cut].Kind == compaction.KindToolResult {
		cut--
	}
	return cut
}

// appendCompaction stores the compaction entry (one append: the
// transcript holds either the old view or the summary and its tail) and
// counts it on the session row.
func (r *Runner) appendCompaction(ctx context.Context, sess *store.Session, f compactionFields) error {
	bg := context.WithoutCancel(ctx)
	e, err := compactionEntry(f, transcript.FormatTime(r.now()))
	if err != nil {
		return fmt.Errorf("compaction entry: %w", err)
	}
	stored, err := r.cfg.Store.AppendMessages(bg, sess.SessionID, []store.Message{{SessionID: sess.SessionID, Entry: e}})
	if err != nil {
		return fmt.Errorf("store compaction: %w", err)
	}
	for _, m := range stored {
		r.windows.appended(m)
	}
	_, err = r.cfg.Store.UpdateSession(bg, sess.Key, false, func(s *store.Session) error {
		if s.SessionID != sess.SessionID {
			return nil // reset meanwhile: the count belongs to the old transcript
		}
		s.ContextTokens = int64(f.TokensAfter)
		s.Extra = bumpCount(s.Extra, "compactionCount")
		return nil
	})
	if err != nil {
		return fmt.Errorf("count compaction: %w", err)
	}
	return nil
}

// bumpCount increments the integer member name of a JSON object.
func bumpCount(raw json.RawMessage, name string) json.RawMessage {
	m := map[string]json.RawMessage{}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &m)
	}
	var n int
	_ = json.Unmarshal(m[name], &n)
	m[name], _ = json.Marshal(n + 1)
	out, _ := json.Marshal(m)
	return out
}

// latestUserText is the text of the last user message with text.
func latestUserText(entries []store.Message) string {
	for i := len(entries) - 1; i >= 0; i-- {
		msg := entries[i].Entry.Message
		if entries[i].Entry.Type == transcript.TypeMessage && msg != nil && msg.Role == transcript.RoleUser {
			if t := strings.TrimSpace(msg.Content.Text()); t != "" {
				return t
			}
		}
	}
	return ""
}

// errAudit is a summary that failed the safeguard audit.
var errAudit = errors.New("summary failed the safeguard quality audit")

// summarise writes the summary of msgs on top of previous. History larger
// than half the window is summarised in chunks, each re-distilling the
// summary so far.
//
// With a compaction model configured, a call that fails on it (the model
// cannot be resolved, the provider errs or times out) is redone with the
// session's own model, so a cheap summariser being down never blocks a
// session; a summary that fails the audit is not retried elsewhere.
func (r *Runner) summarise(ctx context.Context, sess *store.Session, model Model, previous string, msgs []provider.Message, latest, instructions string) (string, error) {
	if ref := r.cfg.Compaction.Model; ref != "" {
		sm, err := r.cfg.Models.ResolveModel(sess.AgentID, ref)
		if err == nil {
			var summary string
			summary, err = r.summariseWith(ctx, sm, previous, msgs, latest, instructions)
			if err == nil || errors.Is(err, errAudit) || ctx.Err() != nil {
				return summary, err
			}
		}
		r.log.Warn("compaction model failed; summarising with the session's model", "sessionKey", sess.Key,
			"compactionModel", ref, "err", err)
	}
	return r.summariseWith(ctx, model, previous, msgs, latest, instructions)
}

// summariseWith is summarise on one summariser model.
func (r *Runner) summariseWith(ctx context.Context, sm Model, previous string, msgs []provider.Message, latest, instructions string) (string, error) {
	cc := &r.cfg.Compaction
	win := modelWindow(sm).Tokens
	reserve := compaction.Reserve(win, cc.ReserveTokens)
	maxOut := reserve * 4 / 5
	if sm.MaxTokens > 0 {
		maxOut = min(maxOut, sm.MaxTokens)
	}
	chunkBudget := max(int(float64(win-reserve)/r.calib.Ratio(modelKey(sm))/2), 1000)
	_, prevBody := compaction.ParseSummary(previous)
	quoted := compaction.LatestRequest(latest)
	for _, chunk := range chunks(msgs, chunkBudget) {
		in := compaction.PromptInput{
			Mode: cc.mode(), Messages: chunk, PreviousSummary: prevBody, Instructions: instructions,
			IdentifierPolicy: cc.IdentifierPolicy, LatestRequest: quoted,
		}
		body, err := r.summaryCall(ctx, sm, in, maxOut)
		if err != nil {
			return "", err
		}
		prevBody = body
	}
	return compaction.Assemble(prevBody, quoted), nil
}

// chunks splits msgs into runs of about budget tokens, never separating a
// tool result from the message before it.
func chunks(msgs []provider.Message, budget int) [][]provider.Message {
	var out [][]provider.Message
	start, n := 0, 0
	for i := range msgs {
		t := compaction.MessageTokens(&msgs[i])
		if n+t > budget && i > start && msgs[i].Role != provider.RoleTool {
			out = append(out, msgs[start:i])
			start, n = i, 0
		}
		n += t
	}
	if start < len(msgs) || len(out) == 0 {
		out = append(out, msgs[start:])
	}
	return out
}

// summaryCall runs one summariser call, with the safeguard audit and its
// corrective retries.
func (r *Runner) summaryCall(ctx context.Context, sm Model, in compaction.PromptInput, maxOut int) (string, error) {
	cc := &r.cfg.Compaction
	select {
	case r.summarySem <- struct{}{}:
		defer func() { <-r.summarySem }()
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
	req := compaction.BuildRequest(in, sm.ModelID, maxOut)
	attempts := 1
	if cc.QualityGuard && in.Mode == compaction.ModeSafeguard {
		attempts += max(cc.QualityMaxRetries, 0)
	}
	var problem string
	for a := 0; a < attempts; a++ {
		cctx, cancel := context.WithTimeout(ctx, cc.timeout())
		text, _, _, _, err := provider.Collect(sm.Provider.Stream(cctx, req))
		cancel()
		if err != nil {
			return "", fmt.Errorf("summary call: %w", err)
		}
		text = strings.TrimSpace(text)
		if text == "" {
			return "", errors.New("summary call: model returned no summary text")
		}
		if !cc.QualityGuard || in.Mode != compaction.ModeSafeguard {
			return text, nil
		}
		if problem = compaction.Audit(text, in.LatestRequest); problem == "" {
			return text, nil
		}
		fix := req.Messages[0].Text + "\n\nYour previous summary was rejected: " + problem + ". Write it again with every required heading, in order."
		req = &provider.Request{Model: req.Model, System: req.System, MaxTokens: req.MaxTokens,
			Messages: []provider.Message{{Role: provider.RoleUser, Text: fix}}}
	}
	return "", fmt.Errorf("%w: %s", errAudit, problem)
}
