package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/outbox"
	"github.com/switchboardhq/switchboard/internal/provider/scripted"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlite"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/tools/sessions"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// runEnv is a real runner with the scripted model, the session tools, the
// relay and the outbox dispatcher, for sessions_send tests in-process.
type runEnv struct {
	store  *sqlite.Store
	runner *agent.Runner
	tools  *sessions.Tools
	relay  *Relay
	outbox *outbox.Dispatcher
}

type scriptedModels struct{ p *scripted.Provider }

func (m scriptedModels) ResolveModel(string, string) (agent.Model, error) {
	return agent.Model{Provider: m.p, ProviderID: "scripted", ModelID: "echo-1", API: "scripted"}, nil
}

func newRunEnv(tb testing.TB, cfgText string, extra ...tools.Tool) *runEnv {
	tb.Helper()
	return newRunEnvWith(tb, cfgText, nil, extra...)
}

// newRunEnvWith is newRunEnv whose runner uses runStore(st) as its store
// (nil: st).
func newRunEnvWith(tb testing.TB, cfgText string, runStore func(*sqlite.Store) agent.Store, extra ...tools.Tool) *runEnv {
	tb.Helper()
	dir := tb.TempDir()
	cfg, _, err := config.Parse("test.json5", []byte(cfgText), config.MapEnv(map[string]string{"SWITCHBOARD_STATE_DIR": dir}))
	if err != nil {
		tb.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "db"), sqlite.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	e := &runEnv{store: st}
	var set *tools.Set
	var rs agent.Store = st
	if runStore != nil {
		rs = runStore(st)
	}
	e.runner, err = agent.New(agent.Config{
		Store: rs, Models: scriptedModels{scripted.New(scripted.Options{})},
		Tools: func(context.Context, agent.RunInfo) *tools.Set { return set },
	})
	if err != nil {
		tb.Fatal(err)
	}
	if e.outbox, err = outbox.New(outbox.Config{Store: st}); err != nil {
		tb.Fatal(err)
	}
	adm, err := admission.New(admission.Config{Runner: e.runner, Store: st, SendRules: settings.SendRules(cfg)})
	if err != nil {
		tb.Fatal(err)
	}
	e.relay, err = New(Config{Store: st, Runner: e.runner, Admit: adm, SendRules: settings.SendRules(cfg), Kicker: e.outbox})
	if err != nil {
		tb.Fatal(err)
	}
	if err := e.outbox.Register(e.relay.Handler()); err != nil {
		tb.Fatal(err)
	}
	if err := e.outbox.Start(); err != nil {
		tb.Fatal(err)
	}
	e.tools = sessions.New(sessions.Deps{Store: st, Messenger: e.relay, Settings: settings.Resolve(cfg)})
	set = tools.NewSet(append(e.tools.All(), extra...)...)
	tb.Cleanup(func() {
		e.outbox.Close()
		e.runner.Close()
		st.Close()
	})
	return e
}

// sendTool returns the sessions_send tool.
func (e *runEnv) sendTool(tb testing.TB) tools.Tool {
	tb.Helper()
	for _, tl := range e.tools.All() {
		if tl.Name() == sessions.SendToolName {
			return tl
		}
	}
	tb.Fatal("no sessions_send tool")
	return nil
}

// posts returns the texts posted (announces delivered) to a session.
func (e *runEnv) posts(tb testing.TB, key string) []string {
	tb.Helper()
	s, err := e.store.GetSession(context.Background(), key)
	if err != nil {
		return nil
	}
	hist, err := e.store.History(context.Background(), s.SessionID, store.HistoryOptions{Limit: 1000})
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, m := range hist {
		if m.Entry.Message != nil && m.Entry.Message.Provider == agent.PostProvider {
			out = append(out, transcript.AssistantText(m.Entry.Message))
		}
	}
	return out
}

