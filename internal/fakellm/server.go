package fakellm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/provider/scripted"
)

// Paths served.
const (
	pathChat     = "/v1/chat/completions"
	pathMessages = "/v1/messages"
	pathModels   = "/v1/models"
)

// maxBody bounds a request body.
const maxBody = 64 << 20

// closeTimeout bounds how long Close waits for the requests of a Listen
// server before it drops their connections.
const closeTimeout = 5 * time.Second

// Options configure a Server. The zero value serves the scripted model
// without authentication or delays.
type Options struct {
	// Model answers every request. Nil means scripted.New(scripted.Options{}).
	Model provider.Provider
	// ModelID is the model GET /v1/models lists; empty means
	// scripted.ModelID. Requests may name any model: the name is passed to
	// Model and echoed in the response.
	ModelID string
	// APIKey, when set, is required: OpenAI requests must carry
	// "Authorization: Bearer <APIKey>" and Anthropic requests
	// "x-api-key: <APIKey>" (GET /v1/models accepts either); others get 401
	// with the API's error body. Empty accepts every request.
	APIKey string
	// Delay is waited before every text, thinking and tool call chunk, on
	// top of any delay of Model, to simulate a slow model. Non-streamed
	// replies wait as long in total. Zero or negative means none.
	Delay time.Duration
	// StallAfterFirstChunk makes streamed replies stop after their first
	// content chunk: the connection stays open, with no more bytes, until
	// the client goes away or the server closes. It lets tests abort or time
	// out a reply without directives in the prompt.
	StallAfterFirstChunk bool
	// OnRequest, when set, is called with every decoded model request before
	// the model runs, on the request's goroutine. It may modify req, which
	// is then recorded and passed to Model, and it may block to delay the
	// reply; it should return once r.Context() is done, since Close waits
	// for running requests.
	OnRequest func(r *http.Request, req *provider.Request)
	// KeepInternalContext passes user messages containing the reference
	// gateway's internal-context marker to the model instead of leaving them
	// out (see the package documentation).
	KeepInternalContext bool
	// Embed, when set, computes /v1/embeddings' vectors instead of
	// Embedding (a test's own notion of meaning); dims is the requested
	// size (0: unset).
	Embed func(text string, dims int) []float64
	// DiscardRequests counts requests without keeping them, so that long
	// benchmarks do not grow the heap; Requests then returns nil.
	DiscardRequests bool
	// Now returns the time reported in "created" fields; nil means time.Now.
	Now func() time.Time
	// ContextWindow, when > 0, is the largest prompt (as CountTokens
	// counts it) the model accepts; larger requests get the API's own
	// context-overflow 400. Summariser requests (IsSummaryRequest) are
	// answered by Summary instead of Model. With ContextWindow or
	// CountTokens set, every reply reports the counted prompt tokens as its
	// input usage.
	ContextWindow int
	// CountTokens replaces the default tokenizer (CountTokens).
	CountTokens func(*provider.Request) int
}

// Recorded is one request received on a model endpoint
// (POST /v1/chat/completions or POST /v1/messages). Treat it as read-only.
type Recorded struct {
	// Path is the request path, e.g. "/v1/chat/completions".
	Path string
	// Header is a copy of the request headers.
	Header http.Header
	// Body is the raw request body.
	Body []byte
	// Request is the request the model was asked, after Options.OnRequest.
	// It is nil for a request rejected before the model ran (401, 400).
	Request *provider.Request
}

// Server is a fake LLM HTTP server. It is an http.Handler, and Start and
// Listen serve it on a local port. Its methods are safe for concurrent use.
type Server struct {
	model        provider.Provider
	modelID      string
	apiKey       string
	delay        time.Duration
	stall        bool
	onRequest    func(*http.Request, *provider.Request)
	keepInternal bool
	discard      bool
	now          func() time.Time
	window       int
	countTokens  func(*provider.Request) int
	embed        func(string, int) []float64
	overflows    atomic.Int64

	// ctx is cancelled by Close. It is the base context of the requests
	// served by Start and Listen (ownsBase), so that stalled replies end
	// before the listener waits for them.
	ctx      context.Context
	cancel   context.CancelFunc
	ownsBase bool

	base   string           // "http://host:port"; empty for a bare handler
	ts     *httptest.Server // set by Start
	hs     *http.Server     // set by Listen
	client *http.Client
	wg     sync.WaitGroup // the Serve goroutine of Listen
	closed atomic.Bool

	ids   atomic.Int64 // model requests received; numbers the response ids
	count atomic.Int64 // requests recorded

	// mu guards the fields that follow.
	mu       sync.Mutex
	recorded []Recorded
}

