package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadFakeProvider(t *testing.T) {
	c, warnings, err := LoadEnv("testdata/fake-provider.json5", testEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %v", warnings)
	}
	if got := c.Paths().ConfigPath; got != "testdata/fake-provider.json5" {
		t.Errorf("ConfigPath = %q", got)
	}
	got := []any{c.gatewayMode(), c.GatewayPort(), c.GatewayBind(), c.GatewayAuth(), c.ModelsMode(), c.AgentModel("main"), c.DefaultAgentID()}
	want := []any{"local", 18789, "loopback", GatewayAuth{Mode: "token", Token: "test-token-not-secret-1234"}, "replace", "fake/fake-1", "main"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	n := func(v int) *int { return &v }
	wantProviders := map[string]Provider{"fake": {
		BaseURL: "http://127.0.0.1:18999/v1",
		APIKey:  "sk-fake-provider-key",
		API:     APIOpenAICompletions,
		Models: []ModelDef{{
			ID: "fake-1", Name: "Fake One", Input: []string{"text"}, Cost: &ModelCost{},
			ContextWindow: n(128000), MaxTokens: n(4096),
		}},
	}}
	if diff := cmp.Diff(wantProviders, c.Providers()); diff != "" {
		t.Errorf("Providers (-want +got):\n%s", diff)
	}

	// replace mode keeps the environment's providers out.
	c, _, err = LoadEnv("testdata/fake-provider.json5", testEnv(map[string]string{EnvOpenAIKey: "sk-env"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Provider("openai"); ok {
		t.Error("implicit openai provider exists in replace mode")
	}
}

func TestLoadOpenClaw(t *testing.T) {
	env := testEnv(map[string]string{EnvOpenAIKey: "sk-openai-env"})
	c, warnings, err := LoadEnv("testdata/openclaw.json5", env)
	if err != nil {
		t.Fatal(err)
	}
	var gotWarnings []string
	for _, w := range warnings {
		gotWarnings = append(gotWarnings, w.String())
	}
	wantWarnings := []string{
		"testdata/openclaw.json5:6: meta: unknown key (ignored)",
		"testdata/openclaw.json5:59: agents.defaults.thinkingDefault: unknown key (ignored)",
	}
	if diff := cmp.Diff(wantWarnings, gotWarnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}

	got := map[string]any{
		"Scope":            c.Scope(),
		"MainKey":          c.MainKey(),
		"MaxPingPongTurns": c.MaxPingPongTurns(),
		"SendPolicyRules":  len(c.SendPolicy().Rules),
		"Visibility":       c.Visibility(),
		"A2A":              []any{c.AgentToAgentEnabled(), c.AgentToAgentAllow()},
		"SubagentTools":    c.SubagentTools(),
		"Attachments":      c.Attachments(),
		"Subagents": []int{c.MaxSpawnDepth(), c.MaxChildrenPerAgent(), c.MaxConcurrent(),
			c.ArchiveAfterMinutes(), c.RunTimeoutSeconds(), c.AnnounceTimeoutMs()},
		"AgentTimeoutSeconds": c.AgentTimeoutSeconds(),
		"AgentIDs":            c.AgentIDs(),
		"DefaultAgentID":      c.DefaultAgentID(),
		"Workspaces":          []string{c.AgentWorkspace("main"), c.AgentWorkspace("ops-a"), c.AgentWorkspace("guest")},
		"Models":              []string{c.AgentModel("main"), c.AgentModel("OPS-A"), c.SubagentModel("guest")},
		"Fallbacks":           c.AgentModelFallbacks("main"),
		"Thinking":            []string{c.SubagentThinking("ops-a"), c.SubagentThinking("main")},
		"AllowAgents":         c.AllowAgents("ops-a"),
		"Sandbox":             []string{c.SandboxMode("main"), c.SandboxMode("ops-a"), c.SessionToolsVisibility()},
		"Gateway":             []any{c.GatewayPort(), c.GatewayBind(), c.GatewayAuth().Mode},
		"OpenAIKey":           must(c.Provider("openai")).APIKey,
		"LocalAPI":            must(c.Provider("local-llm")).API,
		"Logging":             []any{c.RedactSensitive(), c.RedactPatterns()},
	}
	want := map[string]any{
		"Scope":            "per-sender",
		"MainKey":          "main",
		"MaxPingPongTurns": 0,
		"SendPolicyRules":  3,
		"Visibility":       "all",
		"A2A":              []any{true, []string{"ops-*", "main"}},
		"SubagentTools":    ToolPolicy{AlsoAllow: []string{"sessions_send"}, Deny: []string{"exec"}},
		"Attachments": AttachmentLimits{Enabled: true, MaxTotalBytes: 5 << 20, MaxFiles: 10, MaxFileBytes: 1 << 20,
			RetainOnSessionKeep: true},
		"Subagents":           []int{2, 10, 4, 120, 300, 30000},
		"AgentTimeoutSeconds": 900,
		"AgentIDs":            []string{"main", "ops-a", "guest"},
		"DefaultAgentID":      "main",
		"Workspaces":          []string{"/home/u/claw/workspace", "/srv/ops-a", "/home/u/claw/workspace"},
		"Models":              []string{"openai/gpt-5.1", "local-llm/qwen/qwen3-32b", "local-llm/qwen/qwen3-32b"},
		"Fallbacks":           []string{"local-llm/qwen/qwen3-32b"},
		"Thinking":            []string{"high", "minimal"},
		"AllowAgents":         []string{"*"},
		"Sandbox":             []string{"non-main", "all", "all"},
		"Gateway":             []any{18790, "lan", "password"},
		"OpenAIKey":           "sk-openai-env",
		"LocalAPI":            APIOpenAICompletions,
		"Logging":             []any{"tools", []string{"sk-[A-Za-z0-9]+"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func must[T any](v T, ok bool) T {
	if !ok {
		panic("missing")
	}
	return v
}

func TestLoadMissingFile(t *testing.T) {
	dir := t.TempDir()
	c, warnings, err := LoadEnv(filepath.Join(dir, "nope.json5"), testEnv(nil))
	if err != nil || len(warnings) != 0 {
		t.Fatalf("LoadEnv(missing) = %v, %v", warnings, err)
	}
	if c.GatewayPort() != 18789 || c.Visibility() != "tree" {
		t.Errorf("missing file did not give defaults")
	}

	// With no path, SWITCHBOARD_CONFIG is used.
	p := filepath.Join(dir, "sb.json5")
	if err := os.WriteFile(p, []byte(`{gateway:{port:4242}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, _, err = LoadEnv("", testEnv(map[string]string{EnvConfig: p, EnvStateDir: dir}))
	if err != nil {
		t.Fatal(err)
	}
	if c.GatewayPort() != 4242 || c.Paths() != (Paths{StateDir: dir, ConfigPath: p}) {
		t.Errorf("LoadEnv(\"\") port %d paths %+v", c.GatewayPort(), c.Paths())
	}

	// A directory is not a missing file.
	if _, _, err := LoadEnv(dir, testEnv(nil)); err == nil {
		t.Error("LoadEnv(directory) succeeded")
	}
	if _, _, err := LoadEnv("", MapEnv(nil)); err == nil {
		t.Error("LoadEnv with no HOME and no path succeeded")
	}
}

func TestUnknownKeyWarnings(t *testing.T) {
	src := `{
  // comment with a fake key: bogus: 1
  session: {
    scope: "global",
    scpoe: "x",
  },
  tools: { sessions: { Visibility: "all" } },
  'quoted key': 1,
  agents: { list: [ { id: "a" }, {
      id: "b",
      colour: "red",
  } ] },
  models: { providers: { p: { baseUrl: "http://h/v1", baseURL: "x" } } },
  gateway: { port: 1, port: 2 },
}`
	c, warnings, err := Parse("w.json5", []byte(src), testEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range warnings {
		got = append(got, w.String())
	}
	want := []string{
		`w.json5:5: session.scpoe: unknown key (ignored)`,
		`w.json5:7: tools.sessions.Visibility: unknown key (ignored); did you mean "visibility"?`,
		`w.json5:8: ["quoted key"]: unknown key (ignored)`,
		`w.json5:11: agents.list[1].colour: unknown key (ignored)`,
		`w.json5:13: models.providers.p.baseURL: unknown key (ignored); did you mean "baseUrl"?`,
		`w.json5:14: gateway.port: duplicate key; the last value is used`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if c.GatewayPort() != 2 || c.Scope() != "global" {
		t.Errorf("port %d scope %q", c.GatewayPort(), c.Scope())
	}
}

func TestValidationErrors(t *testing.T) {
	src := `{
  session: {
    scope: "per-channel",
    agentToAgent: { maxPingPongTurns: 6 },
    sendPolicy: { default: "maybe", rules: [ { action: "block", match: { chatType: "room" } } ] },
  },
  tools: {
    sessions: { visibility: "world" },
    agentToAgent: { enabled: "yes" },
    sessions_spawn: { attachments: { maxFiles: 0 } },
  },
  agents: {
    defaults: {
      model: { primary: "nope/x", fallbacks: ["bare"] },
      subagents: {
        maxSpawnDepth: 6,
        maxChildrenPerAgent: 0,
        runTimeoutSeconds: -1,
        announceTimeoutMs: 1.5,
      },
      sandbox: { sessionToolsVisibility: "none" },
    },
    list: [
      { id: "Ops" },
      { id: "ops", model: "fake/missing" },
      { id: "" },
      { id: "a:b", workspace: 7 },
    ],
  },
  models: {
    mode: "replace",
    providers: {
      fake: { baseUrl: "http://127.0.0.1:18999/v1", api: "google-generative-ai", apiKey: "${NOT_SET}",
              models: [ { id: "fake-1" }, { id: "fake-1", input: ["audio"] } ] },
      bare: { apiKey: "k" },
    },
  },
  gateway: { port: 0, bind: "lan", auth: { mode: "none" } },
  logging: { redactSensitive: "all" },
}`
	c, _, err := Parse("bad.json5", []byte(src), testEnv(nil))
	if c != nil {
		t.Error("Parse returned a Config with an error")
	}
	ve, ok := errors.AsType[*ValidationError](err)
	if !ok {
		t.Fatalf("error %T %v, want *ValidationError", err, err)
	}
	want := []string{
		`bad.json5:3: session.scope: must be one of "per-sender", "global", got "per-channel"`,
		`bad.json5:4: session.agentToAgent.maxPingPongTurns: must be between 0 and 5, got 6`,
		`bad.json5:5: session.sendPolicy.default: must be one of "allow", "deny", got "maybe"`,
		`bad.json5:5: session.sendPolicy.rules[0].action: must be one of "allow", "deny", got "block"`,
		`bad.json5:5: session.sendPolicy.rules[0].match.chatType: must be one of "direct", "group", "channel", "dm", got "room"`,
		`bad.json5:8: tools.sessions.visibility: must be one of "self", "tree", "agent", "all", got "world"`,
		`bad.json5:9: tools.agentToAgent.enabled: must be true or false, got a string`,
		`bad.json5:10: tools.sessions_spawn.attachments.maxFiles: must be a positive integer, got 0`,
		`bad.json5:14: agents.defaults.model.primary: model "nope/x" names provider "nope", which is not in models.providers (models.mode is "replace")`,
		`bad.json5:14: agents.defaults.model.fallbacks[0]: model "bare" must have the form "<provider>/<model>" when models.mode is "replace"`,
		`bad.json5:16: agents.defaults.subagents.maxSpawnDepth: must be between 1 and 5, got 6`,
		`bad.json5:17: agents.defaults.subagents.maxChildrenPerAgent: must be between 1 and 10000, got 0`,
		`bad.json5:18: agents.defaults.subagents.runTimeoutSeconds: must be at least 0, got -1`,
		`bad.json5:19: agents.defaults.subagents.announceTimeoutMs: must be an integer, got 1.5`,
		`bad.json5:21: agents.defaults.sandbox.sessionToolsVisibility: must be one of "spawned", "all", got "none"`,
		`bad.json5:25: agents.list[1].id: duplicate agent id "ops" (also agents.list[0])`,
		`bad.json5:25: agents.list[1].model: model "fake/missing" is not listed in models.providers.fake.models`,
		`bad.json5:26: agents.list[2].id: agent id is required`,
		`bad.json5:27: agents.list[3].workspace: must be a string, got a number`,
		`bad.json5:27: agents.list[3].id: invalid agent id "a:b": use a letter or digit, then letters, digits, '_' and '-' (at most 64)`,
		`bad.json5:33: models.providers.fake.api: must be one of "openai-completions", "anthropic-messages", got "google-generative-ai"`,
		`bad.json5:33: models.providers.fake.apiKey: environment variable NOT_SET is not set`,
		`bad.json5:34: models.providers.fake.models[1].id: duplicate model id "fake-1" (also models[0])`,
		`bad.json5:34: models.providers.fake.models[1].input[0]: must be one of "text", "image", got "audio"`,
		`bad.json5:35: models.providers.bare: baseUrl is required for a custom provider`,
		`bad.json5:38: gateway.port: must be between 1 and 65535, got 0`,
		`bad.json5:38: gateway.bind: binding to "lan" without auth is refused; set gateway.auth.mode to "token" or "password"`,
		`bad.json5:39: logging.redactSensitive: must be one of "off", "tools", got "all"`,
	}
	var got []string
	for _, p := range ve.Problems {
		got = append(got, p.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if err.Error() != strings.Join(want, "\n") {
		t.Errorf("Error() is not one problem per line:\n%s", err)
	}
}

func TestSyntaxErrors(t *testing.T) {
	tests := []struct {
		name, src string
		line      int
	}{
		{"double comma", "{\n  a: 1,\n  b: 2,,\n}", 3},
		{"unclosed array", "{\n a: [1,\n 2,\n }", 4},
		{"unterminated", "{\n  a: 'x\n", 2},
		{"eof", "{\n  a: {\n", 2},
		{"two values", "{}\n{}", 2},
		{"bad escape", "{\n\n a: '\\x41'}", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Parse("s.json5", []byte(tt.src), testEnv(nil))
			ve, ok := errors.AsType[*ValidationError](err)
			if !ok || len(ve.Problems) != 1 {
				t.Fatalf("error %v, want one problem", err)
			}
			p := ve.Problems[0]
			if p.File != "s.json5" || p.Line != tt.line || !strings.Contains(p.Message, "invalid JSON5") {
				t.Errorf("problem %+v, want line %d", p, tt.line)
			}
		})
	}
}

func TestStructuralErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"array top level", "\n[1, 2]", `t.json5:2: the top level must be an object, got an array`},
		{"string top level", `"x"`, `t.json5:1: the top level must be an object, got a string`},
		{"section wrong type", "{\n tools: [] }", `t.json5:2: tools: must be an object, got an array`},
		{"too deep", "{a:" + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "}", `t.json5:1: objects and arrays nest 101 deep; at most 64 levels are allowed`},
		{"model wrong type", "{agents:{defaults:{\nmodel: 5}}}", `t.json5:2: agents.defaults.model: must be a model string or {primary, fallbacks}, got a number`},
		{"empty model", "{agents:{defaults:{\nmodel: ' '}}}", `t.json5:2: agents.defaults.model: model must not be empty`},
		{"half model", "{agents:{list:[{id:'a',\nmodel: {primary: 'openai/'}}]}}", `t.json5:2: agents.list[0].model.primary: model "openai/" must have the form "<provider>/<model>"`},
		{"token missing", "{gateway:{auth:{\nmode:'token'}}}", `t.json5:2: gateway.auth.mode: auth mode "token" needs gateway.auth.token or SWITCHBOARD_GATEWAY_TOKEN`},
		{"password missing", "{gateway:{auth:{\nmode:'password'}}}", `t.json5:2: gateway.auth.mode: auth mode "password" needs gateway.auth.password or SWITCHBOARD_GATEWAY_PASSWORD`},
		{"leading dash id", "{agents:{list:[\n{id:'-ops'}]}}", `t.json5:2: agents.list[0].id: invalid agent id "-ops": use a letter or digit, then letters, digits, '_' and '-' (at most 64)`},
		{"bad bind", "{gateway:{\nbind:'wan'}}", `t.json5:2: gateway.bind: must be "loopback", "lan" or an IP address, got "wan"`},
		{"public origin with a path", "{gateway:{\npublicOrigin:'https://gw.example.com/app'}}", `t.json5:2: gateway.publicOrigin: must be an origin such as "https://gateway.example.com" (scheme and host, no path, query or credentials), got "https://gw.example.com/app"`},
		{"plain http public origin", "{gateway:{\npublicOrigin:'http://gw.example.com'}}", `t.json5:2: gateway.publicOrigin: must be an https origin (http only for localhost, 127.0.0.1 or [::1]), got "http://gw.example.com"`},
		{"bad reload mode", "{gateway:{reload:{\nmode:'sometimes'}}}", `t.json5:2: gateway.reload.mode: must be one of "hybrid", "off", got "sometimes"`},
		{"bad base url", "{models:{providers:{x:{\nbaseUrl:'ftp://h'}}}}", `t.json5:2: models.providers.x.baseUrl: must be an http or https URL, got "ftp://h"`},
		{"provider id", "{models:{providers:{\n'a/b':{baseUrl:'http://h'}}}}", `t.json5:2: models.providers["a/b"]: invalid provider id "a/b": it must be non-empty without '/' or spaces`},
		{"huge int", "{gateway:{\nport: 1e300}}", `t.json5:2: gateway.port: integer 1e+300 is out of range`},
		{"infinity", "{gateway:{\nport: Infinity}}", `t.json5:2: gateway.port: must be an integer, got +Inf`},
		{"negative cost", "{models:{providers:{x:{baseUrl:'http://h', models:[{id:'m',\ncost:{input:-1, output:0, cacheRead:0, cacheWrite:0}}]}}}}", `t.json5:2: models.providers.x.models[0].cost.input: must not be negative, got -1`},
		{"lan without auth", "{gateway:{\nbind:'0.0.0.0'}}", `t.json5:2: gateway.bind: binding to "0.0.0.0" without auth is refused; set gateway.auth.mode to "token" or "password"`},
		{"no home", "{}", `SWITCHBOARD_STATE_DIR: cannot find the state directory: set SWITCHBOARD_STATE_DIR or HOME`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := testEnv(nil)
			if tt.name == "no home" {
				env = MapEnv(nil)
			}
			c, _, err := Parse("t.json5", []byte(tt.src), env)
			if err == nil || c != nil {
				t.Fatalf("Parse = %v, %v; want an error", c, err)
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n%s\nwant:\n%s", err, tt.want)
			}
		})
	}
}

func TestPublicOrigin(t *testing.T) {
	for src, want := range map[string]string{
		`{}`: "",
		`{gateway:{publicOrigin:"https://gw.example.com/"}}`: "https://gw.example.com",
		`{gateway:{publicOrigin:"http://127.0.0.1:18789"}}`:  "http://127.0.0.1:18789",
	} {
		c, _, err := Parse("p.json5", []byte(src), testEnv(nil))
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if got := c.GatewayPublicOrigin(); got != want {
			t.Errorf("%s: GatewayPublicOrigin = %q, want %q", src, got, want)
		}
	}
}

func TestReloadMode(t *testing.T) {
	for _, tt := range []struct{ src, want, warning string }{
		{`{}`, ReloadHybrid, ""},
		{`{gateway:{reload:{mode:"off"}}}`, ReloadOff, ""},
		{`{gateway:{reload:{mode:"Hybrid"}}}`, ReloadHybrid, ""},
		{`{gateway:{reload:{mode:"hot"}}}`, ReloadHybrid, `"hot" is retired; treated as "hybrid"`},
		{`{gateway:{reload:{mode:"restart"}}}`, ReloadHybrid, `"restart" is retired; treated as "hybrid"`},
	} {
		c, warnings, err := Parse("r.json5", []byte(tt.src), testEnv(nil))
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		if got := c.ReloadMode(); got != tt.want {
			t.Errorf("%s: ReloadMode = %q, want %q", tt.src, got, tt.want)
		}
		var msgs []string
		for _, w := range warnings {
			msgs = append(msgs, w.Message)
		}
		if got := strings.Join(msgs, "; "); got != tt.warning {
			t.Errorf("%s: warnings %q, want %q", tt.src, got, tt.warning)
		}
	}
}

func TestBindAliasWarnings(t *testing.T) {
	for _, tt := range []struct{ bind, as string }{{"auto", "loopback"}, {"tailnet", "lan"}, {"custom", "lan"}} {
		_, warnings, err := Parse("g.json5", []byte("{gateway:{auth:{token:'t'},\n bind: '"+tt.bind+"'}}"), testEnv(nil))
		if err != nil {
			t.Fatal(err)
		}
		want := []Warning{{File: "g.json5", Line: 2, Path: "gateway.bind", Message: `"` + tt.bind + `" is not supported; treated as "` + tt.as + `"`}}
		if diff := cmp.Diff(want, warnings); diff != "" {
			t.Errorf("bind %q (-want +got):\n%s", tt.bind, diff)
		}
	}
	// Loopback IPs need no auth; "custom" maps to lan, which does.
	if _, _, err := Parse("g.json5", []byte(`{gateway:{bind:"127.0.0.2"}}`), testEnv(nil)); err != nil {
		t.Errorf("loopback IP without auth: %v", err)
	}
	if _, _, err := Parse("g.json5", []byte(`{gateway:{bind:"custom"}}`), testEnv(nil)); err == nil {
		t.Error("custom bind without auth accepted")
	}
}

func TestOtherWarnings(t *testing.T) {
	src := `{
  agents: { list: [
    { id: "a", default: true },
    { id: "b", default: true },
  ] },
  logging: { redactPatterns: ["ok", "(?<=x)y"] },
  $include: "./more.json5",
}`
	c, warnings, err := Parse("o.json5", []byte(src), testEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.DefaultAgentID() != "a" {
		t.Errorf("DefaultAgentID = %q", c.DefaultAgentID())
	}
	var got []string
	for _, w := range warnings {
		got = append(got, w.Path)
	}
	if diff := cmp.Diff([]string{"agents.list[1].default", "logging.redactPatterns[1]", "$include"}, got); diff != "" {
		t.Errorf("warning paths (-want +got):\n%s", diff)
	}
}
