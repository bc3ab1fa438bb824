package readiness

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	full := errors.New("no space left on device")
	down := errors.New("connection refused")
	for _, tc := range []struct {
		name  string
		probe error
		ping  error
		noDB  bool
		want  []string
	}{
		{name: "ready"},
		{name: "ready without a database", noDB: true},
		{name: "state dir", probe: full, want: []string{"state dir not writable: no space left on device"}},
		{name: "database", ping: down, want: []string{"database unreachable: connection refused"}},
		{name: "both", probe: full, ping: down, want: []string{
			"state dir not writable: no space left on device",
			"database unreachable: connection refused",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &Tracker{Dir: "/state", Probe: func(dir string) error {
				if dir != "/state" {
					t.Errorf("probed %q", dir)
				}
				return tc.probe
			}}
			if !tc.noDB {
				tr.Ping = func(ctx context.Context) error {
					if _, ok := ctx.Deadline(); !ok {
						t.Error("ping without a deadline")
					}
					return tc.ping
				}
			}
			if got := tr.Check(); !slices.Equal(got, tc.want) {
				t.Errorf("Check = %q, want %q", got, tc.want)
			}
			if got := tr.Failing(); !slices.Equal(got, tc.want) {
				t.Errorf("Failing = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestClearsWhenWritableAgain probes a real directory: missing, then made.
func TestClearsWhenWritableAgain(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	tr := &Tracker{Dir: dir}
	if got := tr.Check(); len(got) != 1 || !strings.HasPrefix(got[0], "state dir not writable: ") {
		t.Fatalf("missing dir: Check = %q", got)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if got := tr.Check(); len(got) != 0 {
		t.Fatalf("after mkdir: Check = %q", got)
	}
}

// TestFailingIsACopy: a caller changing what Failing returned does not
// change the tracker's state.
func TestFailingIsACopy(t *testing.T) {
	tr := &Tracker{Probe: func(string) error { return errors.New("read-only") }}
	tr.Check()
	got := tr.Failing()
	got[0] = "changed"
	if again := tr.Failing(); again[0] != "state dir not writable: read-only" {
		t.Fatalf("Failing = %q after the caller changed its copy", again)
	}
}

func TestHandler(t *testing.T) {
	var fail error
	tr := &Tracker{Probe: func(string) error { return fail }}
	serve := func() (int, map[string]any) {
		rec := httptest.NewRecorder()
		tr.Handler(time.Now().Add(-time.Second))(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("body %q: %v", rec.Body, err)
		}
		return rec.Code, body
	}
	tr.Check()
	code, body := serve()
	if code != http.StatusOK || body["ready"] != true {
		t.Errorf("ready: %d %v", code, body)
	}
	if f, ok := body["failing"].([]any); !ok || len(f) != 0 {
		t.Errorf("ready: failing %v, want []", body["failing"])
	}
	if ms, _ := body["uptimeMs"].(float64); ms < 1000 {
		t.Errorf("uptimeMs %v, want at least 1000", body["uptimeMs"])
	}
	fail = errors.New("read-only file system")
	tr.Check()
	code, body = serve()
	if code != http.StatusServiceUnavailable || body["ready"] != false {
		t.Errorf("failing: %d %v", code, body)
	}
	if f, _ := body["failing"].([]any); len(f) != 1 || f[0] != "state dir not writable: read-only file system" {
		t.Errorf("failing reasons %v", body["failing"])
	}
}
