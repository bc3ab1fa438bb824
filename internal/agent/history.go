package agent

import (
	"context"
	"sort"
	"sync"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// toProviderMessages converts a transcript window into model messages. It
// keeps the conversation valid for strict APIs: tool results without their
// call (cut off by the window) are dropped, and tool calls that never got a
// result (an interrupted run) are removed from their assistant message.
func toProviderMessages(hist []store.Message) []provider.Message {
	return convertHistory(hist, false).out
}

// converted is what convertHistory makes of a window.
type converted struct {
	out []provider.Message
	// With withSeqs, per message: seqs is the Seq of the entry it came
	// from, and deps, for a tool result, the Seq of the call it answers (0
	// for other messages): a window that starts after the call drops the
	// result.
	seqs, deps []int64
	// lastUnpaired is the Seq of the last entry whose form depends on
	// entries it does not pair with inside the window (0 when none): a
	// tool call without a result after it (removed; a later result would
	// bring it back), a call answered only before it, a result without a
	// call before it (dropped). A window of entries after lastUnpaired
	// depends on nothing outside it but through deps.
	lastUnpaired int64
}

// convertHistory is toProviderMessages that also tells, with withSeqs,
// where each message came from and what it depends on (see converted).
func convertHistory(hist []store.Message, withSeqs bool) converted {
	c := converted{out: make([]provider.Message, 0, len(hist))}
	if withSeqs {
		c.seqs = make([]int64, 0, len(hist))
		c.deps = make([]int64, 0, len(hist))
	}
	c.add(hist, withSeqs)
	return c
}

// add appends what convertHistory makes of hist to c's messages (and with
// withSeqs to its seqs and deps), and sets c.lastUnpaired to hist's.
func (c *converted) add(hist []store.Message, withSeqs bool) {
	c.lastUnpaired = 0
	// answered: each result's call id, with the last Seq it is answered
	// at; called: each kept call's id, with the last Seq it was made at.
	// Both are made on the first tool entry.
	var answered, called map[string]int64
	for _, m := range hist {
		if msg := m.Entry.Message; msg != nil && isToolResult(msg.Role) && msg.ToolCallID != "" {
			if answered == nil {
				answered = make(map[string]int64)
			}
			answered[msg.ToolCallID] = m.Seq
		}
	}
	add := func(seq, dep int64, pm provider.Message) {
		c.out = append(c.out, pm)
		if withSeqs {
			c.seqs = append(c.seqs, seq)
			c.deps = append(c.deps, dep)
		}
	}
	for _, m := range hist {
		msg := m.Entry.Message
		if m.Entry.Type != transcript.TypeMessage || msg == nil {
			continue
		}
		switch {
		case msg.Role == transcript.RoleUser:
			add(m.Seq, 0, provider.Message{Role: provider.RoleUser, Text: msg.Content.Text(), Images: imagesOf(msg.Content)})
		case msg.Role == transcript.RoleAssistant:
			pm := provider.Message{Role: provider.RoleAssistant, Text: msg.Content.Text()}
			for _, b := range msg.Content.ToolCalls() {
				at, ok := answered[b.ID]
				if at < m.Seq {
					c.lastUnpaired = m.Seq
				}
				if !ok {
					continue
				}
				if called == nil {
					called = make(map[string]int64)
				}
				called[b.ID] = m.Seq
				pm.ToolCalls = append(pm.ToolCalls, provider.ToolCall{ID: b.ID, Name: b.Name, Arguments: b.Arguments})
			}
			if pm.Text == "" && len(pm.ToolCalls) == 0 {
				continue
			}
			add(m.Seq, 0, pm)
		case isToolResult(msg.Role):
			at, ok := called[msg.ToolCallID]
			if !ok {
				c.lastUnpaired = m.Seq
				continue
			}
			isErr := msg.IsError != nil && *msg.IsError
			add(m.Seq, at, provider.Message{
				Role: provider.RoleTool, Text: msg.Content.Text(),
				ToolCallID: msg.ToolCallID, ToolName: msg.ToolName, IsError: isErr,
			})
		}
	}
}

// imagesOf returns the image blocks of a message's content.
func imagesOf(c transcript.Content) []provider.Image {
	var out []provider.Image
	for _, b := range c.Blocks {
		if b.Type == transcript.BlockImage && b.Data != "" {
			out = append(out, provider.Image{MimeType: b.MimeType, Data: b.Data})
		}
	}
	return out
}

func isToolResult(role string) bool {
	return role == transcript.RoleToolResult || role == transcript.RoleTool
}

// maxCachedTranscripts bounds the transcript window cache by windows, and
// maxCachedBytes by the size of their entries (entryBytes): a window holds
// up to HistoryLimit entries and a quarter, and a thousand sessions whose
// turns carry large tool results would otherwise hold gigabytes.
const (
	maxCachedTranscripts = 1024
	maxCachedBytes       = 64 << 20
)

// windowCache keeps the recent transcript window of sessions that ran lately,
// so a model turn does not re-read and re-decode its whole history. An entry
// is used only while its last Seq matches the store's message count (the
// store assigns gap-free Seqs), so appends by anyone else invalidate it.
type windowCache struct {
	limit int

	budget int64 // maxCachedBytes; tests set less

	mu    sync.Mutex // guards m, tick and bytes
	m     map[string]*window
	tick  uint64 // counts uses; a window's used is the tick of its last
	bytes int64  // the windows' bytes, summed
}

type window struct {
	used    uint64 // windowCache.tick at the window's last use, for eviction
	bytes   int64  // entryBytes of msgs, summed
	lastSeq int64
	msgs    []store.Message
	// boundary is the Seq of the last compaction or reset entry of msgs
	// (0: none), kept as entries are appended so that a turn does not
	// look for it through the whole window (see lastBoundary).
	boundary int64
	// lastRun is the run whose own write (appended) made the window end
	// at lastSeq, with no gap before it; "" when anything else did.
	lastRun string

	conv sync.Mutex // guards model; taken without windowCache.mu
	// model is the window's entries as model messages, kept so that a
	// turn converts only the entries added since the last one.
	model modelMemo
}

// modelMemo is the model messages of the transcript entries from Seq
// first to Seq last, as toProviderMessages made them: out[i] came from the
// entry with Seq seqs[i]. A transcript entry never changes once stored,
// so a later window that starts at or after first reuses out, provided
// nothing in the part it keeps depends on entries outside it. A tool call
// is paired with its result across entries: the memo is reused only for
// windows starting after its last entry that did not pair inside its own
// window (lastUnpaired), and a result whose call (deps) is before the new
// window's start is dropped, as a fresh conversion drops it. Windows of a
// session that uses tools thus convert only their new entries too.
type modelMemo struct {
	first, last, lastUnpaired int64
	lastID                    string // the Entry.ID of the entry at last
	out                       []provider.Message
	seqs, deps                []int64
}

func newWindowCache(limit int) *windowCache {
	return &windowCache{limit: limit, budget: maxCachedBytes, m: make(map[string]*window)}
}

// get returns the cached window of sessionID if it ends at lastSeq, with
// the Seq of its last boundary entry (0: none).
func (c *windowCache) get(sessionID string, lastSeq int64) ([]store.Message, int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.m[sessionID]
	if !ok || w.lastSeq != lastSeq {
		return nil, 0, false
	}
	c.useLocked(w)
	msgs := w.msgs[max(len(w.msgs)-c.limit, 0):]
	return msgs[:len(msgs):len(msgs)], w.boundary, true
}

// own returns the cached window of sessionID if its last entry is one run
// runID just wrote, contiguous with the window before it.
func (c *windowCache) own(sessionID, runID string) ([]store.Message, int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.m[sessionID]
	if !ok || runID == "" || w.lastRun != runID {
		return nil, 0, false
	}
	c.useLocked(w)
	msgs := w.msgs[max(len(w.msgs)-c.limit, 0):]
	return msgs[:len(msgs):len(msgs)], w.boundary, true
}

// put stores a freshly loaded window ending at lastSeq.
func (c *windowCache) put(sessionID string, lastSeq int64, msgs []store.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evictLocked(sessionID)
	c.dropLocked(sessionID)
	// Keep an exact-size copy: the loaded slice may have spare capacity,
	// and the cache holds windows of many sessions.
	w := &window{lastSeq: lastSeq, msgs: append([]store.Message(nil), msgs...)}
	for i := range w.msgs {
		w.bytes += entryBytes(&w.msgs[i])
	}
	if b := scanBoundary(msgs); b >= 0 {
		w.boundary = msgs[b].Seq
	}
	c.useLocked(w)
	c.m[sessionID] = w
	c.bytes += w.bytes
	c.trimLocked(sessionID)
}

// dropLocked removes key's window, if any.
func (c *windowCache) dropLocked(key string) {
	if w, ok := c.m[key]; ok {
		c.bytes -= w.bytes
		delete(c.m, key)
	}
}

// trimLocked drops the least recently used windows but keep's while the
// windows hold more than the budget.
func (c *windowCache) trimLocked(keep string) {
	for c.bytes > c.budget && len(c.m) > 1 {
		c.dropLocked(c.oldestLocked(keep))
	}
}

// oldestLocked is the key of the least recently used window but keep's.
func (c *windowCache) oldestLocked(keep string) string {
	oldest, used := "", uint64(0)
	for k, w := range c.m {
		if k != keep && (oldest == "" || w.used < used) {
			oldest, used = k, w.used
		}
	}
	return oldest
}

// entryBytes estimates what m holds: its texts, arguments and images, and
// a fixed part for the rest.
func entryBytes(m *store.Message) int64 {
	n := int64(256 + len(m.Entry.Timestamp) + len(m.Entry.ID))
	msg := m.Entry.Message
	if msg == nil {
		return n
	}
	if msg.Content.String != nil {
		n += int64(len(*msg.Content.String))
	}
	for i := range msg.Content.Blocks {
		b := &msg.Content.Blocks[i]
		n += int64(128 + len(b.Arguments) + len(b.Data) + len(b.ThinkingSignature))
		if b.Text != nil {
			n += int64(len(*b.Text))
		}
		if b.Thinking != nil {
			n += int64(len(*b.Thinking))
		}
	}
	return n
}

// useLocked marks w as the most recently used window.
func (c *windowCache) useLocked(w *window) {
	c.tick++
	w.used = c.tick
}

// evictLocked makes room for a window of sessionID when it has none and
// the cache is full, by dropping the least recently used window: with more
// sessions running than the cache holds, an arbitrary choice dropped the
// busiest sessions' windows as often as idle ones, each drop costing a
// history read. The scan runs only when a new window finds the cache
// full, and is cheap next to the read it spares.
func (c *windowCache) evictLocked(sessionID string) {
	if _, ok := c.m[sessionID]; ok || len(c.m) < maxCachedTranscripts {
		return
	}
	c.dropLocked(c.oldestLocked(sessionID))
}

// appended records a message just stored; a gap drops the entry. A
// transcript's first entry (Seq 1: the store numbers from 1, without gaps)
// starts a window, since nothing comes before it: a new session's first
// turn reads nothing back.
func (c *windowCache) appended(m store.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.m[m.SessionID]
	if !ok {
		if m.Seq != 1 || m.SessionID == "" {
			return
		}
		c.evictLocked(m.SessionID)
		w = &window{}
		c.m[m.SessionID] = w
	}
	if w.lastSeq != m.Seq-1 {
		c.dropLocked(m.SessionID)
		return
	}
	// The window may grow a quarter past the limit before it is cut
	// back (get hands out the last limit entries only): cutting at every
	// append copied the whole window twice per turn.
	msgs := w.msgs
	if slack := max(c.limit/4, 1); len(msgs) >= c.limit+slack {
		// Cut before appending, into a copy with room for the appends
		// until the next cut: a copy of exactly limit entries was grown
		// (copied again) by the very next append.
		msgs = append(make([]store.Message, 0, c.limit+slack), msgs[len(msgs)-max(c.limit-1, 0):]...)
		c.bytes -= w.bytes
		w.bytes = 0
		for i := range msgs {
			w.bytes += entryBytes(&msgs[i])
		}
		c.bytes += w.bytes
	}
	msgs = append(msgs, m)
	w.msgs, w.lastSeq, w.lastRun = msgs, m.Seq, m.RunID
	if isBoundary(&m) {
		w.boundary = m.Seq
	}
	n := entryBytes(&m)
	w.bytes += n
	c.bytes += n
	c.useLocked(w)
	c.trimLocked(m.SessionID)
}

// modelMessages is toProviderMessages(entries) for a model turn of
// sessionID, whose entries are its cached window (or the part of it after
// a boundary): the messages of the entries converted for an earlier turn
// are reused, and only the entries added since are converted. The result
// is shared with later turns: its elements must not be modified (nobody
// does: pruning copies, and appends to it copy, as its capacity is its
// length).
func (c *windowCache) modelMessages(sessionID string, entries []store.Message) []provider.Message {
	c.mu.Lock()
	w := c.m[sessionID]
	c.mu.Unlock()
	if w == nil || len(entries) == 0 {
		return toProviderMessages(entries)
	}
	w.conv.Lock()
	defer w.conv.Unlock()
	return w.model.messages(entries)
}

// messages converts entries (sorted by Seq, contiguous but for entries
// that make no model message) reusing and extending the memo.
func (m *modelMemo) messages(entries []store.Message) []provider.Message {
	a, b := entries[0].Seq, entries[len(entries)-1].Seq
	// j is the first entry the memo does not cover; the one before it
	// must be the memo's last (the same entry, not only the same Seq).
	j := sort.Search(len(entries), func(j int) bool { return entries[j].Seq > m.last })
	if m.out == nil || a < m.first || a <= m.lastUnpaired || m.last < a || m.last > b ||
		entries[j-1].Seq != m.last || entries[j-1].Entry.ID != m.lastID {
		return m.reset(entries)
	}
	if j < len(entries) {
		// The new entries' messages are appended to the memo's in place:
		// the slices handed out end at the memo's length, so nobody sees
		// what goes past it, and a reset below replaces all three.
		c := converted{out: m.out, seqs: m.seqs, deps: m.deps}
		c.add(entries[j:], true)
		if c.lastUnpaired != 0 {
			// A new entry pairs with one the memo holds (or none):
			// its form, or an older message's, depends on both.
			return m.reset(entries)
		}
		m.out, m.seqs, m.deps = c.out, c.seqs, c.deps
		m.last, m.lastID = b, entries[len(entries)-1].Entry.ID
	}
	i := sort.Search(len(m.seqs), func(i int) bool { return m.seqs[i] >= a })
	orphans := false // results kept whose call is before a
	for _, d := range m.deps[i:] {
		if d != 0 && d < a {
			orphans = true
			break
		}
	}
	if orphans || (i > 0 && i >= len(m.out)-i) {
		// Drop what windows no longer reach, and the results whose call
		// they no longer reach (no later window does), so the memo stays
		// about the window's size (slices handed out keep their own
		// copy). The copy has room for as many again: the appends until
		// the next drop then fit, where a copy of its length was grown
		// (and copied whole) three or four times before it.
		n := 2 * (len(m.out) - i)
		out, seqs, deps := make([]provider.Message, 0, n), make([]int64, 0, n), make([]int64, 0, n)
		for k := i; k < len(m.out); k++ {
			if d := m.deps[k]; d != 0 && d < a {
				continue
			}
			out, seqs, deps = append(out, m.out[k]), append(seqs, m.seqs[k]), append(deps, m.deps[k])
		}
		m.out, m.seqs, m.deps, m.first, i = out, seqs, deps, a, 0
	}
	out := m.out[i:]
	return out[:len(out):len(out)]
}

// reset converts entries afresh and makes the memo theirs.
func (m *modelMemo) reset(entries []store.Message) []provider.Message {
	c := convertHistory(entries, true)
	*m = modelMemo{first: entries[0].Seq, last: entries[len(entries)-1].Seq, lastID: entries[len(entries)-1].Entry.ID,
		lastUnpaired: c.lastUnpaired, out: c.out, seqs: c.seqs, deps: c.deps}
	return c.out[:len(c.out):len(c.out)]
}

// history returns the last HistoryLimit entries of the transcript.
func (r *Runner) history(ctx context.Context, sessionID string) ([]store.Message, error) {
	msgs, _, err := r.turnHistory(ctx, sessionID, "")
	return msgs, err
}

// turnHistory is history for a model turn of run ownRun. Every model turn
// follows a write of its run (the input with the run's start, or a tool
// result), and the store numbers entries without gaps: when that write
// was contiguous with the cached window, the window is the transcript as
// of that write, and nothing is read. Anything appended by others before
// it shows as a gap, which drops the window (windowCache.appended).
//
// boundary is the Seq of the last compaction or reset entry of the cached
// window the entries end (0: it has none), or -1 when they were read from
// the store: see lastBoundary.
func (r *Runner) turnHistory(ctx context.Context, sessionID, ownRun string) (msgs []store.Message, boundary int64, err error) {
	if msgs, b, ok := r.windows.own(sessionID, ownRun); ok {
		return msgs, b, nil
	}
	n, err := r.cfg.Store.CountMessages(ctx, sessionID)
	if err != nil {
		return nil, 0, err
	}
	if msgs, b, ok := r.windows.get(sessionID, n); ok {
		return msgs, b, nil
	}
	msgs, err = r.cfg.Store.History(ctx, sessionID, store.HistoryOptions{Limit: r.cfg.HistoryLimit})
	if err != nil {
		return nil, 0, err
	}
	last := int64(0)
	if len(msgs) > 0 {
		last = msgs[len(msgs)-1].Seq
	}
	if last == n {
		r.windows.put(sessionID, n, msgs)
	}
	return msgs, -1, nil
}
