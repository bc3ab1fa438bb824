package config

import (
	"strings"
	"testing"
	"time"
)

func TestIRCSettings(t *testing.T) {
	env := MapEnv(map[string]string{"HOME": t.TempDir(), "IRC_PASS": "s3cret"})
	c := mustParse(t, `{
  session: { dmScope: "per-channel-peer" },
  channels: { irc: {
    host: "irc.example.com", nick: "sbbot", password: "${IRC_PASS}",
    channels: ["#room", " #two "], dmPolicy: "open", groupPolicy: "open",
    groupAllowFrom: ["*"], allowFrom: ["alice!*@*"], dangerouslyAllowNameMatching: true,
    groups: { "#Room": { requireMention: false, allowFrom: ["*"], systemPrompt: "be brief", tools: { deny: ["group:fs"] } } },
    mentionPatterns: ["\\bbot\\b"], textChunkLimit: 200,
    nickserv: { password: "ns" },
  } },
}`, env)
	s := c.IRC()
	if !s.Enabled || s.Host != "irc.example.com" || s.Port != DefaultIRCPortTLS || !s.TLS || s.Nick != "sbbot" ||
		s.Username != "sbbot" || s.Realname != DefaultIRCRealname || s.Password != "s3cret" || s.DMPolicy != "open" ||
		s.GroupPolicy != "open" || !s.AllowNameMatching || s.TextChunkLimit != 200 || len(s.Channels) != 2 || s.Channels[1] != "#two" {
		t.Fatalf("settings = %+v", s)
	}
	if g := s.Groups["#room"]; g.RequireMention == nil || *g.RequireMention || g.SystemPrompt != "be brief" || g.Tools == nil || g.Tools.Deny[0] != "group:fs" {
		t.Errorf("group = %+v", g)
	}
	if !s.NickServEnabled || s.NickServService != "NickServ" || s.NickServPassword != "ns" {
		t.Errorf("nickserv = %+v", s)
	}
	if c.DMScope() != "per-channel-peer" {
		t.Errorf("dmScope = %q", c.DMScope())
	}
	if r := c.Redacted().Channels.IRC; r.Password != "${IRC_PASS}" || r.NickServ.Password != "***" {
		t.Errorf("redacted = %+v %+v", r, r.NickServ)
	}

	d := mustParse(t, `{channels: {irc: {host: "h", nick: "n", tls: false}}}`, env).IRC()
	if !d.Enabled || d.Port != DefaultIRCPortPlain || d.DMPolicy != "pairing" || d.GroupPolicy != "allowlist" ||
		d.TextChunkLimit != DefaultIRCTextChunkLimit || d.NickServEnabled {
		t.Errorf("defaults = %+v", d)
	}
	if off := mustParse(t, `{channels: {irc: {enabled: false}}}`, env).IRC(); off.Enabled {
		t.Errorf("disabled section enabled: %+v", off)
	}
	if none := mustParse(t, `{}`, env); none.IRC().Enabled || none.DMScope() != "main" {
		t.Errorf("absent section: %+v", none.IRC())
	}
}

func TestIRCInvalid(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`{channels: {irc: {nick: "n"}}}`, "channels.irc.host: is required"},
		{`{channels: {irc: {host: "h"}}}`, "channels.irc.nick: is required"},
		{`{channels: {irc: {host: "h", nick: "1bad"}}}`, "must be an IRC nick"},
		{`{channels: {irc: {host: "h", nick: "n", port: 0}}}`, "channels.irc.port: must be between 1 and 65535"},
		{`{channels: {irc: {host: "h", nick: "n", port: 70000}}}`, "must be between 1 and 65535"},
		{`{channels: {irc: {host: "h", nick: "n", channels: ["room"]}}}`, `channels.irc.channels[0]: must be an IRC channel name`},
		{`{channels: {irc: {host: "h", nick: "n", channels: ["#a,#b"]}}}`, "must be an IRC channel name"},
		{`{channels: {irc: {host: "h", nick: "n", dmPolicy: "everyone"}}}`, "channels.irc.dmPolicy: must be one of"},
		{`{channels: {irc: {host: "h", nick: "n", groupPolicy: "x"}}}`, "channels.irc.groupPolicy: must be one of"},
		{`{channels: {irc: {host: "h", nick: "n", groups: {room: {}}}}}`, "channels.irc.groups.room: must be an IRC channel name"},
		{`{channels: {irc: {host: "h", nick: "n", mentionPatterns: ["("]}}}`, "is not a valid regular expression"},
		{`{channels: {irc: {host: "h", nick: "n", textChunkLimit: 0}}}`, "channels.irc.textChunkLimit: must be between"},
		{`{channels: {irc: {host: "h", nick: "n", password: "a", passwordFile: "/f"}}}`, "set password or passwordFile, not both"},
		{`{channels: {irc: {host: "h", nick: "n", password: "${NOPE_UNSET}"}}}`, "environment variable NOPE_UNSET is not set"},
		{`{channels: {irc: {host: "h", nick: "n", nickserv: {register: true}}}}`, "registerEmail: is required"},
		{`{channels: {irc: {host: "h", nick: "n", username: "a b"}}}`, "must not contain spaces"},
		{`{session: {dmScope: "per-thread"}}`, "session.dmScope: must be one of"},
	} {
		_, _, err := Parse("test.json5", []byte(tc.src), MapEnv(map[string]string{"HOME": t.TempDir()}))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.src, err, tc.want)
		}
	}
}

