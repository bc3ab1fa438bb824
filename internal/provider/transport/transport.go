// Package transport is the HTTP side the model provider adapters share:
// a JSON POST with the retry policy of the official SDKs they replaced
// (connection errors and HTTP 408, 409, 429 and 5xx, honouring
// Retry-After-Ms, Retry-After and x-should-retry), and a reader of
// server-sent events. It knows nothing of any provider's wire format.
package transport

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// Retry waits when the server gives no Retry-After: 0.5 s doubled per
// attempt, at most maxRetryDelay, less up to a quarter of jitter. A
// Retry-After longer than maxRetryAfter ends the retries.
const (
	baseRetryDelay = 500 * time.Millisecond
	maxRetryDelay  = 8 * time.Second
	maxRetryAfter  = 60 * time.Second
)

// MaxErrorBody bounds how much of an error response is read.
const MaxErrorBody = 1 << 20

// Request is one JSON POST.
type Request struct {
	// Client sends it; nil means http.DefaultClient.
	Client *http.Client
	// URL is where it goes.
	URL string
	// Header is sent as is, after Content-Type: application/json (so it
	// may override it).
	Header http.Header
	// Body is the JSON body, resent unchanged on each attempt.
	Body []byte
	// MaxRetries is how many times a failed attempt is retried.
	MaxRetries int
}

// StatusError is an HTTP error response: its status, headers and (up to
// MaxErrorBody of) body.
type StatusError struct {
	// Status is the HTTP status code.
	Status int
	// Header is the response's headers.
	Header http.Header
	// Body is the start of the response body.
	Body []byte
}

// Error says the status and the start of the body.
func (e *StatusError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.Status, bytes.TrimSpace(e.Body))
}

// Post sends r and returns the response of the first attempt that is not
// an HTTP error; the caller closes its body. After the last attempt the
// error is a *StatusError, ctx.Err() once ctx is done, or the transport's
// error.
func Post(ctx context.Context, r Request) (*http.Response, error) {
	client := r.Client
	if client == nil {
		client = http.DefaultClient
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
		if err != nil {
			return nil, fmt.Errorf("transport: %w", err)
		}
		req.Header.Set("Content-Type", "application/json")
		for k, vs := range r.Header {
			req.Header[k] = vs
		}
		res, err := client.Do(req)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, ctxErr
			}
			if attempt >= r.MaxRetries {
				return nil, err
			}
		} else if res.StatusCode < 400 {
			return res, nil
		} else {
			body, readErr := io.ReadAll(io.LimitReader(res.Body, MaxErrorBody))
			res.Body.Close()
			if readErr != nil && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			err = &StatusError{Status: res.StatusCode, Header: res.Header, Body: body}
			if attempt >= r.MaxRetries || !shouldRetry(res) {
				return nil, err
			}
		}
		delay, ok := retryDelay(res, attempt)
		if !ok {
			return nil, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// shouldRetry reports whether an HTTP error response may pass on retry.
func shouldRetry(res *http.Response) bool {
	switch res.Header.Get("x-should-retry") {
	case "true":
		return true
	case "false":
		return false
	}
	c := res.StatusCode
	return c == http.StatusRequestTimeout || c == http.StatusConflict || c == http.StatusTooManyRequests || c >= 500
}

// retryDelay is how long to wait before retry attempt+1 (res is nil after
// a connection error), and false when the server asks for too long.
func retryDelay(res *http.Response, attempt int) (time.Duration, bool) {
	if res != nil {
		if ms, err := strconv.ParseFloat(res.Header.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
			d := time.Duration(ms * float64(time.Millisecond))
			return d, d <= maxRetryAfter
		}
		if v := res.Header.Get("Retry-After"); v != "" {
			if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
				d := time.Duration(s * float64(time.Second))
				return d, d <= maxRetryAfter
			}
			if at, err := http.ParseTime(v); err == nil {
				d := time.Until(at)
				return max(d, 0), d <= maxRetryAfter
			}
		}
	}
	delay := maxRetryDelay
	if attempt < 5 {
		delay = min(baseRetryDelay<<attempt, maxRetryDelay)
	}
	return delay - rand.N(delay/4), true
}

// Event is one server-sent event: its type ("" when the event has no
// "event:" field) and its "data:" lines joined by newlines.
type Event struct {
	// Type is the event's "event:" field.
	Type string
	// Data is valid until the next call to Next.
	Data []byte
}

// SSEReader reads server-sent events. Comments and other fields are
// ignored.
type SSEReader struct {
	sc   *bufio.Scanner
	ev   Event
	fail error
}

// maxSSELine bounds one line of the stream (a JSON event is one line).
const maxSSELine = 16 << 20

// NewSSEReader reads events from r.
func NewSSEReader(r io.Reader) *SSEReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxSSELine)
	return &SSEReader{sc: sc}
}

// Next returns the next event that has data or a type; false at the end
// of the stream or on a read error (see Err).
func (r *SSEReader) Next() (*Event, bool) {
	r.ev.Type, r.ev.Data = "", r.ev.Data[:0]
	has, hasData := false, false
	for r.sc.Scan() {
		line := bytes.TrimSuffix(r.sc.Bytes(), []byte("\r"))
		if len(line) == 0 {
			if has {
				return &r.ev, true
			}
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if hasData {
				r.ev.Data = append(r.ev.Data, '\n')
			}
			r.ev.Data, has, hasData = append(r.ev.Data, bytes.TrimPrefix(v, []byte(" "))...), true, true
		} else if v, ok := bytes.CutPrefix(line, []byte("event:")); ok {
			r.ev.Type, has = string(bytes.TrimSpace(v)), true
		}
	}
	r.fail = r.sc.Err()
	// An event cut off by the end of the stream still counts.
	return &r.ev, has && r.fail == nil
}

// Err is the read error that ended the stream, if any.
func (r *SSEReader) Err() error { return r.fail }
