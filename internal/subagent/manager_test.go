package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/outbox"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/provider/scripted"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlite"
	"github.com/switchboardhq/switchboard/internal/tools"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

type scriptedModels struct{ p provider.Provider }

func (m scriptedModels) ResolveModel(agentID, ref string) (agent.Model, error) {
	if ref != "" && !strings.HasPrefix(ref, "scripted/") {
		return agent.Model{}, fmt.Errorf("unknown model %q", ref)
	}
	return agent.Model{Provider: m.p, ProviderID: "scripted", ModelID: "echo-1", API: "scripted"}, nil
}

type env struct {
	t      testing.TB
	store  *sqlite.Store
	runner *agent.Runner
	m      *Manager
	outbox *outbox.Dispatcher
	now    atomic.Pointer[time.Time]
	// gate holds every model call whose input contains "[gate]" until
	// it is closed.
	gate chan struct{}
}

// flakyRunner fails announce submissions while fail is set.
type flakyRunner struct {
	*agent.Runner
	fail atomic.Bool
}

func (f *flakyRunner) Enqueue(ctx context.Context, in agent.Input) (agent.Enqueued, error) {
	if in.Lane == LaneAnnounce && f.fail.Load() {
		return agent.Enqueued{}, fmt.Errorf("requester unavailable")
	}
	return f.Runner.Enqueue(ctx, in)
}

// admit is the admission step over a runner, as the daemon wires it.
func admit(tb testing.TB, r admission.Runner, st admission.Store, cfg *config.Config) *admission.Admitter {
	tb.Helper()
	c := admission.Config{Runner: r, Store: st}
	if cfg != nil {
		c.SendRules, c.Queue = settings.SendRules(cfg), settings.Queue(cfg)
	}
	a, err := admission.New(c)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

func newEnv(tb testing.TB, cfgText string) *env {
	tb.Helper()
	return newEnvWith(tb, cfgText, nil)
}

func newEnvWith(tb testing.TB, cfgText string, mod func(*Config)) *env {
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
	e := &env{t: tb, store: st, gate: make(chan struct{})}
	models := scriptedModels{gated{scripted.New(scripted.Options{}), e.gate}}
	var set *tools.Set
	e.runner, err = agent.New(agent.Config{
		Store: st, Models: models, Queue: settings.Resolve(cfg).Queue,
		Tools: func(context.Context, agent.RunInfo) *tools.Set { return set },
		OnFinish: func(ctx context.Context, run *store.Run, res *store.RunResult, last *transcript.Message) {
			e.m.OnFinish(ctx, run, res, last)
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	mcfg := Config{Store: st, Runner: e.runner, Admit: admit(tb, e.runner, st, cfg), Settings: settings.Resolve(cfg), Models: models,
		Now: func() time.Time {
			if p := e.now.Load(); p != nil {
				return *p
			}
			return time.Now()
		}}
	if mod != nil {
		mod(&mcfg)
	}
	if e.outbox, err = outbox.New(outbox.Config{Store: st, Now: mcfg.Now}); err != nil {
		tb.Fatal(err)
	}
	mcfg.Outbox = e.outbox
	e.m, err = New(mcfg)
	if err != nil {
		tb.Fatal(err)
	}
	set = tools.NewSet(e.m.Tool())
	if err := e.outbox.Register(e.m.AnnounceHandler()); err != nil {
		tb.Fatal(err)
	}
	if err := e.m.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	if err := e.outbox.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		e.outbox.Close()
		e.m.Close()
		e.runner.Close()
		st.Close()
	})
	return e
}

// spawn calls sessions_spawn as the given session.
func (e *env) spawn(from string, args map[string]any) (map[string]any, error) {
	raw, _ := json.Marshal(args)
	ctx := tools.WithCaller(context.Background(), tools.Caller{SessionKey: from, AgentID: "main", Channel: "webchat"})
	res, err := spawnTool{e.m}.Call(ctx, raw)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(res.Details)
	var out map[string]any
	json.Unmarshal(b, &out)
	return out, nil
}

func (e *env) mustSpawn(from string, args map[string]any) map[string]any {
	e.t.Helper()
	out, err := e.spawn(from, args)
	if err != nil {
		e.t.Fatal(err)
	}
	if out["status"] != "accepted" {
		e.t.Fatalf("spawn = %v", out)
	}
	return out
}

// userTexts returns the user messages of a session (announces arrive as
// user-role input with provenance).
func (e *env) announces(key string) []string {
	e.t.Helper()
	s, err := e.store.GetSession(context.Background(), key)
	if err != nil {
		return nil
	}
	msgs, _ := e.store.History(context.Background(), s.SessionID, store.HistoryOptions{})
	var out []string
	for _, m := range msgs {
		if msg := m.Entry.Message; msg != nil && msg.Role == "user" && msg.Provenance != nil && msg.Provenance.SourceTool == announceSource {
			// One turn may carry several announces.
			out = append(out, strings.Split(msg.Content.Text(), "\n\n---\n\n")...)
		}
	}
	return out
}

func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	e.t.Fatalf("timed out waiting for %s", what)
}

func TestSpawnAnnouncesCompletion(t *testing.T) {
	e := newEnv(t, `{}`)
	out := e.mustSpawn("agent:main:main", map[string]any{"task": "answer\n/reply the answer is 42", "label": "research"})
	child := out["childSessionKey"].(string)
	if !strings.HasPrefix(child, "agent:main:subagent:") || out["mode"] != "run" || out["modelApplied"] != true ||
		!strings.HasPrefix(fmt.Sprint(out["note"]), "Auto-announce is push-based.") {
		t.Errorf("spawn result = %v", out)
	}
	e.eventually("the announce", func() bool { return len(e.announces("agent:main:main")) == 1 })
	msg := e.announces("agent:main:main")[0]
	for _, want := range []string{
		"[Internal task completion event]", "source: subagent", "session_key: " + child,
		"type: subagent task", "task: research", "status: completed successfully",
		"<<<BEGIN_UNTRUSTED_CHILD_RESULT>>>\nthe answer is 42\n<<<END_UNTRUSTED_CHILD_RESULT>>>", "Stats: runtime ",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("announce lacks %q:\n%s", want, msg)
		}
	}
	sess, _ := e.store.GetSession(context.Background(), child)
	if sess.SpawnedBy != "agent:main:main" || sess.SpawnDepth != 1 || sess.Label != "research" {
		t.Errorf("child session = %+v", sess)
	}
	// Exactly once, even if the dispatcher runs again.
	e.outbox.Pass(context.Background())
	time.Sleep(100 * time.Millisecond)
	if n := len(e.announces("agent:main:main")); n != 1 {
		t.Errorf("announces = %d, want 1", n)
	}
	infos, more, _ := e.m.List(context.Background(), "agent:main:main", false, 0)
	if len(infos) != 1 || more || infos[0].AnnounceStatus != "delivered" || infos[0].RunStatus != "ok" {
		t.Errorf("List = %+v", infos)
	}
}

