package settings

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/policy"
)

func parse(t *testing.T, src string) *config.Config {
	t.Helper()
	c, warns, err := config.Parse("q.json5", []byte(src), config.MapEnv(map[string]string{config.EnvStateDir: t.TempDir()}))
	if err != nil || len(warns) > 0 {
		t.Fatalf("Parse: %v %v", err, warns)
	}
	return c
}

func TestMessagesQueue(t *testing.T) {
	src := `{
  messages: {
    queue: {
      mode: "coalesce",
      cap: 5,
      drop: "old",
      byChannel: { discord: "interrupt" },
      debounceMsByChannel: { discord: 1000 },
    },
  },
}`
	c := parse(t, src)
	got := policy.ResolveQueue(policy.QueueInput{Channel: "discord", Config: Resolve(c).Queue})
	want := policy.QueueSettings{Mode: policy.QueueInterrupt, DebounceMs: 1000, Cap: 5, Drop: policy.DropOld}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resolved (-want +got):\n%s", diff)
	}
	if got := policy.ResolveQueue(policy.QueueInput{Config: Resolve(parse(t, "{}")).Queue}); got.Mode != policy.QueueSteer || got.Cap != 20 || got.DebounceMs != 500 || got.Drop != policy.DropSummarize {
		t.Errorf("defaults = %+v", got)
	}
}

