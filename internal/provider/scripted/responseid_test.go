package scripted

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// session is a random conversation as the runner keeps it: a transcript
// that requests send windows of, sharing its memory.
type session struct {
	rng  *rand.Rand
	hist []provider.Message
}

// message returns a random message from a small vocabulary, so that
// sessions share starts and messages repeat by value.
func (s *session) message() provider.Message {
	words := []string{"hello", "echo: hello", "warm turn", strings.Repeat("a long text of many words ", 3), ""}
	names := []string{"sessions_list", "read", strings.Repeat("n", 300)}
	w := func() string { return words[s.rng.IntN(len(words))] }
	switch s.rng.IntN(6) {
	case 0, 1:
		return provider.Message{Role: provider.RoleUser, Text: w()}
	case 2:
		role := provider.RoleAssistant
		if s.rng.IntN(4) == 0 {
			role = []provider.Role{"system", "developer"}[s.rng.IntN(2)]
		}
		return provider.Message{Role: role, Text: w(), IsError: s.rng.IntN(4) == 0}
	case 3:
		m := provider.Message{Role: provider.RoleAssistant}
		for i := range s.rng.IntN(3) + 1 {
			m.ToolCalls = append(m.ToolCalls, provider.ToolCall{ID: "call_" + strconv.Itoa(i),
				Name: names[s.rng.IntN(len(names))], Arguments: json.RawMessage(`{"k":` + strconv.Itoa(s.rng.IntN(3)) + `}`)})
		}
		return m
	case 4:
		return provider.Message{Role: provider.RoleTool, ToolCallID: "call_" + strconv.Itoa(s.rng.IntN(2)),
			ToolName: names[s.rng.IntN(len(names))], Text: w(), IsError: s.rng.IntN(4) == 0}
	default:
		return provider.Message{Role: provider.RoleUser, Text: w(),
			Images: []provider.Image{{MimeType: "image/png", Data: []string{"AAAA", "AAAB"}[s.rng.IntN(2)]}}}
	}
}

// next changes the session the way runs, edits, compaction and careless
// callers do, and returns the request of its next model call.
func (s *session) next(r *provider.Request) {
	switch op := s.rng.IntN(20); {
	case op < 10 || len(s.hist) == 0: // a turn: new messages at the end
		for range s.rng.IntN(3) + 1 {
			s.hist = append(s.hist, s.message())
		}
	case op < 12: // a message in the middle replaced by another value
		s.hist = slices.Clone(s.hist)
		s.hist[s.rng.IntN(len(s.hist))] = s.message()
	case op < 14: // a message changed in place, in memory an earlier request used
		m := &s.hist[s.rng.IntN(len(s.hist))]
		switch k := s.rng.IntN(3); {
		case len(m.ToolCalls) > 0 && k == 0:
			m.ToolCalls[0].Arguments[len(m.ToolCalls[0].Arguments)-2] ^= 1 // the digit
		case len(m.ToolCalls) > 0 && k == 1:
			m.ToolCalls[len(m.ToolCalls)-1].Name = flip(m.ToolCalls[len(m.ToolCalls)-1].Name)
		case len(m.ToolCalls) > 0:
			m.ToolCalls[0].ID = flip(m.ToolCalls[0].ID)
		case m.ToolName != "" && k == 0:
			m.ToolName = flip(m.ToolName)
		case m.ToolCallID != "" && k == 1:
			m.ToolCallID = flip(m.ToolCallID)
		case len(m.Images) > 0:
			m.Images[0].Data = "AAAC"
		case s.rng.IntN(2) == 0:
			m.IsError = !m.IsError
		case m.Text == "":
			m.Text = "!"
		default:
			m.Text = flip(m.Text)
		}
	case op < 15: // compaction: a summary and the last few messages
		keep := s.hist[len(s.hist)-min(len(s.hist), s.rng.IntN(4)):]
		s.hist = append([]provider.Message{{Role: provider.RoleUser, Text: "summary " + strconv.Itoa(s.rng.IntN(3))}}, keep...)
	case op < 16: // the last messages dropped
		s.hist = s.hist[:s.rng.IntN(len(s.hist))]
	case op < 17: // the tools' schema changed in place
		if len(r.Tools) > 0 {
			r.Tools[0].Parameters[1] ^= 1
		}
	case op < 18:
		r.System = []string{"", "be brief", strings.Repeat("rules ", 20)}[s.rng.IntN(3)]
		r.MaxTokens = s.rng.IntN(2) * 100
		r.Thinking = []string{"", "low"}[s.rng.IntN(2)]
	}
	// A window of the transcript, as HistoryLimit cuts it, or all of it.
	w := len(s.hist)
	if s.rng.IntN(2) == 0 {
		w = min(w, s.rng.IntN(30)+1)
	}
	r.Messages = s.hist[len(s.hist)-w:]
	if s.rng.IntN(30) == 0 {
		r.Messages = nil
	}
}