// List pages the registry newest first instead of reading it whole.
func TestListPages(t *testing.T) {
	e := newEnv(t, `{ agents: { defaults: { subagents: { maxChildrenPerAgent: 50 } } } }`)
	ctx := context.Background()
	for i := range 30 {
		e.mustSpawn("agent:main:main", map[string]any{"task": fmt.Sprintf("child %d\n/reply ok", i)})
	}
	all, more, err := e.m.List(ctx, "", false, 0)
	if err != nil || more || len(all) != 30 {
		t.Fatalf("List(all) = %d rows, more %v, %v", len(all), more, err)
	}
	for i := 1; i < len(all); i++ {
		if all[i].CreatedAt > all[i-1].CreatedAt {
			t.Fatalf("not newest first at %d", i)
		}
	}
	page, more, err := e.m.List(ctx, "", false, 7)
	if err != nil || !more || len(page) != 7 {
		t.Fatalf("List(limit 7) = %d rows, more %v, %v", len(page), more, err)
	}
	for i := range page {
		if page[i].ChildRunID != all[i].ChildRunID {
			t.Fatalf("page row %d = %s, want %s", i, page[i].ChildRunID, all[i].ChildRunID)
		}
	}
	if _, more, _ := e.m.List(ctx, "", false, 30); more {
		t.Error("more with limit equal to the count")
	}
}