func (e *runEnv) send(tb testing.TB, from string, args map[string]any) map[string]any {
	tb.Helper()
	raw, _ := json.Marshal(args)
	ctx := tools.WithCaller(context.Background(), tools.Caller{SessionKey: from, AgentID: "main", Channel: "webchat"})
	res, err := e.sendTool(tb).Call(ctx, raw)
	if err != nil {
		tb.Fatalf("sessions_send: %v", err)
	}
	b, _ := json.Marshal(res.Details)
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

func TestSendValidation(t *testing.T) {
	e := newRunEnv(t, `{ tools: { sessions: { visibility: "all" } } }`)
	raw := json.RawMessage(`{"sessionKey":"agent:main:x"}`)
	if _, err := e.sendTool(t).Call(context.Background(), raw); err == nil || err.Error() != "message required" {
		t.Errorf("missing message: %v", err)
	}
	for _, tc := range []struct {
		args   map[string]any
		status string
		err    string
	}{
		{map[string]any{"message": "x", "sessionKey": "agent:main:a", "label": "l"}, "error", "Provide either sessionKey or label (not both)."},
		{map[string]any{"message": "x"}, "error", "Either sessionKey or label is required"},
		{map[string]any{"message": "x", "label": "nope"}, "error", "No session found with label: nope"},
		{map[string]any{"message": "x", "label": "nope", "agentId": "ops"}, "forbidden", "Agent-to-agent messaging is disabled. Set tools.agentToAgent.enabled=true to allow cross-agent sends."},
	} {
		got := e.send(t, "agent:main:req", tc.args)
		if got["status"] != tc.status || got["error"] != tc.err || got["runId"] == "" {
			t.Errorf("%v → %v", tc.args, got)
		}
	}
}

func TestSendByLabelAndSessionID(t *testing.T) {
	e := newRunEnv(t, `{ tools: { sessions: { visibility: "agent" } }, session: { agentToAgent: { maxPingPongTurns: 0 } } }`)
	ctx := context.Background()
	if _, err := e.store.UpdateSession(ctx, "agent:main:worker", true, func(s *store.Session) error {
		s.SessionID, s.AgentID, s.Label = "5b1f3c2e-8a9d-4e6f-9b0a-1c2d3e4f5a6b", "main", "worker-bee"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := e.send(t, "agent:main:req", map[string]any{"label": "worker-bee", "message": "/reply by label", "timeoutSeconds": 10})
	if got["status"] != "ok" || got["reply"] != "by label" || got["sessionKey"] != "agent:main:worker" {
		t.Errorf("by label: %v", got)
	}
	got = e.send(t, "agent:main:req", map[string]any{"sessionKey": "5b1f3c2e-8a9d-4e6f-9b0a-1c2d3e4f5a6b", "message": "/reply by id", "timeoutSeconds": 10})
	if got["status"] != "ok" || got["reply"] != "by id" {
		t.Errorf("by sessionId: %v", got)
	}
}

// TestReplyIsTheRunsOwn checks the fix over the reference's "latest reply"
// scan: a target run that answers with nothing is not credited with an
// older reply of the same session.
func TestReplyIsTheRunsOwn(t *testing.T) {
	e := newRunEnv(t, `{ tools: { sessions: { visibility: "agent" } }, session: { agentToAgent: { maxPingPongTurns: 0 } } }`)
	got := e.send(t, "agent:main:req", map[string]any{"sessionKey": "agent:main:t", "message": "/reply first", "timeoutSeconds": 10})
	if got["reply"] != "first" {
		t.Fatalf("first send: %v", got)
	}
	got = e.send(t, "agent:main:req", map[string]any{"sessionKey": "agent:main:t", "message": "/reply", "timeoutSeconds": 10})
	if got["status"] != "ok" || got["reply"] != nil {
		t.Errorf("empty reply credited with an older one: %v", got)
	}
}

// runRequester runs msg on agent:main:req as run "req-run" and waits for
// it to end ok.
func runRequester(t *testing.T, e *runEnv, msg string) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := e.runner.Submit(ctx, agent.Input{RunID: "req-run", SessionKey: "agent:main:req", AgentID: "main", Message: msg}); err != nil {
		t.Fatal(err)
	}
	if run, done, _ := e.runner.Wait(ctx, "req-run", 20*time.Second); !done || run.Status != store.RunOK {
		t.Fatalf("requester run = %+v", run)
	}
}

// TestBusyRequesterDoesNotDeadlock: the requester's reply-back turn is a
// queued run on its lane, so a requester whose own run waits for the send
// still gets its turn once that run ends.
func TestBusyRequesterDoesNotDeadlock(t *testing.T) {
	e := newRunEnv(t, `{ tools: { sessions: { visibility: "agent" } }, session: { agentToAgent: { maxPingPongTurns: 1 } } }`)
	msg := scripted.ToolDirective("sessions_send", map[string]any{
		"sessionKey": "agent:main:t", "message": "/reply /reply REPLY_SKIP", "timeoutSeconds": 10,
	}) + "\n/then requester done"
	ctx := context.Background()
	runRequester(t, e, msg)
	// Turn 1 ran on the requester after its run: input "/reply REPLY_SKIP".
	turn := StepRunID(firstSendRunID(t, e), "turn1")
	run, done, _ := e.runner.Wait(ctx, turn, 20*time.Second)
	if !done || run.Status != store.RunOK || run.SessionKey != "agent:main:req" {
		t.Fatalf("reply-back turn = %+v", run)
	}
	reqRun, _ := e.store.GetRun(ctx, "req-run")
	if run.StartedAt.Before(reqRun.EndedAt) {
		t.Errorf("turn started %v before the requester's run ended %v", run.StartedAt, reqRun.EndedAt)
	}
	// The announce step follows (agent main echoes it and it is delivered).
	for deadline := time.Now().Add(10 * time.Second); len(e.posts(t, "agent:main:t")) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
	}
	if d := e.posts(t, "agent:main:t"); len(d) != 1 || d[0] != "echo: Agent-to-agent announce step." {
		t.Errorf("announces posted to the target = %q", d)
	}
}

// firstSendRunID returns the primary run of the one sessions_send flow.
func firstSendRunID(t *testing.T, e *runEnv) string {
	t.Helper()
	items, err := e.store.ListOutbox(context.Background(), store.OutboxFilter{Kind: Kind})
	if err != nil || len(items) != 1 {
		t.Fatalf("flows = %v, %v", items, err)
	}
	return items[0].RunID
}

// BenchmarkSendRoundTrip measures sessions_send with a wait against an
// instant model and no reply-back turns: one primary run on the target,
// waited on, and the reply read back.
func BenchmarkSendRoundTrip(b *testing.B) {
	e := newRunEnv(b, `{ tools: { sessions: { visibility: "agent" } }, session: { agentToAgent: { maxPingPongTurns: 0 } } }`)
	ctx := tools.WithCaller(context.Background(), tools.Caller{SessionKey: "agent:main:req", AgentID: "main", Channel: "webchat"})
	args := json.RawMessage(`{"sessionKey":"agent:main:t","message":"/reply pong\n","timeoutSeconds":30}`)
	tool := e.sendTool(b)
	for range 20 { // warm up the target session
		tool.Call(ctx, args)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		res, err := tool.Call(ctx, args)
		lat = append(lat, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		if !strings.Contains(res.Text, `"status": "ok"`) {
			b.Fatalf("not ok: %s", res.Text)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds()), "p99-µs")
}

// failingRunner fails the Submit of announce steps while fails > 0.
type failingRunner struct {
	*agent.Runner
	fails atomic.Int32
}

func (f *failingRunner) Enqueue(ctx context.Context, in agent.Input) (agent.Enqueued, error) {
	if strings.HasSuffix(in.RunID, ":announce") && f.fails.Add(-1) >= 0 {
		return agent.Enqueued{}, errors.New("lane unavailable")
	}
	return f.Runner.Enqueue(ctx, in)
}

// TestFailedFlowIsRetriedThenDead: a flow whose step fails is retried with
// backoff and delivers once the failure passes; one that keeps failing is
// dead after MaxAttempts, with its error recorded.
func TestFailedFlowIsRetriedThenDead(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fails  int32
		status store.OutboxStatus
	}{
		{"recovers", 2, store.OutboxDelivered},
		{"dead", 100, store.OutboxDead},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newRunEnv(t, `{ tools: { sessions: { visibility: "agent" } }, session: { agentToAgent: { maxPingPongTurns: 0 } } }`)
			e.outbox.Close() // this test's own dispatcher runs the flows
			fr := &failingRunner{Runner: e.runner}
			fr.fails.Store(tc.fails)
			adm, err := admission.New(admission.Config{Runner: fr, Store: e.store})
			if err != nil {
				t.Fatal(err)
			}
			d, err := outbox.New(outbox.Config{Store: e.store,
				MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Interval: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			rel, err := New(Config{Store: e.store, Runner: fr, Admit: adm, MaxAttempts: 3, Kicker: d})
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Register(rel.Handler()); err != nil {
				t.Fatal(err)
			}
			if err := d.Start(); err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			ctx := context.Background()
			run, err := rel.Send(ctx, sessions.Message{RunID: "primary", TargetKey: "agent:main:t", Text: "/reply hi"})
			if err != nil {
				t.Fatal(err)
			}
			if err := rel.Follow(ctx, sessions.Flow{TargetKey: "agent:main:t", DisplayKey: "agent:main:t", Message: "/reply hi",
				AnnounceTimeout: 10 * time.Second, RequesterKey: "agent:main:req", WaitRunID: run.RunID}); err != nil {
				t.Fatal(err)
			}
			var it *store.OutboxItem
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if it, err = e.store.GetOutbox(ctx, "a2a:primary"); err == nil && it.Status != store.OutboxPending {
					break
				}
			}
			if it == nil || it.Status != tc.status {
				t.Fatalf("flow item = %+v, want status %s", it, tc.status)
			}
			switch tc.status {
			case store.OutboxDelivered:
				if it.Attempts != 3 {
					t.Errorf("attempts = %d, want 3 (two failures, then delivered)", it.Attempts)
				}
				if got := e.posts(t, "agent:main:t"); len(got) != 1 || got[0] != "echo: Agent-to-agent announce step." {
					t.Errorf("announce posted = %q", got)
				}
			case store.OutboxDead:
				if it.Attempts != 3 || !strings.Contains(it.LastError, "lane unavailable") {
					t.Errorf("dead item = %+v", it)
				}
				if got := e.posts(t, "agent:main:t"); len(got) != 0 {
					t.Errorf("a dead flow posted %q", got)
				}
			}
		})
	}
}

