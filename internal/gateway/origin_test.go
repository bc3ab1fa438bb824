package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func TestOriginPolicy(t *testing.T) {
	def := newOriginPolicy(nil, false)
	listed := newOriginPolicy([]string{"https://UI.example.com/", "http://10.0.0.5:8080"}, false)
	fallback := newOriginPolicy(nil, true)
	for _, tc := range []struct {
		name   string
		p      originPolicy
		host   string
		origin string
		ok     bool
	}{
		{"no origin (not a browser)", def, "evil.example", "", true},
		{"loopback same-origin", def, "127.0.0.1:18789", "http://127.0.0.1:18789", true},
		{"localhost same-origin", def, "localhost:18789", "http://localhost:18789", true},
		{"ipv6 loopback", def, "[::1]:18789", "http://[::1]:18789", true},
		{"LAN address", def, "192.168.1.20:18789", "http://192.168.1.20:18789", true},
		{"tailscale", def, "100.101.102.103:18789", "http://100.101.102.103:18789", true},
		{".local", def, "box.local:18789", "http://box.local:18789", true},
		{"single-label name", def, "homeserver:18789", "http://homeserver:18789", true},
		{"DNS rebinding: public name same-origin", def, "evil.example:18789", "http://evil.example:18789", false},
		{"cross-origin page", def, "127.0.0.1:18789", "http://evil.example", false},
		{"port differs", def, "127.0.0.1:18789", "http://127.0.0.1:9999", false},
		{"garbage origin", def, "127.0.0.1:18789", "not an origin", false},
		{"null origin", def, "127.0.0.1:18789", "null", false},
		{"listed origin", listed, "gw.example.com", "https://ui.example.com", true},
		{"listed with default port", listed, "gw.example.com", "https://ui.example.com:443", true},
		{"listed LAN origin", listed, "127.0.0.1:18789", "http://10.0.0.5:8080", true},
		{"not listed", listed, "gw.example.com", "https://other.example.com", false},
		{"fallback admits public same-origin", fallback, "gw.example.com", "https://gw.example.com", true},
		{"fallback still needs same origin", fallback, "gw.example.com", "https://evil.example", false},
		{"wildcard", newOriginPolicy([]string{"*"}, false), "gw.example.com", "https://anything.example", true},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = tc.host
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if got := tc.p.check(r) == ""; got != tc.ok {
			t.Errorf("%s: admitted = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

// With auth off, a DNS-rebinding page (Host and Origin both the attacker's
// name) must not get a connection.
func TestDNSRebindingRefused(t *testing.T) {
	e := newEnv(t, envOptions{config: `{gateway: {auth: {mode: "none"}}}`})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	dial := func(host, origin string) (*http.Response, error) {
		h := http.Header{}
		if origin != "" {
			h.Set("Origin", origin)
		}
		c, resp, err := websocket.Dial(ctx, e.url, &websocket.DialOptions{HTTPHeader: h, Host: host})
		if err == nil {
			c.CloseNow()
		}
		return resp, err
	}
	if resp, err := dial("evil.example", "http://evil.example"); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("rebinding dial: err %v, resp %v; want 403", err, resp)
	}
	// A rebinding page's same-origin requests need not carry an Origin:
	// the Host alone refuses them.
	if resp, err := dial("evil.example", ""); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("rebinding dial without Origin: err %v, resp %v; want 403", err, resp)
	}
	addr := e.srv.Listener.Addr().String()
	if _, err := dial(addr, "http://"+addr); err != nil {
		t.Errorf("same-origin loopback dial: %v", err)
	}
	if _, err := dial("", ""); err != nil {
		t.Errorf("non-browser dial: %v", err)
	}
}

func TestHostPolicy(t *testing.T) {
	def := newHostPolicy(nil, nil, false)
	listed := newHostPolicy([]string{"https://UI.example.com"}, []string{"https://gw.example.com/", "https://bot.example.org/tg"}, false)
	for _, tc := range []struct {
		name string
		p    hostPolicy
		host string
		ok   bool
	}{
		{"no Host", def, "", true},
		{"loopback", def, "127.0.0.1:18789", true},
		{"ipv6 loopback", def, "[::1]:18789", true},
		{"public IP literal", def, "203.0.113.7:18789", true},
		{"localhost", def, "localhost:18789", true},
		{"sub.localhost", def, "app.localhost", true},
		{".local", def, "box.local:18789", true},
		{".ts.net", def, "box.tail1234.ts.net", true},
		{"single-label name", def, "homeserver:18789", true},
		{"DNS rebinding name", def, "evil.example:18789", false},
		{"trailing dot", def, "evil.example.:18789", false},
		{"allowed origin's host", listed, "ui.example.com", true},
		{"public URL's host, other case and port", listed, "GW.example.com:443", true},
		{"webhook URL's host", listed, "bot.example.org", true},
		{"unlisted name", listed, "evil.example", false},
		{"wildcard origin", newHostPolicy([]string{"*"}, nil, false), "evil.example", true},
		{"Host-header fallback", newHostPolicy(nil, nil, true), "evil.example", true},
	} {
		if got := tc.p.check(tc.host) == ""; got != tc.ok {
			t.Errorf("%s (%q): admitted = %v, want %v", tc.name, tc.host, got, tc.ok)
		}
	}
}