// flip returns s with its last byte's lowest bit flipped: another value of
// the same length.
func flip(s string) string {
	if s == "" {
		return s
	}
	return s[:len(s)-1] + string(rune(s[len(s)-1]^1))
}

func newSessionRequest() *provider.Request {
	return &provider.Request{Model: ModelID, System: "be brief",
		Tools: []provider.ToolDef{{Name: "read", Description: "reads", Parameters: json.RawMessage(`{"type":"object"}`)}}}
}

// TestResponseIDMemoMatchesScratch runs random request sequences of more
// sessions than the memo holds through one Provider: each id equals the
// one computed from scratch, whatever the memo remembered of the earlier
// requests, including memory they shared and that was changed since.
func TestResponseIDMemoMatchesScratch(t *testing.T) {
	for seed := range uint64(12) {
		p := New(Options{})
		rng := rand.New(rand.NewPCG(seed, 1))
		sessions := make([]*session, memoChains+4)
		reqs := make([]*provider.Request, len(sessions))
		for i := range sessions {
			sessions[i] = &session{rng: rng}
			reqs[i] = newSessionRequest()
		}
		for step := range 3000 {
			// A few busy sessions most of the time, the others now and then.
			i := rng.IntN(3)
			if rng.IntN(4) == 0 {
				i = rng.IntN(len(sessions))
			}
			r := reqs[i]
			sessions[i].next(r)
			if got, want := p.responseID(r), scratchID(p.name, r); got != want {
				t.Fatalf("seed %d, step %d, session %d (%d messages): id %s, from scratch %s", seed, step, i, len(r.Messages), got, want)
			}
			if step%8 == 0 {
				checkWindows(t, p)
			}
		}
	}
}

// checkWindows checks the memo's windows: each one's byte count is what
// its messages refer to, and its prefix values are its messages'.
func checkWindows(t *testing.T, p *Provider) {
	t.Helper()
	for i := range p.ids.chains {
		c := &p.ids.chains[i]
		if c.fbuf == nil {
			continue // never used
		}
		n := 0
		for _, m := range c.msgs() {
			n += messageBytes(&m)
		}
		if n != c.bytes || len(c.fbuf) != len(c.buf)+1 {
			t.Fatalf("window %d: %d bytes counted, %d referred to; %d prefix values for %d messages", i, c.bytes, n, len(c.fbuf), len(c.buf))
		}
		if m := c.msgs(); len(m) > 0 && c.value(0, len(m)) != windowValue(m) {
			t.Fatalf("window %d: its prefix values are not its messages'", i)
		}
	}
}

