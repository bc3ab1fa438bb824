package config

import (
	"strings"
	"testing"
	"time"
)

func TestA2ASettings(t *testing.T) {
	env := MapEnv(map[string]string{"HOME": t.TempDir(), "PEER_TOKEN": "in-secret", "PEER_OUT": "out-secret"})
	c := mustParse(t, `{
  channels: { a2a: {
    advertisedUrl: "https://gw.example.com/",
    replyTimeoutMs: 5000, rateLimitPerMinute: 0, exposeAgents: ["main"],
    peers: {
      "remote.gw": { token: "${PEER_TOKEN}", url: "https://peer.example.com", outboundToken: "${PEER_OUT}" },
      alpha: { token: "plain" },
    },
  } },
}`, env)
	a := c.A2A()
	if !a.Enabled || a.AdvertisedURL != "https://gw.example.com/" || a.ReplyTimeout != 5*time.Second ||
		a.RateLimitPerMinute != 0 || len(a.ExposeAgents) != 1 || len(a.Peers) != 2 {
		t.Fatalf("settings = %+v", a)
	}
	if p := a.Peers[1]; p.Name != "remote.gw" || p.Token != "in-secret" || p.OutboundToken != "out-secret" || p.URL != "https://peer.example.com" {
		t.Errorf("peer = %+v", p)
	}
	if a.Peers[0].Name != "alpha" || a.Peers[0].Token != "plain" {
		t.Errorf("peer = %+v", a.Peers[0])
	}

	d := mustParse(t, `{channels: {a2a: {enabled: false}}}`, env).A2A()
	if d.Enabled || d.ReplyTimeout != DefaultA2AReplyTimeout || d.RateLimitPerMinute != DefaultA2ARateLimitPerMin {
		t.Errorf("defaults = %+v", d)
	}
	if none := mustParse(t, `{}`, env).A2A(); none.Enabled {
		t.Errorf("absent section enabled: %+v", none)
	}
}

func TestA2AInvalid(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`{channels: {a2a: {replyTimeoutMs: 4999}}}`, "channels.a2a.replyTimeoutMs: must be between 5000 and 600000"},
		{`{channels: {a2a: {replyTimeoutMs: 600001}}}`, "must be between 5000 and 600000"},
		{`{channels: {a2a: {rateLimitPerMinute: -1}}}`, "must be at least 0"},
		{`{channels: {a2a: {advertisedUrl: "ftp://x"}}}`, "must be an http:// or https:// URL"},
		{`{channels: {a2a: {peers: {Bad: {token: "t"}}}}}`, "peer name must match"},
		{`{channels: {a2a: {peers: {"-x": {token: "t"}}}}}`, "peer name must match"},
		{`{channels: {a2a: {peers: {x: {}}}}}`, "channels.a2a.peers.x.token: is required"},
		{`{channels: {a2a: {peers: {x: {token: "${NOPE_UNSET}"}}}}}`, "environment variable NOPE_UNSET is not set"},
		{`{channels: {a2a: {peers: {x: {token: "t", url: "mailto:a"}}}}}`, "must be an http:// or https:// URL"},
		{`{channels: {a2a: {peers: {x: {token: "t"}, y: {token: "t"}}}}}`, `same as peer "x"`},
		{`{channels: {a2a: {replyTimeoutMs: "x"}}}`, "must be"},
	} {
		_, _, err := Parse("test.json5", []byte(tc.src), MapEnv(map[string]string{"HOME": t.TempDir()}))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.src, err, tc.want)
		}
	}
}
