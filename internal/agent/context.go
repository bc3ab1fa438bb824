package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// contextView is what the model sees of a transcript: the summary of the
// last compaction (if any) and the entries from its first kept entry on.
// The full history stays stored; only this view goes to the model.
type contextView struct {
	// summary is the last compaction's summary ("" when none, or when the
	// compaction was a plain truncation).
	summary string
	// compacted is true when a compaction entry bounds the view.
	compacted bool
	// boundaryID is the id of the compaction or reset entry that bounds
	// the view ("" when none is in the history read).
	boundaryID string
	// entries are the transcript entries after the boundary (compaction
	// and reset entries left out).
	entries []store.Message
}

// maxBoundaryPages bounds how many history pages are read back to find
// the first kept entry of a compaction.
const maxBoundaryPages = 64

// compactionFields are the members of a compaction entry.
type compactionFields struct {
	Summary          string          `json:"summary"`
	FirstKeptEntryID string          `json:"firstKeptEntryId"`
	TokensBefore     int             `json:"tokensBefore"`
	TokensAfter      int             `json:"tokensAfter"`
	Details          json.RawMessage `json:"details,omitempty"`
	FromHook         bool            `json:"fromHook"`
}

// readCompaction decodes the fields of a compaction entry.
func readCompaction(e *transcript.Entry) compactionFields {
	var f compactionFields
	for k, v := range e.Extra {
		switch k {
		case "summary":
			_ = json.Unmarshal(v, &f.Summary)
		case "firstKeptEntryId":
			_ = json.Unmarshal(v, &f.FirstKeptEntryID)
		case "tokensBefore":
			_ = json.Unmarshal(v, &f.TokensBefore)
		case "tokensAfter":
			_ = json.Unmarshal(v, &f.TokensAfter)
		case "details":
			f.Details = v
		case "fromHook":
			_ = json.Unmarshal(v, &f.FromHook)
		}
	}
	return f
}

// compactionEntry builds the transcript entry of a compaction.
func compactionEntry(f compactionFields, ts string) (transcript.Entry, error) {
	e := transcript.Entry{Type: transcript.TypeCompaction, Timestamp: ts, Extra: map[string]json.RawMessage{}}
	put := func(k string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		e.Extra[k] = b
		return nil
	}
	details := f.Details
	if len(details) == 0 {
		details = json.RawMessage(`{"readFiles":[],"modifiedFiles":[]}`)
	}
	for _, kv := range []struct {
		k string
		v any
	}{{"summary", f.Summary}, {"firstKeptEntryId", f.FirstKeptEntryID}, {"tokensBefore", f.TokensBefore},
		{"tokensAfter", f.TokensAfter}, {"details", details}, {"fromHook", f.FromHook}} {
		if err := put(kv.k, kv.v); err != nil {
			return e, err
		}
	}
	return e, nil
}

func isBoundary(m *store.Message) bool {
	return m.Entry.Type == transcript.TypeCompaction || m.Entry.Type == transcript.TypeReset
}

// scanBoundary returns the index of the last compaction or reset entry of
// hist, or -1.
func scanBoundary(hist []store.Message) int {
	for i := len(hist) - 1; i >= 0; i-- {
		if isBoundary(&hist[i]) {
			return i
		}
	}
	return -1
}

// lastBoundary is scanBoundary(hist) for entries that end a cached window
// whose last boundary entry has Seq seq (0: it has none; -1: unknown, the
// entries were read from the store). The window holds hist and what came
// before it, so a boundary before hist's first entry leaves none in hist;
// one inside is found at its Seq's offset, checked (a window with a gap
// in its Seqs is scanned). Scanning looked at each of the window's 400
// entries at every turn, each on a cache line of its own.
func lastBoundary(hist []store.Message, seq int64) int {
	switch {
	case seq < 0 || len(hist) == 0:
		return scanBoundary(hist)
	case seq == 0 || seq < hist[0].Seq:
		return -1
	}
	if i := seq - hist[0].Seq; i < int64(len(hist)) && hist[i].Seq == seq && isBoundary(&hist[i]) {
		return int(i)
	}
	return scanBoundary(hist)
}

// view returns the model's view of transcript sessionID.
func (r *Runner) view(ctx context.Context, sessionID string) (*contextView, error) {
	return r.turnView(ctx, sessionID, "")
}

