// Package httpapi owns the HTTP front doors the gateway serves beside its
// WebSocket protocol on the same port, with the reference gateway's paths,
// shapes, status codes and error texts:
//
//   - POST /tools/invoke (always on): one tool outside a run, through
//     toolinvoke with the default HTTP deny list;
//   - GET /v1/models and /v1/models/{id}, POST /v1/chat/completions (plain
//     and SSE), POST /v1/embeddings (gateway.http.endpoints.chatCompletions);
//   - POST /v1/responses (OpenResponses, plain and SSE, with
//     previous_response_id; gateway.http.endpoints.responses).
//
// Every chat or response request is a normal agent run submitted through
// the runner's one door (transcript, queueing, policy, usage), and its
// events are followed through one runner subscription. Requests are
// authenticated by the gateway's own check (bearer token or password, the
// shared failed-attempt limiter).
//
// It reaches the runner, the store, the gateway's auth and the tool
// invoker through the small interfaces declared here; only the daemon
// imports it and mounts it on the gateway's mux.
package httpapi

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/settings"
	"github.com/switchboardhq/switchboard/internal/toolinvoke"
)

// Runner is what the HTTP API needs from the agent runner; *agent.Runner
// implements it. Safe for concurrent use.
type Runner interface {
	// Abort stops one run and reports whether it was live.
	Abort(ctx context.Context, runID string) (bool, error)
	// Watch streams one run's events (after afterSeq), ending with its
	// end, which it yields exactly once.
	Watch(ctx context.Context, runID string, afterSeq int64) iter.Seq2[agent.Event, error]
}

// Admitter starts runs: the admission step (*admission.Admitter), which
// decides commands, the send policy and the queue.
type Admitter interface {
	Accept(ctx context.Context, req admission.Request) (admission.Ticket, error)
}

// Embeddings resolves and calls an agent's embedding model: override is
// x-openclaw-model ("<provider>/<model>", "" for the agent's memory.search
// set-up), dims the requested vector size (0: the configured one). It
// returns the vectors and the "<provider>/<model>" that made them. An error
// wrapping provider.ErrNoEmbeddings means nothing serves embeddings for the
// agent.
type Embeddings interface {
	Embed(ctx context.Context, agentID, override string, input []string, dims int) (*provider.EmbedResult, string, error)
}

// ToolInvoker runs POST /tools/invoke; *toolinvoke.Invoker configured for
// the HTTP surface implements it.
type ToolInvoker interface {
	Invoke(ctx context.Context, req toolinvoke.Request) *toolinvoke.Outcome
}

// Auth is the outcome of authenticating a request: OK, or refused (401),
// or refused because the client is locked out (429 with RetryAfter).
type Auth struct {
	OK          bool
	RateLimited bool
	RetryAfter  time.Duration
}

// Default limits (the reference's).
const (
	DefaultToolsBodyBytes = 2 << 20  // /tools/invoke
	DefaultChatBodyBytes  = 20 << 20 // /v1/chat/completions, /v1/responses, /v1/embeddings
	DefaultBodyTimeout    = 30 * time.Second
)

// Config configures a Server. Runner, Admit, Settings, Auth and Tools are
// required; other zero values mean the documented defaults.
type Config struct {
	Runner   Runner
	Admit    Admitter
	Settings *settings.Settings
	// Auth authenticates a request (the gateway's AuthorizeHTTP).
	Auth func(r *http.Request) Auth
	// Tools runs /tools/invoke.
	Tools ToolInvoker
	// Models, when set, checks x-openclaw-model overrides.
	Models agent.ModelResolver
	// Embeddings serves /v1/embeddings; nil answers that no embedding
	// provider is configured.
	Embeddings Embeddings

	Logger *slog.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// NewID returns the ids of completions, responses and sessions; nil
	// means UUIDs.
	NewID func() string

	// ToolsBodyBytes and ChatBodyBytes bound request bodies (413 past
	// them); zero means 2 MB and 20 MB.
	ToolsBodyBytes int64
	ChatBodyBytes  int64
	// BodyTimeout bounds reading a request body (408 past it); zero means
	// 30s.
	BodyTimeout time.Duration
}

