package admission_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/compaction"
	"github.com/switchboardhq/switchboard/internal/policy"
	"github.com/switchboardhq/switchboard/internal/provider/scripted"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/sqlite"
	"github.com/switchboardhq/switchboard/internal/tools"
)

type scriptedModels struct{ p *scripted.Provider }

func (m scriptedModels) ResolveModel(string, string) (agent.Model, error) {
	return agent.Model{Provider: m.p, ProviderID: "scripted", ModelID: "echo-1", API: "scripted"}, nil
}

// replies records the replies admission asks to record, and carries out
// the gateway's commands by naming them (the gateway's own are tested
// end to end).
type replies struct {
	mu   sync.Mutex
	got  []string
	cmds []string
}

func (r *replies) RunCommand(_ context.Context, cmd admission.Command) (admission.Answer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := "elevated"
	if cmd.Session != nil {
		name = cmd.Session.Kind
	}
	r.cmds = append(r.cmds, name)
	return admission.Answer{Reply: "did " + name}, nil
}

func (r *replies) Reply(_ context.Context, key, runID, text string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, text)
	return nil
}

type env struct {
	st     *sqlite.Store
	runner *agent.Runner
	adm    *admission.Admitter
	rep    *replies
}

func newEnv(t *testing.T, send *policy.SendPolicyConfig, queue policy.QueueConfig, mods ...func(*admission.Config)) *env {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runner, err := agent.New(agent.Config{
		Store: st, Models: scriptedModels{scripted.New(scripted.Options{})},
		Tools:       func(context.Context, agent.RunInfo) *tools.Set { return tools.NewSet() },
		InitSession: admission.FillRunnerSession,
	})
	if err != nil {
		t.Fatal(err)
	}
	rep := &replies{}
	cfg := admission.Config{Runner: runner, Store: st, Commands: rep, SendRules: send, Queue: queue}
	for _, mod := range mods {
		mod(&cfg)
	}
	adm, err := admission.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		runner.Close()
		st.Close()
	})
	return &env{st: st, runner: runner, adm: adm, rep: rep}
}

// input is a message of origin o to key, its channel as that door sets it.
func input(o admission.Origin, key, text string) agent.Input {
	in := agent.Input{RunID: string(o) + "-" + time.Now().Format("150405.000000000"), SessionKey: key, AgentID: "main", Message: text}
	switch o {
	case admission.OriginOperator:
		in.Channel = "webchat"
	case admission.OriginChannel:
		in.Channel = "telegram"
	case admission.OriginA2A:
		in.Channel, in.Provenance = "a2a", &agent.Provenance{Kind: "a2a"}
	case admission.OriginWebhook:
		in.Channel, in.Provenance = "webhook", &agent.Provenance{Kind: "hook"}
	case admission.OriginCron:
		in.Channel, in.Provenance = "cron", &agent.Provenance{Kind: "cron"}
	default:
		in.Channel, in.Provenance = "webchat", &agent.Provenance{Kind: "inter_session"}
	}
	return in
}

var allOrigins = []admission.Origin{
	admission.OriginOperator, admission.OriginChannel, admission.OriginA2A, admission.OriginWebhook,
	admission.OriginCron, admission.OriginAgent, admission.OriginSpawn, admission.OriginAnnounce, admission.OriginStep,
}

// TestCommandsByOrigin: a standalone command is carried out for the
// operator and a channel's direct message, and is plain text (a run) for
// every other origin and for a chat room.
func TestCommandsByOrigin(t *testing.T) {
	const dm, room = "agent:main:main", "agent:main:telegram:group:-100"
	for _, text := range []string{"/queue collect", "/compact", "/new", "/think high", "/model x/y"} {
		for _, o := range allOrigins {
			for _, key := range []string{dm, room} {
				if key == room && o != admission.OriginChannel {
					continue
				}
				t.Run(text+"/"+string(o)+"/"+key, func(t *testing.T) {
					e := newEnv(t, nil, policy.QueueConfig{})
					tk, err := e.adm.Accept(context.Background(), admission.Request{Origin: o, Input: input(o, key, text), Admin: true})
					if err != nil {
						t.Fatal(err)
					}
					wantCommand := (o == admission.OriginOperator || o == admission.OriginChannel) && key == dm
					if got := tk.Command != ""; got != wantCommand {
						t.Fatalf("command = %q, want a command: %v", tk.Command, wantCommand)
					}
					if wantCommand != (tk.Run == nil) {
						t.Fatalf("run = %v with command %q", tk.Run, tk.Command)
					}
					if !wantCommand && !tk.Created {
						t.Fatal("the text was not stored as a run")
					}
				})
			}
		}
	}
}