func TestMessagesQueueBad(t *testing.T) {
	src := `{
  messages: {
    queue: {
      mode: "sideways",
      cap: 0,
      drop: "random",
      byChannel: { discord: "later" },
      debounceMsByChannel: { discord: -5 },
      debounce: 3,
    },
  },
}`
	_, warns, err := config.Parse("q.json5", []byte(src), config.MapEnv(map[string]string{config.EnvStateDir: t.TempDir()}))
	if err == nil {
		t.Fatal("bad messages.queue accepted")
	}
	for _, want := range []string{
		`q.json5:4: messages.queue.mode: must be one of "steer", "followup", "collect", "interrupt", got "sideways"`,
		`q.json5:5: messages.queue.cap: must be a positive integer, got 0`,
		`q.json5:6: messages.queue.drop: must be one of "summarize", "old", "new", got "random"`,
		`q.json5:7: messages.queue.byChannel.discord: must be one of "steer", "followup", "collect", "interrupt", got "later"`,
		`q.json5:8: messages.queue.debounceMsByChannel.discord: must be at least 0, got -5`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if len(warns) != 1 || !strings.Contains(warns[0].String(), "messages.queue.debounce: unknown key") {
		t.Errorf("warnings = %v, want the unknown key", warns)
	}
}

// TestQueueAliasesAgree: every spelling config accepts is one the policy
// normalises to the same canonical value, and every spelling the policy
// knows is accepted by config.
func TestQueueAliasesAgree(t *testing.T) {
	modes, drops := config.QueueModeAliases(), config.QueueDropAliases()
	for alias, want := range modes {
		if got, ok := policy.NormalizeQueueMode(alias); !ok || string(got) != want {
			t.Errorf("mode %q: config says %q, policy %q (%v)", alias, want, got, ok)
		}
	}
	for alias, want := range drops {
		if got, ok := policy.NormalizeQueueDrop(alias); !ok || string(got) != want {
			t.Errorf("drop %q: config says %q, policy %q (%v)", alias, want, got, ok)
		}
	}
	// The policy's side: probe spellings near the known ones.
	var probes []string
	for alias := range modes {
		probes = append(probes, alias, alias+"s", strings.TrimSuffix(alias, "s"), strings.ReplaceAll(alias, "-", ""))
	}
	for alias := range drops {
		probes = append(probes, alias, alias+"s", alias+"est", strings.TrimSuffix(alias, "est"))
	}
	probes = append(probes, "queue", "followup", "follow-up", "summary", "summarise", "oldest", "newest", "drop")
	for _, p := range probes {
		if _, ok := policy.NormalizeQueueMode(p); ok {
			if _, in := modes[p]; !in {
				t.Errorf("policy accepts queue mode %q, config does not", p)
			}
		}
		if _, ok := policy.NormalizeQueueDrop(p); ok {
			if _, in := drops[p]; !in {
				t.Errorf("policy accepts queue drop %q, config does not", p)
			}
		}
	}
}

// TestResolve: the per-agent settings and the defaults for an agent that is
// not configured; entries in file order.
func TestResolve(t *testing.T) {
	c := parse(t, `{
  session: { mainKey: "home", sendPolicy: { default: "deny" } },
  tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true, allow: ["ops"] } },
  agents: {
    defaults: { model: { primary: "openai/gpt-x" }, sandbox: { mode: "non-main" }, subagents: { maxChildrenPerAgent: 7 } },
    list: [
      { id: "Main", name: " Boss " },
      { id: "ops", model: { primary: "anthropic/claude-y" }, subagents: { allowAgents: ["*"] } },
    ],
  },
}`)
	s := Resolve(c)
	if s.MainKey != "home" || s.DefaultAgent != "main" || s.SendRules == nil || s.SendRules.Default != "deny" {
		t.Errorf("top level = %+v", s)
	}
	if s.Sessions.Visibility != policy.VisibilityAll || !s.Sessions.A2A.Enabled || s.Subagents.MaxChildrenPerAgent != 7 {
		t.Errorf("sessions/subagents = %+v %+v", s.Sessions, s.Subagents)
	}
	if diff := cmp.Diff([]string{"main", "ops"}, s.AgentIDs()); diff != "" {
		t.Errorf("AgentIDs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Entry{{"main", "Boss"}, {"ops", ""}}, s.Entries()); diff != "" {
		t.Errorf("Entries (-want +got):\n%s", diff)
	}
	main, ops, other := s.Agent("MAIN"), s.Agent("ops"), s.Agent("ghost")
	if main.Name != "Boss" || main.Model != "openai/gpt-x" || main.SandboxMode != "non-main" || !main.Configured {
		t.Errorf("main = %+v", main)
	}
	if ops.Model != "anthropic/claude-y" || len(ops.AllowAgents) != 1 {
		t.Errorf("ops = %+v", ops)
	}
	if other.Configured || other.Model != "openai/gpt-x" || other.ID != "ghost" || s.Known("ghost") || !s.Known("ops") {
		t.Errorf("unconfigured agent = %+v (known %v)", other, s.Known("ghost"))
	}
}

func TestResolveChannels(t *testing.T) {
	s := Resolve(parse(t, `{session: {dmScope: "per-peer"}, channels: {irc: {host: "irc.test", nick: "bot", tls: false, channels: ["#room"]}}}`))
	if s.DMScope != "per-peer" || !s.IRC.Enabled || s.IRC.Host != "irc.test" || s.IRC.Port != 6667 || s.IRC.Channels[0] != "#room" {
		t.Errorf("channels = %q %+v", s.DMScope, s.IRC)
	}
	sec := Resolve(parse(t, `{channels: {irc: {host: "h", nick: "n", password: "srv-secret", nickserv: {password: "ns-secret"}}}}`)).Sessions.Secrets
	if !slices.Contains(sec, "srv-secret") || !slices.Contains(sec, "ns-secret") {
		t.Errorf("secrets = %q, want the IRC passwords", sec)
	}
	if d := Resolve(parse(t, `{}`)); d.DMScope != "main" || d.IRC.Enabled {
		t.Errorf("defaults = %q %+v", d.DMScope, d.IRC)
	}
}

// SandboxSpec carries the scope: the sandbox key of the session and its
// private workspace under the workspace root, and the Docker keys.
func TestSandboxSpecScope(t *testing.T) {
	c := parse(t, `{ agents: {
  defaults: { sandbox: { mode: "all", workspaceRoot: "/srv/boxes", docker: { setupCommand: "true", gpus: "2", ulimits: { nofile: 100 } } } },
  list: [{ id: "main" }, { id: "ops", sandbox: { scope: "session" } }, { id: "all", sandbox: { scope: "shared" } }] } }`)
	s := Resolve(c)
	for _, tc := range []struct{ agent, key, wantKey, wantDir string }{
		{"main", "agent:main:x", "main", "/srv/boxes/agent-main"},
		{"ops", "agent:ops:x", "agent:ops:x", "/srv/boxes/session-agent-ops-x-"},
		{"all", "agent:all:x", "shared", "/srv/boxes/shared"},
		{"main", "", "", ""},
	} {
		spec := s.Agent(tc.agent).SandboxSpec(tc.key)
		if spec.ScopeKey != tc.wantKey || !strings.HasPrefix(spec.ScopeDir, tc.wantDir) || (tc.wantDir == "" && spec.ScopeDir != "") {
			t.Errorf("%s %q: key %q dir %q, want %q %q…", tc.agent, tc.key, spec.ScopeKey, spec.ScopeDir, tc.wantKey, tc.wantDir)
		}
	}
	d := s.Agent("main").SandboxSpec("agent:main:x").Docker
	if d.SetupCommand != "true" || d.GPUs != "2" || d.Ulimits["nofile"].Soft != 100 || d.Ulimits["nofile"].Hard != 100 {
		t.Errorf("docker = %+v", d)
	}
}

// ElevatedGate passes only when the gates are on and the sender is on
// both allowlists, as the reference resolves them.
func TestElevatedGate(t *testing.T) {
	tests := []struct {
		name, channel, to string
		ag                Agent
		want              string
	}{
		{"disabled", "", "", Agent{Elevated: false, ElevatedFrom: map[string][]string{"webchat": {"*"}}}, ElevatedGateEnabled},
		{"no allowlist", "", "", Agent{Elevated: true}, ElevatedGateAllowFrom},
		{"webchat star", "", "", Agent{Elevated: true, ElevatedFrom: map[string][]string{"webchat": {"*"}}}, ""},
		{"other channel's list", "telegram", "12345", Agent{Elevated: true, ElevatedFrom: map[string][]string{"webchat": {"*"}}}, ElevatedGateAllowFrom},
		{"sender listed", "telegram", "12345", Agent{Elevated: true, ElevatedFrom: map[string][]string{"telegram": {"999", " 12345 "}}}, ""},
		{"sender not listed", "telegram", "12345", Agent{Elevated: true, ElevatedFrom: map[string][]string{"telegram": {"999"}}}, ElevatedGateAllowFrom},
		{"agent list must match too", "telegram", "12345", Agent{Elevated: true, ElevatedFrom: map[string][]string{"telegram": {"*"}},
			ElevatedFromOwn: map[string][]string{"telegram": {"999"}}}, ElevatedGateAllowFrom},
		{"both lists match", "telegram", "12345", Agent{Elevated: true, ElevatedFrom: map[string][]string{"telegram": {"*"}},
			ElevatedFromOwn: map[string][]string{"telegram": {"12345"}}}, ""},
		{"empty sender matches no id", "irc", "", Agent{Elevated: true, ElevatedFrom: map[string][]string{"irc": {""}}}, ElevatedGateAllowFrom},
	}
	for _, tt := range tests {
		if got := tt.ag.ElevatedGate(tt.channel, tt.to); got != tt.want {
			t.Errorf("%s: gate = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestLogLevelsIsACopy: LogLevels (a func since issue 37, no init-time
// copy of config's var) gives config's levels, and a caller changing them
// changes nothing.
func TestLogLevelsIsACopy(t *testing.T) {
	if diff := cmp.Diff(config.LogLevels, LogLevels()); diff != "" {
		t.Fatalf("LogLevels (-config +settings):\n%s", diff)
	}
	l := LogLevels()
	l[0] = "changed"
	if LogLevels()[0] != config.LogLevels[0] || config.LogLevels[0] == "changed" {
		t.Fatal("LogLevels returns config's slice")
	}
}
