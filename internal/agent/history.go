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
	out, _, _ := convertHistory(hist, false)
	return out
}

// convertHistory is toProviderMessages that also returns, with withSeqs,
// the Seq of the entry each message came from, and the Seq of the last
// entry that carries tool calls or is a tool result (0 when none: then
// every message depends on its own entry only).
func convertHistory(hist []store.Message, withSeqs bool) (out []provider.Message, seqs []int64, lastTool int64) {
	var answered, called map[string]bool // made on the first tool entry
	for _, m := range hist {
		if msg := m.Entry.Message; msg != nil && isToolResult(msg.Role) && msg.ToolCallID != "" {
			if answered == nil {
				answered = make(map[string]bool)
			}
			answered[msg.ToolCallID] = true
		}
	}
	out = make([]provider.Message, 0, len(hist))
	if withSeqs {
		seqs = make([]int64, 0, len(hist))
	}
	add := func(seq int64, pm provider.Message) {
		out = append(out, pm)
		if withSeqs {
			seqs = append(seqs, seq)
		}
	}
	for _, m := range hist {
		msg := m.Entry.Message
		if m.Entry.Type != transcript.TypeMessage || msg == nil {
			continue
		}
		switch {
		case msg.Role == transcript.RoleUser:
			add(m.Seq, provider.Message{Role: provider.RoleUser, Text: msg.Content.Text(), Images: imagesOf(msg.Content)})
		case msg.Role == transcript.RoleAssistant:
			pm := provider.Message{Role: provider.RoleAssistant, Text: msg.Content.Text()}
			for _, b := range msg.Content.ToolCalls() {
				lastTool = m.Seq
				if !answered[b.ID] {
					continue
				}
				if called == nil {
					called = make(map[string]bool)
				}
				called[b.ID] = true
				pm.ToolCalls = append(pm.ToolCalls, provider.ToolCall{ID: b.ID, Name: b.Name, Arguments: b.Arguments})
			}
			if pm.Text == "" && len(pm.ToolCalls) == 0 {
				continue
			}
			add(m.Seq, pm)
		case isToolResult(msg.Role):
			lastTool = m.Seq
			if !called[msg.ToolCallID] {
				continue
			}
			isErr := msg.IsError != nil && *msg.IsError
			add(m.Seq, provider.Message{
				Role: provider.RoleTool, Text: msg.Content.Text(),
				ToolCallID: msg.ToolCallID, ToolName: msg.ToolName, IsError: isErr,
			})
		}
	}
	return out, seqs, lastTool
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

// maxCachedTranscripts bounds the transcript window cache.
const maxCachedTranscripts = 1024

// windowCache keeps the recent transcript window of sessions that ran lately,
// so a model turn does not re-read and re-decode its whole history. An entry
// is used only while its last Seq matches the store's message count (the
// store assigns gap-free Seqs), so appends by anyone else invalidate it.
type windowCache struct {
	limit int

	mu sync.Mutex // guards m
	m  map[string]*window
}

type window struct {
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
// nothing in the part it keeps depends on entries outside it: a tool call
// is paired with its result across entries, so the memo is reused only
// from after its last tool entry (lastTool) on.
type modelMemo struct {
	first, last, lastTool int64
	lastID                string // the Entry.ID of the entry at last
	out                   []provider.Message
	seqs                  []int64
}

func newWindowCache(limit int) *windowCache {
	return &windowCache{limit: limit, m: make(map[string]*window)}
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
	msgs := w.msgs[max(len(w.msgs)-c.limit, 0):]
	return msgs[:len(msgs):len(msgs)], w.boundary, true
}

// put stores a freshly loaded window ending at lastSeq.
func (c *windowCache) put(sessionID string, lastSeq int64, msgs []store.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[sessionID]; !ok && len(c.m) >= maxCachedTranscripts {
		for k := range c.m { // evict an arbitrary entry
			delete(c.m, k)
			break
		}
	}
	// Keep an exact-size copy: the loaded slice may have spare capacity,
	// and the cache holds windows of many sessions.
	w := &window{lastSeq: lastSeq, msgs: append([]store.Message(nil), msgs...)}
	if b := scanBoundary(msgs); b >= 0 {
		w.boundary = msgs[b].Seq
	}
	c.m[sessionID] = w
}

// appended records a message just stored; a gap drops the entry.
func (c *windowCache) appended(m store.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.m[m.SessionID]
	if !ok {
		return
	}
	if w.lastSeq != m.Seq-1 {
		delete(c.m, m.SessionID)
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
	}
	msgs = append(msgs, m)
	w.msgs, w.lastSeq, w.lastRun = msgs, m.Seq, m.RunID
	if isBoundary(&m) {
		w.boundary = m.Seq
	}
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
	if m.out == nil || a < m.first || a <= m.lastTool || m.last < a || m.last > b ||
		entries[j-1].Seq != m.last || entries[j-1].Entry.ID != m.lastID {
		out, seqs, lastTool := convertHistory(entries, true)
		*m = modelMemo{first: a, last: b, lastID: entries[len(entries)-1].Entry.ID, lastTool: lastTool, out: out, seqs: seqs}
		return out[:len(out):len(out)]
	}
	if j < len(entries) {
		// The part kept has no tool entry, so the new entries pair
		// among themselves only.
		out, seqs, lastTool := convertHistory(entries[j:], true)
		m.out, m.seqs = append(m.out, out...), append(m.seqs, seqs...)
		m.last, m.lastID = b, entries[len(entries)-1].Entry.ID
		if lastTool != 0 {
			m.lastTool = lastTool
		}
	}
	i := sort.Search(len(m.seqs), func(i int) bool { return m.seqs[i] >= a })
	if i > 0 && i >= len(m.out)-i {
		// Drop what windows no longer reach, so the memo stays about
		// the window's size (slices handed out keep their own copy).
		// The copy has room for as many again: the appends until the
		// next drop then fit, where a copy of its length was grown (and
		// copied whole) three or four times before it.
		m.out = append(make([]provider.Message, 0, 2*(len(m.out)-i)), m.out[i:]...)
		m.seqs = append(make([]int64, 0, 2*(len(m.seqs)-i)), m.seqs[i:]...)
		m.first, i = a, 0
	}
	out := m.out[i:]
	return out[:len(out):len(out)]
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