// transcriptOnly is a runner that has no run's end message in memory: a
// relay over it reads every reply from the transcript.
type transcriptOnly struct{ *agent.Runner }

func (transcriptOnly) EndMessage(string) *transcript.Message { return nil }

// noTranscript is a store whose transcript cannot be read.
type noTranscript struct{ Store }

func (noTranscript) History(context.Context, string, store.HistoryOptions) ([]store.Message, error) {
	return nil, errors.New("transcript read")
}

// TestReplyFromEndMatchesTranscript: the reply of a run that ended here is
// read from its end event, not the transcript (sessions_send's wait takes
// it with no read), and it is the one the transcript gives, for replies of
// each shape, by both rules (the last message's text, and the newest
// assistant text).
func TestReplyFromEndMatchesTranscript(t *testing.T) {
	e := newRunEnv(t, `{}`)
	fromStore, err := New(Config{Store: e.store, Runner: transcriptOnly{e.runner}, Admit: e.relay.cfg.Admit})
	if err != nil {
		t.Fatal(err)
	}
	fromEnd, err := New(Config{Store: noTranscript{e.store}, Runner: e.runner, Admit: e.relay.cfg.Admit})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// A Wait that starts between the run's stored end and its end event
	// reads the end from the store and logs it as recovered, which
	// EndMessage rightly declines: each run's end event is awaited first.
	ends := make(chan string, 64)
	defer e.runner.Subscribe(func(ev agent.Event) {
		if ev.Stream == agent.StreamLifecycle && ev.Phase == agent.PhaseEnd {
			select {
			case ends <- ev.RunID:
			default:
			}
		}
	})()
	for i, msg := range []string{
		"/reply pong",
		"plain text, echoed",
		"/reply",             // no text
		"/think hmm\n/reply", // thinking only
		"/think why\n/reply because",
		"/reply line one\n/reply <b>two</b> & \"three\"",
		"/reply NO_REPLY",
	} {
		id := fmt.Sprint("r", i)
		if _, _, err := e.runner.Submit(ctx, agent.Input{RunID: id, SessionKey: "agent:main:t", AgentID: "main", Message: msg}); err != nil {
			t.Fatal(err)
		}
		for ended := <-ends; ended != id; ended = <-ends {
		}
		run, done, err := e.runner.Wait(ctx, id, -1)
		if err != nil || !done || run.Status != store.RunOK {
			t.Fatalf("%q: run %v %v %+v", msg, done, err, run)
		}
		if got, err := fromEnd.Reply(ctx, run); err != nil {
			t.Errorf("%q: the reply was read from the transcript (%v)", msg, err)
		} else if want, _ := fromStore.Reply(ctx, run); got != want {
			t.Errorf("%q: reply from the end %q, from the transcript %q", msg, got, want)
		}
		for _, lastOnly := range []bool{true, false} {
			got, err := e.relay.runReply(ctx, run, lastOnly)
			if err != nil {
				t.Fatal(err)
			}
			want, err := fromStore.runReply(ctx, run, lastOnly)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%q (lastOnly %v): reply from the end %q, from the transcript %q", msg, lastOnly, got, want)
			}
		}
	}
}

