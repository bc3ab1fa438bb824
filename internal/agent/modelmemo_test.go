package agent

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// TestModelMemoMatchesFreshConversion slides windows of several sizes over
// a transcript of plain turns, tool exchanges (one answered only in a later
// entry, one never answered) and non-message entries, as turns append to
// it, and checks that the memo's messages equal a fresh conversion of the
// same window each time, and that a rewritten transcript (the same Seqs,
// other entries) is not served from the memo.
func TestModelMemoMatchesFreshConversion(t *testing.T) {
	f := false
	var hist []store.Message
	add := func(m transcript.Message) {
		seq := int64(len(hist) + 1)
		hist = append(hist, store.Message{Seq: seq, Role: m.Role,
			Entry: transcript.Entry{Type: "message", ID: fmt.Sprint("e", seq), Message: &m}})
	}
	call := func(ids ...string) transcript.Message {
		blocks := []transcript.Block{transcript.TextBlock("calling")}
		for _, id := range ids {
			blocks = append(blocks, transcript.ToolCallBlock(id, "t", nil))
		}
		return transcript.Message{Role: "assistant", Content: transcript.BlockContent(blocks...)}
	}
	result := func(id string) transcript.Message {
		return transcript.Message{Role: "toolResult", ToolCallID: id, ToolName: "t", Content: transcript.BlockContent(transcript.TextBlock("r " + id)), IsError: &f}
	}
	text := func(role, s string) transcript.Message {
		return transcript.Message{Role: role, Content: transcript.StringContent(s)}
	}
	for turn := range 60 {
		add(text("user", fmt.Sprint("q", turn)))
		switch turn % 15 {
		case 4:
			add(call("a", "b"))
			add(result("a"))
			add(result("b"))
		case 7:
			add(call("late")) // answered two turns later
		case 9:
			add(result("late"))
		case 11:
			add(call("never"))
		case 12:
			hist = append(hist, store.Message{Seq: int64(len(hist) + 1), Entry: transcript.Entry{Type: "model_change", ID: fmt.Sprint("m", turn)}})
		}
		add(text("assistant", fmt.Sprint("a", turn)))
	}
	for _, size := range []int{1, 3, 8, 25, 1000} {
		var memo modelMemo
		for end := 1; end <= len(hist); end++ {
			win := hist[max(end-size, 0):end]
			got := memo.messages(win)
			if diff := cmp.Diff(toProviderMessages(win), got); diff != "" {
				t.Fatalf("window %d..%d of size %d (-fresh +memo):\n%s", win[0].Seq, win[len(win)-1].Seq, size, diff)
			}
		}
		// The same Seqs with other entries (a transcript deleted and
		// written again) are converted afresh.
		other := make([]store.Message, 0, 3)
		for i, m := range hist[len(hist)-3:] {
			msg := text("user", fmt.Sprint("other ", i))
			other = append(other, store.Message{Seq: m.Seq, Role: "user", Entry: transcript.Entry{Type: "message", ID: fmt.Sprint("o", i), Message: &msg}})
		}
		if diff := cmp.Diff(toProviderMessages(other), memo.messages(other)); diff != "" {
			t.Fatalf("rewritten transcript, size %d (-fresh +memo):\n%s", size, diff)
		}
	}
}

// TestModelMemoCopiesOncePerDrop slides a window of 400 entries over
// 3,000 plain turns and counts how often the memo's messages move to a new
// array: once per drop of what the window left behind (every 200 turns),
// besides the growth of the first conversion (made at its length) up to
// the first drop; not also three or four times between every two drops
// as appends grew a copy made at its length (43 moves for 14 drops).
func TestModelMemoCopiesOncePerDrop(t *testing.T) {
	const window, turns = 400, 3000
	var hist []store.Message
	for i := range 2 * turns {
		role, text := "user", fmt.Sprint("q", i)
		if i%2 == 1 {
			role, text = "assistant", fmt.Sprint("a", i)
		}
		m := transcript.Message{Role: role, Content: transcript.StringContent(text)}
		hist = append(hist, store.Message{Seq: int64(i + 1), Role: role,
			Entry: transcript.Entry{Type: "message", ID: fmt.Sprint("e", i+1), Message: &m}})
	}
	var memo modelMemo
	moves, drops := 0, 0
	var first *provider.Message
	for end := window; end <= len(hist); end += 2 {
		out := memo.messages(hist[end-window : end])
		if len(out) != window || out[len(out)-1].Text != fmt.Sprint("a", end-1) {
			t.Fatalf("window ending at %d: %d messages, last %q", end, len(out), out[len(out)-1].Text)
		}
		if memo.first == hist[end-window].Seq && end > window {
			drops++
		}
		if p := &memo.out[0]; p != first {
			moves++
			first = p
		}
	}
	if moves > drops+4 {
		t.Errorf("the memo's messages moved %d times for %d drops", moves, drops)
	}
}
