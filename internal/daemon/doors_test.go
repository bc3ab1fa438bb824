package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/channel/telegram/tgfake"
	"github.com/switchboardhq/switchboard/internal/config"
	"github.com/switchboardhq/switchboard/internal/fakellm"
)

const (
	doorsGatewayToken = "doors-gateway-token"
	doorsHookToken    = "doors-hook-token"
	doorsPeerToken    = "doors-peer-token"
	doorsTGSecret     = "doors-tg-secret"
	doorsBotToken     = "123456:doors-bot"
)

// testClock is a clock tests move on; it starts at the real time.
type testClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}

// startDoors starts the daemon with every HTTP door open: the OpenAI
// endpoints, hooks, an A2A peer and a Telegram webhook (against the fake
// Bot API), with auth as given (JSON5 of gateway.auth) and extra
// top-level members.
func startDoors(t *testing.T, auth, extra string, opts Options) (*Daemon, *syncBuffer) {
	t.Helper()
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	fake := tgfake.Start(t, doorsBotToken)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`{
  gateway: { auth: %s, http: { endpoints: { chatCompletions: { enabled: true }, responses: { enabled: true } } } },
  models: { mode: "replace", providers: { fake: { baseUrl: %q, apiKey: "llm-key", api: "openai-completions", models: [{ id: "fake-1" }] } } },
  agents: { defaults: { model: { primary: "fake/fake-1" } } },
  hooks: { enabled: true, token: %q },
  channels: {
    a2a: { peers: { alpha: { token: %q } }, rateLimitPerMinute: 0 },
    telegram: { botToken: %q, apiRoot: %q, dmPolicy: "open", webhookUrl: "https://bot.example.com/tg", webhookSecret: %q },
  },
  %s
}`, auth, llm.URL(), doorsHookToken, doorsPeerToken, doorsBotToken, fake.URL(), doorsTGSecret, extra)
	if err := os.WriteFile(filepath.Join(dir, "switchboard.json5"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	port := 0
	logs := &syncBuffer{}
	opts.Env = config.MapEnv(map[string]string{"SWITCHBOARD_STATE_DIR": dir, "HOME": dir})
	opts.Port = &port
	opts.Stdout = io.Discard
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	d, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d, logs
}

// door is one HTTP entry point and a request it answers.
type door struct {
	method, path, body string
	// auth sets the credentials the door takes (the gateway token, or
	// its own secret).
	auth func(h http.Header)
}

// doorAt is the door of doors() at path.
func doorAt(t *testing.T, path string) door {
	t.Helper()
	for _, dr := range doors() {
		if dr.path == path {
			return dr
		}
	}
	t.Fatalf("no door %s", path)
	return door{}
}

// doors are the gateway port's HTTP entry points, each with a request
// it serves.
func doors() []door {
	gatewayAuth := func(h http.Header) { h.Set("Authorization", "Bearer "+doorsGatewayToken) }
	none := func(http.Header) {}
	return []door{
		{"GET", "/", "", none},
		{"GET", "/ui/app.js", "", none},
		{"GET", "/control-ui-config.json", "", none},
		{"GET", "/healthz", "", none},
		{"GET", "/v1/models", "", gatewayAuth},
		{"POST", "/v1/chat/completions", `{"model":"switchboard","messages":[{"role":"user","content":"hi"}]}`, gatewayAuth},
		{"POST", "/v1/responses", `{"model":"switchboard","input":"hi"}`, gatewayAuth},
		{"POST", "/tools/invoke", `{"tool":"sessions_list","args":{}}`, gatewayAuth},
		{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
			func(h http.Header) { gatewayAuth(h); h.Set("Accept", "application/json, text/event-stream") }},
		{"GET", "/metrics", "", gatewayAuth},
		{"POST", "/hooks/wake", `{"text":"ping"}`, func(h http.Header) { h.Set("Authorization", "Bearer "+doorsHookToken) }},
		{"GET", "/.well-known/agent-card.json", "", none},
		{"POST", "/a2a/v1", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"nope"}}`, func(h http.Header) { h.Set("Authorization", "Bearer "+doorsPeerToken) }},
		{"POST", "/tg", `{"update_id":1}`, func(h http.Header) { h.Set("X-Telegram-Bot-Api-Secret-Token", doorsTGSecret) }},
	}
}

// doorRequest sends one request to base and returns its status and body.
func doorRequest(t *testing.T, base string, dr door, edit func(*http.Request)) (int, string) {
	t.Helper()
	var body io.Reader
	if dr.body != "" {
		body = strings.NewReader(dr.body)
	}
	req, err := http.NewRequest(dr.method, base+dr.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if dr.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	dr.auth(req.Header)
	edit(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", dr.method, dr.path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b)
}

// TestDoorsRefuseBrowserPages: every HTTP door refuses a foreign Host
// (DNS rebinding), a foreign Origin (a cross-site page) and a text/plain
// body (a "simple" cross-site POST), with auth none and with a token,
// while the same requests without them (as curl, SDKs, Prometheus and
// webhooks send them) and from the gateway's own origin get through.
func TestDoorsRefuseBrowserPages(t *testing.T) {
	for _, mode := range []struct{ name, auth string }{
		{"auth none", `{ mode: "none" }`},
		{"auth token", fmt.Sprintf(`{ mode: "token", token: %q }`, doorsGatewayToken)},
	} {
		t.Run(mode.name, func(t *testing.T) {
			d, _ := startDoors(t, mode.auth, "", Options{})
			addr := d.Addrs[0].String()
			base := "http://" + addr
			_, port, _ := net.SplitHostPort(addr)
			for _, dr := range doors() {
				name := dr.method + " " + dr.path
				type attack struct {
					name   string
					edit   func(*http.Request)
					status int
					want   string
				}
				attacks := []attack{
					{"foreign Host", func(r *http.Request) { r.Host = "evil.example:" + port }, http.StatusForbidden, "host not allowed"},
					{"foreign Origin", func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") }, http.StatusForbidden, "origin not allowed"},
					{"null Origin", func(r *http.Request) { r.Header.Set("Origin", "null") }, http.StatusForbidden, "origin not allowed"},
				}
				if dr.body != "" {
					attacks = append(attacks,
						attack{"text/plain body", func(r *http.Request) { r.Header.Set("Content-Type", "text/plain;charset=UTF-8") }, http.StatusUnsupportedMediaType, "unsupported content type"},
						attack{"form body", func(r *http.Request) { r.Header.Set("Content-Type", "application/x-www-form-urlencoded") }, http.StatusUnsupportedMediaType, "unsupported content type"},
						attack{"no Content-Type", func(r *http.Request) { r.Header.Del("Content-Type") }, http.StatusUnsupportedMediaType, "unsupported content type"})
				}
				for _, a := range attacks {
					if code, body := doorRequest(t, base, dr, a.edit); code != a.status || !strings.Contains(body, a.want) {
						t.Errorf("%s with a %s = %d %q, want %d %q", name, a.name, code, body, a.status, a.want)
					}
				}
				for _, ok := range []struct {
					name string
					edit func(*http.Request)
				}{
					{"no Origin", func(*http.Request) {}},
					{"its own origin", func(r *http.Request) { r.Header.Set("Origin", "http://"+addr) }},
					{"localhost", func(r *http.Request) { r.Host = "localhost" }},
				} {
					code, body := doorRequest(t, base, dr, ok.edit)
					if code == http.StatusForbidden || code == http.StatusUnsupportedMediaType || code == http.StatusUnauthorized || code == http.StatusNotFound {
						t.Errorf("%s from %s = %d %q, want it served", name, ok.name, code, body)
					}
				}
			}
		})
	}
}

// TestDoorsAdmitConfiguredNames: a name in gateway.controlUi.allowedOrigins
// or gateway.publicOrigin passes the Host check (a reverse proxy that
// keeps the public Host), its origin the origin check; other public
// names do not.
func TestDoorsAdmitConfiguredNames(t *testing.T) {
	d, _ := startDoors(t, `{ mode: "none" }`,
		`gateway: { auth: { mode: "none" }, publicOrigin: "https://gw.example.com", controlUi: { allowedOrigins: ["https://ui.example.net"] } },`, Options{})
	base := "http://" + d.Addrs[0].String()
	health := door{"GET", "/healthz", "", func(http.Header) {}}
	for _, tc := range []struct {
		host, origin string
		want         int
	}{
		{"gw.example.com", "", 200},
		{"gw.example.com", "https://gw.example.com", 200},
		{"ui.example.net", "https://ui.example.net", 200},
		{"bot.example.com", "", 200}, // the Telegram webhook's host
		{"other.example.com", "", 403},
		{"gw.example.com", "https://other.example.com", 403},
	} {
		code, body := doorRequest(t, base, health, func(r *http.Request) {
			r.Host = tc.host
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
		})
		if code != tc.want {
			t.Errorf("Host %s Origin %q = %d %s, want %d", tc.host, tc.origin, code, body, tc.want)
		}
	}
	// /mcp too (behind a reverse proxy that keeps the public Host).
	mcp := doorAt(t, "/mcp")
	if code, body := doorRequest(t, base, mcp, func(r *http.Request) { r.Host = "gw.example.com" }); code != http.StatusOK {
		t.Errorf("/mcp with Host gw.example.com = %d %s, want 200", code, body)
	}
	if code, _ := doorRequest(t, base, mcp, func(r *http.Request) { r.Host = "other.example.com" }); code != http.StatusForbidden {
		t.Errorf("/mcp with Host other.example.com = %d, want 403", code)
	}
}

// TestA2ACardIgnoresHost: the agent card's interface URL comes from
// configuration (channels.a2a.advertisedUrl, gateway.publicOrigin) or
// the address the gateway listens on, never from the request's Host.
func TestA2ACardIgnoresHost(t *testing.T) {
	card := func(t *testing.T, d *Daemon, host string) string {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+d.Addrs[0].String()+"/.well-known/agent-card.json", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var c struct {
			SupportedInterfaces []struct {
				URL string `json:"url"`
			} `json:"supportedInterfaces"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || len(c.SupportedInterfaces) == 0 {
			t.Fatalf("card (status %d): %v", resp.StatusCode, err)
		}
		return c.SupportedInterfaces[0].URL
	}
	t.Run("bind address", func(t *testing.T) {
		d, _ := startDoors(t, `{ mode: "none" }`, `gateway: { auth: { mode: "none" }, controlUi: { dangerouslyAllowHostHeaderOriginFallback: true } },`, Options{})
		// With the Host fallback on, evil.example passes the Host check;
		// the card still names the gateway's own address.
		if got, want := card(t, d, "evil.example"), "http://"+d.Addrs[0].String()+"/a2a/v1"; got != want {
			t.Errorf("card URL with Host evil.example = %q, want %q", got, want)
		}
	})
	t.Run("public origin", func(t *testing.T) {
		d, _ := startDoors(t, `{ mode: "none" }`, `gateway: { auth: { mode: "none" }, publicOrigin: "https://gw.example.com", controlUi: { dangerouslyAllowHostHeaderOriginFallback: true } },`, Options{})
		if got := card(t, d, "evil.example"); got != "https://gw.example.com/a2a/v1" {
			t.Errorf("card URL with Host evil.example = %q, want the public origin's", got)
		}
	})
}