// TestQueueCommandSetsTheOverride: /queue collect stores the session's
// override (creating the session row the one way) and replies with the
// reference's text; the next message resolves to collect.
func TestQueueCommandSetsTheOverride(t *testing.T) {
	e := newEnv(t, nil, policy.QueueConfig{})
	ctx := context.Background()
	tk, err := e.adm.Accept(ctx, admission.Request{Origin: admission.OriginChannel, Input: input(admission.OriginChannel, "agent:main:main", "/queue collect")})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Command != "queue" || tk.Reply == "" || len(e.rep.got) != 1 || e.rep.got[0] != tk.Reply {
		t.Fatalf("ticket %+v, replies recorded %q", tk, e.rep.got)
	}
	sess, err := e.st.GetSession(ctx, "agent:main:main")
	if err != nil {
		t.Fatal(err)
	}
	if sess.SessionID == "" || sess.AgentID != "main" || sess.LastChannel != "telegram" || sess.Kind == "" {
		t.Fatalf("session row not filled in: %+v", sess)
	}
	tk, err = e.adm.Accept(ctx, admission.Request{Origin: admission.OriginA2A, Input: input(admission.OriginA2A, "agent:main:main", "hello")})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Queue.Mode != policy.QueueCollect {
		t.Fatalf("queue mode after /queue collect = %q", tk.Queue.Mode)
	}
}

