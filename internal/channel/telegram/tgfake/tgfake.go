// Package tgfake is a fake Telegram Bot API server for tests, written from
// the official API reference's shapes (core.telegram.org/bots/api): the
// {"ok", "result"} / {"ok": false, "error_code", "description",
// "parameters"} envelope, form or JSON parameters, getMe, getUpdates (long
// poll with timeout and offset confirmation), sendMessage (recorded, with
// the 4096-character limit and the General topic's "thread not found"),
// setWebhook and deleteWebhook (getUpdates answers 409 while a webhook is
// set). It runs on httptest and needs no network. Test-only: tests import
// it, no production package does.
package tgfake

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
)

// Bot is the fake bot's identity.
const (
	BotID       = 4242
	BotUsername = "sb_test_bot"
)

// Sent is one recorded sendMessage.
type Sent struct {
	// ChatID, ThreadID ("" when absent) and Text are the parameters.
	ChatID, ThreadID, Text string
}

// Webhook is the registered webhook ("" URL when none).
type Webhook struct {
	// URL and Secret are setWebhook's url and secret_token.
	URL, Secret string
}

// Failure is an injected error answer for a method.
type Failure struct {
	// Code and Description are the error envelope's; RetryAfter, when
	// set, is parameters.retry_after.
	Code        int
	Description string
	RetryAfter  int
}

// Server is a running fake. It is safe for concurrent use.
type Server struct {
	// Token is the only bot token the server accepts.
	Token string
	srv   *httptest.Server

	mu      sync.Mutex // guards the fields that follow
	updates []json.RawMessage
	ids     []int64
	nextID  int64
	wake    chan struct{} // closed when an update arrives
	sent    []Sent
	sentC   chan struct{} // closed when a message is sent
	hook    Webhook
	fail    map[string][]Failure
	calls   map[string]int
	nextMsg int64
}

// Start runs a fake for token; it stops when the test ends.
func Start(t testing.TB, token string) *Server {
	t.Helper()
	s := &Server{Token: token, nextID: 100, wake: make(chan struct{}), sentC: make(chan struct{}), fail: map[string][]Failure{}, calls: map[string]int{}, nextMsg: 1}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the API root (what channels.telegram.apiRoot takes).
func (s *Server) URL() string { return s.srv.URL }

// Push queues an update with message msg for getUpdates and returns its
// update_id.
func (s *Server) Push(msg map[string]any) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	raw, err := json.Marshal(map[string]any{"update_id": s.nextID, "message": msg})
	if err != nil {
		panic(err)
	}
	s.updates = append(s.updates, raw)
	s.ids = append(s.ids, s.nextID)
	close(s.wake)
	s.wake = make(chan struct{})
	return s.nextID
}

// Update returns an update body with msg, as a webhook POST carries it.
func (s *Server) Update(msg map[string]any) []byte {
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	s.mu.Unlock()
	raw, err := json.Marshal(map[string]any{"update_id": id, "message": msg})
	if err != nil {
		panic(err)
	}
	return raw
}

// Pending is how many updates getUpdates has not had confirmed.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.updates)
}

// Sent returns the recorded sendMessage calls.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// Calls is how many times method was called.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// Webhook returns the registered webhook.
func (s *Server) Webhook() Webhook {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hook
}

// Fail makes the next calls of method answer f, once per f.
func (s *Server) Fail(method string, f ...Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail[method] = append(s.fail[method], f...)
}

// Heal drops the failures still injected for method: its next calls
// succeed.
func (s *Server) Heal(method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.fail, method)
}

// WaitSent waits until at least n messages were sent and returns them,
// failing t after d.
func (s *Server) WaitSent(t testing.TB, n int, d time.Duration) []Sent {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		got, c := append([]Sent(nil), s.sent...), s.sentC
		s.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-c:
		case <-deadline.C:
			t.Fatalf("tgfake: %d messages sent after %s, want %d: %+v", len(got), d, n, got)
		}
	}
}

// DM is a private-chat message from user.
func DM(user int64, name, text string) map[string]any {
	return map[string]any{
		"message_id": 1, "date": time.Now().Unix(), "text": text,
		"from": map[string]any{"id": user, "is_bot": false, "first_name": name, "username": strings.ToLower(name)},
		"chat": map[string]any{"id": user, "type": "private", "first_name": name},
	}
}

// Group is a supergroup message from user in chat.
func Group(chat, user int64, name, text string) map[string]any {
	m := DM(user, name, text)
	m["chat"] = map[string]any{"id": chat, "type": "supergroup", "title": "test group"}
	return m
}