// Server serves the HTTP front doors. Create with New, mount with
// Register, stop with Close. Safe for concurrent use.
type Server struct {
	cfg   Config
	conf  *settings.Settings
	log   *slog.Logger
	now   func() time.Time
	newID func() string

	// ctx is cancelled by Close: handlers waiting on runs return.
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once

	responses *responseSessions
}

// New validates cfg.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.Runner == nil:
		return nil, errors.New("httpapi.New: Runner is required")
	case cfg.Admit == nil:
		return nil, errors.New("httpapi.New: Admit is required")
	case cfg.Settings == nil:
		return nil, errors.New("httpapi.New: Settings is required")
	case cfg.Auth == nil:
		return nil, errors.New("httpapi.New: Auth is required")
	case cfg.Tools == nil:
		return nil, errors.New("httpapi.New: Tools is required")
	}
	if cfg.ToolsBodyBytes <= 0 {
		cfg.ToolsBodyBytes = DefaultToolsBodyBytes
	}
	if cfg.ChatBodyBytes <= 0 {
		cfg.ChatBodyBytes = DefaultChatBodyBytes
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	s := &Server{cfg: cfg, conf: cfg.Settings, log: cfg.Logger, now: cfg.Now, newID: cfg.NewID}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = s.log.With("component", "httpapi")
	if s.now == nil {
		s.now = time.Now
	}
	if s.newID == nil {
		s.newID = uuid.NewString
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.responses = newResponseSessions(s.now)
	return s, nil
}

// Register mounts the endpoints on mux. The OpenAI-compatible paths answer
// 404 while their config switch is off, as the reference's do.
func (s *Server) Register(mux *http.ServeMux) {
	mux.HandleFunc("/tools/invoke", s.handleToolsInvoke)
	mux.HandleFunc("/v1/models", s.gate(s.openAICompatEnabled(), s.handleModels))
	mux.HandleFunc("/v1/models/", s.gate(s.openAICompatEnabled(), s.handleModels))
	mux.HandleFunc("/v1/embeddings", s.gate(s.openAICompatEnabled(), s.handleEmbeddings))
	mux.HandleFunc("/v1/chat/completions", s.gate(s.conf.HTTP.ChatCompletions, s.handleChatCompletions))
	mux.HandleFunc("/v1/responses", s.gate(s.conf.HTTP.Responses, s.handleResponses))
}

// Close releases handlers still waiting on runs (their runs go on). A second call returns net.ErrClosed.
func (s *Server) Close() error {
	first := false
	s.once.Do(func() { first = true })
	if !first {
		return net.ErrClosed
	}
	s.cancel()
	return nil
}

func (s *Server) openAICompatEnabled() bool {
	return s.conf.HTTP.ChatCompletions || s.conf.HTTP.Responses
}

// gate serves h when enabled, else the plain 404 the
// reference answers for a disabled endpoint.
func (s *Server) gate(enabled bool, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !enabled {
			plainText(w, http.StatusNotFound, "Not Found")
			return
		}
		h(w, r)
	}
}

// authorize answers 401 or 429 and returns false unless the request
// authenticates.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) bool {
	a := s.cfg.Auth(r)
	switch {
	case a.OK:
		return true
	case a.RateLimited:
		if secs := int64((a.RetryAfter + time.Second - 1) / time.Second); secs > 0 {
			w.Header().Set("Retry-After", itoa(secs))
		}
		writeError(w, http.StatusTooManyRequests, "rate_limited", "Too many failed authentication attempts. Please try again later.")
	default:
		writeError(w, http.StatusUnauthorized, "unauthorized", "Unauthorized")
	}
	return false
}