// waitLog is the test's runner: it records the runs the relay waits for,
// and closes sawWait when it waits for run watched.
type waitLog struct {
	Runner
	watched string
	sawWait chan struct{}
	mu      sync.Mutex
	waits   []string
}

func (w *waitLog) Wait(ctx context.Context, runID string, timeout time.Duration) (*store.Run, bool, error) {
	w.mu.Lock()
	w.waits = append(w.waits, runID)
	if runID == w.watched && w.sawWait != nil {
		close(w.sawWait)
		w.sawWait = nil
	}
	w.mu.Unlock()
	return w.Runner.Wait(ctx, runID, timeout)
}

// stepLog is the test's admission: it closes admitted when a flow step is
// admitted.
type stepLog struct {
	Admitter
	once     sync.Once
	admitted chan struct{}
}

func (s *stepLog) Accept(ctx context.Context, req admission.Request) (admission.Ticket, error) {
	if req.Origin == admission.OriginStep {
		s.once.Do(func() { close(s.admitted) })
	}
	return s.Admitter.Accept(ctx, req)
}

// holdTool holds the requester's run until release is closed.
type holdTool struct{ release func() <-chan struct{} }

func (holdTool) Name() string            { return "hold" }
func (holdTool) Description() string     { return "waits" }
func (holdTool) Schema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (h holdTool) Call(ctx context.Context, _ json.RawMessage) (*tools.Result, error) {
	<-h.release()
	return &tools.Result{Text: "held"}, nil
}