// TestResponseIDMemoConcurrent has sessions run on one Provider at once
// (run with -race): each id equals the one computed from scratch.
func TestResponseIDMemoConcurrent(t *testing.T) {
	p := New(Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range uint64(8) {
		wg.Go(func() {
			s := &session{rng: rand.New(rand.NewPCG(g, 2))}
			r := newSessionRequest()
			for step := range 500 {
				s.next(r)
				if got, want := p.responseID(r), scratchID(p.name, r); got != want {
					errs <- fmt.Errorf("goroutine %d, step %d: id %s, from scratch %s", g, step, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestResponseIDMemoSlides checks that a window that slid by two messages
// reuses the digests of the messages it kept: the memo's window continues
// the earlier one's polynomial instead of starting again.
func TestResponseIDMemoSlides(t *testing.T) {
	p := New(Options{})
	window := slidingHistory(50, "the weather")
	r := &provider.Request{Model: ModelID}
	// A session's first request leaves a ghost; its second, which
	// continues the first, is remembered.
	r.Messages = window(0)[:48]
	p.responseID(r)
	r.Messages = window(0)
	first := p.responseID(r)
	held := func() []*chain {
		var cs []*chain
		for i := range p.ids.chains {
			if c := &p.ids.chains[i]; len(c.msgs()) > 0 {
				cs = append(cs, c)
			}
		}
		return cs
	}
	cs := held()
	if len(cs) != 1 || len(cs[0].msgs()) != 50 || cs[0].f()[0] != 0 {
		t.Fatalf("after the first request the memo holds %d windows, want one of 50 messages from 0", len(cs))
	}
	c := cs[0]
	before := slices.Clone(c.f())
	r.Messages = window(1)
	if got, want := p.responseID(r), scratchID(p.name, r); got != want || got == first {
		t.Fatalf("id %s, from scratch %s, first %s", got, want, first)
	}
	if cs := held(); len(cs) != 1 || cs[0] != c || len(c.msgs()) != 50 {
		t.Fatalf("after the slid window the memo holds %d windows, want the same one of 50 messages", len(cs))
	}
	if !slices.Equal(c.f()[:49], before[2:]) {
		t.Errorf("the slid window's prefix values are not the earlier window's")
	}
}

// TestResponseIDMemoBounded checks the memo's bounds: no more windows than
// memoChains, none longer than maxChainMessages or referring to more than
// maxChainBytes, and no system prompt and tools of more than maxFixedBytes.
func TestResponseIDMemoBounded(t *testing.T) {
	p := New(Options{})
	check := func(r *provider.Request) {
		t.Helper()
		if got, want := p.responseID(r), scratchID(p.name, r); got != want {
			t.Fatalf("id %s, from scratch %s", got, want)
		}
	}
	for i := range 2 * memoChains {
		s := user("session " + strconv.Itoa(i))
		check(req(s))
		check(req(s, user("again")))
	}
	for i := range p.ids.chains {
		if n := len(p.ids.chains[i].msgs()); n != 2 {
			t.Errorf("window %d holds %d messages, want 2", i, n)
		}
	}

	long := make([]provider.Message, maxChainMessages+1)
	for i := range long {
		long[i] = user("m")
	}
	check(req(long...))
	check(req(long[1:]...))
	big := strings.Repeat("x", maxChainBytes)
	check(req(user("a"), user(big)))
	check(req(user("a"), user(big), user("b")))
	check(&provider.Request{System: strings.Repeat("s", maxFixedBytes+1), Messages: []provider.Message{user("a")}})
	for i := range p.ids.chains {
		c := &p.ids.chains[i]
		if len(c.msgs()) > maxChainMessages || c.bytes > maxChainBytes {
			t.Errorf("window %d holds %d messages of %d bytes", i, len(c.msgs()), c.bytes)
		}
		for _, m := range c.msgs() {
			if m.Text == big {
				t.Errorf("window %d refers to a message of %d bytes", i, len(big))
			}
		}
	}
	for i := range p.ids.fixes {
		if n := len(p.ids.fixes[i].system); n > maxFixedBytes {
			t.Errorf("fixed entry %d holds a system prompt of %d bytes", i, n)
		}
	}
}
