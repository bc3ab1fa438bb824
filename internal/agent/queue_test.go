package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// reqLog records what each model call carried, as "role:text" lines.
type reqLog struct {
	mu   sync.Mutex
	reqs [][]string
}

func (l *reqLog) add(req *provider.Request) int {
	var lines []string
	for _, m := range req.Messages {
		s := string(m.Role) + ":" + m.Text
		if m.Role == provider.RoleAssistant && len(m.ToolCalls) > 0 {
			var ids []string
			for _, c := range m.ToolCalls {
				ids = append(ids, c.ID)
			}
			s += "[calls " + strings.Join(ids, ",") + "]"
		}
		lines = append(lines, s)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, lines)
	return len(l.reqs)
}

func (l *reqLog) get() [][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([][]string(nil), l.reqs...)
}

func (h *harness) texts(key string) []string {
	var out []string
	for _, m := range h.transcript(key) {
		out = append(out, string(m.Entry.Message.Role)+":"+m.Entry.Message.Content.Text())
	}
	return out
}

// waitQueued waits until n runs wait on the session's lane.
func waitQueued(t *testing.T, r *Runner, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for r.queueLength(key) != n {
		if time.Now().After(deadline) {
			t.Fatalf("queueLength(%s) = %d, want %d", key, r.queueLength(key), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestSteerJoinsActiveRunAndSkipsUnstartedTools(t *testing.T) {
	var log reqLog
	toolStarted := make(chan struct{})
	releaseTool := make(chan struct{})
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		if log.add(req) == 1 {
			return toolTurn(
				provider.ToolCall{ID: "c1", Name: "slow", Arguments: json.RawMessage(`{}`)},
				provider.ToolCall{ID: "c2", Name: "slow", Arguments: json.RawMessage(`{}`)},
			), nil
		}
		return textReply("answered " + lastUser(req)), nil
	}, func(c *Config) {
		c.Tools = slowTool(toolStarted, releaseTool)
	})
	const key = "agent:main:main"
	h.submit(Input{RunID: "a1", Message: "go"})
	<-toolStarted
	h.submit(Input{RunID: "s1", Message: "actually stop", QueueMode: ModeSteer})
	waitQueued(t, h.runner, key, 1)
	close(releaseTool)
	a1, s1 := h.wait("a1"), h.wait("s1")
	if a1.Status != store.RunOK || s1.Status != store.RunOK {
		t.Fatalf("statuses a1=%s s1=%s (%s)", a1.Status, s1.Status, s1.Error)
	}
	reqs := log.get()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want 2 (the steer is answered by the active run): %q", len(reqs), reqs)
	}
	want := []string{"user:go", "assistant:[calls c1,c2]", "tool:slow done", "tool:" + SkippedToolResult, "user:actually stop"}
	if diff := cmp.Diff(want, reqs[1]); diff != "" {
		t.Errorf("second model call (-want +got):\n%s", diff)
	}
	if got := h.texts(key); !cmp.Equal(got[len(got)-2:], []string{"user:actually stop", "assistant:answered actually stop"}) {
		t.Errorf("transcript tail = %q", got)
	}
	// The steered run's input is tagged with its own runId.
	for _, m := range h.transcript(key) {
		if m.Entry.Message.Content.Text() == "actually stop" && m.RunID != "s1" {
			t.Errorf("steered message runId = %q, want s1", m.RunID)
		}
	}
}

func TestSteerFallsBackToFollowup(t *testing.T) {
	var log reqLog
	inModel := make(chan struct{}, 4)
	release := make(chan struct{})
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		if log.add(req) == 1 {
			inModel <- struct{}{}
			<-release // the final model call: no tool calls follow
		}
		return textReply("re " + lastUser(req)), nil
	}, nil)
	h.submit(Input{RunID: "a1", Message: "first"})
	<-inModel
	h.submit(Input{RunID: "s1", Message: "second", QueueMode: ModeSteer})
	close(release)
	h.wait("a1")
	if s1 := h.wait("s1"); s1.Status != store.RunOK {
		t.Fatalf("s1 = %s", s1.Status)
	}
	if got, want := h.texts("agent:main:main"), []string{"user:first", "assistant:re first", "user:second", "assistant:re second"}; !cmp.Equal(got, want) {
		t.Errorf("transcript = %q, want %q", got, want)
	}
	if n := len(log.get()); n != 2 {
		t.Errorf("model calls = %d, want 2", n)
	}
}

