package config

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testEnv is a hermetic environment with HOME set, plus extra.
func testEnv(extra map[string]string) Env {
	m := map[string]string{"HOME": "/home/u"}
	for k, v := range extra {
		m[k] = v
	}
	return MapEnv(m)
}

// mustParse parses src and fails the test on any error.
func mustParse(t *testing.T, src string, env Env) *Config {
	t.Helper()
	if env == nil {
		env = testEnv(nil)
	}
	c, _, err := Parse("test.json5", []byte(src), env)
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	return c
}

func TestDefaults(t *testing.T) {
	for _, src := range []string{"", "  \n", "// only a comment\n", "{}", "/* c */ { } // c"} {
		c := mustParse(t, src, nil)
		got := map[string]any{
			"Scope":                  c.Scope(),
			"MainKey":                c.MainKey(),
			"SendPolicy":             c.SendPolicy() == nil,
			"MaxPingPongTurns":       c.MaxPingPongTurns(),
			"Visibility":             c.Visibility(),
			"SessionToolsVisibility": c.SessionToolsVisibility(),
			"AgentToAgentEnabled":    c.AgentToAgentEnabled(),
			"AgentToAgentAllow":      len(c.AgentToAgentAllow()),
			"SubagentTools":          c.SubagentTools(),
			"Attachments":            c.Attachments(),
			"MaxSpawnDepth":          c.MaxSpawnDepth(),
			"MaxChildrenPerAgent":    c.MaxChildrenPerAgent(),
			"MaxConcurrent":          c.MaxConcurrent(),
			"ArchiveAfterMinutes":    c.ArchiveAfterMinutes(),
			"RunTimeoutSeconds":      c.RunTimeoutSeconds(),
			"AnnounceTimeoutMs":      c.AnnounceTimeoutMs(),
			"AgentTimeoutSeconds":    c.AgentTimeoutSeconds(),
			"DefaultAgentID":         c.DefaultAgentID(),
			"AgentIDs":               len(c.AgentIDs()),
			"AgentWorkspace(main)":   c.AgentWorkspace("main"),
			"AgentWorkspace(ops)":    c.AgentWorkspace("ops"),
			"AgentModel(main)":       c.AgentModel("main"),
			"SubagentModel(main)":    c.SubagentModel("main"),
			"SandboxMode(main)":      c.SandboxMode("main"),
			"ModelsMode":             c.ModelsMode(),
			"Providers":              len(c.Providers()),
			"gatewayMode":            c.gatewayMode(),
			"GatewayPort":            c.GatewayPort(),
			"GatewayBind":            c.GatewayBind(),
			"GatewayListenAddrs":     c.GatewayListenAddrs(),
			"GatewayAuth.Mode":       c.GatewayAuth().Mode,
			"RedactSensitive":        c.RedactSensitive(),
			"Paths":                  c.Paths(),
		}
		want := map[string]any{
			"Scope":                  "per-sender",
			"MainKey":                "main",
			"SendPolicy":             true,
			"MaxPingPongTurns":       5,
			"Visibility":             "tree",
			"SessionToolsVisibility": "spawned",
			"AgentToAgentEnabled":    false,
			"AgentToAgentAllow":      0,
			"SubagentTools":          ToolPolicy{},
			"Attachments":            AttachmentLimits{MaxTotalBytes: 5 * 1024 * 1024, MaxFiles: 50, MaxFileBytes: 1024 * 1024},
			"MaxSpawnDepth":          1,
			"MaxChildrenPerAgent":    5,
			"MaxConcurrent":          8,
			"ArchiveAfterMinutes":    60,
			"RunTimeoutSeconds":      0,
			"AnnounceTimeoutMs":      60000,
			"AgentTimeoutSeconds":    600,
			"DefaultAgentID":         "main",
			"AgentIDs":               0,
			"AgentWorkspace(main)":   "/home/u/.switchboard/workspace",
			"AgentWorkspace(ops)":    "/home/u/.switchboard/workspace-ops",
			"AgentModel(main)":       "",
			"SubagentModel(main)":    "",
			"SandboxMode(main)":      "off",
			"ModelsMode":             "merge",
			"Providers":              0,
			"gatewayMode":            "",
			"GatewayPort":            18789,
			"GatewayBind":            "loopback",
			"GatewayListenAddrs":     []string{"127.0.0.1:18789", "[::1]:18789"},
			"GatewayAuth.Mode":       "none",
			"RedactSensitive":        "tools",
			"Paths":                  Paths{StateDir: "/home/u/.switchboard", ConfigPath: "/home/u/.switchboard/switchboard.json5"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("defaults for %q (-want +got):\n%s", src, diff)
		}
	}
}

// TestZeroConfig checks that accessors work on a Config built in code.
func TestZeroConfig(t *testing.T) {
	var c Config
	if got := c.Visibility(); got != "tree" {
		t.Errorf("Visibility = %q", got)
	}
	if got := c.AgentWorkspace("x"); got != "workspace-x" {
		t.Errorf("AgentWorkspace = %q", got)
	}
	if got := c.GatewayAuth().Mode; got != AuthNone {
		t.Errorf("GatewayAuth().Mode = %q", got)
	}
	if _, ok := c.Provider("openai"); ok {
		t.Error("Provider(openai) exists without env")
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestAccessors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		env  map[string]string
		got  func(c *Config) any
		want any
	}{
		{"scope global", `{session:{scope:" Global "}}`, nil, func(c *Config) any { return c.Scope() }, "global"},
		{"mainKey lowercased", `{session:{mainKey:" Home "}}`, nil, func(c *Config) any { return c.MainKey() }, "home"},
		{"mainKey blank", `{session:{mainKey:"  "}}`, nil, func(c *Config) any { return c.MainKey() }, "main"},
		{"pingpong zero", `{session:{agentToAgent:{maxPingPongTurns:0}}}`, nil, func(c *Config) any { return c.MaxPingPongTurns() }, 0},
		{"pingpong 3", `{session:{agentToAgent:{maxPingPongTurns:3}}}`, nil, func(c *Config) any { return c.MaxPingPongTurns() }, 3},
		{"visibility ALL", `{tools:{sessions:{visibility:" ALL "}}}`, nil, func(c *Config) any { return c.Visibility() }, "all"},
		{"visibility self", `{tools:{sessions:{visibility:"self"}}}`, nil, func(c *Config) any { return c.Visibility() }, "self"},
		{"visibility agent", `{tools:{sessions:{visibility:"agent"}}}`, nil, func(c *Config) any { return c.Visibility() }, "agent"},
		{"sandbox visibility all", `{agents:{defaults:{sandbox:{sessionToolsVisibility:"all"}}}}`, nil, func(c *Config) any { return c.SessionToolsVisibility() }, "all"},
		{"a2a", `{tools:{agentToAgent:{enabled:true, allow:["ops-*","main"]}}}`, nil,
			func(c *Config) any { return []any{c.AgentToAgentEnabled(), c.AgentToAgentAllow()} }, []any{true, []string{"ops-*", "main"}}},
		{"subagent tools", `{tools:{subagents:{tools:{allow:[], alsoAllow:["sessions_send"], deny:["exec"]}}}}`, nil,
			func(c *Config) any { return c.SubagentTools() }, ToolPolicy{Allow: []string{}, AlsoAllow: []string{"sessions_send"}, Deny: []string{"exec"}}},
		{"attachments", `{tools:{sessions_spawn:{attachments:{enabled:true, maxTotalBytes:100, maxFiles:2, maxFileBytes:10, retainOnSessionKeep:true}}}}`, nil,
			func(c *Config) any { return c.Attachments() }, AttachmentLimits{true, 100, 2, 10, true}},
		{"subagent limits", `{agents:{defaults:{subagents:{maxSpawnDepth:5, maxChildrenPerAgent:20, maxConcurrent:1, archiveAfterMinutes:1, runTimeoutSeconds:30, announceTimeoutMs:5}}}}`, nil,
			func(c *Config) any {
				return []int{c.MaxSpawnDepth(), c.MaxChildrenPerAgent(), c.MaxConcurrent(), c.ArchiveAfterMinutes(), c.RunTimeoutSeconds(), c.AnnounceTimeoutMs()}
			}, []int{5, 20, 1, 1, 30, 5}},
		{"agent timeout", `{agents:{defaults:{timeoutSeconds:42}}}`, nil, func(c *Config) any { return c.AgentTimeoutSeconds() }, 42},
		{"default agent flagged", `{agents:{list:[{id:"a"},{id:" B ", default:true}]}}`, nil, func(c *Config) any { return c.DefaultAgentID() }, "b"},
		{"default agent first", `{agents:{list:[{id:"Alpha"},{id:"b"}]}}`, nil, func(c *Config) any { return c.DefaultAgentID() }, "alpha"},
		{"agent ids", `{agents:{list:[{id:"Alpha"},{id:"b"}]}}`, nil, func(c *Config) any { return c.AgentIDs() }, []string{"alpha", "b"}},
		{"agent lookup normalised", `{agents:{list:[{id:"Ops", name:"Ops team"}]}}`, nil,
			func(c *Config) any { a, ok := c.Agent("  OPS "); return []any{a.Name, ok} }, []any{"Ops team", true}},
		{"agent lookup missing", `{agents:{list:[{id:"ops"}]}}`, nil,
			func(c *Config) any { _, ok := c.Agent("main"); return ok }, false},
		{"agent lookup empty is main", `{agents:{list:[{id:"main", name:"M"}]}}`, nil,
			func(c *Config) any { a, _ := c.Agent(""); return a.Name }, "M"},
		{"workspace own", `{agents:{defaults:{workspace:"/d"}, list:[{id:"a", workspace:"~/wa"}]}}`, nil,
			func(c *Config) any { return c.AgentWorkspace("A") }, "/home/u/wa"},
		{"workspace defaults", `{agents:{defaults:{workspace:"/d"}, list:[{id:"a"},{id:"b"}]}}`, nil,
			func(c *Config) any { return []string{c.AgentWorkspace("a"), c.AgentWorkspace("b")} }, []string{"/d", "/d"}},
		{"workspace state dir", `{agents:{list:[{id:"a"},{id:"b"}]}}`, map[string]string{EnvStateDir: "/var/sb"},
			func(c *Config) any {
				return []string{c.AgentWorkspace("a"), c.AgentWorkspace("b"), c.AgentWorkspace("")}
			},
			[]string{"/var/sb/workspace", "/var/sb/workspace-b", "/var/sb/workspace-main"}},
		{"model own", `{agents:{defaults:{model:"p/d"}, list:[{id:"a", model:{primary:"p/a"}},{id:"b"}]}}`, nil,
			func(c *Config) any { return []string{c.AgentModel("a"), c.AgentModel("b"), c.AgentModel("zzz")} }, []string{"p/a", "p/d", "p/d"}},
		{"model defaults object", `{agents:{defaults:{model:{primary:"p/x", fallbacks:["p/y"]}}}}`, nil,
			func(c *Config) any { return []any{c.AgentModel("main"), c.AgentModelFallbacks("main")} }, []any{"p/x", []string{"p/y"}}},
		{"fallbacks own", `{agents:{defaults:{model:{primary:"p/x", fallbacks:["p/y"]}}, list:[{id:"a", model:{primary:"p/a", fallbacks:[]}}]}}`, nil,
			func(c *Config) any { return c.AgentModelFallbacks("a") }, []string{}},
		{"subagent model", `{agents:{defaults:{subagents:{model:"p/d", thinking:"low"}}, list:[{id:"a", subagents:{model:"p/a", thinking:"high"}},{id:"b"}]}}`, nil,
			func(c *Config) any {
				return []string{c.SubagentModel("a"), c.SubagentModel("b"), c.SubagentThinking("a"), c.SubagentThinking("b")}
			}, []string{"p/a", "p/d", "high", "low"}},
		{"allowAgents", `{agents:{list:[{id:"a", subagents:{allowAgents:["*"]}},{id:"b"}]}}`, nil,
			func(c *Config) any { return []any{c.AllowAgents("a"), c.AllowAgents("b") == nil} }, []any{[]string{"*"}, true}},
		{"sandbox mode", `{agents:{defaults:{sandbox:{mode:"non-main"}}, list:[{id:"a", sandbox:{mode:"ALL"}},{id:"b"}]}}`, nil,
			func(c *Config) any { return []string{c.SandboxMode("a"), c.SandboxMode("b")} }, []string{"all", "non-main"}},
		{"sandbox access and network", `{agents:{defaults:{sandbox:{workspaceAccess:"ro", network:"host"}}, list:[{id:"a", sandbox:{workspaceAccess:"rw"}},{id:"b"}]}}`, nil,
			func(c *Config) any {
				return []string{c.SandboxWorkspaceAccess("a"), c.SandboxWorkspaceAccess("b"), c.SandboxNetwork("a"), c.SandboxNetwork("b")}
			}, []string{"rw", "ro", "host", "host"}},
		{"sandbox access default", `{}`, nil,
			func(c *Config) any { return []string{c.SandboxWorkspaceAccess("main"), c.SandboxNetwork("main")} }, []string{"none", "none"}},
		{"models replace", `{models:{mode:"replace"}}`, map[string]string{EnvOpenAIKey: "k"},
			func(c *Config) any { _, ok := c.Provider("openai"); return []any{c.ModelsMode(), ok} }, []any{"replace", false}},
		{"gateway", `{gateway:{mode:"Local", port:1234, bind:"10.1.2.3", auth:{token:"t"}}}`, nil,
			func(c *Config) any {
				return []any{c.gatewayMode(), c.GatewayPort(), c.GatewayBind(), c.GatewayListenAddrs(), c.GatewayAuth().Mode}
			}, []any{"local", 1234, "10.1.2.3", []string{"10.1.2.3:1234"}, "token"}},
		{"gateway lan", `{gateway:{bind:"lan", auth:{mode:"password", password:"pw"}}}`, nil,
			func(c *Config) any { return []any{c.GatewayBind(), c.GatewayListenAddrs()} }, []any{"lan", []string{":18789"}}},
		{"gateway ipv6", `{gateway:{bind:"::1"}}`, nil,
			func(c *Config) any { return []any{c.GatewayBind(), c.GatewayListenAddrs()} }, []any{"::1", []string{"[::1]:18789"}}},
		{"gateway auto", `{gateway:{bind:"auto"}}`, nil, func(c *Config) any { return c.GatewayBind() }, "loopback"},
		{"gateway tailnet", `{gateway:{bind:"tailnet", auth:{token:"t"}}}`, nil, func(c *Config) any { return c.GatewayBind() }, "lan"},
		{"auth password inferred", `{gateway:{auth:{password:"p"}}}`, nil, func(c *Config) any { return c.GatewayAuth().Mode }, "password"},
		{"logging", `{logging:{redactSensitive:"off", redactPatterns:["a+"]}}`, nil,
			func(c *Config) any { return []any{c.RedactSensitive(), c.RedactPatterns()} }, []any{"off", []string{"a+"}}},
		{"send policy copy", `{session:{sendPolicy:{default:"deny", rules:[{action:"allow", match:{channel:"x"}}, {}]}}}`, nil,
			func(c *Config) any { return c.SendPolicy() },
			&SendPolicy{Default: "deny", Rules: []SendPolicyRule{{Action: "allow", Match: &SendPolicyMatch{Channel: "x"}}, {}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, tt.src, testEnv(tt.env))
			if diff := cmp.Diff(tt.want, tt.got(c)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestAccessorClamps covers values a Config built in code may hold but
// Parse rejects.
func TestAccessorClamps(t *testing.T) {
	n := func(v int) *int { return &v }
	var c Config
	c.Session.AgentToAgent.MaxPingPongTurns = n(9)
	c.Agents.Defaults.Subagents = SubagentDefaults{
		MaxSpawnDepth: n(0), MaxChildrenPerAgent: n(99999), MaxConcurrent: n(-1),
		ArchiveAfterMinutes: n(0), RunTimeoutSeconds: n(-5), AnnounceTimeoutMs: n(0),
	}
	c.Tools.Sessions.Visibility = "everyone"
	c.Gateway.Port = n(70000)
	c.Gateway.Bind = "somewhere"
	got := []any{c.MaxPingPongTurns(), c.MaxSpawnDepth(), c.MaxChildrenPerAgent(), c.MaxConcurrent(),
		c.ArchiveAfterMinutes(), c.RunTimeoutSeconds(), c.AnnounceTimeoutMs(), c.Visibility(), c.GatewayPort(), c.GatewayBind()}
	want := []any{5, 1, 10000, 1, 60, 0, 60000, "tree", 18789, "loopback"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	c.Session.AgentToAgent.MaxPingPongTurns = n(-3)
	if got := c.MaxPingPongTurns(); got != 0 {
		t.Errorf("MaxPingPongTurns(-3) = %d, want 0", got)
	}
}

func TestSplitModelRef(t *testing.T) {
	tests := []struct{ in, prov, model string }{
		{"prov/model/with/slashes", "prov", "model/with/slashes"},
		{"fake/fake-1", "fake", "fake-1"},
		{" openai / gpt-5 ", "openai", "gpt-5"},
		{"gpt-4o", "", "gpt-4o"},
		{"", "", ""},
		{"/x", "", "x"},
		{"x/", "x", ""},
	}
	for _, tt := range tests {
		p, m := SplitModelRef(tt.in)
		if p != tt.prov || m != tt.model {
			t.Errorf("SplitModelRef(%q) = %q, %q; want %q, %q", tt.in, p, m, tt.prov, tt.model)
		}
	}
}

func TestProviders(t *testing.T) {
	src := `{models:{providers:{
		fake: {baseUrl:"http://127.0.0.1:18999/v1", apiKey:"${FAKE_KEY}", headers:{"X-A":"pre-${FAKE_KEY}", "X-B":"$${LITERAL}"}},
		Claude: {baseUrl:"https://proxy.example/v1", api:"anthropic-messages"},
		anthropic: {},
	}}}`
	c := mustParse(t, src, testEnv(map[string]string{
		"FAKE_KEY": "fk", EnvOpenAIKey: "ok", EnvOpenAIBaseURL: "http://o.example/v1", EnvAnthropicKey: "ak",
	}))
	want := map[string]Provider{
		"fake": {BaseURL: "http://127.0.0.1:18999/v1", APIKey: "fk", API: APIOpenAICompletions,
			Headers: map[string]string{"X-A": "pre-fk", "X-B": "${LITERAL}"}},
		"claude":    {BaseURL: "https://proxy.example/v1", API: APIAnthropicMessages},
		"anthropic": {BaseURL: DefaultAnthropicBaseURL, APIKey: "ak", API: APIAnthropicMessages},
		"openai":    {BaseURL: "http://o.example/v1", APIKey: "ok", API: APIOpenAICompletions},
	}
	if diff := cmp.Diff(want, c.Providers()); diff != "" {
		t.Errorf("Providers (-want +got):\n%s", diff)
	}
	if _, ok := c.Provider("CLAUDE"); !ok {
		t.Error("Provider is not case-insensitive")
	}

	// Implicit providers need their key; the default OpenAI base URL.
	c = mustParse(t, `{}`, testEnv(map[string]string{EnvOpenAIKey: "ok"}))
	want = map[string]Provider{"openai": {BaseURL: DefaultOpenAIBaseURL, APIKey: "ok", API: APIOpenAICompletions}}
	if diff := cmp.Diff(want, c.Providers()); diff != "" {
		t.Errorf("implicit Providers (-want +got):\n%s", diff)
	}
	c = mustParse(t, `{}`, testEnv(map[string]string{EnvAnthropicKey: "ak"}))
	want = map[string]Provider{"anthropic": {BaseURL: DefaultAnthropicBaseURL, APIKey: "ak", API: APIAnthropicMessages}}
	if diff := cmp.Diff(want, c.Providers()); diff != "" {
		t.Errorf("implicit Providers (-want +got):\n%s", diff)
	}

	// A configured openai provider is not replaced by the environment.
	c = mustParse(t, `{models:{providers:{openai:{baseUrl:"http://mine/v1", apiKey:"file"}}}}`,
		testEnv(map[string]string{EnvOpenAIKey: "env", EnvOpenAIBaseURL: "http://env/v1"}))
	if p, _ := c.Provider("openai"); p.APIKey != "file" || p.BaseURL != "http://mine/v1" {
		t.Errorf("Provider(openai) = %+v, want file values", p)
	}
}

func TestProvidersAreCopies(t *testing.T) {
	c := mustParse(t, `{models:{providers:{p:{baseUrl:"http://x/v1", headers:{a:"1"}, models:[{id:"m", input:["text"], maxTokens:5}]}}}}`, nil)
	p, _ := c.Provider("p")
	p.Headers["a"] = "changed"
	p.Models[0].Input[0] = "changed"
	*p.Models[0].MaxTokens = 99
	q, _ := c.Provider("p")
	if q.Headers["a"] != "1" || q.Models[0].Input[0] != "text" || *q.Models[0].MaxTokens != 5 {
		t.Errorf("Provider returned shared state: %+v", q)
	}
}

func TestGatewayAuthEnv(t *testing.T) {
	tests := []struct {
		name string
		src  string
		env  map[string]string
		want GatewayAuth
	}{
		{"file", `{gateway:{auth:{mode:"token", token:"file"}}}`, nil, GatewayAuth{Mode: "token", Token: "file"}},
		{"env overrides file", `{gateway:{auth:{mode:"token", token:"file"}}}`, map[string]string{EnvGatewayToken: "env"}, GatewayAuth{Mode: "token", Token: "env"}},
		{"env only infers mode", `{}`, map[string]string{EnvGatewayToken: "env"}, GatewayAuth{Mode: "token", Token: "env"}},
		{"env password", `{gateway:{auth:{mode:"password"}}}`, map[string]string{EnvGatewayPassword: "pw"}, GatewayAuth{Mode: "password", Password: "pw"}},
		{"reference expanded", `{gateway:{auth:{token:"${MY_TOKEN}"}}}`, map[string]string{"MY_TOKEN": "mt"}, GatewayAuth{Mode: "token", Token: "mt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, tt.src, testEnv(tt.env))
			if diff := cmp.Diff(tt.want, c.GatewayAuth()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolvePaths(t *testing.T) {
	tests := []struct {
		env     map[string]string
		want    Paths
		wantErr bool
	}{
		{map[string]string{"HOME": "/h"}, Paths{"/h/.switchboard", "/h/.switchboard/switchboard.json5"}, false},
		{map[string]string{"HOME": "/h", EnvStateDir: "~/state/"}, Paths{"/h/state", "/h/state/switchboard.json5"}, false},
		{map[string]string{EnvStateDir: "/s", EnvConfig: "/etc/sb.json5"}, Paths{"/s", "/etc/sb.json5"}, false},
		{map[string]string{"HOME": "/h", EnvConfig: "~/c.json5"}, Paths{"/h/.switchboard", "/h/c.json5"}, false},
		{map[string]string{}, Paths{}, true},
		// Relative paths are made absolute from the working directory.
		{map[string]string{EnvStateDir: "rel/state/"}, Paths{"/work/rel/state", "/work/rel/state/switchboard.json5"}, false},
		{map[string]string{"HOME": "home"}, Paths{"/work/home/.switchboard", "/work/home/.switchboard/switchboard.json5"}, false},
		{map[string]string{EnvStateDir: "/s", EnvConfig: "./sb.json5"}, Paths{"/s", "/work/sb.json5"}, false},
	}
	// The relative cases' wants are written under /work: the test's
	// working directory, a temporary one, takes its place.
	cwd := t.TempDir()
	t.Chdir(cwd)
	for i := range tests {
		for _, p := range []*string{&tests[i].want.StateDir, &tests[i].want.ConfigPath} {
			if rest, ok := strings.CutPrefix(*p, "/work/"); ok {
				*p = filepath.Join(cwd, rest)
			}
		}
	}
	for _, tt := range tests {
		got, err := ResolvePaths(MapEnv(tt.env))
		if (err != nil) != tt.wantErr {
			t.Errorf("ResolvePaths(%v) error = %v, wantErr %v", tt.env, err, tt.wantErr)
		}
		if got != tt.want {
			t.Errorf("ResolvePaths(%v) = %+v, want %+v", tt.env, got, tt.want)
		}
	}
}

func TestExpandVars(t *testing.T) {
	env := MapEnv(map[string]string{"A": "1", "B_2": "two"})
	tests := []struct {
		in, want string
		missing  []string
	}{
		{"plain", "plain", nil},
		{"${A}", "1", nil},
		{"x${A}y${B_2}z", "x1ytwoz", nil},
		{"$${A}", "${A}", nil},
		{"${lower}", "${lower}", nil},
		{"${A", "${A", nil},
		{"${}", "${}", nil},
		{"${MISSING}", "", []string{"MISSING"}},
		{"${A}${NOPE}${A}", "11", []string{"NOPE"}},
	}
	for _, tt := range tests {
		got, missing := expandVars(tt.in, env)
		if got != tt.want || !cmp.Equal(missing, tt.missing) {
			t.Errorf("expandVars(%q) = %q, %v; want %q, %v", tt.in, got, missing, tt.want, tt.missing)
		}
	}
}

func TestApplyFlags(t *testing.T) {
	c := mustParse(t, `{gateway:{port:1000, auth:{token:"t"}}}`, nil)
	out, _, err := c.ApplyFlags(Flags{Port: 2000, Bind: "lan"})
	if err != nil {
		t.Fatal(err)
	}
	if out.GatewayPort() != 2000 || out.GatewayBind() != "lan" {
		t.Errorf("after flags: port %d bind %q", out.GatewayPort(), out.GatewayBind())
	}
	if c.GatewayPort() != 1000 || c.GatewayBind() != "loopback" {
		t.Errorf("ApplyFlags changed the original: port %d bind %q", c.GatewayPort(), c.GatewayBind())
	}

	_, _, err = c.ApplyFlags(Flags{Port: 70000, AuthMode: "none", Bind: "0.0.0.0"})
	want := strings.Join([]string{
		`flags: gateway.port: must be between 1 and 65535, got 70000`,
		`flags: gateway.bind: binding to "0.0.0.0" without auth is refused; set gateway.auth.mode to "token" or "password"`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("ApplyFlags error:\n%v\nwant:\n%s", err, want)
	}
}