// TestFlowStartsAfterTheRequesterRun: the steps of a sessions_send flow
// with a reply-back loop start once the requester's run has ended, not
// while it goes on after the reply (its next call, "hold", holds it until
// the flow either waits for it or admits a step). Without a loop the
// announce step does not wait for the requester's run.
func TestFlowStartsAfterTheRequesterRun(t *testing.T) {
	for _, tc := range []struct {
		turns int
		wait  bool
	}{{1, true}, {0, false}} {
		t.Run(fmt.Sprintf("maxPingPongTurns=%d", tc.turns), func(t *testing.T) {
			release := make(chan struct{})
			hold := holdTool{release: func() <-chan struct{} { return release }}
			e := newRunEnv(t, fmt.Sprintf(`{ tools: { sessions: { visibility: "agent" } }, session: { agentToAgent: { maxPingPongTurns: %d } } }`, tc.turns), hold)
			log := &waitLog{Runner: e.runner, watched: "req-run", sawWait: make(chan struct{})}
			steps := &stepLog{Admitter: e.relay.cfg.Admit, admitted: make(chan struct{})}
			sawWait := log.sawWait
			e.relay.cfg.Runner, e.relay.cfg.Admit = log, steps
			go func() {
				select {
				case <-sawWait:
				case <-steps.admitted:
				}
				close(release)
			}()
			msg := scripted.ToolDirective("sessions_send", map[string]any{
				"sessionKey": "agent:main:t", "message": "/reply pong", "timeoutSeconds": 10,
			}) + "\n" + scripted.ToolDirective("hold", nil) + "\n/then requester done"
			ctx := context.Background()
			runRequester(t, e, msg)
			announce := StepRunID(firstSendRunID(t, e), "announce")
			run, done, _ := e.runner.Wait(ctx, announce, 20*time.Second)
			if !done || run.Status != store.RunOK {
				t.Fatalf("announce step = %+v", run)
			}
			log.mu.Lock()
			waited := slices.Contains(log.waits, "req-run")
			waits := slices.Clone(log.waits)
			log.mu.Unlock()
			if waited != tc.wait {
				t.Errorf("the flow waited for %q; waiting for the requester's run = %v, want %v", waits, waited, tc.wait)
			}
			if !tc.wait {
				return
			}
			reqRun, _ := e.store.GetRun(ctx, "req-run")
			if run.StartedAt.Before(reqRun.EndedAt) {
				t.Errorf("announce step started %v before the requester's run ended %v", run.StartedAt, reqRun.EndedAt)
			}
		})
	}
}