func TestCollectBecomesOneTurn(t *testing.T) {
	var log reqLog
	inModel := make(chan struct{}, 4)
	release := make(chan struct{})
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		if log.add(req) == 1 {
			inModel <- struct{}{}
			<-release
		}
		return textReply("ok"), nil
	}, nil)
	const key = "agent:main:main"
	h.submit(Input{RunID: "a1", Message: "busy"})
	<-inModel
	for i := 1; i <= 3; i++ {
		h.submit(Input{RunID: fmt.Sprintf("c%d", i), Message: fmt.Sprintf("note %d", i), QueueMode: ModeCollect, QueueDebounceMs: 20})
	}
	close(release)
	for i := 1; i <= 3; i++ {
		if r := h.wait(fmt.Sprintf("c%d", i)); r.Status != store.RunOK {
			t.Fatalf("c%d = %s", i, r.Status)
		}
	}
	reqs := log.get()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want 2", len(reqs))
	}
	want := "user:" + policy.CollectPrompt("", []string{"note 1", "note 2", "note 3"})
	if got := reqs[1][len(reqs[1])-1]; got != want {
		t.Errorf("collected turn = %q, want %q", got, want)
	}
	if got := h.texts(key); len(got) != 4 || got[2] != want {
		t.Errorf("transcript = %q", got)
	}
}

func TestInterruptAbortsActiveRunAndRunsNewest(t *testing.T) {
	var log reqLog
	inModel := make(chan struct{}, 4)
	cancelled := make(chan error, 1)
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		if log.add(req) == 1 {
			inModel <- struct{}{}
			<-ctx.Done()
			cancelled <- context.Cause(ctx)
			return nil, ctx.Err()
		}
		return textReply("re " + lastUser(req)), nil
	}, nil)
	h.submit(Input{RunID: "a1", Message: "long job", Timeout: 10 * time.Second})
	<-inModel
	h.submit(Input{RunID: "f1", Message: "queued followup", QueueMode: ModeFollowup})
	h.submit(Input{RunID: "i1", Message: "stop, do this", QueueMode: ModeInterrupt})
	if err := <-cancelled; !errors.Is(err, errAborted) {
		t.Errorf("model call cancelled with %v, want aborted", err)
	}
	if a1 := h.wait("a1"); a1.Status != store.RunAborted {
		t.Errorf("a1 = %s, want aborted", a1.Status)
	}
	i1, f1 := h.wait("i1"), h.wait("f1")
	if i1.Status != store.RunOK || f1.Status != store.RunOK {
		t.Fatalf("i1=%s f1=%s", i1.Status, f1.Status)
	}
	if !i1.EndedAt.Before(f1.StartedAt) && !i1.EndedAt.Equal(f1.StartedAt) {
		t.Errorf("the interrupting message did not run first")
	}
	reqs := log.get()
	if got := reqs[1][len(reqs[1])-1]; got != "user:stop, do this" {
		t.Errorf("second model call ends with %q", got)
	}
}

