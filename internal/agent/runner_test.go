package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

func echo(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
	return textReply("echo: " + lastUser(req)), nil
}

func TestRunStoresTranscriptAndUsage(t *testing.T) {
	h := newHarness(t, echo, nil)
	run := h.submit(Input{RunID: "run-1", Message: "hello", IdempotencyKey: "run-1:user"})
	// The session's lane is idle: the run is queued and started in one
	// transaction.
	if run.Status != store.RunRunning || run.StartedAt.IsZero() {
		t.Errorf("Submit status = %q, started %v, want running", run.Status, run.StartedAt)
	}
	got := h.wait("run-1")
	if got.Status != store.RunOK || got.StopReason != "stop" {
		t.Fatalf("run = %+v, want ok/stop", got)
	}
	if got.Usage.Input != 10 || got.Usage.Output != 3 || got.Usage.TotalTokens != 13 {
		t.Errorf("run usage = %+v", got.Usage)
	}
	msgs := h.transcript("agent:main:main")
	if len(msgs) != 2 {
		t.Fatalf("transcript has %d entries, want 2", len(msgs))
	}
	user, asst := msgs[0].Entry.Message, msgs[1].Entry.Message
	if user.Role != "user" || user.Content.Text() != "hello" || user.IdempotencyKey != "run-1:user" || user.Meta.RunID != "run-1" {
		t.Errorf("user message = %+v", user)
	}
	if asst.Role != "assistant" || asst.Content.Text() != "echo: hello" || asst.StopReason != "stop" ||
		asst.Provider != "fake" || asst.Model != "fake-1" || asst.API != "openai-completions" || asst.ResponseID != "resp-1" {
		t.Errorf("assistant message = %+v", asst)
	}
	if msgs[1].Entry.ParentID == nil || *msgs[1].Entry.ParentID != msgs[0].Entry.ID {
		t.Errorf("assistant parentId = %v, want %q", msgs[1].Entry.ParentID, msgs[0].Entry.ID)
	}
	sess, err := h.store.GetSession(context.Background(), "agent:main:main")
	if err != nil {
		t.Fatal(err)
	}
	if sess.InputTokens != 10 || sess.OutputTokens != 3 || sess.TotalTokens != 13 || !sess.SystemSent || sess.AbortedLastRun {
		t.Errorf("session = %+v", sess)
	}

	// A second run adds to the session's counters and sees the history.
	var seen []string
	h.prov.fn = func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		for _, m := range req.Messages {
			seen = append(seen, string(m.Role)+":"+m.Text)
		}
		return echo(ctx, req)
	}
	h.submit(Input{RunID: "run-2", Message: "again"})
	h.wait("run-2")
	if want := []string{"user:hello", "assistant:echo: hello", "user:again"}; !cmp.Equal(seen, want) {
		t.Errorf("model saw %q, want %q", seen, want)
	}
	sess, _ = h.store.GetSession(context.Background(), "agent:main:main")
	if sess.TotalTokens != 26 {
		t.Errorf("session totalTokens = %d, want 26", sess.TotalTokens)
	}
}

func TestEventsInOrder(t *testing.T) {
	h := newHarness(t, echo, nil)
	h.submit(Input{RunID: "r", Message: "hi"})
	h.wait("r")
	var got []string
	var seqs []int64
	for _, ev := range h.eventsFor("r") {
		s := ev.Stream + "/" + ev.Phase
		if ev.Stream == StreamAssistant {
			s += ":" + ev.Text + "+" + ev.Delta
		}
		got = append(got, s)
		seqs = append(seqs, ev.Seq)
		if ev.SessionKey != "agent:main:main" || ev.AgentID != "main" || ev.SessionID == "" {
			t.Errorf("event identity = %+v", ev)
		}
	}
	want := []string{"lifecycle/start", "lifecycle/model", "assistant/:echo+echo", "assistant/:echo: hi+: hi", "usage/", "lifecycle/end"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Errorf("seq[%d] = %d, want %d", i, s, i+1)
		}
	}
	evs := h.eventsFor("r")
	end := evs[len(evs)-1]
	if end.Run == nil || end.Run.Status != store.RunOK || end.Message == nil || end.Message.Content.Text() != "echo: hi" {
		t.Errorf("end event = %+v", end)
	}
}

