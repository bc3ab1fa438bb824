package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestRequireBearer(t *testing.T) {
	e := newEnv(t, envOptions{gateway: func(c *Config) {
		c.AuthRateLimit = &AuthRateLimit{MaxAttempts: 3, Window: time.Minute, Lockout: time.Minute, ExemptLoopback: false}
	}})
	srv := httptest.NewServer(e.gw.RequireBearer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "inner")
	})))
	defer srv.Close()
	do := func(auth, origin string) (int, string) {
		req, _ := http.NewRequest("POST", srv.URL+"/mcp", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := do("Bearer "+testToken, ""); code != 200 || body != "inner" {
		t.Fatalf("right token = %d %q", code, body)
	}
	if code, body := do("bearer  "+testToken+" ", ""); code != 200 {
		t.Errorf("scheme is case-insensitive, spaces trimmed: %d %q", code, body)
	}
	if code, body := do("", ""); code != 401 || !strings.Contains(body, "missing bearer token") {
		t.Errorf("no token = %d %q", code, body)
	}
	if code, _ := do("Bearer "+testToken, "https://evil.example"); code != 403 {
		t.Errorf("foreign browser origin = %d, want 403", code)
	}
	for i := range 2 {
		if code, body := do("Bearer wrong", ""); code != 401 || !strings.Contains(body, "unauthorized") {
			t.Errorf("wrong token %d = %d %q", i, code, body)
		}
	}
	// The third failure locks the client out, the right token included.
	if code, _ := do("Bearer wrong", ""); code != 429 {
		t.Errorf("third wrong token = %d, want 429", code)
	}
	if code, body := do("Bearer "+testToken, ""); code != 429 || !strings.Contains(body, "too many failed authentication attempts") {
		t.Errorf("locked out = %d %q", code, body)
	}
}

func TestRequireBearerAuthNoneOnLoopback(t *testing.T) {
	e := newEnv(t, envOptions{config: `{gateway: {auth: {mode: "none"}}}`})
	srv := httptest.NewServer(e.gw.RequireBearer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "inner")
	})))
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("auth none on loopback = %d", resp.StatusCode)
	}
}