var _ http.Handler = (*Server)(nil)

// New returns a Server configured by opts that is not listening, to mount
// as an http.Handler (Start and Listen return listening ones). URL and
// AnthropicURL are empty for it, and its Close only ends the replies in
// progress.
func New(opts Options) *Server {
	s := &Server{
		model:        opts.Model,
		modelID:      opts.ModelID,
		apiKey:       opts.APIKey,
		delay:        max(opts.Delay, 0),
		stall:        opts.StallAfterFirstChunk,
		onRequest:    opts.OnRequest,
		keepInternal: opts.KeepInternalContext,
		discard:      opts.DiscardRequests,
		now:          opts.Now,
		window:       opts.ContextWindow,
		countTokens:  opts.CountTokens,
		embed:        opts.Embed,
		client:       http.DefaultClient,
	}
	if s.model == nil {
		s.model = scripted.New(scripted.Options{})
	}
	report := s.window > 0 || s.countTokens != nil
	if s.countTokens == nil {
		s.countTokens = CountTokens
	}
	s.model = countedModel{inner: s.model, count: s.countTokens, report: report}
	if s.modelID == "" {
		s.modelID = scripted.ModelID
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.embed == nil {
		s.embed = Embedding
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// Start serves a new Server on 127.0.0.1 with an ephemeral port, using
// httptest, and closes it when the test ends.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s := New(opts)
	s.ownsBase = true
	s.ts = httptest.NewUnstartedServer(s)
	s.ts.Config.BaseContext = func(net.Listener) context.Context { return s.ctx }
	s.ts.Start()
	s.base = s.ts.URL
	s.client = s.ts.Client()
	tb.Cleanup(func() { s.Close() })
	return s
}

// Listen serves a new Server on addr ("127.0.0.1:0" picks a port) until
// Close. It is for harnesses outside tests, such as benchmark binaries.
func Listen(addr string, opts Options) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fakellm.Listen: %w", err)
	}
	s := New(opts)
	s.ownsBase = true
	s.base = "http://" + dialAddr(ln.Addr())
	s.hs = &http.Server{
		Handler:           s,
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
		ReadHeaderTimeout: time.Minute,
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	s.client = &http.Client{Transport: tr}
	s.wg.Go(func() { _ = s.hs.Serve(ln) })
	return s, nil
}

// dialAddr returns the host:port at which a listener on addr is reached,
// replacing an unspecified host with loopback.
func dialAddr(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip.To4() == nil {
			host = "::1"
		}
	}
	return net.JoinHostPort(host, port)
}

// Close ends the replies in progress (stalled ones included), stops
// listening, waits for the running requests and closes idle client
// connections. A second call returns net.ErrClosed.
func (s *Server) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return net.ErrClosed
	}
	s.cancel()
	var err error
	switch {
	case s.ts != nil:
		s.ts.Close()
	case s.hs != nil:
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		if shutErr := s.hs.Shutdown(ctx); shutErr != nil {
			err = fmt.Errorf("fakellm.Close: %w", errors.Join(shutErr, s.hs.Close()))
		}
		cancel()
		s.wg.Wait()
		s.client.CloseIdleConnections()
	}
	return err
}

// URL returns the OpenAI base URL, "http://127.0.0.1:<port>/v1", to which
// clients append "/chat/completions". It is empty for a Server made by New.
func (s *Server) URL() string {
	if s.base == "" {
		return ""
	}
	return s.base + "/v1"
}

// AnthropicURL returns the Anthropic base URL, "http://127.0.0.1:<port>",
// to which clients append "/v1/messages". It is empty for a Server made by
// New.
func (s *Server) AnthropicURL() string { return s.base }

// Client returns an HTTP client for the server whose idle connections
// Close closes; it is http.DefaultClient for a Server made by New.
func (s *Server) Client() *http.Client { return s.client }

// Requests returns the requests received on the model endpoints so far,
// in the order they were recorded: a rejected request when it was
// rejected, any other when the model was about to run. It returns nil when
// Options.DiscardRequests is set.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.recorded == nil {
		return nil
	}
	return append([]Recorded(nil), s.recorded...)
}

// Count returns the number of requests recorded on the model endpoints,
// also when Options.DiscardRequests is set.
func (s *Server) Count() int { return int(s.count.Load()) }

