package sessions

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/provider/scripted"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlite"
	"github.com/switchboardhq/switchboard/internal/tools"
)

// runEnv is a real runner with the scripted model and the session tools,
// for sessions_send tests in-process.
type runEnv struct {
	store  *sqlite.Store
	runner *agent.Runner
	tools  *Tools
	dlv    *recordingDeliverer
}

type scriptedModels struct{ p *scripted.Provider }

func (m scriptedModels) ResolveModel(string, string) (agent.Model, error) {
	return agent.Model{Provider: m.p, ProviderID: "scripted", ModelID: "echo-1", API: "scripted"}, nil
}

type recordingDeliverer struct {
	mu  sync.Mutex
	got []Delivery
}

func (d *recordingDeliverer) Deliver(_ context.Context, del Delivery) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, del)
	return nil
}

func (d *recordingDeliverer) deliveries() []Delivery {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.got)
}

func newRunEnv(tb testing.TB, cfgText string) *runEnv {
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
	e := &runEnv{store: st, dlv: &recordingDeliverer{}}
	var set *tools.Set
	e.runner, err = agent.New(agent.Config{
		Store: st, Models: scriptedModels{scripted.New(scripted.Options{})},
		Tools: func(agent.RunInfo) *tools.Set { return set },
	})
	if err != nil {
		tb.Fatal(err)
	}
	e.tools = New(Deps{Store: st, Runner: e.runner, Config: cfg, Deliverer: e.dlv})
	set = tools.NewSet(e.tools.All()...)
	tb.Cleanup(func() {
		e.tools.Close()
		e.runner.Close()
		st.Close()
	})
	return e
}

func (e *runEnv) send(tb testing.TB, from string, args map[string]any) map[string]any {
	tb.Helper()
	raw, _ := json.Marshal(args)
	ctx := tools.WithCaller(context.Background(), tools.Caller{SessionKey: from, AgentID: "main", Channel: "webchat"})
	res, err := sendTool{e.tools}.Call(ctx, raw)
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
	if _, err := (sendTool{e.tools}).Call(context.Background(), raw); err == nil || err.Error() != "message required" {
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

// TestBusyRequesterDoesNotDeadlock: the requester's reply-back turn is a
// queued run on its lane, so a requester whose own run waits for the send
// still gets its turn once that run ends.
func TestBusyRequesterDoesNotDeadlock(t *testing.T) {
	e := newRunEnv(t, `{ tools: { sessions: { visibility: "agent" } }, session: { agentToAgent: { maxPingPongTurns: 1 } } }`)
	msg := scripted.ToolDirective("sessions_send", map[string]any{
		"sessionKey": "agent:main:t", "message": "/reply /reply REPLY_SKIP", "timeoutSeconds": 10,
	}) + "\n/then requester done"
	ctx := context.Background()
	if _, _, err := e.runner.Submit(ctx, agent.Input{RunID: "req-run", SessionKey: "agent:main:req", AgentID: "main", Message: msg}); err != nil {
		t.Fatal(err)
	}
	if run, done, _ := e.runner.Wait(ctx, "req-run", 20*time.Second); !done || run.Status != store.RunOK {
		t.Fatalf("requester run = %+v", run)
	}
	// Turn 1 ran on the requester after its run: input "/reply REPLY_SKIP".
	turn := stepRunID(firstSendRunID(t, e), "turn1")
	run, done, _ := e.runner.Wait(ctx, turn, 20*time.Second)
	if !done || run.Status != store.RunOK || run.SessionKey != "agent:main:req" {
		t.Fatalf("reply-back turn = %+v", run)
	}
	reqRun, _ := e.store.GetRun(ctx, "req-run")
	if run.StartedAt.Before(reqRun.EndedAt) {
		t.Errorf("turn started %v before the requester's run ended %v", run.StartedAt, reqRun.EndedAt)
	}
	// The announce step follows (agent main echoes it and it is delivered).
	for deadline := time.Now().Add(10 * time.Second); len(e.dlv.deliveries()) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
	}
	if d := e.dlv.deliveries(); len(d) != 1 || d[0].SessionKey != "agent:main:t" || d[0].Text != "echo: Agent-to-agent announce step." {
		t.Errorf("deliveries = %+v", d)
	}
}

// firstSendRunID returns the primary run of the one sessions_send flow.
func firstSendRunID(t *testing.T, e *runEnv) string {
	t.Helper()
	items, err := e.store.ListOutbox(context.Background(), store.OutboxFilter{Kind: flowKind})
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
	tool := sendTool{e.tools}
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
		if d := res.Details.(*sendResult); d.Status != "ok" {
			b.Fatalf("status %s: %s", d.Status, d.Error)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds()), "p99-µs")
}