// TestThinkCommand: "/think <level>" alone stores the session's level
// and replies; before a message it is that message's level only (the run
// carries it, the session keeps its own); "/think" with words that are no
// level is a message for the model.
func TestThinkCommand(t *testing.T) {
	e := newEnv(t, nil, policy.QueueConfig{})
	ctx := context.Background()
	const key = "agent:main:main"
	accept := func(text string) admission.Ticket {
		t.Helper()
		tk, err := e.adm.Accept(ctx, admission.Request{Origin: admission.OriginChannel, Input: input(admission.OriginChannel, key, text)})
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	level := func() string {
		t.Helper()
		sess, err := e.st.GetSession(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return sess.ThinkingLevel
	}
	if tk := accept("/think max"); tk.Command != "think" || tk.Run != nil || tk.Reply != "Thinking level set to high." ||
		len(e.rep.got) != 1 || e.rep.got[0] != tk.Reply {
		t.Fatalf("/think max: ticket %+v, replies %q", tk, e.rep.got)
	}
	if got := level(); got != "high" {
		t.Fatalf("session level after /think max = %q", got)
	}
	for _, tt := range []struct{ text, message, thinking string }{
		{"/t low\nkeep it short", "keep it short", "low"},
		{"/think about it", "/think about it", ""},
	} {
		tk := accept(tt.text)
		if tk.Command != "" || tk.Run == nil {
			t.Fatalf("%q: ticket %+v", tt.text, tk)
		}
		var in agent.Input
		if err := json.Unmarshal(tk.Run.Input, &in); err != nil {
			t.Fatal(err)
		}
		if in.Message != tt.message || in.Thinking != tt.thinking {
			t.Errorf("%q ran as message %q, thinking %q; want %q, %q", tt.text, in.Message, in.Thinking, tt.message, tt.thinking)
		}
		if got := level(); got != "high" {
			t.Errorf("%q changed the session's level to %q", tt.text, got)
		}
	}
	if tk := accept("/think sideways"); tk.Run != nil || !strings.HasPrefix(tk.Reply, `Unrecognized thinking level "sideways".`) || level() != "high" {
		t.Fatalf("/think sideways: ticket %+v, level %q", tk, level())
	}
	if tk := accept("/think default"); tk.Reply != "Thinking level reset to default." || level() != "" {
		t.Fatalf("/think default: ticket %+v, level %q", tk, level())
	}
}

// TestWhoami: /whoami answers with the channel and the sender the door
// named (the id a channel's allowFrom takes), or says the operator sent
// it; it runs no turn.
func TestWhoami(t *testing.T) {
	e := newEnv(t, nil, policy.QueueConfig{})
	ctx := context.Background()
	tk, err := e.adm.Accept(ctx, admission.Request{Origin: admission.OriginChannel, Sender: admission.Sender{ID: "7", Name: "Ann"},
		Input: input(admission.OriginChannel, "agent:main:main", "/whoami")})
	if err != nil {
		t.Fatal(err)
	}
	if want := "🧭 Identity\nChannel: telegram\nUser id: 7\nName: Ann\nAllowFrom: 7"; tk.Command != "whoami" || tk.Run != nil || tk.Reply != want ||
		len(e.rep.got) != 1 || e.rep.got[0] != want {
		t.Fatalf("ticket %+v, replies %q", tk, e.rep.got)
	}
	tk, err = e.adm.Accept(ctx, admission.Request{Origin: admission.OriginOperator, Input: input(admission.OriginOperator, "agent:main:fresh", "/id")})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Reply != "🧭 Identity\nChannel: webchat\nYou are the gateway's operator (a token or password client)." {
		t.Fatalf("operator's /id: %+v", tk)
	}
	if _, err := e.st.GetSession(ctx, "agent:main:fresh"); err != nil {
		t.Errorf("/id as a first message left no session to answer in: %v", err)
	}
}

// TestSendCommandNeedsAdmin: /send from a sender who may not change the
// policy is consumed with no reply and changes nothing; from one who may,
// it sets the override with the reference's reply.
func TestSendCommandNeedsAdmin(t *testing.T) {
	e := newEnv(t, nil, policy.QueueConfig{})
	ctx := context.Background()
	req := admission.Request{Origin: admission.OriginOperator, Input: input(admission.OriginOperator, "agent:main:main", "/send off")}
	tk, err := e.adm.Accept(ctx, req)
	if err != nil || tk.Command != "send" || tk.Run != nil || len(e.rep.got) != 0 {
		t.Fatalf("non-admin /send: %+v %v, replies %q", tk, err, e.rep.got)
	}
	if _, err := e.st.GetSession(ctx, "agent:main:main"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("non-admin /send made a session: %v", err)
	}
	req.Admin = true
	if tk, err = e.adm.Accept(ctx, req); err != nil || tk.Reply != "⚙️ Send policy set to off." {
		t.Fatalf("admin /send: %+v %v", tk, err)
	}
	sess, err := e.st.GetSession(ctx, "agent:main:main")
	if err != nil || sess.SendPolicy != "deny" {
		t.Fatalf("session after /send off: %+v %v", sess, err)
	}
}

// TestSendPolicyByOrigin: a session whose policy denies refuses every door
// with the reference's text; a sub-agent's result, a flow's step and a
// spawned child's first run are not messages to it and pass.
func TestSendPolicyByOrigin(t *testing.T) {
	deny := &policy.SendPolicyConfig{Default: "deny"}
	for _, o := range allOrigins {
		t.Run(string(o), func(t *testing.T) {
			e := newEnv(t, deny, policy.QueueConfig{})
			tk, err := e.adm.Accept(context.Background(), admission.Request{Origin: o, Input: input(o, "agent:main:main", "hi")})
			refused := rule(o).SendPolicy
			if refused {
				if !errors.Is(err, admission.ErrSendDenied) || err.Error() != "send blocked by session policy" {
					t.Fatalf("err = %v, want the send policy's refusal", err)
				}
				return
			}
			if err != nil || !tk.Created {
				t.Fatalf("%+v %v", tk, err)
			}
		})
	}
	for o, want := range map[admission.Origin]bool{admission.OriginAnnounce: false, admission.OriginStep: false, admission.OriginSpawn: false, admission.OriginA2A: true} {
		if rule(o).SendPolicy != want {
			t.Errorf("%s send policy = %v", o, !want)
		}
	}
}

// TestQueueCapBoundsEveryDoor: with messages.queue.cap 1 and drop "new",
// a busy session with one queued message refuses the next from every door
// with the reference's text; a sub-agent's result is never dropped, and a
// flow's step has no queue settings of its own.
func TestQueueCapBoundsEveryDoor(t *testing.T) {
	one := 1
	for _, o := range allOrigins {
		t.Run(string(o), func(t *testing.T) {
			e := newEnv(t, nil, policy.QueueConfig{Mode: "followup", Cap: &one, Drop: "new"})
			ctx := context.Background()
			busyIn := input(admission.OriginOperator, "agent:main:main", "/stall")
			started := make(chan struct{})
			var once sync.Once
			unsub := e.runner.Subscribe(func(ev agent.Event) {
				if ev.RunID == busyIn.RunID && ev.Stream == agent.StreamLifecycle && ev.Phase == agent.PhaseStart {
					once.Do(func() { close(started) })
				}
			})
			defer unsub()
			busy, err := e.adm.Accept(ctx, admission.Request{Origin: admission.OriginOperator, Input: busyIn})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.runner.Abort(context.Background(), busy.RunID) })
			<-started // the lane is busy: its queue holds what waits
			queued, err := e.adm.Accept(ctx, admission.Request{Origin: admission.OriginOperator, Input: input(admission.OriginOperator, "agent:main:main", "queued")})
			if err != nil || queued.Position == 0 {
				t.Fatalf("queued: %+v %v", queued, err)
			}
			tk, err := e.adm.Accept(ctx, admission.Request{Origin: o, Input: input(o, "agent:main:main", "one more")})
			switch o {
			case admission.OriginAnnounce, admission.OriginStep:
				if err != nil || tk.Position != 2 {
					t.Fatalf("%+v %v, want it queued behind the others", tk, err)
				}
			default:
				var full *admission.QueueFullError
				if !errors.As(err, &full) || !errors.Is(err, agent.ErrQueueFull) ||
					err.Error() != `queue full: the session already has 1 queued messages (messages.queue.drop is "new")` {
					t.Fatalf("err = %v, want the cap's refusal", err)
				}
			}
		})
	}
}

