package sqlstore

import (
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// chainMessage is a prepared assistant message of text.
func chainMessage(text string) store.Message {
	now := time.UnixMilli(1_764_000_000_123)
	a := transcript.NewAssistantMessage([]transcript.Block{transcript.TextBlock(text)}, now)
	a.Usage = &transcript.Usage{Input: 10, Output: 2, TotalTokens: 12}
	return store.Message{Entry: transcript.MessageEntry(a, now), Role: a.Role, RunID: "run-1"}
}

// TestChainLineIsTheEntry: the stored line is the entry's MarshalJSON,
// parent id included, for lines of every size (one larger than the pooled
// buffers are kept at), and a line does not change when the next one is
// encoded.
func TestChainLineIsTheEntry(t *testing.T) {
	var lines []string
	var want []string
	prev := ""
	for i, text := range []string{"ok", strings.Repeat("long ", 20_000), "<b>&</b>", "after the large one"} {
		m := chainMessage(text)
		line, err := Chain(&m, int64(i+1), prev)
		if err != nil {
			t.Fatal(err)
		}
		if m.Seq != int64(i+1) || (prev != "" && (m.Entry.ParentID == nil || *m.Entry.ParentID != prev)) {
			t.Fatalf("message %d: seq %d, parent %v, want %d and %q", i, m.Seq, m.Entry.ParentID, i+1, prev)
		}
		w, err := m.Entry.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		lines, want = append(lines, line), append(want, string(w))
		prev = m.Entry.ID
	}
	for i := range lines {
		if lines[i] != want[i] {
			t.Errorf("line %d = %.200s, MarshalJSON: %.200s", i, lines[i], want[i])
		}
	}
}

// BenchmarkMessageRowsAppend is one message's row as a warm turn stores
// it (chained after the tail, its line encoded).
func BenchmarkMessageRowsAppend(b *testing.B) {
	m := chainMessage("echo: message 12 of the conversation so far")
	rows := MessageRows{SessionID: "sid-warm", PrevID: "0195f2a0-0000-7000-8000-000000000000"}
	args := make([]any, 0, 8)
	b.ReportAllocs()
	for b.Loop() {
		m.Entry.ParentID = nil
		var err error
		if args, err = rows.Append(args[:0], &m); err != nil {
			b.Fatal(err)
		}
	}
}
