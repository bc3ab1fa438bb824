package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// sink is a Runner that records the actions it gets.
type sink struct {
	mu      sync.Mutex
	actions []Action
	fail    bool
}

func (s *sink) Agent(_ context.Context, a Action) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return "", errors.New("down")
	}
	s.actions = append(s.actions, a)
	return fmt.Sprintf("run-%d", len(s.actions)), nil
}

func (s *sink) Wake(_ context.Context, a Action) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return errors.New("down")
	}
	s.actions = append(s.actions, a)
	return nil
}

func (s *sink) Wait(context.Context, string) (Completion, error) {
	return Completion{Status: "ok", ReplyDisposition: "visible"}, nil
}

func (s *sink) got() []Action {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Action(nil), s.actions...)
}

func newTest(t *testing.T, s *sink, mod func(*Config)) (*httptest.Server, *Handler) {
	t.Helper()
	cfg := Config{Token: "sekret", Runner: s, NewID: func() string { return "u1" }, MaxBodyBytes: 512,
		KnownAgent: func(id string) bool { return id == "main" || id == "ops" },
		Now:        func() time.Time { return time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC) }}
	if mod != nil {
		mod(&cfg)
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(h.Pattern(), h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, h
}

func post(t *testing.T, srv *httptest.Server, path, auth, body string, headers ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
	switch {
	case strings.HasPrefix(auth, "x:"):
		req.Header.Set("x-openclaw-token", auth[2:])
	case auth != "":
		req.Header.Set("Authorization", auth)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestNewRejectsBadConfig(t *testing.T) {
	if _, err := New(Config{Runner: &sink{}, NewID: func() string { return "" }}); err == nil {
		t.Fatal("New without token succeeded")
	}
	if _, err := New(Config{Token: "t", Path: "/", Runner: &sink{}, NewID: func() string { return "" }}); err == nil {
		t.Fatal("New with path / succeeded")
	}
}

func TestDirectHooks(t *testing.T) {
	s := &sink{}
	srv, _ := newTest(t, s, func(c *Config) { c.AllowedAgentIDs = []string{"main"} })
	tests := []struct {
		name, path, auth, body string
		code                   int
		want                   string
	}{
		{"agent bearer", "/hooks/agent", "Bearer sekret", `{"message":"build failed","name":"CI"}`, 200, `"runId":"run-1"`},
		{"agent header, no delivery", "/hooks/agent", "x:sekret", `{"message":"m","deliver":false,"channel":"irc","to":"#x"}`, 200, `"ok":true`},
		{"agent with a whole destination", "/hooks/agent", "Bearer sekret", `{"message":"m","channel":"irc","to":"#ops","timeoutSeconds":30}`, 200, `"runId"`},
		{"wake", "/hooks/wake", "Bearer sekret", `{"text":"new mail","mode":"now"}`, 200, `"eventOutcome":"queued"`},
		{"no token", "/hooks/agent", "", `{"message":"m"}`, 401, "hooks token"},
		{"wrong token", "/hooks/agent", "Bearer sekreT", `{"message":"m"}`, 401, "hooks token"},
		{"query token", "/hooks/agent?token=sekret", "Bearer sekret", `{"message":"m"}`, 400, "query-string"},
		{"no mapping", "/hooks/other", "Bearer sekret", `{"message":"m"}`, 404, "no hook mapping"},
		{"bad json", "/hooks/agent", "Bearer sekret", `{`, 400, "JSON object"},
		{"not an object", "/hooks/agent", "Bearer sekret", `[1]`, 400, "JSON object"},
		{"too big", "/hooks/agent", "Bearer sekret", `{"message":"` + strings.Repeat("x", 600) + `"}`, 413, "larger than 512"},
		{"empty", "/hooks/agent", "Bearer sekret", `{"message":" "}`, 400, "message required"},
		{"request key not allowed", "/hooks/agent", "Bearer sekret", `{"message":"m","sessionKey":"hook:ci"}`, 400, "allowRequestSessionKey"},
		{"half a destination", "/hooks/agent", "Bearer sekret", `{"message":"m","channel":"irc"}`, 400, "both a concrete channel and to"},
		{"last is not direct", "/hooks/agent", "Bearer sekret", `{"message":"m","channel":"last","to":"x"}`, 400, "both a concrete channel and to"},
		{"unknown agent", "/hooks/agent", "Bearer sekret", `{"message":"m","agentId":"ghost"}`, 400, "unknown agentId"},
		{"agent not allowed", "/hooks/agent", "Bearer sekret", `{"message":"m","agentId":"ops"}`, 400, "allowedAgentIds"},
		{"bad timeout", "/hooks/agent", "Bearer sekret", `{"message":"m","timeoutSeconds":1.5}`, 400, "positive integer"},
		{"wake without text", "/hooks/wake", "Bearer sekret", `{}`, 400, "text required"},
		{"wake bad mode", "/hooks/wake", "Bearer sekret", `{"text":"x","mode":"later"}`, 400, "mode"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := post(t, srv, tc.path, tc.auth, tc.body); code != tc.code || !strings.Contains(body, tc.want) {
				t.Fatalf("%d %s; want %d containing %q", code, body, tc.code, tc.want)
			}
		})
	}
	got := s.got()
	if len(got) != 4 {
		t.Fatalf("actions = %+v (rejected requests must start nothing)", got)
	}
	if a := got[0]; a.Kind != "agent" || a.SessionKey != "hook:u1" || a.Message != "build failed" || a.Name != "CI" || !a.Deliver {
		t.Errorf("first action = %+v", a)
	}
	if a := got[1]; a.Deliver || a.Channel != "" || a.To != "" {
		t.Errorf("deliver:false keeps no destination: %+v", a)
	}
	if a := got[2]; a.Channel != "irc" || a.To != "#ops" || a.Timeout != 30*time.Second {
		t.Errorf("destination = %+v", a)
	}
	if a := got[3]; a.Kind != "wake" || a.Text != "new mail" {
		t.Errorf("wake = %+v", a)
	}
}

func TestSessionPolicyReplayAndCompletion(t *testing.T) {
	s := &sink{}
	srv, _ := newTest(t, s, func(c *Config) {
		c.AllowRequestSessionKey = true
		c.AllowedSessionKeyPrefixes = []string{"hook:", " "}
	})
	if code, body := post(t, srv, "/hooks/agent", "Bearer sekret", `{"message":"m","sessionKey":"hook:ci","sessionMode":"persistent"}`); code != 200 || !strings.Contains(body, "run-1") {
		t.Fatalf("allowed key: %d %s", code, body)
	}
	if code, body := post(t, srv, "/hooks/agent", "Bearer sekret", `{"message":"m","sessionKey":"agent:main:main"}`); code != 400 || !strings.Contains(body, "allowedSessionKeyPrefixes") {
		t.Fatalf("key outside the prefixes: %d %s", code, body)
	}
	if code, body := post(t, srv, "/hooks/agent", "Bearer sekret", `{"message":"m","sessionMode":"persistent"}`); code != 400 || !strings.Contains(body, "persistent") {
		t.Fatalf("persistent without a key: %d %s", code, body)
	}
	// The same idempotency key replays the run; another starts a new one.
	_, b1 := post(t, srv, "/hooks/agent", "Bearer sekret", `{"message":"once"}`, "Idempotency-Key", "k1")
	_, b2 := post(t, srv, "/hooks/agent", "Bearer sekret", `{"message":"once"}`, "Idempotency-Key", "k1")
	_, b3 := post(t, srv, "/hooks/agent", "Bearer sekret", `{"message":"once","idempotencyKey":"k2"}`)
	if b1 != b2 || b1 == b3 || len(s.got()) != 3 {
		t.Fatalf("replay: %s / %s / %s, %d runs", b1, b2, b3, len(s.got()))
	}
	code, body := post(t, srv, "/hooks/agent", "Bearer sekret", `{"message":"wait","waitForCompletion":true}`)
	var res struct {
		OK         bool       `json:"ok"`
		RunID      string     `json:"runId"`
		Completion Completion `json:"completion"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &res) != nil || res.Completion.Status != "ok" || res.Completion.ReplyDisposition != "visible" {
		t.Fatalf("waitForCompletion: %d %s", code, body)
	}
}

func TestMappings(t *testing.T) {
	s := &sink{}
	no := false
	srv, _ := newTest(t, s, func(c *Config) {
		c.Mappings = []Mapping{
			{ID: "gh", MatchPath: "github", MatchSource: "push", MessageTemplate: "Push to {{repository.name}} by {{payload.pusher.name}}: {{commits[0].message}} ({{headers.x-github-event}}, {{query.kind}}, {{path}})",
				SessionKey: "hook:github", Name: "GitHub {{repository.name}}", Channel: "irc", To: "#{{repository.name}}"},
			{ID: "quiet", MatchPath: "quiet", MessageTemplate: "{{missing}}"},
			{ID: "mail", MatchPath: "mail", Action: "wake", TextTemplate: "Mail from {{from}}"},
			{ID: "nodeliver", MatchPath: "nd", MessageTemplate: "x", Deliver: &no, Channel: "irc", To: "#y"},
		}
	})
	payload := `{"source":"push","repository":{"name":"sb"},"pusher":{"name":"ana"},"commits":[{"message":"fix"}]}`
	if code, body := post(t, srv, "/hooks/github?kind=ci", "Bearer sekret", payload, "X-GitHub-Event", "push"); code != 200 || !strings.Contains(body, "run-1") {
		t.Fatalf("github mapping: %d %s", code, body)
	}
	if code, _ := post(t, srv, "/hooks/github", "Bearer sekret", `{"source":"pull"}`); code != 404 {
		t.Errorf("a source that does not match: %d", code)
	}
	if code, _ := post(t, srv, "/hooks/quiet", "Bearer sekret", `{}`); code != 204 {
		t.Errorf("an empty message: %d, want 204 and no run", code)
	}
	if code, body := post(t, srv, "/hooks/mail", "Bearer sekret", `{"from":"bob"}`); code != 200 || !strings.Contains(body, "queued") {
		t.Errorf("wake mapping: %d %s", code, body)
	}
	post(t, srv, "/hooks/nd", "Bearer sekret", `{}`)
	got := s.got()
	if len(got) != 3 {
		t.Fatalf("actions = %+v", got)
	}
	a := got[0]
	if a.Message != "Push to sb by ana: fix (push, ci, github)" || a.SessionKey != "hook:github" || a.Name != "GitHub sb" || a.Channel != "irc" || a.To != "#sb" {
		t.Errorf("github action = %+v", a)
	}
	if got[1].Kind != "wake" || got[1].Text != "Mail from bob" {
		t.Errorf("mail action = %+v", got[1])
	}
	if got[2].Deliver || got[2].Channel != "" {
		t.Errorf("deliver:false mapping = %+v", got[2])
	}
}

func TestRateLimitAndRunnerFailure(t *testing.T) {
	s := &sink{}
	srv, h := newTest(t, s, nil)
	h.limiter.SetLimit(0)
	h.limiter.SetBurst(2)
	codes := []int{}
	for range 3 {
		c, _ := post(t, srv, "/hooks/agent", "Bearer sekret", `{"message":"m"}`)
		codes = append(codes, c)
	}
	if fmt.Sprint(codes) != "[200 200 429]" {
		t.Fatalf("codes %v; want 200 200 429", codes)
	}
	srv2, _ := newTest(t, &sink{fail: true}, nil)
	if c, _ := post(t, srv2, "/hooks/wake", "Bearer sekret", `{"text":"x"}`); c != 503 {
		t.Fatalf("runner failure = %d, want 503", c)
	}
}

func TestRender(t *testing.T) {
	var payload map[string]any
	_ = json.Unmarshal([]byte(`{"a":{"b":[{"c":1.5},{"c":"two"}]},"t":true,"n":null,"o":{"k":"v"}}`), &payload)
	sc := scope{payload: payload, headers: map[string]string{"x-h": "H"}, query: map[string]string{"q": "Q"}, path: "p", now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	for tpl, want := range map[string]string{
		"{{a.b[0].c}}/{{payload.a.b[1].c}}":    "1.5/two",
		"{{t}} {{n}} {{missing.x}}":            "true  ",
		"{{o}}":                                `{"k":"v"}`,
		"{{ headers.X-H }}{{query.q}}{{path}}": "HQp",
		"{{now}}":                              "2026-01-02T03:04:05Z",
		"{{a.b[9].c}}{{a.b[x]}}{{a[0]}}":       "",
		"plain {{ unclosed":                    "plain {{ unclosed",
	} {
		if got := render(tpl, sc); got != want {
			t.Errorf("render(%q) = %q, want %q", tpl, got, want)
		}
	}
}

// FuzzRender: templates and payloads from outside never panic.
func FuzzRender(f *testing.F) {
	f.Add("{{a.b[0]}}", `{"a":{"b":[1]}}`)
	f.Add("{{a[0][1][x]}}", `{"a":[[1,2]]}`)
	f.Add("{{]]][[[.}}", `{}`)
	f.Fuzz(func(t *testing.T, tpl, doc string) {
		var payload map[string]any
		_ = json.Unmarshal([]byte(doc), &payload)
		_ = render(tpl, scope{payload: payload})
	})
}