func TestIdempotentRunID(t *testing.T) {
	var calls atomic.Int32
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		calls.Add(1)
		return echo(ctx, req)
	}, nil)
	a, createdA, err := h.runner.Submit(context.Background(), Input{RunID: "same", SessionKey: "agent:main:main", AgentID: "main", Message: "one"})
	if err != nil || !createdA {
		t.Fatalf("first Submit: created=%v err=%v", createdA, err)
	}
	h.wait("same")
	b, createdB, err := h.runner.Submit(context.Background(), Input{RunID: "same", SessionKey: "agent:main:main", AgentID: "main", Message: "two"})
	if err != nil || createdB {
		t.Fatalf("second Submit: created=%v err=%v", createdB, err)
	}
	if a.RunID != b.RunID || b.Status != store.RunOK {
		t.Errorf("second Submit returned %+v", b)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("model called %d times, want 1", n)
	}
	if n := len(h.transcript("agent:main:main")); n != 2 {
		t.Errorf("transcript has %d entries, want 2", n)
	}
}

// TestLaneSerializesOneSession checks that two concurrent inputs to one
// session run strictly one after the other, in order, while another session
// runs in parallel.
func TestLaneSerializesOneSession(t *testing.T) {
	var mu sync.Mutex
	inFlight := map[string]int{}
	maxInFlight := map[string]int{}
	var order []string
	release := make(chan struct{})
	started := make(chan string, 10)
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		msg := lastUser(req)
		key := strings.SplitN(msg, "#", 2)[0]
		mu.Lock()
		inFlight[key]++
		maxInFlight[key] = max(maxInFlight[key], inFlight[key])
		order = append(order, msg)
		mu.Unlock()
		started <- msg
		if strings.HasSuffix(msg, "#1") {
			<-release
		}
		mu.Lock()
		inFlight[key]--
		mu.Unlock()
		return textReply("done " + msg), nil
	}, nil)

	var wg sync.WaitGroup
	for i := 1; i <= 2; i++ {
		wg.Go(func() {
			h.submit(Input{RunID: fmt.Sprintf("a%d", i), SessionKey: "agent:main:a", Message: fmt.Sprintf("a#%d", i)})
		})
		// Keep submission order deterministic.
		if i == 1 {
			if got := <-started; got != "a#1" {
				t.Fatalf("first started = %q", got)
			}
		}
	}
	wg.Wait()
	// While a#1 is held, a#2 must still be queued, and session b runs.
	h.submit(Input{RunID: "b1", SessionKey: "agent:main:b", Message: "b#x"})
	if got := <-started; got != "b#x" {
		t.Fatalf("started %q while a#1 held, want b#x", got)
	}
	h.wait("b1")
	if r, _ := h.store.GetRun(context.Background(), "a2"); r.Status != store.RunQueued {
		t.Errorf("a2 status while a1 runs = %q, want queued", r.Status)
	}
	if n := h.runner.queueLength("agent:main:a"); n != 1 {
		t.Errorf("queueLength = %d, want 1", n)
	}
	close(release)
	r2 := h.wait("a2")
	r1 := h.wait("a1")
	if r1.Status != store.RunOK || r2.Status != store.RunOK {
		t.Fatalf("statuses %q %q", r1.Status, r2.Status)
	}
	if !r2.StartedAt.After(r1.EndedAt) && !r2.StartedAt.Equal(r1.EndedAt) {
		t.Errorf("a2 started %v before a1 ended %v", r2.StartedAt, r1.EndedAt)
	}
	mu.Lock()
	defer mu.Unlock()
	if maxInFlight["a"] != 1 {
		t.Errorf("max concurrent runs on session a = %d, want 1", maxInFlight["a"])
	}
	if want := []string{"a#1", "b#x", "a#2"}; !cmp.Equal(order, want) {
		t.Errorf("order = %q, want %q", order, want)
	}
	msgs := h.transcript("agent:main:a")
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.Entry.Message.Content.Text())
	}
	if want := []string{"a#1", "done a#1", "a#2", "done a#2"}; !cmp.Equal(texts, want) {
		t.Errorf("transcript = %q, want %q", texts, want)
	}
}