// A flow resumed after its requester's run was pruned does not wait for
// that run.
func TestFlowDoesNotWaitForAMissingRequesterRun(t *testing.T) {
	e := newRunEnv(t, `{}`)
	log := &waitLog{Runner: e.runner}
	e.relay.cfg.Runner = log
	err := e.relay.afterRequesterRun(context.Background(), sessions.Flow{RequesterRunID: "gone", WaitRunID: "primary"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(log.waits) != 0 {
		t.Errorf("waited for %q", log.waits)
	}
}

// countPuts counts the relay's own outbox writes.
type countPuts struct {
	Store
	puts atomic.Int32
}

func (c *countPuts) PutOutbox(ctx context.Context, it *store.OutboxItem) error {
	c.puts.Add(1)
	return c.Store.PutOutbox(ctx, it)
}

// hiddenRunOutbox is a store whose runs' transactions carry no outbox item
// (store.RunOutbox), as a store that cannot.
type hiddenRunOutbox struct{ *sqlite.Store }

func (h hiddenRunOutbox) OpenRun(ctx context.Context, r *store.Run, msgs []store.Message) (*store.Run, []store.Message, error) {
	return h.Store.OpenRun(store.WithRunOutbox(ctx, nil), r, msgs)
}

func (h hiddenRunOutbox) CreateRun(ctx context.Context, r *store.Run) error {
	return h.Store.CreateRun(store.WithRunOutbox(ctx, nil), r)
}

// TestFlowRecordedWithItsRun: a sessions_send's agent-to-agent flow is
// stored in the transaction that stores the target's run, with no write
// of its own; where the runner's store cannot, it is stored on its own
// once the run is admitted. Either way the flow runs (its announce step).
func TestFlowRecordedWithItsRun(t *testing.T) {
	const cfg = `{ tools: { sessions: { visibility: "agent" } }, session: { agentToAgent: { maxPingPongTurns: 0 } } }`
	for _, tc := range []struct {
		name     string
		runStore func(*sqlite.Store) agent.Store
		puts     int32
	}{
		{"with the run", nil, 0},
		{"store cannot", func(st *sqlite.Store) agent.Store { return hiddenRunOutbox{st} }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newRunEnvWith(t, cfg, tc.runStore)
			counted := &countPuts{Store: e.relay.cfg.Store}
			e.relay.cfg.Store = counted
			for _, wait := range []int{10, 0} {
				before := counted.puts.Load()
				got := e.send(t, "agent:main:req", map[string]any{"sessionKey": "agent:main:t", "message": "/reply pong", "timeoutSeconds": wait})
				runID, _ := got["runId"].(string)
				if want := map[int]string{10: "ok", 0: "accepted"}[wait]; got["status"] != want || runID == "" {
					t.Fatalf("timeoutSeconds %d: sessions_send = %v", wait, got)
				}
				if n := counted.puts.Load() - before; n != tc.puts {
					t.Errorf("timeoutSeconds %d: %d flow writes of its own, want %d", wait, n, tc.puts)
				}
				if _, err := e.store.GetOutbox(context.Background(), flowID(runID)); err != nil {
					t.Errorf("timeoutSeconds %d: flow record: %v", wait, err)
				}
				if run, done, _ := e.runner.Wait(context.Background(), StepRunID(runID, "announce"), 20*time.Second); !done || run.Status != store.RunOK {
					t.Errorf("timeoutSeconds %d: announce step = %+v", wait, run)
				}
			}
		})
	}
}

// hiddenPost is a runner store that cannot settle an outbox item with a
// post (no store.SessionPoster: the agent.Store it embeds hides it).
type hiddenPost struct{ agent.Store }

// TestFlowSettledWithItsAnnounce: a flow that ends with its announce's
// post settles its outbox item in the post's transaction (the handler
// says so: outbox.ErrSettled, and the dispatcher writes nothing more); where
// the runner's store cannot, the flow returns nil and leaves the item to
// the dispatcher, as before.
func TestFlowSettledWithItsAnnounce(t *testing.T) {
	const cfg = `{ tools: { sessions: { visibility: "agent" } }, session: { agentToAgent: { maxPingPongTurns: 0 } } }`
	for _, tc := range []struct {
		name     string
		runStore func(*sqlite.Store) agent.Store
		want     error
		status   store.OutboxStatus
	}{
		{"with the post", nil, outbox.ErrSettled, store.OutboxDelivered},
		{"store cannot", func(st *sqlite.Store) agent.Store { return hiddenPost{st} }, nil, store.OutboxPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newRunEnvWith(t, cfg, tc.runStore)
			ctx := context.Background()
			const target = "agent:main:t"
			// The target's session, then a primary run with no flow of
			// its own.
			e.runner.Wait(ctx, mustSubmit(t, e, target, "warm", "hello").RunID, 20*time.Second)
			primary := mustSubmit(t, e, target, "primary", "/reply pong")
			if run, done, _ := e.runner.Wait(ctx, primary.RunID, 20*time.Second); !done || run.Status != store.RunOK {
				t.Fatalf("primary run = %+v", run)
			}
			item, err := e.relay.flowItem(sessions.Flow{TargetKey: target, DisplayKey: target, Message: "ping",
				AnnounceTimeout: 20 * time.Second, RequesterKey: "agent:main:req", WaitRunID: primary.RunID})
			if err != nil {
				t.Fatal(err)
			}
			item.NextAttemptAt = time.Now().Add(time.Hour) // not the dispatcher's: run here
			if err := e.store.PutOutbox(ctx, item); err != nil {
				t.Fatal(err)
			}
			if err := e.relay.runItem(ctx, item); !errors.Is(err, tc.want) && err != tc.want {
				t.Fatalf("runItem = %v, want %v", err, tc.want)
			}
			if got := e.posts(t, target); len(got) != 1 {
				t.Fatalf("announces posted to the target: %q, want 1", got)
			}
			it, err := e.store.GetOutbox(ctx, item.ID)
			if err != nil {
				t.Fatal(err)
			}
			if it.Status != tc.status || (tc.status == store.OutboxDelivered && (it.Attempts != 1 || it.DeliveredAt.IsZero())) {
				t.Errorf("flow item = %s, %d attempts, delivered at %v; want %s", it.Status, it.Attempts, it.DeliveredAt, tc.status)
			}
		})
	}
}