// Topic is a forum supergroup message in topic thread (0: the General
// topic, whose messages carry no thread id).
func Topic(chat, thread, user int64, name, text string) map[string]any {
	m := DM(user, name, text)
	m["chat"] = map[string]any{"id": chat, "type": "supergroup", "title": "test forum", "is_forum": true}
	if thread > 0 {
		m["message_thread_id"] = thread
		m["is_topic_message"] = true
		m["reply_to_message"] = map[string]any{"message_id": thread, "date": 0,
			"chat": m["chat"], "from": map[string]any{"id": 1, "is_bot": false, "first_name": "creator"},
			"forum_topic_created": map[string]any{"name": "topic", "icon_color": 7322096}}
	}
	return m
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		writeErr(w, Failure{Code: 404, Description: "Not Found"})
		return
	}
	if token != s.Token {
		writeErr(w, Failure{Code: 401, Description: "Unauthorized"})
		return
	}
	params, err := readParams(r)
	if err != nil {
		writeErr(w, Failure{Code: 400, Description: "Bad Request: " + err.Error()})
		return
	}
	s.mu.Lock()
	s.calls[method]++
	if fs := s.fail[method]; len(fs) > 0 {
		s.fail[method] = fs[1:]
		s.mu.Unlock()
		writeErr(w, fs[0])
		return
	}
	s.mu.Unlock()
	switch method {
	case "getMe":
		writeOK(w, map[string]any{"id": BotID, "is_bot": true, "first_name": "Switchboard Test", "username": BotUsername,
			"can_join_groups": true, "can_read_all_group_messages": false, "supports_inline_queries": false})
	case "getUpdates":
		s.getUpdates(w, r, params)
	case "sendMessage":
		s.sendMessage(w, params)
	case "setWebhook":
		if params.Get("url") == "" {
			writeErr(w, Failure{Code: 400, Description: "Bad Request: bad webhook: An HTTPS URL must be provided for webhook"})
			return
		}
		s.mu.Lock()
		s.hook = Webhook{URL: params.Get("url"), Secret: params.Get("secret_token")}
		s.mu.Unlock()
		writeOK(w, true)
	case "deleteWebhook":
		s.mu.Lock()
		s.hook = Webhook{}
		s.mu.Unlock()
		writeOK(w, true)
	default:
		writeErr(w, Failure{Code: 404, Description: "Not Found: method not found"})
	}
}

// getUpdates confirms the updates before offset, then answers at once
// with what is pending or waits up to timeout seconds for one.
func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, p url.Values) {
	offset, _ := strconv.ParseInt(p.Get("offset"), 10, 64)
	timeout, _ := strconv.Atoi(p.Get("timeout"))
	deadline := time.NewTimer(time.Duration(min(max(timeout, 0), 50)) * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if s.hook.URL != "" {
			s.mu.Unlock()
			writeErr(w, Failure{Code: 409, Description: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"})
			return
		}
		for len(s.ids) > 0 && offset > 0 && s.ids[0] < offset {
			s.ids, s.updates = s.ids[1:], s.updates[1:]
		}
		if len(s.updates) > 0 {
			out := append([]json.RawMessage(nil), s.updates...)
			s.mu.Unlock()
			writeOK(w, out)
			return
		}
		wake := s.wake
		s.mu.Unlock()
		select {
		case <-wake:
		case <-deadline.C:
			writeOK(w, []json.RawMessage{})
			return
		case <-r.Context().Done():
			return
		}
	}
}

func (s *Server) sendMessage(w http.ResponseWriter, p url.Values) {
	chat, text, thread := p.Get("chat_id"), p.Get("text"), p.Get("message_thread_id")
	switch n := len(utf16.Encode([]rune(text))); {
	case chat == "":
		writeErr(w, Failure{Code: 400, Description: "Bad Request: chat_id is empty"})
		return
	case strings.TrimSpace(text) == "":
		writeErr(w, Failure{Code: 400, Description: "Bad Request: message text is empty"})
		return
	case n > 4096:
		writeErr(w, Failure{Code: 400, Description: "Bad Request: message is too long"})
		return
	case thread == "1":
		writeErr(w, Failure{Code: 400, Description: "Bad Request: message thread not found"})
		return
	}
	s.mu.Lock()
	s.sent = append(s.sent, Sent{ChatID: chat, ThreadID: thread, Text: text})
	close(s.sentC)
	s.sentC = make(chan struct{})
	id := s.nextMsg
	s.nextMsg++
	s.mu.Unlock()
	chatID, _ := strconv.ParseInt(chat, 10, 64)
	msg := map[string]any{"message_id": id, "date": time.Now().Unix(), "text": text,
		"from": map[string]any{"id": BotID, "is_bot": true, "first_name": "Switchboard Test", "username": BotUsername},
		"chat": map[string]any{"id": chatID, "type": "private"}}
	if thread != "" {
		msg["message_thread_id"], _ = strconv.ParseInt(thread, 10, 64)
		msg["is_topic_message"] = true
	}
	writeOK(w, msg)
}

// readParams reads a method's parameters from the query string and a
// form or JSON body, as the Bot API accepts them.
func readParams(r *http.Request) (url.Values, error) {
	v := r.URL.Query()
	if r.Body == nil {
		return v, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, fmt.Errorf("can't parse JSON: %w", err)
		}
		for k, x := range m {
			switch x := x.(type) {
			case string:
				v.Set(k, x)
			default:
				b, _ := json.Marshal(x)
				v.Set(k, string(b))
			}
		}
	case "application/x-www-form-urlencoded", "":
		f, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, err
		}
		for k, xs := range f {
			v[k] = xs
		}
	default:
		return nil, fmt.Errorf("unsupported content type %q", ct)
	}
	return v, nil
}

func writeOK(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

func writeErr(w http.ResponseWriter, f Failure) {
	body := map[string]any{"ok": false, "error_code": f.Code, "description": f.Description}
	if f.RetryAfter > 0 {
		body["parameters"] = map[string]any{"retry_after": f.RetryAfter}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.Code)
	_ = json.NewEncoder(w).Encode(body)
}
