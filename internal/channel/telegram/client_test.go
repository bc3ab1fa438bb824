package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/channel"
	"github.com/switchboardhq/switchboard/internal/channel/telegram/tgfake"
)

const token = "123456:TEST-token-never-logged"

var me = Self{ID: tgfake.BotID, Username: tgfake.BotUsername}

func update(t *testing.T, msg map[string]any) Update {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"update_id": 1, "message": msg})
	if err != nil {
		t.Fatal(err)
	}
	u, err := ParseUpdate(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestSessionKeys: DMs, groups and forum topics route to the reference's
// session keys, and replies to the room they name.
func TestSessionKeys(t *testing.T) {
	channelPost := tgfake.Group(-100777, 5, "Ann", "post")
	channelPost["chat"] = map[string]any{"id": -100777, "type": "channel"}
	own := tgfake.DM(tgfake.BotID, "Me", "echo")
	photo := tgfake.DM(7, "Ann", "")
	photo["caption"] = "look at this"
	for _, tc := range []struct {
		name    string
		msg     map[string]any
		scope   string
		key, to string
		label   string
		skip    bool
	}{
		{"dm main", tgfake.DM(7, "Ann", "hi"), channel.DMScopeMain, "agent:main:main", "7", "@ann", false},
		{"dm per-peer", tgfake.DM(7, "Ann", "hi"), channel.DMScopePerPeer, "agent:main:direct:7", "7", "@ann", false},
		{"dm per-channel-peer", tgfake.DM(7, "Ann", "hi"), channel.DMScopePerChannelPeer, "agent:main:telegram:direct:7", "7", "@ann", false},
		{"dm per-account-channel-peer", tgfake.DM(7, "Ann", "hi"), channel.DMScopePerAccountChannelPeer, "agent:main:telegram:default:direct:7", "7", "@ann", false},
		{"dm caption", photo, channel.DMScopeMain, "agent:main:main", "7", "@ann", false},
		{"group", tgfake.Group(-100123, 7, "Ann", "hi"), channel.DMScopeMain, "agent:main:telegram:group:-100123", "-100123", "@ann", false},
		{"forum topic", tgfake.Topic(-1001234567890, 42, 7, "Ann", "hi"), channel.DMScopeMain, "agent:main:telegram:group:-1001234567890:topic:42", "-1001234567890:topic:42", "@ann", false},
		{"forum general", tgfake.Topic(-1001234567890, 0, 7, "Ann", "hi"), channel.DMScopeMain, "agent:main:telegram:group:-1001234567890:topic:1", "-1001234567890:topic:1", "@ann", false},
		{"channel post", channelPost, channel.DMScopeMain, "", "", "", true},
		{"own message", own, channel.DMScopeMain, "", "", "", true},
		{"no text", tgfake.DM(7, "Ann", " "), channel.DMScopeMain, "", "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := ToInbound(me, update(t, tc.msg), nil)
			if tc.skip {
				if !errors.Is(err, errSkip) {
					t.Fatalf("ToInbound = %+v, %v; want skipped", in, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := channel.SessionKey("main", "main", tc.scope, in); got != tc.key {
				t.Errorf("session key = %q, want %q", got, tc.key)
			}
			if in.ReplyTo() != tc.to || in.Label() != tc.label {
				t.Errorf("reply to %q as %q, want %q as %q", in.ReplyTo(), in.Label(), tc.to, tc.label)
			}
			if in.Kind == channel.KindGroup {
				r, ok := channel.RouteFromKey(Name, tc.key)
				if !ok || r.To != tc.to {
					t.Errorf("RouteFromKey(%q) = %+v %v, want to %q", tc.key, r, ok, tc.to)
				}
			}
			if _, err := ParseTarget(in.ReplyTo()); err != nil {
				t.Errorf("reply target: %v", err)
			}
		})
	}
}

func TestMentions(t *testing.T) {
	pats := []*regexp.Regexp{regexp.MustCompile(`(?i)\bhey bot\b`)}
	reply := tgfake.Group(-1, 7, "Ann", "and this?")
	reply["reply_to_message"] = map[string]any{"message_id": 9, "date": 0, "chat": reply["chat"], "from": map[string]any{"id": tgfake.BotID, "is_bot": true, "first_name": "b"}}
	textMention := tgfake.Group(-1, 7, "Ann", "you there")
	textMention["entities"] = []any{map[string]any{"type": "text_mention", "offset": 0, "length": 3, "user": map[string]any{"id": tgfake.BotID, "is_bot": true, "first_name": "b"}}}
	for _, tc := range []struct {
		name string
		msg  map[string]any
		want bool
	}{
		{"handle", tgfake.Group(-1, 7, "Ann", "@SB_test_bot ping"), true},
		{"command", tgfake.Group(-1, 7, "Ann", "/status@sb_test_bot"), true},
		{"other handle", tgfake.Group(-1, 7, "Ann", "@sb_test_bot2 ping"), false},
		{"plain", tgfake.Group(-1, 7, "Ann", "just chatting"), false},
		{"pattern", tgfake.Group(-1, 7, "Ann", "Hey bot, help"), true},
		{"reply to bot", reply, true},
		{"text mention", textMention, true},
		{"topic message is no reply", tgfake.Topic(-1, 5, 7, "Ann", "in a topic"), false},
	} {
		in, err := ToInbound(me, update(t, tc.msg), pats)
		if err != nil || in.Mentioned != tc.want {
			t.Errorf("%s: mentioned = %v (%v), want %v", tc.name, in.Mentioned, err, tc.want)
		}
	}
}

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Target
		bad  bool
	}{
		{"42", Target{ChatID: "42"}, false},
		{"-100123:topic:7", Target{ChatID: "-100123", Thread: 7}, false},
		{"tg:-5", Target{ChatID: "-5"}, false},
		{"telegram:@news", Target{ChatID: "@news"}, false},
		{"#room", Target{}, true},
		{"-1:topic:x", Target{}, true},
		{"-1:topic:0", Target{}, true},
		{"", Target{}, true},
	} {
		got, err := ParseTarget(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseTarget(%q) = %+v, %v", tc.in, got, err)
		}
	}
}

// recorder is a Deliverer that keeps what it gets.
type recorder struct {
	mu  sync.Mutex
	ins []channel.Inbound
	got chan channel.Inbound
	err error
}

func newRecorder() *recorder { return &recorder{got: make(chan channel.Inbound, 100)} }

func (r *recorder) Deliver(_ context.Context, in channel.Inbound) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	r.ins = append(r.ins, in)
	r.got <- in
	return nil
}