// mustSubmit queues message on key as run id.
func mustSubmit(t *testing.T, e *runEnv, key, id, message string) *store.Run {
	t.Helper()
	run, _, err := e.runner.Submit(context.Background(), agent.Input{RunID: id, SessionKey: key, AgentID: "main", Message: message})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// subRunner is a Runner whose subscription the test drives.
type subRunner struct {
	Runner
	fn     func(agent.Event)
	unsubs int
}

func (s *subRunner) Subscribe(fn func(agent.Event)) func() {
	s.fn = fn
	return func() { s.fn = nil; s.unsubs++ }
}

// kicks records KickSession calls.
type kicks struct{ keys []string }

func (k *kicks) KickSession(kind, key string) { k.keys = append(k.keys, kind+" "+key) }

// TestFlowDispatchedAfterRequesterRun: a flow recorded by a run of its
// requester session wakes the dispatcher when that session's run ends,
// not at once (its steps would take the processor from the run that
// waits for the reply); one recorded outside a run, or by a relay not
// started, wakes it at once.
func TestFlowDispatchedAfterRequesterRun(t *testing.T) {
	runner, k := &subRunner{}, &kicks{}
	r, err := New(Config{Store: noStore{}, Runner: runner, Admit: noAdmit{}, Kicker: k})
	if err != nil {
		t.Fatal(err)
	}
	const req = "agent:main:req"
	end := func(key string) agent.Event {
		return agent.Event{SessionKey: key, Stream: agent.StreamLifecycle, Phase: agent.PhaseEnd}
	}
	r.kickAfter(req, "run-1")
	if want := []string{Kind + " " + req}; !slices.Equal(k.keys, want) {
		t.Fatalf("not started: kicks %v, want %v", k.keys, want)
	}
	k.keys = nil
	r.Start()
	r.Start() // once
	r.kickAfter(req, "run-2")
	r.kickAfter(req, "run-2b")
	runner.fn(agent.Event{SessionKey: req, Stream: agent.StreamLifecycle, Phase: agent.PhaseStart})
	runner.fn(end("agent:main:other"))
	if len(k.keys) != 0 {
		t.Fatalf("before the requester's run ended: kicks %v", k.keys)
	}
	runner.fn(end(req))
	runner.fn(end(req))
	if want := []string{Kind + " " + req}; !slices.Equal(k.keys, want) {
		t.Fatalf("after the requester's run ended (twice): kicks %v, want %v", k.keys, want)
	}
	k.keys = nil
	r.kickAfter(req, "") // not from a run
	if want := []string{Kind + " " + req}; !slices.Equal(k.keys, want) {
		t.Fatalf("outside a run: kicks %v, want %v", k.keys, want)
	}
	k.keys = nil
	r.kickAfter(req, "run-3")
	if err := r.Close(); err != nil || runner.unsubs != 1 || runner.fn != nil {
		t.Fatalf("Close: %v, %d unsubscribes", err, runner.unsubs)
	}
	r.kickAfter(req, "run-4")
	if want := []string{Kind + " " + req}; !slices.Equal(k.keys, want) {
		t.Fatalf("after Close: kicks %v, want %v (run-3's flow is the full scan's)", k.keys, want)
	}
}

type noStore struct{ Store }
type noAdmit struct{ Admitter }