// TestSecretLockout: wrong A2A peer tokens, hooks tokens and Telegram
// webhook secrets lock the address out as wrong gateway tokens do: once
// the limit is reached the right secret is refused (429) from that
// address, until the lockout passes on the gateway's clock; the lockout is
// logged once, not each miss.
func TestSecretLockout(t *testing.T) {
	clock := &testClock{}
	d, logs := startDoors(t, fmt.Sprintf(`{ mode: "token", token: %q }`, doorsGatewayToken), "", Options{Now: clock.now})
	base := "http://" + d.Addrs[0].String()
	for _, tc := range []struct {
		door
		wrong    func(h http.Header)
		attempts int
		lockout  time.Duration
	}{
		{doorAt(t, "/a2a/v1"), func(h http.Header) { h.Set("Authorization", "Bearer wrong") }, 10, 5 * time.Minute},
		{doorAt(t, "/hooks/wake"), func(h http.Header) { h.Set("Authorization", "Bearer wrong") }, 20, time.Minute},
		{doorAt(t, "/tg"), func(h http.Header) { h.Set("X-Telegram-Bot-Api-Secret-Token", "wrong") }, 10, 5 * time.Minute},
	} {
		name := tc.path
		right := func() (int, string) { return doorRequest(t, base, tc.door, func(*http.Request) {}) }
		wrong := door{tc.method, tc.path, tc.body, tc.wrong}
		if code, body := right(); code == http.StatusUnauthorized || code == http.StatusTooManyRequests {
			t.Fatalf("%s: right secret = %d %s", name, code, body)
		}
		for i := range tc.attempts {
			if code, _ := doorRequest(t, base, wrong, func(*http.Request) {}); code != http.StatusUnauthorized {
				t.Fatalf("%s: wrong secret %d = %d, want 401", name, i+1, code)
			}
		}
		if code, _ := doorRequest(t, base, wrong, func(*http.Request) {}); code != http.StatusTooManyRequests {
			t.Errorf("%s: wrong secret %d = %d, want 429", name, tc.attempts+1, code)
		}
		for range 5 { // more misses while locked out
			doorRequest(t, base, wrong, func(*http.Request) {})
		}
		if code, body := right(); code != http.StatusTooManyRequests || !strings.Contains(body, "too many failed authentication attempts") {
			t.Errorf("%s: right secret while locked out = %d %s, want 429", name, code, body)
		}
		if code, body := fromOther(t, base, tc.door); code == http.StatusUnauthorized || code == http.StatusTooManyRequests {
			t.Errorf("%s: right secret from 127.0.0.2 while 127.0.0.1 is locked out = %d %s", name, code, body)
		}
		clock.advance(tc.lockout - time.Second)
		if code, _ := right(); code != http.StatusTooManyRequests {
			t.Errorf("%s: right secret a second before the lockout ends = %d, want 429", name, code)
		}
		clock.advance(2 * time.Second)
		if code, body := right(); code == http.StatusUnauthorized || code == http.StatusTooManyRequests {
			t.Errorf("%s: right secret after the lockout = %d %s", name, code, body)
		}
	}
	// One WARN per lockout window and door, not one per miss.
	var warns []string
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		if l := sc.Text(); strings.Contains(l, "level=WARN") && (strings.Contains(l, "failed authentication") || strings.Contains(l, "wrong secret")) {
			warns = append(warns, l)
		}
	}
	if len(warns) != 3 {
		t.Errorf("WARN lines about wrong secrets = %d, want 3 (one per door):\n%s", len(warns), strings.Join(warns, "\n"))
	}
}