func TestStalledProviderTimesOut(t *testing.T) {
	h := newHarness(t, echo, nil)
	h.submit(Input{RunID: "first", Message: "before"})
	h.wait("first")
	h.prov.fn = func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		<-ctx.Done()
		return []provider.Event{{Type: provider.EventTextDelta, Text: "partial"}}, ctx.Err()
	}
	h.submit(Input{RunID: "stall", Message: "hang", Timeout: 50 * time.Millisecond})
	run := h.wait("stall")
	if run.Status != store.RunTimeout || !strings.Contains(run.Error, "timed out") {
		t.Fatalf("run = %+v, want timeout", run)
	}
	msgs := h.transcript("agent:main:main")
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.Entry.Message.Role+":"+m.Entry.Message.Content.Text())
	}
	want := []string{"user:before", "assistant:echo: before", "user:hang", "assistant:partial"}
	if diff := cmp.Diff(want, texts); diff != "" {
		t.Errorf("transcript (-want +got):\n%s", diff)
	}
	if got := msgs[3].Entry.Message.StopReason; got != "aborted" {
		t.Errorf("partial message stopReason = %q, want aborted", got)
	}
	sess, _ := h.store.GetSession(context.Background(), "agent:main:main")
	if sess.AbortedLastRun {
		t.Error("timeout set abortedLastRun")
	}
	// The lane is free again.
	h.prov.fn = echo
	h.submit(Input{RunID: "after", Message: "next"})
	if r := h.wait("after"); r.Status != store.RunOK {
		t.Errorf("run after timeout = %q", r.Status)
	}
}

func TestAbort(t *testing.T) {
	started := make(chan struct{}, 1)
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}, nil)
	h.submit(Input{RunID: "active", Message: "x"})
	h.submit(Input{RunID: "queued", Message: "y"})
	<-started
	ok, err := h.runner.Abort(context.Background(), "queued")
	if err != nil || !ok {
		t.Fatalf("Abort(queued) = %v, %v", ok, err)
	}
	if r := h.wait("queued"); r.Status != store.RunAborted || !r.StartedAt.IsZero() {
		t.Errorf("queued run = %+v", r)
	}
	ids, err := h.runner.AbortSession(context.Background(), "agent:main:main")
	if err != nil || !cmp.Equal(ids, []string{"active"}) {
		t.Fatalf("AbortSession = %v, %v", ids, err)
	}
	if r := h.wait("active"); r.Status != store.RunAborted {
		t.Errorf("active run = %+v", r)
	}
	sess, _ := h.store.GetSession(context.Background(), "agent:main:main")
	if !sess.AbortedLastRun {
		t.Error("abortedLastRun not set")
	}
	if ok, err := h.runner.Abort(context.Background(), "nope"); ok || err != nil {
		t.Errorf("Abort(unknown) = %v, %v", ok, err)
	}
	select {
	case <-started:
		t.Error("aborted queued run started")
	default:
	}
}