func TestIRCUnknownKeysWarn(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`{channels: {irc: {host: "h", nick: "n", bogus: 1}}}`, "channels.irc.bogus"},
		{`{channels: {irc: {host: "h", nick: "n", groups: {"#r": {skills: []}}}}}`, `channels.irc.groups["#r"].skills`},
	} {
		_, warns, err := Parse("test.json5", []byte(tc.src), MapEnv(map[string]string{"HOME": t.TempDir()}))
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		var all []string
		for _, w := range warns {
			all = append(all, w.Path+": "+w.Message)
		}
		if j := strings.Join(all, "\n"); !strings.Contains(j, tc.want) || !strings.Contains(j, "unknown key") {
			t.Errorf("%s: warnings = %q, want %q", tc.src, j, tc.want)
		}
	}
}

func TestIRCBotLoopLayers(t *testing.T) {
	env := MapEnv(map[string]string{"HOME": t.TempDir()})
	s := mustParse(t, `{channels: {
  defaults: { botLoopProtection: { maxEventsPerWindow: 10, windowSeconds: 30 } },
  irc: { host: "h", nick: "n", botLoopProtection: { maxEventsPerWindow: 8 },
    groups: { "#r": { botLoopProtection: { cooldownSeconds: 90 } }, "#off": { botLoopProtection: { enabled: false } } } },
}}`, env).IRC()
	want := BotLoopSettings{Enabled: true, MaxEvents: 8, Window: 30 * time.Second, Cooldown: DefaultBotLoopCooldown}
	if s.BotLoop != want {
		t.Errorf("channel = %+v, want %+v", s.BotLoop, want)
	}
	want.Cooldown = 90 * time.Second
	if g := s.Groups["#r"].BotLoop; g != want {
		t.Errorf("room = %+v, want %+v", g, want)
	}
	if g := s.Groups["#off"].BotLoop; g.Enabled {
		t.Errorf("disabled room = %+v", g)
	}
	d := mustParse(t, `{}`, env).IRC().BotLoop
	if !d.Enabled || d.MaxEvents != 20 || d.Window != time.Minute || d.Cooldown != time.Minute {
		t.Errorf("built-in = %+v", d)
	}
	for _, tc := range []struct{ src, want string }{
		{`{channels: {defaults: {botLoopProtection: {maxEventsPerWindow: 0}}}}`, "channels.defaults.botLoopProtection.maxEventsPerWindow: must be a positive integer"},
		{`{channels: {irc: {host: "h", nick: "n", botLoopProtection: {windowSeconds: -1}}}}`, "windowSeconds: must be a positive integer"},
		{`{channels: {irc: {host: "h", nick: "n", groups: {"#r": {botLoopProtection: {cooldownSeconds: -1}}}}}}`, "cooldownSeconds: must be at least 0"},
	} {
		if _, _, err := Parse("test.json5", []byte(tc.src), env); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.src, err, tc.want)
		}
	}
}

func TestIRCEnvFillsUnsetKeys(t *testing.T) {
	env := MapEnv(map[string]string{"HOME": t.TempDir(), "IRC_HOST": "irc.env.test", "IRC_PORT": "7000", "IRC_TLS": "false",
		"IRC_NICK": "envbot", "IRC_USERNAME": "envuser", "IRC_REALNAME": "Env Bot", "IRC_PASSWORD": "pw",
		"IRC_CHANNELS": "#a, #b,", "IRC_NICKSERV_PASSWORD": "nspw", "IRC_NICKSERV_REGISTER_EMAIL": "bot@example.com"})
	s := mustParse(t, `{channels: {irc: {}}}`, env).IRC()
	if !s.Enabled || s.Host != "irc.env.test" || s.Port != 7000 || s.TLS || s.Nick != "envbot" || s.Username != "envuser" ||
		s.Realname != "Env Bot" || s.Password != "pw" || len(s.Channels) != 2 || s.Channels[1] != "#b" ||
		!s.NickServEnabled || s.NickServPassword != "nspw" || s.NickServRegisterEmail != "bot@example.com" {
		t.Errorf("env settings = %+v", s)
	}
	// Config keys win over the environment.
	s = mustParse(t, `{channels: {irc: {host: "cfg.test", nick: "cfgbot", port: 6697, tls: true, channels: ["#c"], password: "cfgpw"}}}`, env).IRC()
	if s.Host != "cfg.test" || s.Nick != "cfgbot" || s.Port != 6697 || !s.TLS || len(s.Channels) != 1 || s.Password != "cfgpw" {
		t.Errorf("config over env = %+v", s)
	}
	for _, tc := range []struct {
		vars map[string]string
		want string
	}{
		{map[string]string{"IRC_HOST": "h", "IRC_NICK": "n", "IRC_PORT": "0"}, "IRC_PORT=\"0\": must be between 1 and 65535"},
		{map[string]string{"IRC_HOST": "h", "IRC_NICK": "n", "IRC_TLS": "maybe"}, "IRC_TLS=\"maybe\": must be true or false"},
		{map[string]string{"IRC_HOST": "h", "IRC_NICK": "9n"}, "must be an IRC nick"},
		{map[string]string{"IRC_HOST": "h", "IRC_NICK": "n", "IRC_CHANNELS": "#ok,bad"}, `IRC_CHANNELS: "bad" is not an IRC channel name`},
		{map[string]string{"IRC_NICK": "n"}, "host: is required when the IRC channel is enabled (or set IRC_HOST)"},
	} {
		tc.vars["HOME"] = t.TempDir()
		if _, _, err := Parse("t.json5", []byte(`{channels: {irc: {}}}`), MapEnv(tc.vars)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.vars, err, tc.want)
		}
	}
}