// fromOther sends dr's request from 127.0.0.2.
func fromOther(t *testing.T, base string, dr door) (int, string) {
	t.Helper()
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(dr.method, base+dr.path, strings.NewReader(dr.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	dr.auth(req.Header)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("from 127.0.0.2: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// rawGet sends GET /healthz on c and returns the response status, or the
// read error. The read gives up after failSafe (a hung test fails, it
// does not time a result).
func rawGet(c net.Conn, br *bufio.Reader) (int, error) {
	const failSafe = 20 * time.Second
	c.SetDeadline(time.Now().Add(failSafe))
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// dialFrom opens a TCP connection to addr from the local IP from.
func dialFrom(t *testing.T, from net.IP, addr string) net.Conn {
	t.Helper()
	c, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: from}}).Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestIdleConnectionClosed: a keep-alive connection that sends no next
// request is closed by the gateway after the idle timeout.
func TestIdleConnectionClosed(t *testing.T) {
	d, _ := startDoors(t, `{ mode: "none" }`, "", Options{IdleTimeout: 50 * time.Millisecond})
	c := dialFrom(t, net.IPv4(127, 0, 0, 1), d.Addrs[0].String())
	br := bufio.NewReader(c)
	if code, err := rawGet(c, br); err != nil || code != 200 {
		t.Fatalf("GET /healthz = %d, %v", code, err)
	}
	_, err := br.ReadByte() // blocks until the gateway closes the idle connection
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the idle keep-alive connection was never closed")
	}
	if err != io.EOF {
		t.Errorf("read on the idle connection = %v, want EOF", err)
	}
}

// TestBodyDeadline: a request whose body stops arriving is answered or
// dropped when the body deadline passes, not held open.
func TestBodyDeadline(t *testing.T) {
	d, _ := startDoors(t, `{ mode: "none" }`, "", Options{BodyTimeout: 50 * time.Millisecond})
	c := dialFrom(t, net.IPv4(127, 0, 0, 1), d.Addrs[0].String())
	c.SetDeadline(time.Now().Add(20 * time.Second)) // fail-safe
	io.WriteString(c, "POST /hooks/wake HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "+doorsHookToken+"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"text\":")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("a stalled request body held the connection open")
	}
	if err == nil {
		defer resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("stalled body answered %d", resp.StatusCode)
		}
	}
}

