package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// checkChain verifies that msgs are the whole transcript sid in order: Seq
// 1..n, unique non-empty ids, and each ParentID naming the previous entry
// (nil for the first).
func checkChain(t *testing.T, sid string, msgs []store.Message) {
	t.Helper()
	seen := make(map[string]bool, len(msgs))
	for i, m := range msgs {
		if m.SessionID != sid {
			t.Errorf("entry %d: SessionID = %q, want %q", i, m.SessionID, sid)
		}
		if m.Seq != int64(i+1) {
			t.Fatalf("entry %d: Seq = %d, want %d", i, m.Seq, i+1)
		}
		if m.Entry.ID == "" {
			t.Fatalf("entry %d: empty ID", i)
		}
		if seen[m.Entry.ID] {
			t.Fatalf("entry %d: duplicate ID %q", i, m.Entry.ID)
		}
		seen[m.Entry.ID] = true
		switch {
		case i == 0 && m.Entry.ParentID != nil:
			t.Errorf("entry 0: ParentID = %q, want nil", *m.Entry.ParentID)
		case i > 0 && (m.Entry.ParentID == nil || *m.Entry.ParentID != msgs[i-1].Entry.ID):
			t.Errorf("entry %d: ParentID = %v, want %q", i, deref(m.Entry.ParentID), msgs[i-1].Entry.ID)
		}
	}
}

