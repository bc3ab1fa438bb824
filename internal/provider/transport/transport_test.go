package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// statuses answers with the given statuses in turn (and headers for each),
// then 200 "ok"; it counts the requests.
func statuses(t *testing.T, n *atomic.Int32, seq []int, hdr map[string]string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if got := r.Header.Get("Content-Type"); got != "application/json" {
			t.Errorf("Content-Type = %q", got)
		}
		if body, _ := io.ReadAll(r.Body); string(body) != `{"a":1}` {
			t.Errorf("attempt %d body = %q", i, body)
		}
		if i < len(seq) {
			for k, v := range hdr {
				w.Header().Set(k, v)
			}
			w.WriteHeader(seq[i])
			io.WriteString(w, `{"error":"no"}`)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestPostRetries(t *testing.T) {
	fast := map[string]string{"Retry-After-Ms": "1"}
	tests := []struct {
		name     string
		seq      []int
		hdr      map[string]string
		retries  int
		wantN    int32
		wantCode int // 0: success
	}{
		{"success", nil, nil, 2, 1, 0},
		{"500 then ok", []int{500}, fast, 2, 2, 0},
		{"409 and 429 are retried", []int{409, 429}, fast, 2, 3, 0},
		{"retries run out", []int{503, 503, 503}, fast, 2, 3, 503},
		{"no retries", []int{500}, fast, 0, 1, 500},
		{"400 is final", []int{400}, fast, 2, 1, 400},
		{"x-should-retry false wins", []int{503}, map[string]string{"Retry-After-Ms": "1", "x-should-retry": "false"}, 2, 1, 503},
		{"x-should-retry true wins", []int{400}, map[string]string{"Retry-After-Ms": "1", "x-should-retry": "true"}, 2, 2, 0},
		{"Retry-After too long ends retries", []int{429}, map[string]string{"Retry-After": "3600"}, 2, 1, 429},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			srv := statuses(t, &n, tt.seq, tt.hdr)
			res, err := Post(t.Context(), Request{URL: srv.URL, Body: []byte(`{"a":1}`), MaxRetries: tt.retries, Header: http.Header{"X-Test": {"1"}}})
			if got := n.Load(); got != tt.wantN {
				t.Errorf("requests = %d, want %d", got, tt.wantN)
			}
			if tt.wantCode == 0 {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				defer res.Body.Close()
				if b, _ := io.ReadAll(res.Body); string(b) != "ok" {
					t.Errorf("body = %q", b)
				}
				return
			}
			serr, ok := errors.AsType[*StatusError](err)
			if !ok || serr.Status != tt.wantCode || string(serr.Body) != `{"error":"no"}` {
				t.Errorf("err = %#v, want a *StatusError %d with the body", err, tt.wantCode)
			}
		})
	}
}

func TestPostCancelledWhileWaiting(t *testing.T) {
	hit := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusServiceUnavailable)
		close(hit) // a second request would panic: there is none
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := Post(ctx, Request{URL: srv.URL, Body: []byte(`{"a":1}`), MaxRetries: 1})
		done <- err
	}()
	<-hit
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestRetryDelay(t *testing.T) {
	res := func(k, v string) *http.Response { return &http.Response{Header: http.Header{k: {v}}} }
	for _, tt := range []struct {
		name   string
		res    *http.Response
		min    time.Duration
		max    time.Duration
		allow  bool
		attemp int
	}{
		{"ms header", res("Retry-After-Ms", "250"), 250 * time.Millisecond, 250 * time.Millisecond, true, 0},
		{"seconds header", res("Retry-After", "2"), 2 * time.Second, 2 * time.Second, true, 0},
		{"too long", res("Retry-After", "61"), 61 * time.Second, 61 * time.Second, false, 0},
		{"backoff first", nil, 375 * time.Millisecond, 500 * time.Millisecond, true, 0},
		{"backoff third", nil, 1500 * time.Millisecond, 2 * time.Second, true, 2},
		{"backoff capped", nil, 6 * time.Second, 8 * time.Second, true, 30},
	} {
		d, ok := retryDelay(tt.res, tt.attemp)
		if d < tt.min || d > tt.max || ok != tt.allow {
			t.Errorf("%s: retryDelay = %v, %v; want %v..%v, %v", tt.name, d, ok, tt.min, tt.max, tt.allow)
		}
	}
}

type errReader struct{ r io.Reader }

func (e errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

func TestSSEReader(t *testing.T) {
	stream := ": comment\r\n" +
		"event: message_start\r\ndata: {\"a\":1}\r\n\r\n" +
		"data: line one\ndata:line two\nid: 7\n\n" +
		"\n\n" +
		"event: ping\n\n" +
		"data: [DONE]"
	r := NewSSEReader(strings.NewReader(stream))
	var got []string
	for {
		ev, ok := r.Next()
		if !ok {
			break
		}
		got = append(got, ev.Type+"|"+string(ev.Data))
	}
	want := []string{`message_start|{"a":1}`, "|line one\nline two", "ping|", "|[DONE]"}
	if strings.Join(got, ";") != strings.Join(want, ";") {
		t.Errorf("events = %q, want %q", got, want)
	}
	if r.Err() != nil {
		t.Errorf("Err = %v", r.Err())
	}

	r = NewSSEReader(errReader{strings.NewReader("data: a\n\ndata: cut")})
	if ev, ok := r.Next(); !ok || string(ev.Data) != "a" {
		t.Fatalf("first event = %v, %v", ev, ok)
	}
	if _, ok := r.Next(); ok {
		t.Error("an event cut by a read error was returned")
	}
	if !errors.Is(r.Err(), io.ErrUnexpectedEOF) {
		t.Errorf("Err = %v, want the read error", r.Err())
	}
}