func TestToolLoop(t *testing.T) {
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == provider.RoleTool {
			var results []string
			for _, m := range req.Messages {
				if m.Role == provider.RoleTool {
					results = append(results, m.ToolName+"="+m.Text)
				}
			}
			return textReply(strings.Join(results, "; ")), nil
		}
		return toolTurn(
			provider.ToolCall{ID: "c1", Name: "add", Arguments: json.RawMessage(`{"a":2,"b":3}`)},
			provider.ToolCall{ID: "c2", Name: "boom", Arguments: json.RawMessage(`{}`)},
			provider.ToolCall{ID: "c3", Name: "missing", Arguments: json.RawMessage(`{}`)},
			provider.ToolCall{ID: "c4", Name: "panics"},
		), nil
	}, func(c *Config) {
		c.Tools = func(_ context.Context, info RunInfo) *tools.Set {
			return tools.NewSet(
				funcTool{"add", func(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
					var p struct{ A, B int }
					json.Unmarshal(args, &p)
					if got := tools.CallerFrom(ctx); got.SessionKey != "agent:main:main" || got.RunID != "tl" || got.Channel != "webchat" {
						return nil, fmt.Errorf("bad caller %+v", got)
					}
					return tools.JSONResult(map[string]int{"sum": p.A + p.B}), nil
				}},
				funcTool{"boom", func(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
					return nil, errors.New("message required")
				}},
				funcTool{"panics", func(ctx context.Context, args json.RawMessage) (*tools.Result, error) {
					panic("bad tool")
				}},
			)
		}
	})
	h.submit(Input{RunID: "tl", Message: "use tools", Channel: "webchat"})
	run := h.wait("tl")
	if run.Status != store.RunOK {
		t.Fatalf("run = %+v", run)
	}
	msgs := h.transcript("agent:main:main")
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	if want := []string{"user", "assistant", "toolResult", "toolResult", "toolResult", "toolResult", "assistant"}; !cmp.Equal(roles, want) {
		t.Fatalf("roles = %q, want %q", roles, want)
	}
	if got := msgs[1].Entry.Message.StopReason; got != "toolUse" {
		t.Errorf("tool turn stopReason = %q", got)
	}
	sum := msgs[2].Entry.Message
	if sum.ToolCallID != "c1" || sum.ToolName != "add" || *sum.IsError || string(sum.Details) != `{"sum":5}` {
		t.Errorf("add result = %+v details %s", sum, sum.Details)
	}
	boom := msgs[3].Entry.Message
	var payload map[string]any
	json.Unmarshal(boom.Details, &payload)
	if !*boom.IsError || !cmp.Equal(payload, map[string]any{"status": "error", "tool": "boom", "error": "message required"}) {
		t.Errorf("boom result = %s", boom.Details)
	}
	if !strings.Contains(msgs[4].Entry.Message.Content.Text(), "Tool missing not found") {
		t.Errorf("missing tool result = %q", msgs[4].Entry.Message.Content.Text())
	}
	if !strings.Contains(msgs[5].Entry.Message.Content.Text(), "tool panicked: bad tool") {
		t.Errorf("panic tool result = %q", msgs[5].Entry.Message.Content.Text())
	}
	final := msgs[6].Entry.Message.Content.Text()
	if !strings.HasPrefix(final, "add={\n  \"sum\": 5\n}") {
		t.Errorf("final = %q", final)
	}
	if run.Usage.TotalTokens != 6+13 {
		t.Errorf("usage total = %d, want 19", run.Usage.TotalTokens)
	}
	var toolEvents []string
	for _, ev := range h.eventsFor("tl") {
		if ev.Stream == StreamTool {
			toolEvents = append(toolEvents, ev.Phase+":"+ev.Tool.Name)
		}
	}
	if want := []string{"start:add", "result:add", "start:boom", "result:boom", "start:missing", "result:missing", "start:panics", "result:panics"}; !cmp.Equal(toolEvents, want) {
		t.Errorf("tool events = %q", toolEvents)
	}
}

func TestStepLimit(t *testing.T) {
	var turns atomic.Int32
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		n := turns.Add(1)
		return toolTurn(provider.ToolCall{ID: fmt.Sprint("c", n), Name: "noop"}), nil
	}, func(c *Config) {
		c.MaxSteps = 3
		c.Tools = func(context.Context, RunInfo) *tools.Set {
			return tools.NewSet(funcTool{"noop", func(context.Context, json.RawMessage) (*tools.Result, error) {
				return tools.JSONResult(map[string]any{}), nil
			}})
		}
	})
	h.submit(Input{RunID: "loop", Message: "go"})
	run := h.wait("loop")
	if run.Status != store.RunError || run.Error != "step limit reached (3 model turns)" {
		t.Errorf("run = %+v", run)
	}
	if n := turns.Load(); n != 3 {
		t.Errorf("model turns = %d, want 3", n)
	}
}