// TestBusyRequesterGetsEveryAnnounce: children finish while the requester
// is busy; with the followup queue mode every announce arrives after it
// goes idle, each exactly once. (In the default steer mode an announce
// joins the busy run instead: TestAnnounceSteersIntoBusyRequester.)
func TestBusyRequesterGetsEveryAnnounce(t *testing.T) {
	e := newEnv(t, `{ agents: { defaults: { subagents: { maxChildrenPerAgent: 20 } } }, messages: { queue: { mode: "followup" } } }`)
	ctx := context.Background()
	// The requester stays busy (its model call waits at the gate) until
	// every child has ended.
	if _, _, err := e.runner.Submit(ctx, agent.Input{RunID: "busy", SessionKey: "agent:main:boss", AgentID: "main", Message: "[gate]\n/reply busy done"}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		out := e.mustSpawn("agent:main:boss", map[string]any{"task": fmt.Sprintf("part %d\n/reply result %d", i, i)})
		e.waitRun(out["runId"].(string))
	}
	close(e.gate)
	busy, _, _ := e.runner.Wait(ctx, "busy", 20*time.Second)
	e.eventually("five announces", func() bool { return len(e.announces("agent:main:boss")) == 5 })
	s, _ := e.store.GetSession(ctx, "agent:main:boss")
	msgs, _ := e.store.History(ctx, s.SessionID, store.HistoryOptions{})
	for _, m := range msgs {
		if p := m.Entry.Message.Provenance; p != nil && p.SourceTool == announceSource {
			run, _ := e.store.GetRun(ctx, m.RunID)
			if run.StartedAt.Before(busy.EndedAt) {
				t.Errorf("announce run %s started %v, before the busy run ended %v", m.RunID, run.StartedAt, busy.EndedAt)
			}
		}
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(e.announces("agent:main:boss")); n != 5 {
		t.Errorf("announces = %d, want 5", n)
	}
	// Every announce run names each child it carries (a batch names them
	// all), so the sessions.edges view draws an edge from each.
	sources := map[string]bool{}
	seen := map[string]bool{}
	batched := false
	for _, m := range msgs {
		p := m.Entry.Message.Provenance
		if p == nil || p.SourceTool != announceSource || seen[m.RunID] {
			continue
		}
		seen[m.RunID] = true
		run, _ := e.store.GetRun(ctx, m.RunID)
		var in agent.Input
		if err := json.Unmarshal(run.Input, &in); err != nil || in.Provenance == nil {
			t.Fatalf("announce run input: %v", err)
		}
		parts := len(strings.Split(m.Entry.Message.Content.Text(), "\n\n---\n\n"))
		keys := in.Provenance.SourceSessionKeys
		if parts == 1 {
			keys = []string{in.Provenance.SourceSessionKey}
		}
		if len(keys) != parts || keys[0] != in.Provenance.SourceSessionKey {
			t.Errorf("announce run %s carries %d announces and names %q", m.RunID, parts, keys)
		}
		for _, k := range keys {
			sources[k] = true
		}
		batched = batched || parts > 1
	}
	if !batched {
		t.Error("no announce run carried several announces (they all waited for the busy run)")
	}
	if len(sources) != 5 {
		t.Errorf("announce runs name %d children, want 5", len(sources))
	}
}

func TestAnnounceSkipAndCleanupDelete(t *testing.T) {
	e := newEnv(t, `{}`)
	ctx := context.Background()
	out := e.mustSpawn("agent:main:main", map[string]any{"task": "quiet\n/reply ANNOUNCE_SKIP", "cleanup": "delete"})
	child := out["childSessionKey"].(string)
	e.eventually("the child cleaned up", func() bool {
		_, err := e.store.GetSession(ctx, child)
		return err != nil
	})
	if n := len(e.announces("agent:main:main")); n != 0 {
		t.Errorf("ANNOUNCE_SKIP still announced %d", n)
	}
}

func TestArchiveSweep(t *testing.T) {
	e := newEnv(t, `{ agents: { defaults: { subagents: { archiveAfterMinutes: 1 } } } }`)
	ctx := context.Background()
	out := e.mustSpawn("agent:main:main", map[string]any{"task": "keep\n/reply kept", "cleanup": "keep"})
	child := out["childSessionKey"].(string)
	e.eventually("the announce", func() bool { return len(e.announces("agent:main:main")) == 1 })
	if n := e.m.Sweep(ctx); n != 0 {
		t.Errorf("swept %d before the archive time", n)
	}
	later := time.Now().Add(2 * time.Minute)
	e.now.Store(&later)
	if n := e.m.Sweep(ctx); n != 1 {
		t.Errorf("swept %d, want 1 (keep children are archived too)", n)
	}
	if _, err := e.store.GetSession(ctx, child); err == nil {
		t.Error("archived child session still exists")
	}
}

func TestSpawnChecksInOrder(t *testing.T) {
	e := newEnv(t, `{ agents: { defaults: { subagents: { maxChildrenPerAgent: 1 } }, list: [{ id: "main", subagents: { allowAgents: ["helper"] } }, { id: "helper" }] } }`)
	if _, err := e.spawn("agent:main:main", map[string]any{"task": "x", "channel": "discord"}); err == nil ||
		err.Error() != `sessions_spawn does not support "channel". Use "message" or "sessions_send" for channel delivery.` {
		t.Errorf("forbidden key: %v", err)
	}
	if _, err := e.spawn("agent:main:main", map[string]any{"label": "x"}); err == nil || err.Error() != "task required" {
		t.Errorf("missing task: %v", err)
	}
	cases := []struct {
		from   string
		args   map[string]any
		status string
		err    string
	}{
		{"agent:main:main", map[string]any{"task": "x", "streamTo": "parent"}, "error", "streamTo is only supported for runtime=acp; got runtime=subagent"},
		{"agent:main:main", map[string]any{"task": "x", "runtime": "acp", "attachments": []any{map[string]any{"name": "a", "content": "b"}}}, "error",
			"attachments are currently unsupported for runtime=acp; use runtime=subagent or remove attachments"},
		{"agent:main:main", map[string]any{"task": "x", "agentId": "../../etc"}, "error",
			`Invalid agentId "../../etc". Agent IDs must match [a-z0-9][a-z0-9_-]{0,63}. Use agents_list to discover valid targets.`},
		{"agent:main:main", map[string]any{"task": "x", "mode": "session"}, "error",
			`mode="session" requires thread=true so the subagent can stay bound to a thread.`},
		{"agent:main:subagent:abc", map[string]any{"task": "x"}, "forbidden",
			"sessions_spawn is not allowed at this depth (current depth: 1, max: 1)"},
		{"agent:main:main", map[string]any{"task": "x", "agentId": "ops"}, "forbidden",
			"agentId is not allowed for sessions_spawn (allowed: helper)"},
		{"agent:main:main", map[string]any{"task": "x", "sandbox": "require"}, "forbidden",
			`sessions_spawn sandbox="require" needs a sandboxed target runtime. Pick a sandboxed agentId or use sandbox="inherit".`},
		{"agent:main:main", map[string]any{"task": "x", "model": "bogus/none"}, "error", "invalid model: bogus/none"},
		{"agent:main:main", map[string]any{"task": "x", "thinking": "galaxy-brain"}, "error", ""},
		{"agent:main:main", map[string]any{"task": "x", "thread": true}, "error",
			"thread=true is unavailable because no channel plugin registered subagent_spawning hooks."},
		{"agent:main:main", map[string]any{"task": "x", "attachments": []any{map[string]any{"name": "a.txt", "content": "hi"}}}, "forbidden",
			"attachments are disabled for sessions_spawn (enable tools.sessions_spawn.attachments.enabled)"},
		// Malformed attachments are refused, not ignored.
		{"agent:main:main", map[string]any{"task": "x", "attachments": "a.txt"}, "error",
			"attachments must be an array of {name, content, encoding?, mimeType?} objects, got a string"},
		{"agent:main:main", map[string]any{"task": "x", "attachments": map[string]any{"name": "a"}}, "error",
			"attachments must be an array of {name, content, encoding?, mimeType?} objects, got an object"},
		{"agent:main:main", map[string]any{"task": "x", "attachments": []any{"a.txt"}}, "error",
			"attachments[0] must be an object, got a string"},
		{"agent:main:main", map[string]any{"task": "x", "attachments": []any{map[string]any{"name": "a.txt", "content": 5.0}}}, "error",
			"attachments[0].content must be a string, got a number"},
		{"agent:main:main", map[string]any{"task": "x", "attachments": []any{map[string]any{"name": "a.txt", "content": "x", "encoding": true}}}, "error",
			"attachments[0].encoding must be a string, got a boolean"},
	}
	for _, c := range cases {
		out, err := e.spawn(c.from, c.args)
		if err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		if out["status"] != c.status || (c.err != "" && out["error"] != c.err) {
			t.Errorf("%v → %v", c.args, out)
		}
	}
	// Rejections wrote no child sessions.
	rows, _ := e.store.ListSessions(context.Background(), store.ListOptions{SpawnedBy: "agent:main:main"})
	if len(rows) != 0 {
		t.Errorf("rejected spawns left %d sessions", len(rows))
	}
	// Active children: one live child, the second is refused.
	e.mustSpawn("agent:main:main", map[string]any{"task": "slow\n/sleep 2s\n/reply slow"})
	out, _ := e.spawn("agent:main:main", map[string]any{"task": "x"})
	if out["status"] != "forbidden" || out["error"] != "sessions_spawn has reached max active children for this session (1/1)" {
		t.Errorf("second child = %v", out)
	}
	// An allowed other agent.
	out, _ = e.spawn("agent:main:other", map[string]any{"task": "hi\n/reply hi", "agentId": "helper"})
	if out["status"] != "accepted" || !strings.HasPrefix(fmt.Sprint(out["childSessionKey"]), "agent:helper:subagent:") {
		t.Errorf("spawn under helper = %v", out)
	}
}

// TestAnnounceGoesToTheRequestersParent: when the requester session is gone,
// its child's announce is delivered to the requester's own requester.
func TestAnnounceGoesToTheRequestersParent(t *testing.T) {
	e := newEnv(t, `{ agents: { defaults: { subagents: { maxSpawnDepth: 2 } } } }`)
	ctx := context.Background()
	mid := "agent:main:subagent:mid"
	if _, err := e.store.UpdateSession(ctx, mid, true, func(s *store.Session) error {
		s.SessionID, s.AgentID, s.SpawnedBy, s.SpawnDepth = "sid-mid", "main", "agent:main:main", 1
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.UpdateSession(ctx, "agent:main:main", true, func(s *store.Session) error {
		s.SessionID, s.AgentID = "sid-main", "main"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.mustSpawn(mid, map[string]any{"task": "leaf\n/sleep 300ms\n/reply from the leaf"})
	if err := e.store.DeleteSession(ctx, mid, true); err != nil {
		t.Fatal(err)
	}
	e.eventually("the re-routed announce", func() bool { return len(e.announces("agent:main:main")) == 1 })
	if got := e.announces("agent:main:main")[0]; !strings.Contains(got, "from the leaf") {
		t.Errorf("announce = %s", got)
	}
}

// TestDeadLetterAndRedeliver: an announce that cannot be delivered is
// retried, becomes a dead letter only after the expiry, and can be
// redelivered.
func TestDeadLetterAndRedeliver(t *testing.T) {
	var flaky *flakyRunner
	e := newEnvWith(t, `{}`, func(c *Config) {
		flaky = &flakyRunner{Runner: c.Runner.(*agent.Runner)}
		flaky.fail.Store(true)
		c.Runner = flaky
		c.Admit = admit(t, flaky, c.Store.(admission.Store), nil)
		c.AnnounceExpiry = 300 * time.Millisecond
	})
	ctx := context.Background()
	e.mustSpawn("agent:main:main", map[string]any{"task": "x\n/reply lost?"})
	var dead []*store.OutboxItem
	e.eventually("a dead letter", func() bool {
		// Backoff starts at 1s; skip ahead in time to retry now.
		later := time.Now().Add(time.Hour)
		e.now.Store(&later)
		e.outbox.Pass(ctx)
		dead, _ = e.m.deadLetters(ctx)
		return len(dead) == 1
	})
	if dead[0].Attempts < 1 || dead[0].LastError != "requester unavailable" {
		t.Errorf("dead letter = %+v", dead[0])
	}
	e.now.Store(nil)
	flaky.fail.Store(false)
	if err := e.m.Redeliver(ctx, dead[0].ID); err != nil {
		t.Fatal(err)
	}
	e.eventually("the redelivered announce", func() bool { return len(e.announces("agent:main:main")) == 1 })
	// The announce is in the transcript once its run is queued; the item
	// is settled just after.
	e.eventually("the item settled", func() bool {
		items, _ := e.store.ListOutbox(ctx, store.OutboxFilter{Kind: KindAnnounce, Statuses: []store.OutboxStatus{store.OutboxDelivered}})
		return len(items) == 1
	})
	if err := e.m.Redeliver(ctx, dead[0].ID); err == nil {
		t.Error("redelivering a delivered announce succeeded")
	}
}

func TestSandboxedRequesterCannotSpawnUnsandboxed(t *testing.T) {
	e := newEnv(t, `{ agents: { list: [{ id: "main", sandbox: { mode: "all" }, subagents: { allowAgents: ["open"] } }, { id: "open" }] } }`)
	out, err := e.spawn("agent:main:main", map[string]any{"task": "x", "agentId": "open"})
	if err != nil {
		t.Fatal(err)
	}
	if out["status"] != "forbidden" || out["error"] != "Sandboxed sessions cannot spawn unsandboxed subagents. Set a sandboxed target agent or use the same agent runtime." {
		t.Errorf("spawn = %v", out)
	}
}

// TestCloseOnce: a second Close reports net.ErrClosed.
func TestCloseOnce(t *testing.T) {
	e := newEnv(t, `{}`)
	if err := e.m.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := e.m.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second Close = %v, want net.ErrClosed", err)
	}
}

// newClaimEnv is a node "n1" on a shared store whose requester refuses
// announces until fail is cleared, with one spawned child whose announce
// was claimed for a batch whose run was never made (the requester
// refused it).
func newClaimEnv(t *testing.T, mods ...func(*Config)) (*env, *flakyRunner) {
	t.Helper()
	var flaky *flakyRunner
	e := newEnvWith(t, `{}`, func(c *Config) {
		flaky = &flakyRunner{Runner: c.Runner.(*agent.Runner)}
		flaky.fail.Store(true)
		c.Runner = flaky
		c.Admit = admit(t, flaky, c.Store.(admission.Store), nil)
		c.Shared, c.NodeID = true, "n1"
		for _, mod := range mods {
			mod(c)
		}
	})
	e.mustSpawn("agent:main:main", map[string]any{"task": "x\n/reply the result"})
	e.eventually("a claim whose run failed", func() bool {
		e.passLater()
		it, a, ok := e.announceItem()
		return ok && it.Attempts > 0 && a.BatchRunID != ""
	})
	return e, flaky
}

// passLater moves the env's clock a minute on (past any retry backoff)
// and runs one outbox pass.
func (e *env) passLater() {
	next := time.Now()
	if p := e.now.Load(); p != nil {
		next = *p
	}
	next = next.Add(time.Minute)
	e.now.Store(&next)
	e.outbox.Pass(context.Background())
}

// announceItem is the env's one announce item and its payload; ok is
// false while there is none.
func (e *env) announceItem() (*store.OutboxItem, Announce, bool) {
	e.t.Helper()
	items, err := e.store.ListOutbox(context.Background(), store.OutboxFilter{Kind: KindAnnounce})
	if err != nil || len(items) > 1 {
		e.t.Fatalf("announce items %d, %v", len(items), err)
	}
	if len(items) == 0 {
		return nil, Announce{}, false
	}
	var a Announce
	if err := json.Unmarshal(items[0].Payload, &a); err != nil {
		e.t.Fatal(err)
	}
	return items[0], a, true
}

// TestAbandonedClaimIsTakenOverAtOnce: on a shared store, an announce
// claimed for a batch whose run was never made waits staleClaim when
// another node claimed it (its dispatcher may be at work), but is
// delivered at once when an earlier process of this node claimed it (the
// node restarted: that process is gone).
func TestAbandonedClaimIsTakenOverAtOnce(t *testing.T) {
	e, flaky := newClaimEnv(t)
	if _, a, _ := e.announceItem(); !strings.HasPrefix(a.ClaimedBy, "n1/") {
		t.Fatalf("claim tagged %q, want this node's", a.ClaimedBy)
	}

	// Another node's fresh claim is left to it.
	e.leftToOtherNode(flaky, "n2/other")

	// An earlier process of this node claimed it: taken over now.
	e.claimBy("n1/before-the-restart")
	e.eventually("the announce", func() bool {
		e.passLater()
		return len(e.announces("agent:main:main")) == 1
	})
	if it, _, _ := e.announceItem(); it.Status != store.OutboxDelivered {
		t.Errorf("item %s after delivery", it.Status)
	}
}

// claimBy claims the env's announce for a batch of who's, as its
// dispatcher would: a batch run id of its own, so an attempt of this
// process that read the item before cannot claim it back.
func (e *env) claimBy(who string) string {
	e.t.Helper()
	it, _, _ := e.announceItem()
	batch := "announce:v1:batch:test:" + who
	if _, err := e.store.UpdateOutbox(context.Background(), it.ID, func(x *store.OutboxItem) error {
		var a Announce
		json.Unmarshal(x.Payload, &a)
		a.BatchRunID, a.ClaimedBy = batch, who
		x.Payload, _ = json.Marshal(a)
		return nil
	}); err != nil {
		e.t.Fatal(err)
	}
	return batch
}

// leftToOtherNode has who, a process of another node, claim the env's
// announce, lets the requester accept announces, and checks that a pass
// leaves the fresh claim to that node.
func (e *env) leftToOtherNode(flaky *flakyRunner, who string) {
	e.t.Helper()
	batch := e.claimBy(who)
	// An attempt of this process that claimed before that fails (the
	// requester still refuses); wait it out before the requester accepts.
	e.eventually("no delivery in flight", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return len(e.m.claiming) == 0
	})
	flaky.fail.Store(false)
	e.passLater()
	if it, got, _ := e.announceItem(); it.Status != store.OutboxPending || got.BatchRunID != batch || got.ClaimedBy != who || len(e.announces("agent:main:main")) != 0 {
		e.t.Fatalf("another node's fresh claim was taken over: %s, batch %q by %q", it.Status, got.BatchRunID, got.ClaimedBy)
	}
}

// TestDeadNodesClaimIsTakenOverAtOnce: an announce claimed by another
// node that died before it made the batch's run (killed between the two)
// is left to that node while its lease holds, and delivered as soon as
// the lease ended — not staleClaim after the claim, long after the dead
// node's other work was adopted.
func TestDeadNodesClaimIsTakenOverAtOnce(t *testing.T) {
	var alive atomic.Bool
	alive.Store(true)
	e, flaky := newClaimEnv(t, func(c *Config) {
		c.NodeAlive = func(_ context.Context, id string) (bool, error) {
			if id != "n2" {
				return false, fmt.Errorf("liveness of unknown node %q asked", id)
			}
			return alive.Load(), nil
		}
	})
	e.leftToOtherNode(flaky, "n2/p0")
	alive.Store(false) // n2's lease ends
	e.eventually("the announce", func() bool {
		e.passLater()
		return len(e.announces("agent:main:main")) == 1
	})
	if it, _, _ := e.announceItem(); it.Status != store.OutboxDelivered {
		t.Errorf("item %s after delivery", it.Status)
	}
}

// TestNoClaimWhileTheLeaseEnds: a node whose lease is about to end
// unrenewed neither claims announces nor makes their runs (another node
// takes them over once the lease ended); it delivers them once it may act
// again.
func TestNoClaimWhileTheLeaseEnds(t *testing.T) {
	var valid atomic.Bool
	e := newEnvWith(t, `{}`, func(c *Config) {
		c.Shared, c.NodeID, c.NodeValid = true, "n1", valid.Load
	})
	e.mustSpawn("agent:main:main", map[string]any{"task": "x\n/reply the result"})
	e.eventually("the child's announce item", func() bool {
		_, _, ok := e.announceItem()
		return ok
	})
	e.passLater()
	if it, a, _ := e.announceItem(); it.Status != store.OutboxPending || it.Attempts != 0 || a.BatchRunID != "" || len(e.announces("agent:main:main")) != 0 {
		t.Fatalf("announce while the lease ends: %s, %d attempts, claimed for %q", it.Status, it.Attempts, a.BatchRunID)
	}
	valid.Store(true)
	e.eventually("the announce", func() bool {
		e.passLater()
		return len(e.announces("agent:main:main")) == 1
	})
}

// TestNoRunAfterTheLeaseEnds: when the lease comes to its end between a
// batch's claims and its run, the run is not made (the node that takes
// the claims over makes it); the claims are this node's to take back once
// it may act again.
func TestNoRunAfterTheLeaseEnds(t *testing.T) {
	var calls atomic.Int32
	var renewed atomic.Bool
	e := newEnvWith(t, `{}`, func(c *Config) {
		c.Shared, c.NodeID = true, "n1"
		// Valid for the first check (before the claims), then not, until
		// the lease is renewed.
		c.NodeValid = func() bool { return calls.Add(1) == 1 || renewed.Load() }
	})
	e.mustSpawn("agent:main:main", map[string]any{"task": "x\n/reply the result"})
	e.eventually("a claim without its run", func() bool {
		it, a, ok := e.announceItem()
		return ok && a.BatchRunID != "" && calls.Load() >= 2 && it.Status == store.OutboxPending
	})
	_, a, _ := e.announceItem()
	if _, err := e.store.GetRun(context.Background(), a.BatchRunID); !errors.Is(err, store.ErrNotFound) || len(e.announces("agent:main:main")) != 0 {
		t.Fatalf("batch run %s made after the lease ended: %v", a.BatchRunID, err)
	}
	renewed.Store(true)
	e.eventually("the announce", func() bool {
		e.passLater()
		return len(e.announces("agent:main:main")) == 1
	})
}

// TestOwnFailedClaimIsRetriedAtOnce: this process's claim whose delivery
// failed is retried on its next attempt, not after staleClaim.
func TestOwnFailedClaimIsRetriedAtOnce(t *testing.T) {
	e, flaky := newClaimEnv(t)
	flaky.fail.Store(false)
	e.eventually("the announce", func() bool {
		e.passLater()
		return len(e.announces("agent:main:main")) == 1
	})
}

func TestAbandonedMatchesTheWholeNodeID(t *testing.T) {
	for _, tc := range []struct {
		node, claimedBy string
		want            bool
	}{
		{node: "n1", claimedBy: "n1/p0", want: true},
		{node: "n1", claimedBy: "n10/p0"},
		{node: "n1", claimedBy: "n2/p0"},
		{node: "a", claimedBy: "a/b/p0"}, // node "a/b"'s claim
		{node: "a/b", claimedBy: "a/b/p0", want: true},
		{node: "n1", claimedBy: ""},                  // claimed before claims were tagged
		{node: "", claimedBy: "/p0"},                 // not a cluster node
		{node: "n1", claimedBy: "n1/me", want: true}, // this process, not delivering it
	} {
		m := &Manager{cfg: Config{NodeID: tc.node}, claimer: tc.node + "/me", claiming: map[string]bool{}}
		if got := m.abandoned(context.Background(), Announce{ClaimedBy: tc.claimedBy, BatchRunID: "b"}); got != tc.want {
			t.Errorf("node %q, claimed by %q: abandoned = %v, want %v", tc.node, tc.claimedBy, got, tc.want)
		}
	}
	m := &Manager{cfg: Config{NodeID: "n1"}, claimer: "n1/me", claiming: map[string]bool{"b": true}}
	if m.abandoned(context.Background(), Announce{ClaimedBy: "n1/me", BatchRunID: "b"}) {
		t.Error("this process's claim it is delivering now counts as abandoned")
	}
	// Another node's claim is abandoned when its lease ended; not when
	// its liveness cannot be read (the claim then waits staleClaim).
	for _, tc := range []struct {
		alive bool
		err   error
		want  bool
	}{{alive: true}, {alive: false, want: true}, {err: errors.New("database away")}} {
		m := &Manager{cfg: Config{NodeID: "n1", NodeAlive: func(_ context.Context, id string) (bool, error) {
			if id != "a/b" {
				t.Errorf("liveness asked of %q, want the claim's node a/b", id)
			}
			return tc.alive, tc.err
		}}, claimer: "n1/me", claiming: map[string]bool{}, log: slog.New(slog.DiscardHandler)}
		if got := m.abandoned(context.Background(), Announce{ClaimedBy: "a/b/p0", BatchRunID: "b"}); got != tc.want {
			t.Errorf("node alive %v, err %v: abandoned = %v, want %v", tc.alive, tc.err, got, tc.want)
		}
	}
}