func TestQueueCapDropPolicies(t *testing.T) {
	for _, drop := range []policy.QueueDrop{policy.DropNew, policy.DropOld, policy.DropSummarize} {
		t.Run(string(drop), func(t *testing.T) {
			var log reqLog
			inModel := make(chan struct{}, 8)
			release := make(chan struct{})
			h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
				if log.add(req) == 1 {
					inModel <- struct{}{}
					<-release
				}
				return textReply("ok"), nil
			}, nil)
			h.submit(Input{RunID: "a1", Message: "busy"})
			<-inModel
			in := func(i int) Input {
				return Input{RunID: fmt.Sprintf("q%d", i), SessionKey: "agent:main:main", AgentID: "main", Message: fmt.Sprintf("queued   %d", i),
					QueueMode: ModeFollowup, QueueCap: 2, QueueDrop: string(drop)}
			}
			h.submit(in(1))
			h.submit(in(2))
			_, _, err := h.runner.Submit(context.Background(), in(3))
			if drop == policy.DropNew {
				if !errors.Is(err, ErrQueueFull) {
					t.Fatalf("third submit err = %v, want ErrQueueFull", err)
				}
				if _, gerr := h.store.GetRun(context.Background(), "q3"); !errors.Is(gerr, store.ErrNotFound) {
					t.Errorf("refused run stored: %v", gerr)
				}
				close(release)
				h.wait("q2")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			q1, _ := h.store.GetRun(context.Background(), "q1")
			if q1.Status != store.RunAborted || q1.Error != droppedByCap {
				t.Errorf("oldest = %s %q, want aborted %q", q1.Status, q1.Error, droppedByCap)
			}
			close(release)
			h.wait("q3")
			reqs := log.get()
			if len(reqs) != 3 {
				t.Fatalf("model calls = %d, want 3", len(reqs))
			}
			tail := reqs[1][len(reqs[1])-2:]
			summary := "user:" + policy.OverflowSummary(1, []string{"queued 1"})
			if drop == policy.DropSummarize {
				if diff := cmp.Diff([]string{summary, "user:queued   2"}, tail); diff != "" {
					t.Errorf("next turn (-want +got):\n%s", diff)
				}
			} else if tail[1] != "user:queued   2" || tail[0] == summary {
				t.Errorf("next turn = %q", tail)
			}
		})
	}
}