func TestProviderError(t *testing.T) {
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		return nil, &provider.Error{Provider: "fake", StatusCode: 500, Message: "Internal Server Error"}
	}, nil)
	h.submit(Input{RunID: "e", Message: "x"})
	run := h.wait("e")
	if run.Status != store.RunError || run.Error != "fake: HTTP 500: Internal Server Error" || run.StopReason != "error" {
		t.Errorf("run = %+v", run)
	}
	if n := len(h.transcript("agent:main:main")); n != 1 {
		t.Errorf("transcript entries = %d, want 1 (the user message)", n)
	}
}

func TestWaitBeforeSubmitAndTimeout(t *testing.T) {
	h := newHarness(t, echo, nil)
	res := make(chan *store.Run, 1)
	go func() {
		run, done, err := h.runner.Wait(context.Background(), "later", 10*time.Second)
		if err != nil || !done {
			t.Errorf("Wait = %v %v", done, err)
		}
		res <- run
	}()
	// Give the waiter a moment to register; the run is then submitted.
	time.Sleep(20 * time.Millisecond)
	h.submit(Input{RunID: "later", Message: "x"})
	if run := <-res; run.Status != store.RunOK {
		t.Errorf("waited run = %+v", run)
	}
	run, done, err := h.runner.Wait(context.Background(), "never", 10*time.Millisecond)
	if done || err != nil || run != nil {
		t.Errorf("Wait(never) = %v %v %v", run, done, err)
	}
}