func (s *Server) record(r *http.Request, body []byte, req *provider.Request) {
	if s.discard {
		s.count.Add(1)
		return
	}
	rec := Recorded{Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Request: req}
	s.mu.Lock()
	s.recorded = append(s.recorded, rec)
	s.count.Add(1)
	s.mu.Unlock()
}

// ServeHTTP serves the OpenAI and Anthropic endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var d dialect = openAI{}
	if r.URL.Path == pathMessages || (r.URL.Path != pathChat && isAnthropic(r)) {
		d = anthropicAPI{}
	}
	switch r.URL.Path {
	case pathChat, pathMessages:
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			d.writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed on "+r.URL.Path)
			return
		}
		s.serveModel(w, r, d)
	case pathEmbeddings:
		s.serveEmbeddings(w, r)
	case pathModels:
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", http.MethodGet)
			d.writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed on "+r.URL.Path)
			return
		}
		s.serveModels(w, r, d)
	default:
		d.writeError(w, http.StatusNotFound, "unknown path "+r.URL.Path)
	}
}

// isAnthropic reports whether r looks like an Anthropic client's request.
func isAnthropic(r *http.Request) bool {
	return r.Header.Get("Anthropic-Version") != "" || r.Header.Get("X-Api-Key") != ""
}

// dialect is one wire format.
type dialect interface {
	// authError returns why r lacks key, or "" if r may proceed.
	authError(r *http.Request, key string) string
	// decode parses a request body into the model's request and the
	// writer of the response.
	decode(body []byte, m meta) (*provider.Request, reply, error)
	// writeError sends an error response.
	writeError(w http.ResponseWriter, status int, msg string)
	// models appends the GET /v1/models body.
	models(b []byte, id string, now time.Time) []byte
}

// meta is what a response needs besides the request.
type meta struct {
	n            int64 // request number, from 1
	created      int64 // Unix seconds
	keepInternal bool
}

// reply writes the response to one request. Methods append to b.
type reply interface {
	streaming() bool
	// begin opens a stream, before its first content chunk.
	begin(b []byte) []byte
	// event appends the chunks of one text, thinking or tool call event.
	event(b []byte, ev *provider.Event) []byte
	// end closes a stream that ended with stop.
	end(b []byte, stop string, u *provider.Usage) []byte
	// failure ends a stream with an in-stream error.
	failure(b []byte, status int, msg string) []byte
	// complete appends a non-streamed response body.
	complete(b []byte, t *turn) []byte
}

// turn is a non-streamed reply, collected from the model's events.
type turn struct {
	thinking, text []byte
	calls          []provider.ToolCall
	usage          provider.Usage
	stop           string
}

// serveModel serves one model request.
func (s *Server) serveModel(w http.ResponseWriter, r *http.Request, d dialect) {
	n := s.ids.Add(1)
	body, err := readBody(w, r)
	if msg := d.authError(r, s.apiKey); msg != "" {
		s.record(r, body, nil)
		d.writeError(w, http.StatusUnauthorized, msg)
		return
	}
	if err != nil {
		s.record(r, body, nil)
		status := http.StatusBadRequest
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			status = http.StatusRequestEntityTooLarge
		}
		d.writeError(w, status, "reading the request body: "+err.Error())
		return
	}
	req, rep, err := d.decode(body, meta{n: n, created: s.now().Unix(), keepInternal: s.keepInternal})
	if err != nil {
		s.record(r, body, nil)
		d.writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, done := s.requestContext(r)
	defer done()
	if s.onRequest != nil {
		s.onRequest(r, req)
	}
	s.record(r, body, req)
	if s.overflowed(w, req, d) {
		return
	}
	if rep.streaming() {
		s.stream(ctx, w, req, rep, d)
	} else {
		s.complete(ctx, w, req, rep, d)
	}
}

// readBody reads the request body, at most maxBody bytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	size := r.ContentLength
	if size < 0 || size > maxBody {
		size = 0
	}
	buf := make([]byte, 0, size+512)
	rd := http.MaxBytesReader(w, r.Body, maxBody)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		m, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// requestContext returns the context of a model call: r's context, also