// TestFillSession: a row made by any door gets the same derived fields.
func TestFillSession(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	for _, tc := range []struct {
		key, agentID, channel string
		wantAgent, wantKind   string
		wantChannel, wantLast string
		wantDepth             int
	}{
		{"agent:ops:main", "main", "", "ops", "direct", "", "", 0},
		{"agent:main:telegram:group:-100", "main", "telegram", "main", "group", "telegram", "telegram", 0},
		{"agent:main:subagent:a:subagent:b", "main", "webchat", "main", "direct", "", "webchat", 2},
	} {
		s := &store.Session{Key: tc.key}
		admission.FillSession(s, tc.agentID, tc.channel, now, func() string { return "sid" })
		if s.SessionID != "sid" || s.AgentID != tc.wantAgent || s.Kind != tc.wantKind || s.Channel != tc.wantChannel ||
			s.LastChannel != tc.wantLast || s.SpawnDepth != tc.wantDepth || string(s.Extra) != `{"sessionStartedAt":1700000000000}` {
			t.Errorf("%s: %+v extra %s", tc.key, s, s.Extra)
		}
	}
}

// readCounter counts the session reads made for a context marked with
// countReads.
type readCounter struct {
	*sqlite.Store
	reads atomic.Int32
}

type countReads struct{}

func (s *readCounter) GetSession(ctx context.Context, key string) (*store.Session, error) {
	if ctx.Value(countReads{}) != nil {
		s.reads.Add(1)
	}
	return s.Store.GetSession(ctx, key)
}

// TestAcceptReadsTheSessionOnce: admission hands the session it read to
// the runner's enqueue, which does not read it again (on PostgreSQL each
// read is a round trip of every turn), with or without a reset rule.
func TestAcceptReadsTheSessionOnce(t *testing.T) {
	for _, rule := range []string{"", compaction.ResetIdle} {
		t.Run("reset="+rule, func(t *testing.T) {
			sq, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			st := &readCounter{Store: sq}
			cfg := agent.Config{
				Store: st, Models: scriptedModels{scripted.New(scripted.Options{})},
				Tools:       func(context.Context, agent.RunInfo) *tools.Set { return tools.NewSet() },
				InitSession: admission.FillRunnerSession,
			}
			if rule != "" {
				cfg.ResetRule = func(*store.Session) compaction.ResetRule {
					return compaction.ResetRule{Mode: rule, IdleMinutes: 60}
				}
			}
			runner, err := agent.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				runner.Close()
				sq.Close()
			})
			adm, err := admission.New(admission.Config{Runner: runner, Store: st, Commands: &replies{}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for i, text := range []string{"first", "second"} {
				in := input(admission.OriginOperator, "agent:main:main", text)
				st.reads.Store(0)
				tk, err := adm.Accept(context.WithValue(ctx, countReads{}, true), admission.Request{Origin: admission.OriginOperator, Input: in})
				if err != nil {
					t.Fatal(err)
				}
				if _, done, err := runner.Wait(ctx, tk.RunID, 30*time.Second); err != nil || !done {
					t.Fatalf("wait %s: done %v, %v", tk.RunID, done, err)
				}
				// The first turn finds no session (and reads again before
				// it creates one); a turn on an existing session reads once.
				if got := st.reads.Load(); i > 0 && got != 1 {
					t.Fatalf("turn %d: %d session reads in Accept, want 1", i+1, got)
				}
			}
		})
	}
}

// rule is the origin's rule (the zero Rule for an unknown origin).
func rule(o admission.Origin) admission.Rule {
	r, _ := admission.RuleFor(o)
	return r
}