// turnView is view for a model turn of run ownRun, which has just stored
// its input or its last tool result (see Runner.turnHistory).
func (r *Runner) turnView(ctx context.Context, sessionID, ownRun string) (*contextView, error) {
	hist, bseq, err := r.turnHistory(ctx, sessionID, ownRun)
	if err != nil {
		return nil, err
	}
	b := lastBoundary(hist, bseq)
	v := &contextView{}
	if b < 0 {
		v.entries = hist
		return v, nil
	}
	v.boundaryID = hist[b].Entry.ID
	if hist[b].Entry.Type == transcript.TypeReset {
		v.entries = withoutBoundaries(hist[b+1:])
		return v, nil
	}
	f := readCompaction(&hist[b].Entry)
	v.summary, v.compacted = f.Summary, true
	start := -1
	for i := b; i >= 0; i-- {
		if hist[i].Entry.ID == f.FirstKeptEntryID {
			start = i
			break
		}
	}
	if start < 0 && f.FirstKeptEntryID != "" && len(hist) > 0 {
		// The kept tail starts before the cached window: read back.
		older, err := r.readBackTo(ctx, sessionID, hist[0].Seq, f.FirstKeptEntryID)
		if err != nil {
			return nil, err
		}
		if older != nil {
			hist = append(older, hist...)
			b += len(older)
			start = 0
		}
	}
	if start < 0 {
		start = b + 1
	}
	v.entries = withoutBoundaries(hist[start:])
	return v, nil
}

// readBackTo returns the entries before seq back to the one with id
// (included), or nil when it is not found.
func (r *Runner) readBackTo(ctx context.Context, sessionID string, before int64, id string) ([]store.Message, error) {
	var acc []store.Message
	for page := 0; page < maxBoundaryPages && before > 1; page++ {
		msgs, err := r.cfg.Store.History(ctx, sessionID, store.HistoryOptions{Limit: r.cfg.HistoryLimit, BeforeSeq: before})
		if err != nil {
			return nil, fmt.Errorf("read compacted history: %w", err)
		}
		if len(msgs) == 0 {
			return nil, nil
		}
		acc = append(msgs, acc...)
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Entry.ID == id {
				return acc[i:], nil
			}
		}
		before = msgs[0].Seq
	}
	return nil, nil
}

func withoutBoundaries(hist []store.Message) []store.Message {
	out := make([]store.Message, 0, len(hist))
	for i := range hist {
		if !isBoundary(&hist[i]) {
			out = append(out, hist[i])
		}
	}
	return out
}

// messages returns the model messages of the view: the summary message,
// then the kept entries.
func (v *contextView) messages() []provider.Message {
	return v.withSummary(toProviderMessages(v.entries))
}

// turnMessages is messages for a model turn of sessionID: the entries'
// messages come from the session's window cache (windowCache.modelMessages).
func (v *contextView) turnMessages(c *windowCache, sessionID string) []provider.Message {
	return v.withSummary(c.modelMessages(sessionID, v.entries))
}

// withSummary is msgs after the summary message, if the view has one.
func (v *contextView) withSummary(msgs []provider.Message) []provider.Message {
	if v.summary == "" {
		return msgs
	}
	out := make([]provider.Message, 0, len(msgs)+1)
	out = append(out, provider.Message{Role: provider.RoleUser, Text: compaction.SummaryMessage(v.summary)})
	return append(out, msgs...)
}

// entryItem describes a stored entry to the cut-point rules.
func entryItem(m *store.Message) compaction.Item {
	msg := m.Entry.Message
	if m.Entry.Type != transcript.TypeMessage || msg == nil {
		return compaction.Item{}
	}
	n := len(msg.Content.Text())
	it := compaction.Item{}
	switch {
	case msg.Role == transcript.RoleUser:
		it.Kind = compaction.KindUser
	case msg.Role == transcript.RoleAssistant:
		it.Kind = compaction.KindAssistant
		for _, c := range msg.Content.ToolCalls() {
			it.CallIDs = append(it.CallIDs, c.ID)
			n += len(c.ID) + len(c.Name) + len(c.Arguments)
		}
	case isToolResult(msg.Role):
		it.Kind, it.ResultFor = compaction.KindToolResult, msg.ToolCallID
		n += len(msg.ToolCallID)
	default:
		return compaction.Item{}
	}
	it.Tokens = (n+3)/4 + 4
	return it
}