// cancelled by Close when s is mounted in a server it does not own.
func (s *Server) requestContext(r *http.Request) (context.Context, func()) {
	if s.ownsBase {
		return r.Context(), func() {}
	}
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// Header values, shared to save allocations; net/http does not modify them.
var (
	hdrSSE     = []string{"text/event-stream; charset=utf-8"}
	hdrJSON    = []string{"application/json"}
	hdrNoCache = []string{"no-cache"}
)

// stream runs the model and streams its reply.
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, req *provider.Request, rep reply, d dialect) {
	flusher, _ := w.(http.Flusher)
	b := make([]byte, 0, 1024)
	var p pacer
	defer p.stop()
	started := false
	stop := provider.StopEnd
	var usage provider.Usage
	for ev, err := range s.model.Stream(ctx, req) {
		if err != nil {
			if ctx.Err() != nil {
				return // the client went away or the server is closing
			}
			status, msg := failure(err)
			if !started {
				d.writeError(w, status, msg)
				return
			}
			w.Write(rep.failure(b, status, msg))
			return
		}
		switch ev.Type {
		case provider.EventUsage:
			if ev.Usage != nil {
				usage = *ev.Usage
			}
			continue
		case provider.EventDone:
			stop = ev.StopReason
			continue
		}
		if !p.wait(ctx, s.delay) {
			return
		}
		if !started {
			started = true
			startSSE(w)
			b = rep.begin(b)
		}
		b = rep.event(b, ev)
		if _, err := w.Write(b); err != nil {
			return
		}
		b = b[:0]
		if flusher != nil {
			flusher.Flush()
		}
		if s.stall {
			<-ctx.Done()
			return
		}
	}
	if ctx.Err() != nil {
		return
	}
	if !started {
		startSSE(w)
		b = rep.begin(b)
	}
	// The handler's return flushes the end of the stream in one write.
	w.Write(rep.end(b, stop, &usage))
}

// startSSE sends the status and headers of an event stream.
func startSSE(w http.ResponseWriter) {
	h := w.Header()
	h["Content-Type"] = hdrSSE
	h["Cache-Control"] = hdrNoCache
	w.WriteHeader(http.StatusOK)
}

// complete runs the model and sends its whole reply as one JSON body.
func (s *Server) complete(ctx context.Context, w http.ResponseWriter, req *provider.Request, rep reply, d dialect) {
	var t turn
	t.stop = provider.StopEnd
	var p pacer
	defer p.stop()
	for ev, err := range s.model.Stream(ctx, req) {
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			status, msg := failure(err)
			d.writeError(w, status, msg)
			return
		}
		switch ev.Type {
		case provider.EventTextDelta:
			t.text = append(t.text, ev.Text...)
		case provider.EventThinkingDelta:
			t.thinking = append(t.thinking, ev.Text...)
		case provider.EventToolCall:
			if ev.ToolCall != nil {
				t.calls = append(t.calls, *ev.ToolCall)
			}
		case provider.EventUsage:
			if ev.Usage != nil {
				t.usage = *ev.Usage
			}
			continue
		case provider.EventDone:
			t.stop = ev.StopReason
			continue
		}
		if !p.wait(ctx, s.delay) {
			return
		}
	}
	if ctx.Err() != nil {
		return
	}
	writeJSON(w, http.StatusOK, rep.complete(make([]byte, 0, 512+len(t.text)+len(t.thinking)), &t))
}

// failure returns the HTTP status and message for a model error.
func failure(err error) (status int, msg string) {
	if perr, ok := errors.AsType[*provider.Error](err); ok {
		status = perr.StatusCode
		if status < 400 || status > 599 {
			status = http.StatusInternalServerError
		}
		return status, perr.Message
	}
	return http.StatusInternalServerError, err.Error()
}

// writeJSON sends a JSON body.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header()["Content-Type"] = hdrJSON
	w.WriteHeader(status)
	w.Write(body)
}

// serveModels serves GET /v1/models.
func (s *Server) serveModels(w http.ResponseWriter, r *http.Request, d dialect) {
	bearerOK := (openAI{}).authError(r, s.apiKey) == ""
	if !bearerOK && (anthropicAPI{}).authError(r, s.apiKey) != "" {
		d.writeError(w, http.StatusUnauthorized, d.authError(r, s.apiKey))
		return
	}
	writeJSON(w, http.StatusOK, d.models(make([]byte, 0, 256), s.modelID, s.now()))
}

// pacer waits between chunks, reusing one timer.
type pacer struct{ t *time.Timer }

// wait waits for d; it reports false if ctx ended first.
func (p *pacer) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	if p.t == nil {
		p.t = time.NewTimer(d)
	} else {
		p.t.Reset(d)
	}
	select {
	case <-p.t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (p *pacer) stop() {
	if p.t != nil {
		p.t.Stop()
	}
}
