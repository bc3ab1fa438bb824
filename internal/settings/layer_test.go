package settings

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestResolvedForComponents checks the values the components used to read
// from the configuration themselves (before only settings read it): each
// is resolved here from its key.
func TestResolvedForComponents(t *testing.T) {
	s := Resolve(parse(t, `{
  gateway: {
    port: 19001,
    publicOrigin: "https://gw.example",
    auth: { mode: "token", token: "sekret-token" },
    http: { endpoints: { chatCompletions: { enabled: true, images: { maxBytes: 1234, allowedMimes: [" Image/PNG "] } } } },
    tools: { allow: ["exec"], deny: ["read"] },
    controlUi: { allowedOrigins: ["https://ui.example"] },
    reload: { mode: "off" },
  },
  agents: {
    defaults: { bootstrapMaxChars: 100, bootstrapTotalMaxChars: 300 },
    list: [{ id: "Ops", default: true, identity: { avatar: "ops.png", emoji: "🛠" } }],
  },
  session: { resetByType: { direct: { mode: "idle", idleMinutes: 30 } } },
  hooks: { internal: { entries: { note: { command: "echo hi", events: ["command:new"] } } } },
}`))
	type view struct {
		HTTP                  HTTP
		GatewayPort           int
		Bootstrap             [2]int
		ToolsAllow, ToolsDeny []string
		PublicOrigin          string
		AllowedOrigins        []string
		ReloadMode            string
		ResetConfigured       bool
		Avatar, Emoji         string
		ListenPort            string
		ConfigPathSet         bool
	}
	a := s.Agent("ops")
	got := view{
		HTTP: s.HTTP, GatewayPort: s.GatewayPort, Bootstrap: [2]int{s.BootstrapMaxChars, s.BootstrapTotalMaxChars},
		ToolsAllow: s.GatewayToolsAllow, ToolsDeny: s.GatewayToolsDeny,
		PublicOrigin: s.PublicOrigin, AllowedOrigins: s.AllowedOrigins, ReloadMode: s.ReloadMode,
		ResetConfigured: s.ResetConfigured, Avatar: a.Avatar, Emoji: a.Emoji,
		ConfigPathSet: strings.HasSuffix(s.ConfigPath, ".json5"),
	}
	if addrs := s.ListenAddrs(); len(addrs) > 0 {
		got.ListenPort = addrs[0][strings.LastIndex(addrs[0], ":")+1:]
	}
	want := view{
		HTTP:        HTTP{ChatCompletions: true, ImageMaxBytes: 1234, ImageMimes: []string{"image/png"}},
		GatewayPort: 19001, Bootstrap: [2]int{100, 300}, ToolsAllow: []string{"exec"}, ToolsDeny: []string{"read"},
		PublicOrigin: "https://gw.example", AllowedOrigins: []string{"https://ui.example"}, ReloadMode: ReloadOff,
		ResetConfigured: true, Avatar: "ops.png", Emoji: "🛠", ListenPort: "19001", ConfigPathSet: true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resolved (-want +got):\n%s", diff)
	}
	if mode, _, idle := s.ResetRule("direct", "irc"); mode != "idle" || idle != 30 {
		t.Errorf("ResetRule(direct) = %q, idle %d", mode, idle)
	}
	// The listen addresses are the caller's to change.
	s.ListenAddrs()[0] = "mutated"
	if s.ListenAddrs()[0] == "mutated" {
		t.Error("ListenAddrs shares its slice")
	}

	// config.get sees no secret.
	b, err := s.RedactedJSON()
	if err != nil || strings.Contains(string(b), "sekret-token") || !json.Valid(b) {
		t.Errorf("RedactedJSON = %s, %v", b, err)
	}
	if h := s.Hooks.Internal.Entries["note"]; h.Command != "echo hi" {
		t.Errorf("hooks.internal note = %+v", h)
	}

	// Defaults: nothing enabled, nothing set.
	d := Resolve(parse(t, "{}"))
	if d.HTTP.ChatCompletions || d.HTTP.Responses || d.GatewayPort != 0 || d.BootstrapMaxChars != 0 || d.ResetConfigured || d.ReloadMode == ReloadOff {
		t.Errorf("defaults: %+v port %d reset %v reload %q", d.HTTP, d.GatewayPort, d.ResetConfigured, d.ReloadMode)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	env := func(k string) string {
		if k == EnvStateDir {
			return dir
		}
		return ""
	}
	s, _, err := Load("", env)
	if err != nil || s.StateDir != dir {
		t.Fatalf("Load = %+v, %v", s, err)
	}
}

func TestServeFlags(t *testing.T) {
	s := Resolve(parse(t, `{}`))
	// No mode and no secret: serve runs with a token generated in the
	// state dir, the same one on the next start.
	g, generated, created, err := s.WithGeneratedToken()
	if err != nil || !generated || !created || g.Auth.Mode != AuthToken || g.Auth.Token == "" {
		t.Fatalf("WithGeneratedToken = %+v generated %v created %v, %v", g.Auth, generated, created, err)
	}
	if tok, err := ReadGatewayToken(s.StateDir); err != nil || tok != g.Auth.Token {
		t.Errorf("token file = %q, %v; want %q", tok, err, g.Auth.Token)
	}
	if !slices.Contains(g.SecretValues, g.Auth.Token) || slices.Contains(s.SecretValues, g.Auth.Token) {
		t.Error("the generated token is a secret of the new settings only")
	}
	again, _, created, err := s.WithGeneratedToken()
	if err != nil || created || again.Auth.Token != g.Auth.Token {
		t.Errorf("second start: created %v token %q, %v", created, again.Auth.Token, err)
	}
	// Auth explicitly off, or a configured secret: nothing generated.
	for _, src := range []string{`{gateway: {auth: {mode: "none"}}}`, `{gateway: {auth: {password: "pw"}}}`} {
		c := Resolve(parse(t, src))
		if got, generated, _, err := c.WithGeneratedToken(); err != nil || generated || got != c {
			t.Errorf("%s: generated %v, %v", src, generated, err)
		}
	}

	s = Resolve(parse(t, `{gateway: {auth: {password: "pw"}}}`))
	b, _, err := s.WithBind("lan")
	if err != nil {
		t.Fatalf("WithBind(lan): %v", err)
	}
	if addrs := b.ListenAddrs(); b == s || len(addrs) == 0 || strings.HasPrefix(addrs[0], "127.0.0.1:") {
		t.Errorf("WithBind(lan) listens on %v", addrs)
	}
	if _, _, err := s.WithBind("moon"); err == nil {
		t.Error("WithBind(moon) accepted")
	}
}