func (r *recorder) next(t *testing.T) channel.Inbound {
	t.Helper()
	select {
	case in := <-r.got:
		return in
	case <-time.After(10 * time.Second):
		t.Fatal("no inbound message delivered")
		return channel.Inbound{}
	}
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func start(t *testing.T, cfg Config) *Client {
	t.Helper()
	cfg.Token = token
	cfg.PollTimeout = time.Second
	cfg.MinBackoff, cfg.MaxBackoff = 10*time.Millisecond, 50*time.Millisecond
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Start()
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func waitConnected(t *testing.T, c *Client) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !c.Status().Connected {
		if time.Now().After(deadline) {
			t.Fatalf("not connected: %+v", c.Status())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestLongPolling(t *testing.T) {
	fake := tgfake.Start(t, token)
	fake.Fail("getMe", tgfake.Failure{Code: 502, Description: "Bad Gateway"})
	fake.Fail("getUpdates", tgfake.Failure{Code: 502, Description: "Bad Gateway"}, tgfake.Failure{Code: 500, Description: "Internal"})
	rec := newRecorder()
	logs := &syncBuffer{}
	c := start(t, Config{APIRoot: fake.URL(), Deliver: rec, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Policy: channel.Policy{DMPolicy: channel.DMPolicyAllowlist, AllowFrom: []string{"tg:7"}, GroupPolicy: channel.GroupPolicyAllowlist},
		Groups: map[string]Group{
			"-100": {AllowFrom: []string{"*"}},
			"-200": {AllowFrom: []string{"*"}, RequireMention: ptr(false), SystemPrompt: "forum",
				Topics: map[string]Group{"5": {Enabled: ptr(false)}, "6": {SystemPrompt: "topic six"}}},
		}})
	waitConnected(t, c)
	if s := c.Status(); s.Nick != "@"+tgfake.BotUsername || s.State != "connected" {
		t.Errorf("status = %+v", s)
	}

	fake.Push(tgfake.DM(8, "Bob", "not allowed"))
	fake.Push(tgfake.Group(-100, 8, "Bob", "no mention"))
	fake.Push(tgfake.Group(-300, 8, "Bob", "@sb_test_bot unknown group"))
	fake.Push(tgfake.Topic(-200, 5, 8, "Bob", "disabled topic"))
	fake.Push(tgfake.DM(7, "Ann", "hello"))
	if in := rec.next(t); in.Text != "hello" || in.SenderName != "7" || in.Kind != channel.KindDirect {
		t.Fatalf("first delivered = %+v (a gated message got through?)", in)
	}
	fake.Push(tgfake.Group(-100, 8, "Bob", "@sb_test_bot ping"))
	if in := rec.next(t); in.Room != "-100" || !in.Mentioned {
		t.Fatalf("group = %+v", in)
	}
	fake.Push(tgfake.Topic(-200, 6, 8, "Bob", "in six"))
	if in := rec.next(t); in.Room != "-200:topic:6" || in.SystemPrompt != "topic six" {
		t.Fatalf("topic = %+v", in)
	}
	fake.Push(tgfake.Topic(-200, 0, 8, "Bob", "in general"))
	if in := rec.next(t); in.Room != "-200:topic:1" || in.SystemPrompt != "forum" {
		t.Fatalf("general topic = %+v", in)
	}
	deadline := time.Now().Add(5 * time.Second)
	for fake.Pending() > 0 { // the next poll confirms the offset
		if time.Now().After(deadline) {
			t.Fatalf("%d updates never confirmed", fake.Pending())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := c.Status().Inbound; n != 4 {
		t.Errorf("inbound = %d, want 4", n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	long := strings.TrimSpace(strings.Repeat("lorem ipsum dolor sit amet ", 400)) // ~10.8k bytes
	if err := c.Send(ctx, "7", long); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(ctx, "-200:topic:6", "to six"); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(ctx, "-200:topic:1", "to general"); err != nil {
		t.Fatal(err)
	}
	sent := fake.Sent()
	var parts []string
	for _, s := range sent[:len(sent)-2] {
		if s.ChatID != "7" || s.ThreadID != "" || len(s.Text) > MaxMessage {
			t.Errorf("long part = %+v", s)
		}
		parts = append(parts, s.Text)
	}
	if len(parts) != 3 || strings.Join(parts, " ") != long {
		t.Errorf("long reply came in %d parts and does not add up", len(parts))
	}
	if got := sent[len(sent)-2]; got != (tgfake.Sent{ChatID: "-200", ThreadID: "6", Text: "to six"}) {
		t.Errorf("topic send = %+v", got)
	}
	if got := sent[len(sent)-1]; got != (tgfake.Sent{ChatID: "-200", Text: "to general"}) {
		t.Errorf("general send = %+v", got)
	}
	if s := c.Status(); s.Outbound != int64(len(sent)) {
		t.Errorf("outbound = %d, want %d", s.Outbound, len(sent))
	}
	if strings.Contains(logs.String(), token) || !strings.Contains(logs.String(), "Bad Gateway") {
		t.Errorf("logs hold the token or lack the failures:\n%s", logs)
	}
}

func TestSendRetriesAfter429(t *testing.T) {
	fake := tgfake.Start(t, token)
	c := start(t, Config{APIRoot: fake.URL(), Deliver: newRecorder()})
	fake.Fail("sendMessage", tgfake.Failure{Code: 429, Description: "Too Many Requests: retry after 1", RetryAfter: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	began := time.Now()
	if err := c.Send(ctx, "7", "hi"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(began); d < 900*time.Millisecond {
		t.Errorf("sent after %s, before retry_after", d)
	}
	fake.Fail("sendMessage", tgfake.Failure{Code: 400, Description: "Bad Request: chat not found"})
	if err := c.Send(ctx, "9", "hi"); err == nil || !strings.Contains(err.Error(), "chat not found") {
		t.Errorf("err = %v", err)
	}
	if err := c.Send(ctx, "#room", "hi"); err == nil {
		t.Error("bad target accepted")
	}
}

// TestTokenNeverInErrors: a dead API root gives transport errors, whose
// request URL holds the token; neither the status nor the logs show it.
func TestTokenNeverInErrors(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	root := dead.URL
	dead.Close()
	logs := &syncBuffer{}
	c := start(t, Config{APIRoot: root, Deliver: newRecorder(), Logger: slog.New(slog.NewTextHandler(logs, nil))})
	deadline := time.Now().Add(5 * time.Second)
	for c.Status().LastError == "" {
		if time.Now().After(deadline) {
			t.Fatal("no error recorded")
		}
		time.Sleep(5 * time.Millisecond)
	}
	s := c.Status()
	if s.Connected || s.State != "backoff" || strings.Contains(s.LastError, token) || !strings.Contains(s.LastError, "<token>") {
		t.Errorf("status = %+v", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Send(ctx, "7", "x"); err == nil || strings.Contains(err.Error(), token) {
		t.Errorf("send err = %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), token) {
		t.Errorf("logs hold the token:\n%s", logs)
	}
	if c.Status().State != "stopped" || c.Close() == nil {
		t.Errorf("after close: %+v", c.Status())
	}
}

func TestWebhook(t *testing.T) {
	fake := tgfake.Start(t, token)
	rec := newRecorder()
	c := start(t, Config{APIRoot: fake.URL(), Deliver: rec, WebhookURL: "https://bot.example.com/telegram-webhook", WebhookSecret: "s3cret",
		Policy: channel.Policy{DMPolicy: channel.DMPolicyOpen}})
	post := func(secret string, body []byte) int {
		req := httptest.NewRequest(http.MethodPost, "/telegram-webhook", bytes.NewReader(body))
		if secret != "" {
			req.Header.Set(SecretHeader, secret)
		}
		w := httptest.NewRecorder()
		c.ServeHTTP(w, req)
		return w.Code
	}
	body := fake.Update(tgfake.DM(7, "Ann", "via webhook"))
	waitConnected(t, c)
	if h := fake.Webhook(); h.URL != "https://bot.example.com/telegram-webhook" || h.Secret != "s3cret" {
		t.Errorf("webhook = %+v", h)
	}
	if fake.Calls("getUpdates") != 0 {
		t.Error("webhook mode polled")
	}
	if code := post("wrong", body); code != http.StatusUnauthorized {
		t.Errorf("wrong secret: %d", code)
	}
	if code := post("", body); code != http.StatusUnauthorized {
		t.Errorf("no secret: %d", code)
	}
	if code := post("s3cret", []byte("{")); code != http.StatusBadRequest {
		t.Errorf("bad body: %d", code)
	}
	if code := post("s3cret", body); code != http.StatusOK {
		t.Fatalf("right secret: %d", code)
	}
	if in := rec.next(t); in.Text != "via webhook" {
		t.Errorf("delivered = %+v", in)
	}
	if code := post("s3cret", body); code != http.StatusOK { // Telegram's retry of the same update
		t.Errorf("repeat: %d", code)
	}
	rec.err = errors.New("store down")
	if code := post("s3cret", fake.Update(tgfake.DM(7, "Ann", "later"))); code != http.StatusInternalServerError {
		t.Errorf("refused delivery: %d", code)
	}
	if n := len(rec.ins); n != 1 {
		t.Errorf("delivered %d, want 1 (the repeat is dropped)", n)
	}
}

func ptr[T any](v T) *T { return &v }

func FuzzToInbound(f *testing.F) {
	for _, m := range []map[string]any{
		tgfake.DM(7, "Ann", "hi"), tgfake.Group(-100, 7, "Ann", "@sb_test_bot hi"), tgfake.Topic(-100, 3, 7, "Ann", "x"),
	} {
		raw, _ := json.Marshal(map[string]any{"update_id": 1, "message": m})
		f.Add(raw)
	}
	f.Add([]byte(`{"update_id":1,"message":{"chat":{"id":1,"type":"supergroup","is_forum":true},"from":{"id":2},"text":"x","message_thread_id":-4,"is_topic_message":true}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		u, err := ParseUpdate(raw)
		if err != nil {
			return
		}
		in, err := ToInbound(me, u, nil)
		if err != nil {
			return
		}
		if in.Channel != Name || strings.TrimSpace(in.Text) == "" || in.SenderName == "" {
			t.Fatalf("inbound = %+v", in)
		}
		switch in.Kind {
		case channel.KindDirect:
			if in.Room != "" {
				t.Fatalf("dm with room %+v", in)
			}
		case channel.KindGroup:
			key := channel.SessionKey("main", "main", channel.DMScopeMain, in)
			r, ok := channel.RouteFromKey(Name, key)
			if !ok || r.To != in.Room {
				t.Fatalf("key %q routes to %+v %v, want %q", key, r, ok, in.Room)
			}
		default:
			t.Fatalf("kind %q", in.Kind)
		}
		if _, err := ParseTarget(in.ReplyTo()); err != nil {
			t.Fatalf("reply target %q: %v", in.ReplyTo(), err)
		}
	})
}

// TestBackoffAndPromptClose: a failing getUpdates is retried with a
// growing delay, not in a busy loop; the connector recovers, counts the
// reconnect, and Close cancels an in-flight long poll at once.
func TestBackoffAndPromptClose(t *testing.T) {
	fake := tgfake.Start(t, token)
	var fails []tgfake.Failure
	for range 6 {
		fails = append(fails, tgfake.Failure{Code: 409, Description: "Conflict: terminated by other getUpdates request"})
	}
	rec := newRecorder()
	c, err := New(Config{Token: token, APIRoot: fake.URL(), Deliver: rec, Policy: channel.Policy{DMPolicy: channel.DMPolicyOpen},
		PollTimeout: 30 * time.Second, MinBackoff: 40 * time.Millisecond, MaxBackoff: 160 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c.Start()
	defer c.Close()
	waitConnected(t, c)
	fake.Fail("getUpdates", fails...)
	fake.Push(tgfake.DM(7, "Ann", "one")) // wakes the first long poll
	rec.next(t)
	began := time.Now()
	fake.Push(tgfake.DM(7, "Ann", "two"))
	rec.next(t)
	// Six failures at 40, 80, 160, 160, 160, 160 ms (each halved at
	// worst by jitter): at least ~380 ms, and only seven polls.
	if d := time.Since(began); d < 350*time.Millisecond {
		t.Errorf("recovered after %s: no backoff", d)
	}
	if n := fake.Calls("getUpdates"); n > 10 {
		t.Errorf("%d getUpdates calls: busy loop", n)
	}
	s := c.Status()
	if !s.Connected || s.Reconnects != 1 || s.LastError != "" {
		t.Errorf("status = %+v", s)
	}
	time.Sleep(50 * time.Millisecond) // the next long poll is in flight
	began = time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("Close took %s: the long poll was not cancelled", d)
	}
}

// TestWebhookNotReady: before getMe answers, webhook updates get 503 (which
// Telegram retries) rather than being dropped.
func TestWebhookNotReady(t *testing.T) {
	fake := tgfake.Start(t, token)
	var fails []tgfake.Failure
	for range 1000 {
		fails = append(fails, tgfake.Failure{Code: 502, Description: "Bad Gateway"})
	}
	fake.Fail("getMe", fails...)
	c := start(t, Config{APIRoot: fake.URL(), Deliver: newRecorder(), WebhookURL: "https://x.example/tg", WebhookSecret: "s"})
	req := httptest.NewRequest(http.MethodPost, "/tg", bytes.NewReader(fake.Update(tgfake.DM(7, "Ann", "early"))))
	req.Header.Set(SecretHeader, "s")
	w := httptest.NewRecorder()
	c.ServeHTTP(w, req)
	if w.Code != http.StatusServiceUnavailable {
		t.Errorf("status %d, want 503", w.Code)
	}
	req = httptest.NewRequest(http.MethodGet, "/tg", nil)
	w = httptest.NewRecorder()
	c.ServeHTTP(w, req)
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d, want 405", w.Code)
	}
}

func TestCommandForBot(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/status@sb_test_bot", "/status"},
		{"/status@SB_Test_Bot", "/status"},
		{"  /compact@sb_test_bot focus on X", "/compact focus on X"},
		{"/reset@sb_test_bot\nhello", "/reset\nhello"},
		{"/status@other_bot", "/status@other_bot"},
		{"/status@sb_test_bot2", "/status@sb_test_bot2"},
		{"/status", "/status"},
		{"mail me@sb_test_bot", "mail me@sb_test_bot"},
		{"hi /status@sb_test_bot", "hi /status@sb_test_bot"},
	} {
		if got := commandForBot(tc.in, "sb_test_bot"); got != tc.want {
			t.Errorf("commandForBot(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := commandForBot("/status@sb_test_bot", ""); got != "/status@sb_test_bot" {
		t.Errorf("without a username: %q", got)
	}
	// The group message still counts as a mention of the bot, and the
	// gateway gets the command by its own name.
	in, err := ToInbound(me, update(t, tgfake.Group(-1, 7, "Ann", "/status@sb_test_bot")), nil)
	if err != nil || !in.Mentioned || in.Text != "/status" {
		t.Errorf("ToInbound = %+v, %v", in, err)
	}
}
