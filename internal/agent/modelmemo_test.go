package agent

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// appendEntry appends m to hist as its next message entry.
func appendEntry(hist []store.Message, m transcript.Message) []store.Message {
	seq := int64(len(hist) + 1)
	return append(hist, store.Message{Seq: seq, Role: m.Role,
		Entry: transcript.Entry{Type: "message", ID: fmt.Sprint("e", seq), Message: &m}})
}

// TestModelMemoMatchesFreshConversion slides windows of several sizes over
// a transcript of plain turns, tool exchanges (one answered only in a later
// entry, one never answered) and non-message entries, as turns append to
// it, and checks that the memo's messages equal a fresh conversion of the
// same window each time, and that a rewritten transcript (the same Seqs,
// other entries) is not served from the memo.
func TestModelMemoMatchesFreshConversion(t *testing.T) {
	f := false
	var hist []store.Message
	add := func(m transcript.Message) { hist = appendEntry(hist, m) }
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

// TestModelMemoRandomTranscripts compares the memo with a fresh conversion
// over random transcripts whose tool ids repeat (some local models number
// their calls call_0, call_1, … in every turn), whose calls go unanswered
// or are answered late, twice or before they are made, and over windows
// that mostly slide forward, as turns do, but now and then jump back.
func TestModelMemoRandomTranscripts(t *testing.T) {
	f := false
	for seed := range int64(200) {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		ids := 2 + rng.IntN(6)
		id := func() string { return fmt.Sprint("call_", rng.IntN(ids)) }
		var hist []store.Message
		add := func(m transcript.Message) { hist = appendEntry(hist, m) }
		for range 40 + rng.IntN(120) {
			switch r := rng.IntN(10); {
			case r < 2:
				add(transcript.Message{Role: "user", Content: transcript.StringContent(fmt.Sprint("u", len(hist)))})
			case r < 4:
				add(transcript.Message{Role: "assistant", Content: transcript.StringContent(fmt.Sprint("a", len(hist)))})
			case r < 7:
				// A call and, mostly, its results right after.
				var blocks []transcript.Block
				if rng.IntN(2) == 0 {
					blocks = append(blocks, transcript.TextBlock("calling"))
				}
				var called []string
				for range 1 + rng.IntN(3) {
					c := id()
					called = append(called, c)
					blocks = append(blocks, transcript.ToolCallBlock(c, "t", nil))
				}
				add(transcript.Message{Role: "assistant", Content: transcript.BlockContent(blocks...)})
				for _, c := range called {
					if rng.IntN(5) != 0 {
						add(transcript.Message{Role: "toolResult", ToolCallID: c, ToolName: "t",
							Content: transcript.BlockContent(transcript.TextBlock("r " + c)), IsError: &f})
					}
				}
			case r < 9:
				// A result on its own: late, repeated, or for no call.
				add(transcript.Message{Role: "toolResult", ToolCallID: id(), ToolName: "t",
					Content: transcript.BlockContent(transcript.TextBlock("late")), IsError: &f})
			default:
				hist = append(hist, store.Message{Seq: int64(len(hist) + 1), Entry: transcript.Entry{Type: "model_change", ID: fmt.Sprint("m", len(hist))}})
			}
		}
		var memo modelMemo
		start, end := 0, 1
		for end <= len(hist) {
			win := hist[start:end]
			// DeepEqual first: cmp's report is slow, and this runs often.
			if want, got := toProviderMessages(win), memo.messages(win); !reflect.DeepEqual(want, got) {
				t.Fatalf("seed %d, window %d..%d (-fresh +memo):\n%s", seed, win[0].Seq, win[len(win)-1].Seq, cmp.Diff(want, got))
			}
			switch r := rng.IntN(20); {
			case r == 0 && start > 0:
				start = rng.IntN(start) // back: converted afresh
			default:
				end += 1 + rng.IntN(4)
				if max := 5 + rng.IntN(30); end-start > max {
					start = end - max
				}
			}
			start = min(start, len(hist)-1, end-1)
		}
	}
}

// TestModelMemoReusesToolTurns: the windows of the model steps of a
// session whose turns all use tools convert only their new entries; the messages kept from
// the last window (here: the assistant's tool calls) are those made then,
// whether or not the window's start cut a call from its result.
func TestModelMemoReusesToolTurns(t *testing.T) {
	f := false
	var hist []store.Message
	add := func(m transcript.Message) { hist = appendEntry(hist, m) }
	for turn := range 100 {
		c := fmt.Sprint("call-", turn)
		add(transcript.Message{Role: "user", Content: transcript.StringContent(fmt.Sprint("q", turn))})
		add(transcript.Message{Role: "assistant", Content: transcript.BlockContent(transcript.ToolCallBlock(c, "t", nil))})
		add(transcript.Message{Role: "toolResult", ToolCallID: c, ToolName: "t", Content: transcript.BlockContent(transcript.TextBlock("r")), IsError: &f})
		add(transcript.Message{Role: "assistant", Content: transcript.StringContent(fmt.Sprint("a", turn))})
	}
	const size = 41 // not a multiple of a turn: starts fall between a call and its result
	var memo modelMemo
	calls := map[int64]*provider.ToolCall{} // by entry Seq, as first made
	// A turn's model steps see the window up to its user message, then up
	// to its tool result: windows end at Seqs 4t+1 and 4t+3.
	for end := size; end <= len(hist); end += 2 {
		win := hist[end-size : end]
		got := memo.messages(win)
		if diff := cmp.Diff(toProviderMessages(win), got); diff != "" {
			t.Fatalf("window ending %d (-fresh +memo):\n%s", end, diff)
		}
		for k, m := range got {
			if len(m.ToolCalls) == 0 {
				continue
			}
			seq := memo.seqs[len(memo.seqs)-len(got)+k]
			if first, ok := calls[seq]; !ok {
				calls[seq] = &m.ToolCalls[0]
			} else if first != &m.ToolCalls[0] {
				t.Fatalf("window ending %d: the call of entry %d was converted again", end, seq)
			}
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

// TestModelMemoExtendsInPlace: a warm turn's window (the previous one and
// the turn's two new entries, sliding by two) converts its new entries into
// the memo's own slices; only the memo's drops, every few hundred entries,
// allocate. Converting them apart and appending the result made three
// allocations a turn.
func TestModelMemoExtendsInPlace(t *testing.T) {
	var hist []store.Message
	var replies []string
	for turn := range 2000 {
		replies = append(replies, fmt.Sprint("a", turn))
		hist = appendEntry(hist, transcript.Message{Role: "user", Content: transcript.StringContent(fmt.Sprint("q", turn))})
		hist = appendEntry(hist, transcript.Message{Role: "assistant", Content: transcript.BlockContent(transcript.TextBlock(replies[turn]))})
	}
	const size = 400
	var memo modelMemo
	end := size
	step := func() {
		out := memo.messages(hist[end-size : end])
		if len(out) != size || out[size-1].Text != replies[end/2-1] {
			t.Fatalf("window ending at %d: %d messages, last %+v", end, len(out), out[len(out)-1])
		}
		end += 2
	}
	step()
	if n := testing.AllocsPerRun(500, step); n > 0.1 {
		t.Errorf("%v allocations per window, want about none", n)
	}
}
