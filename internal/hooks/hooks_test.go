package hooks

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

type sink struct {
	mu   sync.Mutex
	keys []string
	fail bool
}

func (s *sink) submit(_ context.Context, key, msg string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return "", errors.New("down")
	}
	s.keys = append(s.keys, key+"|"+msg)
	return "run-1", nil
}

func newTest(t *testing.T, s *sink, r float64) *httptest.Server {
	t.Helper()
	h, err := New(Config{Token: "sekret", Submit: s.submit, NewID: func() string { return "u1" }, MaxBodyBytes: 64, Rate: 0})
	if err != nil {
		t.Fatal(err)
	}
	if r > 0 {
		h.limiter.SetLimit(0)
		h.limiter.SetBurst(int(r))
	}
	mux := http.NewServeMux()
	mux.Handle(h.Pattern(), h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestNewRejectsBadConfig(t *testing.T) {
	if _, err := New(Config{Submit: (&sink{}).submit, NewID: func() string { return "" }}); err == nil {
		t.Fatal("New without token succeeded")
	}
	if _, err := New(Config{Token: "t", Path: "/", Submit: (&sink{}).submit, NewID: func() string { return "" }}); err == nil {
		t.Fatal("New with path / succeeded")
	}
}

func TestHooks(t *testing.T) {
	s := &sink{}
	srv := newTest(t, s, 0)
	tests := []struct {
		name, method, path, auth, body string
		code                           int
		want                           string
	}{
		{"agent bearer", "POST", "/hooks/agent", "Bearer sekret", `{"message":"build failed"}`, 202, `"runId":"run-1"`},
		{"agent header", "POST", "/hooks/agent", "x:sekret", `{"message":"m","sessionKey":"hook:ci"}`, 202, `"sessionKey":"hook:ci"`},
		{"wake", "POST", "/hooks/wake", "Bearer sekret", `{"text":"new mail"}`, 202, `"sessionKey":"main"`},
		{"no token", "POST", "/hooks/agent", "", `{"message":"m"}`, 401, "hooks token"},
		{"wrong token", "POST", "/hooks/agent", "Bearer sekreT", `{"message":"m"}`, 401, "hooks token"},
		{"get", "GET", "/hooks/agent", "Bearer sekret", ``, 405, "POST only"},
		{"unknown", "POST", "/hooks/other", "Bearer sekret", `{"message":"m"}`, 404, "unknown hook"},
		{"bad json", "POST", "/hooks/agent", "Bearer sekret", `{`, 400, "JSON object"},
		{"too big", "POST", "/hooks/agent", "Bearer sekret", `{"message":"` + strings.Repeat("x", 100) + `"}`, 413, "larger than 64"},
		{"empty", "POST", "/hooks/agent", "Bearer sekret", `{"message":" "}`, 400, "message required"},
		{"foreign key", "POST", "/hooks/agent", "Bearer sekret", `{"message":"m","sessionKey":"main"}`, 400, "hook:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			if h, v, ok := strings.Cut(tc.auth, ":"); ok {
				req.Header.Set("x-openclaw-token", v)
				_ = h
			} else if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != tc.code || !strings.Contains(string(b), tc.want) {
				t.Fatalf("%d %s; want %d containing %q", res.StatusCode, b, tc.code, tc.want)
			}
		})
	}
	want := []string{"hook:u1|build failed", "hook:ci|m", "main|new mail"}
	if strings.Join(s.keys, ",") != strings.Join(want, ",") {
		t.Fatalf("submitted %v; want %v (rejected requests must start nothing)", s.keys, want)
	}
}

func TestRateLimitAndSubmitFailure(t *testing.T) {
	s := &sink{}
	srv := newTest(t, s, 2)
	post := func() int {
		req, _ := http.NewRequest("POST", srv.URL+"/hooks/agent", strings.NewReader(`{"message":"m"}`))
		req.Header.Set("Authorization", "Bearer sekret")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if a, b, c := post(), post(), post(); a != 202 || b != 202 || c != 429 {
		t.Fatalf("codes %d %d %d; want 202 202 429", a, b, c)
	}
	s2 := &sink{fail: true}
	srv2 := newTest(t, s2, 0)
	req, _ := http.NewRequest("POST", srv2.URL+"/hooks/wake", strings.NewReader(`{"text":"x"}`))
	req.Header.Set("Authorization", "Bearer sekret")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 503 {
		t.Fatalf("submit failure = %d, want 503", res.StatusCode)
	}
}