func deref(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

// sameMessages compares stored messages ignoring CreatedAt.
func sameMessages(t *testing.T, what string, want, got []store.Message) {
	t.Helper()
	if diff := cmp.Diff(want, got, cmpOpts, cmp.FilterPath(func(p cmp.Path) bool {
		return p.Last().String() == ".CreatedAt"
	}, cmp.Ignore())); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

func testAppendChain(t *testing.T, s store.Store) {
	ctx := context.Background()
	const sid = "0195d2a4-aaaa-7000-8000-000000000001"
	m1 := textMsg(transcript.RoleUser, "hello")
	m1.CreatedAt = at(5)
	m2 := textMsg(transcript.RoleAssistant, "hi")
	m2.RunID = "run-1"
	m3 := textMsg(transcript.RoleUser, "again")
	first := mustAppend(t, s, sid, m1, m2, m3)
	if len(first) != 3 {
		t.Fatalf("AppendMessages returned %d messages, want 3", len(first))
	}
	checkChain(t, sid, first)
	for i, role := range []string{"user", "assistant", "user"} {
		if first[i].Role != role {
			t.Errorf("entry %d: Role = %q, want %q", i, first[i].Role, role)
		}
	}
	if first[1].RunID != "run-1" {
		t.Errorf("RunID = %q, want run-1", first[1].RunID)
	}
	if !first[0].CreatedAt.Equal(at(5)) {
		t.Errorf("CreatedAt = %v, want %v", first[0].CreatedAt, at(5))
	}
	if first[1].CreatedAt.IsZero() {
		t.Errorf("zero CreatedAt not defaulted")
	}

	change := store.Message{Entry: transcript.Entry{
		Type:      transcript.TypeModelChange,
		Timestamp: transcript.FormatTime(at(6)),
		Extra: map[string]json.RawMessage{
			"provider": json.RawMessage(`"openai"`),
			"modelId":  json.RawMessage(`"gpt-test"`),
		},
	}}
	second := mustAppend(t, s, sid, change, textMsg(transcript.RoleToolResult, "{}"))
	all := append(append([]store.Message(nil), first...), second...)
	checkChain(t, sid, all)
	if second[0].Role != "" {
		t.Errorf("non-message entry: Role = %q, want empty", second[0].Role)
	}

	hist := mustHistory(t, s, sid, store.HistoryOptions{})
	sameMessages(t, "History after appends", all, hist)
	if !hist[0].CreatedAt.Equal(at(5)) {
		t.Errorf("stored CreatedAt = %v, want %v", hist[0].CreatedAt, at(5))
	}
	if n, err := s.CountMessages(ctx, sid); err != nil || n != 5 {
		t.Errorf("CountMessages = %d, %v; want 5", n, err)
	}

	// Another transcript is independent.
	other := mustAppend(t, s, "other", textMsg("user", "x"))
	checkChain(t, "other", other)
	if n, err := s.CountMessages(ctx, "missing"); err != nil || n != 0 {
		t.Errorf("CountMessages(missing) = %d, %v; want 0", n, err)
	}

	// Appending nothing changes nothing.
	if _, err := s.AppendMessages(ctx, sid, nil); err != nil {
		t.Errorf("AppendMessages(nil): %v", err)
	}
	if n, _ := s.CountMessages(ctx, sid); n != 5 {
		t.Errorf("CountMessages after empty append = %d, want 5", n)
	}
}

func testAppendKeepsGivenIDs(t *testing.T, s store.Store) {
	const sid = "given"
	a := textMsg("user", "a")
	a.Entry.ID = "e-a"
	b := textMsg("assistant", "b")
	b.Entry.ID = "e-b"
	pa := "e-a"
	c := textMsg("assistant", "c (branch from a)")
	c.Entry.ID = "e-c"
	c.Entry.ParentID = &pa
	d := textMsg("user", "d")
	got := mustAppend(t, s, sid, a, b, c, d)

	wantParents := []any{nil, "e-a", "e-a", "e-c"}
	wantIDs := []string{"e-a", "e-b", "e-c"}
	for _, list := range [][]store.Message{got, mustHistory(t, s, sid, store.HistoryOptions{})} {
		for i, m := range list {
			if i < len(wantIDs) && m.Entry.ID != wantIDs[i] {
				t.Errorf("entry %d: ID = %q, want %q", i, m.Entry.ID, wantIDs[i])
			}
			if p := deref(m.Entry.ParentID); p != wantParents[i] {
				t.Errorf("entry %d: ParentID = %v, want %v", i, p, wantParents[i])
			}
			if m.Seq != int64(i+1) {
				t.Errorf("entry %d: Seq = %d", i, m.Seq)
			}
		}
		if list[3].Entry.ID == "" {
			t.Errorf("entry 3: empty ID")
		}
	}
	if c.Entry.ParentID != &pa || *c.Entry.ParentID != "e-a" || d.Entry.ID != "" {
		t.Errorf("AppendMessages modified its input")
	}
}

func testAppendConcurrent(t *testing.T, s store.Store) {
	ctx := context.Background()
	const (
		sid        = "concurrent"
		goroutines = 8
		calls      = 12
	)
	var (
		wg    sync.WaitGroup
		total int
	)
	for g := range goroutines {
		for c := range calls {
			total += 1 + (g+c)%3
		}
		wg.Go(func() {
			for c := range calls {
				n := 1 + (g+c)%3
				msgs := make([]store.Message, n)
				for k := range msgs {
					msgs[k] = textMsg("user", fmt.Sprintf("%d/%d/%d", g, c, k))
				}
				if _, err := s.AppendMessages(ctx, sid, msgs); err != nil {
					t.Errorf("goroutine %d: AppendMessages: %v", g, err)
					return
				}
			}
		})
	}
	wg.Wait()
	hist := mustHistory(t, s, sid, store.HistoryOptions{})
	if len(hist) != total {
		t.Fatalf("History has %d entries, want %d", len(hist), total)
	}
	checkChain(t, sid, hist)
	// Each call's messages are contiguous and in order.
	for i := 0; i < len(hist); {
		var g, c, k int
		if _, err := fmt.Sscanf(hist[i].Entry.Message.Content.Text(), "%d/%d/%d", &g, &c, &k); err != nil || k != 0 {
			t.Fatalf("entry %d (%q) does not start a batch", i, hist[i].Entry.Message.Content.Text())
		}
		n := 1 + (g+c)%3
		for j := range n {
			want := fmt.Sprintf("%d/%d/%d", g, c, j)
			if i+j >= len(hist) || hist[i+j].Entry.Message.Content.Text() != want {
				t.Fatalf("entry %d: batch %d/%d interleaved", i+j, g, c)
			}
		}
		i += n
	}
	if n, err := s.CountMessages(ctx, sid); err != nil || n != int64(total) {
		t.Errorf("CountMessages = %d, %v; want %d", n, err, total)
	}
}

// richEntries returns entries using most of the transcript format.
func richEntries() []store.Message {
	str := func(s string) *string { return &s }
	yes := true
	user := textMsg(transcript.RoleUser, "what's the weather?")
	user.Entry.Message.IdempotencyKey = "idem-1"
	user.Entry.Message.Provenance = &transcript.Provenance{
		Kind: transcript.ProvenanceInterSession, SourceSessionKey: "agent:main:main", SourceTool: "sessions_send",
	}
	assistant := store.Message{RunID: "run-9", Entry: transcript.Entry{
		Type:      transcript.TypeMessage,
		Timestamp: transcript.FormatTime(at(1)),
		Message: &transcript.Message{
			Role: transcript.RoleAssistant,
			Content: transcript.BlockContent(
				transcript.Block{Type: transcript.BlockThinking, Thinking: str("hmm"), ThinkingSignature: "sig"},
				transcript.TextBlock("Let me check."),
				transcript.ToolCallBlock("call-1", "weather", json.RawMessage(`{"city":"Oslo"}`)),
			),
			Timestamp:  at(1).UnixMilli(),
			API:        "openai-completions",
			Provider:   "openai",
			Model:      "gpt-test",
			Usage:      &transcript.Usage{Input: 10, Output: 5, TotalTokens: 15, Cost: &transcript.Cost{Input: 0.1, Total: 0.1}},
			StopReason: "toolUse",
			ResponseID: "resp-1",
			Meta:       &transcript.Meta{RunID: "run-9"},
		},
	}}
	result := store.Message{Entry: transcript.Entry{
		Type:      transcript.TypeMessage,
		Timestamp: transcript.FormatTime(at(2)),
		Message: &transcript.Message{
			Role:       transcript.RoleToolResult,
			Content:    transcript.BlockContent(transcript.TextBlock(`{"temp":3}`)),
			Timestamp:  at(2).UnixMilli(),
			ToolCallID: "call-1",
			ToolName:   "weather",
			Details:    json.RawMessage(`{"temp":3}`),
			IsError:    &yes,
		},
	}}
	custom := store.Message{Entry: transcript.Entry{
		Type:      transcript.TypeCustom,
		Timestamp: transcript.FormatTime(at(3)),
		Extra: map[string]json.RawMessage{
			"customType": json.RawMessage(`"model-snapshot"`),
			"data":       json.RawMessage(`{"model":"gpt-test","n":[1,2]}`),
		},
	}}
	return []store.Message{user, assistant, result, custom}
}

func testHistory(t *testing.T, s store.Store) {
	ctx := context.Background()
	const sid = "hist"
	var msgs []store.Message
	for i := 1; i <= 10; i++ {
		m := textMsg("user", fmt.Sprintf("m%d", i))
		m.RunID = []string{"run-a", "run-b"}[i%2] // even seqs run-a, odd run-b
		msgs = append(msgs, m)
	}
	mustAppend(t, s, sid, msgs...)
	mustAppend(t, s, "noise", textMsg("user", "other transcript"))

	seqs := func(ms []store.Message) string {
		var b strings.Builder
		for i, m := range ms {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%d", m.Seq)
			if want := fmt.Sprintf("m%d", m.Seq); m.Entry.Message.Content.Text() != want {
				t.Errorf("seq %d holds %q, want %q", m.Seq, m.Entry.Message.Content.Text(), want)
			}
		}
		return b.String()
	}
	tests := []struct {
		opts store.HistoryOptions
		want string
	}{
		{store.HistoryOptions{}, "1,2,3,4,5,6,7,8,9,10"},
		{store.HistoryOptions{Limit: 3}, "8,9,10"},
		{store.HistoryOptions{Limit: 100}, "1,2,3,4,5,6,7,8,9,10"},
		{store.HistoryOptions{BeforeSeq: 5}, "1,2,3,4"},
		{store.HistoryOptions{BeforeSeq: 5, Limit: 2}, "3,4"},
		{store.HistoryOptions{BeforeSeq: 100, Limit: 2}, "9,10"},
		{store.HistoryOptions{BeforeSeq: 1}, ""},
		{store.HistoryOptions{BeforeSeq: 2, Limit: 5}, "1"},
		{store.HistoryOptions{RunID: "run-a"}, "2,4,6,8,10"},
		{store.HistoryOptions{RunID: "run-b", Limit: 2}, "7,9"},
		{store.HistoryOptions{RunID: "run-b", BeforeSeq: 7, Limit: 2}, "3,5"},
		{store.HistoryOptions{RunID: "run-c"}, ""},
	}
	for _, tt := range tests {
		if got := seqs(mustHistory(t, s, sid, tt.opts)); got != tt.want {
			t.Errorf("History(%+v) seqs = %q, want %q", tt.opts, got, tt.want)
		}
	}
	// Runs stored after messages written under their ids still find them:
	// a chat command answered under the request's run id and then
	// recorded ended (EndCommand), and a run that goes on under that id
	// ("/new hello").
	now := time.Now()
	for _, r := range []*store.Run{
		{RunID: "run-a", SessionKey: "agent:main:hist", SessionID: sid, Status: store.RunOK, StartedAt: now, EndedAt: now},
		{RunID: "run-b", SessionKey: "agent:main:hist", SessionID: sid},
	} {
		if err := s.CreateRun(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range tests {
		if tt.opts.RunID == "" {
			continue
		}
		if got := seqs(mustHistory(t, s, sid, tt.opts)); got != tt.want {
			t.Errorf("with its run stored: History(%+v) seqs = %q, want %q", tt.opts, got, tt.want)
		}
	}
	if got := mustHistory(t, s, "missing", store.HistoryOptions{Limit: 5}); len(got) != 0 {
		t.Errorf("History(missing) = %d entries", len(got))
	}

	// Entries come back intact, unknown fields included.
	rich := mustAppend(t, s, "rich", richEntries()...)
	got := mustHistory(t, s, "rich", store.HistoryOptions{})
	sameMessages(t, "History of rich entries", rich, got)
	if got[1].RunID != "run-9" {
		t.Errorf("RunID = %q, want run-9", got[1].RunID)
	}
	if n, err := s.CountMessages(ctx, "rich"); err != nil || n != 4 {
		t.Errorf("CountMessages(rich) = %d, %v", n, err)
	}
}

func testPostMessage(t *testing.T, s store.Store) {
	ctx := context.Background()
	first, posted, err := s.PostMessage(ctx, "sid-post", "k1", textMsg(transcript.RoleAssistant, "hello"))
	if err != nil || !posted || first.Seq != 1 || first.Entry.ID == "" {
		t.Fatalf("first post = %+v, %v, %v", first, posted, err)
	}
	again, posted, err := s.PostMessage(ctx, "sid-post", "k1", textMsg(transcript.RoleAssistant, "hello again"))
	if err != nil || posted || again.Entry.ID != first.Entry.ID || again.Seq != 1 || again.Entry.Message.Content.Text() != "hello" {
		t.Fatalf("repeated post = %+v, %v, %v; want the first message back", again, posted, err)
	}
	if _, posted, _ := s.PostMessage(ctx, "sid-post", "k2", textMsg(transcript.RoleAssistant, "other")); !posted {
		t.Error("a second key did not post")
	}
	for range 2 {
		if _, posted, _ := s.PostMessage(ctx, "sid-post", "", textMsg(transcript.RoleAssistant, "no key")); !posted {
			t.Error("a post without a key was refused")
		}
	}
	// Keys are per transcript.
	if _, posted, _ := s.PostMessage(ctx, "sid-post-2", "k1", textMsg(transcript.RoleAssistant, "elsewhere")); !posted {
		t.Error("the same key in another transcript did not post")
	}
	if n, _ := s.CountMessages(ctx, "sid-post"); n != 4 {
		t.Errorf("%d messages, want 4", n)
	}
	// The chain continues across posts and appends.
	hist, _ := s.History(ctx, "sid-post", store.HistoryOptions{})
	for i := 1; i < len(hist); i++ {
		if hist[i].Entry.ParentID == nil || *hist[i].Entry.ParentID != hist[i-1].Entry.ID {
			t.Errorf("entry %d parent = %v, want %s", i, hist[i].Entry.ParentID, hist[i-1].Entry.ID)
		}
	}
	// Concurrent posts with one key store one message.
	var wg sync.WaitGroup
	var postedN atomic.Int32
	for range 8 {
		wg.Go(func() {
			_, posted, err := s.PostMessage(ctx, "sid-post-race", "race", textMsg(transcript.RoleAssistant, "race"))
			if err != nil {
				t.Errorf("concurrent post: %v", err)
			}
			if posted {
				postedN.Add(1)
			}
		})
	}
	wg.Wait()
	if n, _ := s.CountMessages(ctx, "sid-post-race"); n != 1 || postedN.Load() != 1 {
		t.Errorf("concurrent posts stored %d messages (%d reported posted), want 1", n, postedN.Load())
	}
	if _, _, err := s.PostMessage(ctx, "", "k", textMsg(transcript.RoleAssistant, "x")); err == nil {
		t.Error("a post without a transcript id succeeded")
	}
}