func TestRecoverResumesQueuedAndAbortsRunning(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	ctx := context.Background()
	now := time.Now()
	mustSession := func(key string) {
		if _, err := st.UpdateSession(ctx, key, true, func(s *store.Session) error {
			s.SessionID = "sid-" + key[len(key)-1:]
			s.AgentID = "main"
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	mustSession("agent:main:a")
	mustSession("agent:main:b")
	in, _ := json.Marshal(Input{RunID: "q1", SessionKey: "agent:main:b", AgentID: "main", Message: "resume me"})
	for _, r := range []*store.Run{
		{RunID: "crashed", SessionKey: "agent:main:a", SessionID: "sid-a", AgentID: "main", Status: store.RunRunning, Input: json.RawMessage(`{}`), CreatedAt: now, StartedAt: now},
		{RunID: "q1", SessionKey: "agent:main:b", SessionID: "sid-b", AgentID: "main", Status: store.RunQueued, Input: in, CreatedAt: now},
	} {
		if err := st.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	r, err := New(Config{Store: st, Models: staticModels{&fakeProvider{fn: echo}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	aborted, err := r.Recover(ctx)
	if err != nil || len(aborted) != 1 || aborted[0].RunID != "crashed" {
		t.Fatalf("Recover = %v, %v", aborted, err)
	}
	run, done, _ := r.Wait(ctx, "q1", 10*time.Second)
	if !done || run.Status != store.RunOK {
		t.Fatalf("resumed run = %+v", run)
	}
	a, _ := st.GetSession(ctx, "agent:main:a")
	if !a.AbortedLastRun {
		t.Error("crashed session lacks abortedLastRun")
	}
	c, _ := st.GetRun(ctx, "crashed")
	if c.Status != store.RunAborted || c.EndedAt.IsZero() {
		t.Errorf("crashed run = %+v", c)
	}
}

func TestShutdownLeavesQueuedRunsQueued(t *testing.T) {
	started := make(chan struct{}, 1)
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}, nil)
	h.submit(Input{RunID: "r1", Message: "x"})
	h.submit(Input{RunID: "r2", Message: "y"})
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := h.runner.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	r1, _ := h.store.GetRun(context.Background(), "r1")
	r2, _ := h.store.GetRun(context.Background(), "r2")
	if r1.Status != store.RunAborted || r1.Error != "gateway shutting down" {
		t.Errorf("r1 = %+v", r1)
	}
	if r2.Status != store.RunQueued {
		t.Errorf("r2 = %+v, want queued", r2)
	}
	if _, _, err := h.runner.Submit(context.Background(), Input{SessionKey: "agent:main:main", Message: "z"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Submit after shutdown = %v", err)
	}
	if err := h.runner.Close(); err == nil {
		t.Error("second Close returned nil")
	}
}

func TestHistoryWindowIsValid(t *testing.T) {
	b := func(s string) *string { return &s }
	f := false
	mk := func(m transcript.Message) store.Message {
		return store.Message{Entry: transcript.Entry{Type: "message", Message: &m}, Role: m.Role}
	}
	hist := []store.Message{
		mk(transcript.Message{Role: "toolResult", ToolCallID: "old", Content: transcript.BlockContent(transcript.Block{Type: "text", Text: b("orphan")}), IsError: &f}),
		mk(transcript.Message{Role: "user", Content: transcript.StringContent("q")}),
		mk(transcript.Message{Role: "assistant", Content: transcript.BlockContent(
			transcript.TextBlock("thinking aloud"),
			transcript.ToolCallBlock("x1", "t", nil),
			transcript.ToolCallBlock("x2", "t", nil),
		)}),
		mk(transcript.Message{Role: "toolResult", ToolCallID: "x1", ToolName: "t", Content: transcript.BlockContent(transcript.TextBlock("r1")), IsError: &f}),
		{Entry: transcript.Entry{Type: "model_change"}},
	}
	got := toProviderMessages(hist)
	want := []provider.Message{
		{Role: provider.RoleUser, Text: "q"},
		{Role: provider.RoleAssistant, Text: "thinking aloud", ToolCalls: []provider.ToolCall{{ID: "x1", Name: "t", Arguments: json.RawMessage("{}")}}},
		{Role: provider.RoleTool, Text: "r1", ToolCallID: "x1", ToolName: "t"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestHistorySeesExternalAppends checks that the cached transcript window
// notices entries appended by someone other than the runner.
func TestHistorySeesExternalAppends(t *testing.T) {
	var seen [][]string
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		var texts []string
		for _, m := range req.Messages {
			texts = append(texts, m.Text)
		}
		seen = append(seen, texts)
		return textReply("r"), nil
	}, func(c *Config) { c.HistoryLimit = 3 })
	h.submit(Input{RunID: "1", Message: "one"})
	h.wait("1")
	sess, _ := h.store.GetSession(context.Background(), "agent:main:main")
	inj := transcript.NewAssistantMessage([]transcript.Block{transcript.TextBlock("injected")}, time.Now())
	if _, err := h.store.AppendMessages(context.Background(), sess.SessionID, []store.Message{{
		SessionID: sess.SessionID, Entry: transcript.MessageEntry(inj, time.Now()), Role: "assistant",
	}}); err != nil {
		t.Fatal(err)
	}
	h.submit(Input{RunID: "2", Message: "two"})
	h.wait("2")
	h.submit(Input{RunID: "3", Message: "three"})
	h.wait("3")
	want := [][]string{
		{"one"},
		{"r", "injected", "two"}, // window of 3
		{"two", "r", "three"},
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("model inputs (-want +got):\n%s", diff)
	}
}

// TestWindowCacheKeepsExactSlices: cached windows must not pin the spare
// capacity of the slices they were loaded into (1000 idle sessions once
// held ~64 MB that way).
func TestWindowCacheKeepsExactSlices(t *testing.T) {
	c := newWindowCache(400)
	loaded := make([]store.Message, 2, 400)
	c.put("s", 2, loaded)
	got, _, ok := c.get("s", 2)
	if !ok || len(got) != 2 {
		t.Fatalf("get = %d, %v", len(got), ok)
	}
	if w := c.m["s"]; cap(w.msgs) != 2 {
		t.Errorf("cached window capacity = %d, want 2", cap(w.msgs))
	}
}

// TestWindowCacheCutHasRoom: the copy a cut makes holds the appends up
// to the next cut, so a warm session's turns allocate for the window at
// a cut only (an exact-size copy was grown, that is copied again, by the
// very next append).
func TestWindowCacheCutHasRoom(t *testing.T) {
	const limit = 400
	c := newWindowCache(limit)
	c.put("s", 0, nil)
	seq := int64(0)
	add := func() {
		seq++
		c.appended(store.Message{SessionID: "s", Seq: seq})
	}
	// One cycle is limit/4+1 appends, one cut among them, wherever it
	// starts: the cut's copy is its only allocation.
	cycle := func() {
		for range limit/4 + 1 {
			add()
		}
	}
	for range limit + limit/4 + 1 { // past the first cut
		add()
	}
	if allocs := testing.AllocsPerRun(10, cycle); allocs != 1 {
		t.Errorf("%d appends (one cut) allocated %.0f times, want 1", limit/4+1, allocs)
	}
	if got, _, ok := c.get("s", seq); !ok || len(got) != limit || got[limit-1].Seq != seq {
		t.Fatalf("get = len %d, %v; want the last %d entries", len(got), ok, limit)
	}
}

// TestWindowCacheSlides: appends past the limit keep handing out exactly
// the last limit entries (the window is cut back only now and then), and
// a gap in the Seqs drops the window.
func TestWindowCacheSlides(t *testing.T) {
	c := newWindowCache(4)
	msg := func(seq int64) store.Message { return store.Message{SessionID: "s", Seq: seq} }
	c.put("s", 3, []store.Message{msg(1), msg(2), msg(3)})
	for seq := int64(4); seq <= 40; seq++ {
		c.appended(msg(seq))
		got, _, ok := c.get("s", seq)
		if !ok || len(got) != 4 || cap(got) != 4 {
			t.Fatalf("after %d: get = len %d cap %d, %v; want the last 4", seq, len(got), cap(got), ok)
		}
		for i, m := range got {
			if want := seq - 3 + int64(i); m.Seq != want {
				t.Fatalf("after %d: entry %d has seq %d, want %d", seq, i, m.Seq, want)
			}
		}
		if w := c.m["s"]; len(w.msgs) > 5 {
			t.Fatalf("after %d: window holds %d entries, want at most 5", seq, len(w.msgs))
		}
	}
	if _, _, ok := c.get("s", 39); ok {
		t.Error("a window ending at 40 was returned for 39")
	}
	c.appended(msg(42))
	if _, _, ok := c.get("s", 42); ok {
		t.Error("a window with a gap (41 missing) was kept")
	}
}

// TestWindowCacheEvictsTheLeastRecentlyUsed: a new window in a full cache
// takes the place of the one used longest ago, so a busy session keeps
// its window while more sessions than the cache holds come and go; and a
// transcript's first entry starts a window without a read.
func TestWindowCacheEvictsTheLeastRecentlyUsed(t *testing.T) {
	c := newWindowCache(4)
	sid := func(i int) string { return fmt.Sprint("s", i) }
	for i := range maxCachedTranscripts {
		c.put(sid(i), 1, []store.Message{{SessionID: sid(i), Seq: 1}})
	}
	// s0 and s1 are used again (a read hit, an append), s2 is not.
	if _, _, ok := c.get(sid(0), 1); !ok {
		t.Fatal("s0 not cached")
	}
	c.appended(store.Message{SessionID: sid(1), Seq: 2, RunID: "r"})
	c.put("new", 1, []store.Message{{SessionID: "new", Seq: 1}})
	if len(c.m) != maxCachedTranscripts {
		t.Fatalf("cache holds %d windows, want %d", len(c.m), maxCachedTranscripts)
	}
	if _, ok := c.m[sid(2)]; ok {
		t.Error("s2, the least recently used, was kept")
	}
	for _, k := range []string{sid(0), sid(1), "new"} {
		if _, ok := c.m[k]; !ok {
			t.Errorf("%s was evicted", k)
		}
	}
	// A first entry starts a window (evicting the next oldest, s3); an
	// entry past the first of a session without a window starts none.
	c.appended(store.Message{SessionID: "fresh", Seq: 1, RunID: "run-1"})
	if got, _, ok := c.own("fresh", "run-1"); !ok || len(got) != 1 || got[0].Seq != 1 {
		t.Errorf("own(fresh) = %v, %v; want its first entry", got, ok)
	}
	if _, ok := c.m[sid(3)]; ok {
		t.Error("s3 was kept for the fresh window")
	}
	c.appended(store.Message{SessionID: "later", Seq: 5, RunID: "run-2"})
	if _, ok := c.m["later"]; ok {
		t.Error("an entry with seq 5 started a window")
	}
}

// TestWindowCacheBoundsBytes: the windows together hold at most the
// cache's budget of entry bytes (the least recently used dropped first,
// never the one just used), and the running sum stays the sum of what
// they hold through puts, appends, cuts and gaps.
func TestWindowCacheBoundsBytes(t *testing.T) {
	c := newWindowCache(8)
	c.budget = 44 << 10 // four sessions of 8 entries of about 1.3 KB
	text := func(n int) string { return strings.Repeat("x", n) }
	msg := func(sid string, seq int64, n int) store.Message {
		m := transcript.NewUserMessage(text(n), time.Unix(0, 0))
		return store.Message{SessionID: sid, Seq: seq, Entry: transcript.MessageEntry(m, time.Unix(0, 0))}
	}
	check := func(step string) {
		t.Helper()
		var sum int64
		for _, w := range c.m {
			var b int64
			for i := range w.msgs {
				b += entryBytes(&w.msgs[i])
			}
			if b != w.bytes {
				t.Fatalf("%s: a window counts %d bytes, holds %d", step, w.bytes, b)
			}
			sum += b
		}
		if sum != c.bytes {
			t.Fatalf("%s: the cache counts %d bytes, its windows hold %d", step, c.bytes, sum)
		}
		if c.bytes > c.budget && len(c.m) > 1 {
			t.Fatalf("%s: %d bytes in %d windows, budget %d", step, c.bytes, len(c.m), c.budget)
		}
	}
	// Four sessions of 1 KiB entries fit; a fifth pushes out the least
	// recently used (s1: s0 was used again).
	seq := map[string]int64{}
	add := func(sid string, n int) {
		seq[sid]++
		c.appended(msg(sid, seq[sid], n))
	}
	for _, sid := range []string{"s0", "s1", "s2", "s3"} {
		for range 8 {
			add(sid, 1000)
		}
		check("fill " + sid)
	}
	if _, _, ok := c.get("s0", seq["s0"]); !ok {
		t.Fatal("s0 was dropped while under budget")
	}
	for range 8 {
		add("s4", 1000)
		check("s4")
	}
	if _, ok := c.m["s1"]; ok {
		t.Error("s1, the least recently used, was kept over budget")
	}
	if _, ok := c.m["s0"]; !ok {
		t.Error("s0, used again, was dropped before s1's turn")
	}
	// One window bigger than the budget stays alone; cuts and gaps keep
	// the sums right.
	for range 30 {
		add("big", 3000)
		check("big")
	}
	if len(c.m) != 1 {
		t.Errorf("%d windows beside one over budget; want it alone", len(c.m))
	}
	c.appended(msg("big", seq["big"]+2, 10)) // a gap drops it
	check("gap")
	c.put("p", 3, []store.Message{msg("p", 1, 100), msg("p", 2, 100), msg("p", 3, 100)})
	c.put("p", 4, []store.Message{msg("p", 4, 100)})
	check("put again")
}