// TestQueuedMessagesSurviveRestart: messages queued behind a run are in the
// store when Submit returns; a gateway that dies (here: closed with the
// active run cut) leaves them queued, and the next runner on the same store
// runs each once, in order, under the mode it was accepted with.
func TestQueuedMessagesSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	inModel := make(chan struct{}, 1)
	r1, err := New(Config{Store: st, Models: staticModels{&fakeProvider{fn: func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		inModel <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r1.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The quiet window (stored with each run, so it holds after the
	// restart) outlasts Recover putting the runs back on the lane, however
	// loaded the machine: c1 and c2 are both queued when c1's turn comes.
	submit := func(r *Runner, id, msg, mode string) {
		if _, _, err := r.Submit(context.Background(), Input{RunID: id, SessionKey: "agent:main:main", AgentID: "main", Message: msg, QueueMode: mode, QueueDebounceMs: 300}); err != nil {
			t.Fatal(err)
		}
	}
	submit(r1, "a1", "long", "")
	<-inModel
	submit(r1, "f1", "one", ModeFollowup)
	submit(r1, "c1", "two", ModeCollect)
	submit(r1, "c2", "three", ModeCollect)
	r1.Close()

	var log reqLog
	r2, err := New(Config{Store: st, Models: staticModels{&fakeProvider{fn: func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		log.add(req)
		return textReply("ok"), nil
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if _, err := r2.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"f1", "c1", "c2"} {
		run, done, err := r2.Wait(context.Background(), id, 10*time.Second)
		if err != nil || !done || run.Status != store.RunOK {
			t.Fatalf("%s after restart = %+v, %v", id, run, err)
		}
	}
	reqs := log.get()
	if len(reqs) != 2 {
		t.Fatalf("model calls after restart = %d, want 2 (f1, then c1+c2 collected)", len(reqs))
	}
	if got := reqs[0][len(reqs[0])-1]; got != "user:one" {
		t.Errorf("first turn ends with %q", got)
	}
	want := "user:" + policy.CollectPrompt("", []string{"two", "three"})
	if got := reqs[1][len(reqs[1])-1]; got != want {
		t.Errorf("second turn ends with %q, want %q", got, want)
	}
	s, _ := st.GetSession(context.Background(), "agent:main:main")
	msgs, _ := st.History(context.Background(), s.SessionID, store.HistoryOptions{})
	var users []string
	for _, m := range msgs {
		if m.Role == "user" {
			users = append(users, m.Entry.Message.Content.Text())
		}
	}
	if diff := cmp.Diff([]string{"long", "one", policy.CollectPrompt("", []string{"two", "three"})}, users); diff != "" {
		t.Errorf("user messages (-want +got):\n%s", diff)
	}
}

// TestKeptInputSurvivesCap: an input marked QueueKeep (an announced
// sub-agent result) is never the one dropped when another input hits the
// cap; the oldest droppable input goes instead. DeepestQueues reports the
// queue.
func TestKeptInputSurvivesCap(t *testing.T) {
	inModel := make(chan struct{}, 8)
	release := make(chan struct{})
	var calls reqLog
	h := newHarness(t, func(ctx context.Context, req *provider.Request) ([]provider.Event, error) {
		if calls.add(req) == 1 {
			inModel <- struct{}{}
			<-release
		}
		return textReply("ok"), nil
	}, nil)
	h.submit(Input{RunID: "a1", Message: "busy"})
	<-inModel
	kept := Input{RunID: "k1", SessionKey: "agent:main:main", AgentID: "main", Message: "child result", Lane: "announce"}
	kept.ApplyInterSessionQueue(policy.QueueSettings{Mode: policy.QueueInterrupt, Cap: 2, Drop: policy.DropOld}, true)
	if kept.QueueMode != ModeFollowup || kept.QueueCap != 0 || !kept.QueueKeep {
		t.Fatalf("inter-session settings = %+v", kept)
	}
	h.submit(kept)
	in := func(id string) Input {
		return Input{RunID: id, SessionKey: "agent:main:main", AgentID: "main", Message: id, QueueMode: ModeFollowup, QueueCap: 2, QueueDrop: string(policy.DropOld)}
	}
	h.submit(in("q1"))
	if got := h.runner.DeepestQueues(5); len(got) != 1 || got[0] != (QueueDepth{"agent:main:main", 2}) {
		t.Errorf("DeepestQueues = %+v", got)
	}
	h.submit(in("q2")) // at the cap: q1 goes, k1 stays
	if k1, _ := h.store.GetRun(context.Background(), "k1"); k1.Status != store.RunQueued {
		t.Errorf("kept input = %s %q, want queued", k1.Status, k1.Error)
	}
	if q1, _ := h.store.GetRun(context.Background(), "q1"); q1.Status != store.RunAborted || q1.Error != droppedByCap {
		t.Errorf("oldest droppable = %s %q, want aborted %q", q1.Status, q1.Error, droppedByCap)
	}
	close(release)
	h.wait("k1")
	h.wait("q2")
}

// slowTool is a tool set of one tool, "slow", that says when a call
// started and returns "slow done" once release is closed.
func slowTool(started chan<- struct{}, release <-chan struct{}) func(context.Context, RunInfo) *tools.Set {
	return func(context.Context, RunInfo) *tools.Set {
		return tools.NewSet(funcTool{"slow", func(ctx context.Context, _ json.RawMessage) (*tools.Result, error) {
			started <- struct{}{}
			<-release
			return &tools.Result{Text: "slow done"}, nil
		}})
	}
}

var laneSink *lane

// TestNewLaneMakesNoMaps checks that a lane, made for every warm turn,
// is one allocation: its maps of queued runs' modes and flags are made by
// the first run queued behind it, and reads and deletes on them work
// before.
func TestNewLaneMakesNoMaps(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { laneSink = newLane() }); n != 1 {
		t.Errorf("newLane: %v allocations, want 1", n)
	}
	l := newLane()
	if l.modes["r1"] != "" || l.untrusted["r1"] || l.steersLocked("r1") {
		t.Fatal("an empty lane reports a queued run")
	}
	l.forget("r1")
	put(&l.modes, "r1", ModeSteer)
	put(&l.untrusted, "r1", true)
	if l.modes["r1"] != ModeSteer || !l.untrusted["r1"] {
		t.Fatalf("put did not record: %v %v", l.modes, l.untrusted)
	}
}
