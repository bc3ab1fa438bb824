// Package providertest owns the test helpers shared by the provider adapter
// tests: fake HTTP servers on 127.0.0.1 that speak Server-Sent Events, and a
// recorder for the requests those servers receive. It is imported only by
// _test.go files of internal/provider/... packages.
package providertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// NewServer starts an httptest server on 127.0.0.1 running h and closes it
// when the test ends. Use its Client as the adapter's HTTP client so that
// closing the server also closes the client's idle connections.
func NewServer(tb testing.TB, h http.Handler) *httptest.Server {
	tb.Helper()
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv
}

// SSE writes a text/event-stream response, flushing after every event.
type SSE struct {
	w http.ResponseWriter
	f http.Flusher
}

// NewSSE writes the 200 status and event-stream headers to w.
func NewSSE(w http.ResponseWriter) *SSE {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	s := &SSE{w: w, f: f}
	s.flush()
	return s
}

// Data writes one unnamed event, "data: <payload>" (the OpenAI style). A
// string or []byte payload is written as is; anything else is JSON-encoded.
func (s *SSE) Data(payload any) error {
	return s.write("", payload)
}

// Event writes one named event, "event: <name>" then "data: <payload>"
// (the Anthropic style). Payloads are handled as in Data.
func (s *SSE) Event(name string, payload any) error {
	return s.write(name, payload)
}

// Comment writes an SSE comment line, which clients ignore.
func (s *SSE) Comment(text string) error {
	_, err := fmt.Fprintf(s.w, ": %s\n\n", text)
	s.flush()
	return err
}

func (s *SSE) write(name string, payload any) error {
	data, err := Encode(payload)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if name != "" {
		buf.WriteString("event: ")
		buf.WriteString(name)
		buf.WriteByte('\n')
	}
	buf.WriteString("data: ")
	buf.Write(data)
	buf.WriteString("\n\n")
	_, err = s.w.Write(buf.Bytes())
	s.flush()
	return err
}

func (s *SSE) flush() {
	if s.f != nil {
		s.f.Flush()
	}
}

// Encode returns payload as event data: a string or []byte as is, anything
// else JSON-encoded.
func Encode(payload any) ([]byte, error) {
	switch p := payload.(type) {
	case string:
		return []byte(p), nil
	case []byte:
		return p, nil
	default:
		return json.Marshal(p)
	}
}

// WriteJSON writes a JSON response with the given status, for error replies.
func WriteJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// Request is one request received by a fake server.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// JSON decodes the request body into a generic value for assertions.
func (r Request) JSON(tb testing.TB) map[string]any {
	tb.Helper()
	var v map[string]any
	if err := json.Unmarshal(r.Body, &v); err != nil {
		tb.Fatalf("request body is not a JSON object: %v\n%s", err, r.Body)
	}
	return v
}

// Recorder records the requests that reach a handler. It is safe for
// concurrent use.
type Recorder struct {
	mu   sync.Mutex // guards reqs
	reqs []Request
}

// Wrap returns a handler that records each request, then calls h with the
// body still readable.
func (rec *Recorder) Wrap(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		rec.mu.Unlock()
		h(w, r)
	}
}

// Requests returns a copy of the recorded requests, oldest first.
func (rec *Recorder) Requests() []Request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]Request(nil), rec.reqs...)
}

// Last returns the most recent request, failing the test if there is none.
func (rec *Recorder) Last(tb testing.TB) Request {
	tb.Helper()
	reqs := rec.Requests()
	if len(reqs) == 0 {
		tb.Fatal("no request recorded")
	}
	return reqs[len(reqs)-1]
}