// TestConnectionCapPerAddress: connections from one address beyond the
// cap are refused, while another address still connects.
func TestConnectionCapPerAddress(t *testing.T) {
	const maxConns = 4
	d, _ := startDoors(t, `{ mode: "none" }`, "", Options{MaxConnsPerAddr: maxConns})
	addr := d.Addrs[0].String()
	local := net.IPv4(127, 0, 0, 1)
	for i := range maxConns { // each answered, so each is accepted and counted
		c := dialFrom(t, local, addr)
		if code, err := rawGet(c, bufio.NewReader(c)); err != nil || code != 200 {
			t.Fatalf("connection %d: GET /healthz = %d, %v", i+1, code, err)
		}
	}
	over := dialFrom(t, local, addr)
	code, err := rawGet(over, bufio.NewReader(over))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the connection over the cap got no answer")
	}
	if err == nil && code != http.StatusServiceUnavailable {
		t.Errorf("connection %d from one address: GET /healthz = %d, want 503 or a closed connection", maxConns+1, code)
	}
	other := dialFrom(t, net.IPv4(127, 0, 0, 2), addr)
	if code, err := rawGet(other, bufio.NewReader(other)); err != nil || code != 200 {
		t.Errorf("from 127.0.0.2 while 127.0.0.1 is at the cap: GET /healthz = %d, %v", code, err)
	}
}
