// Package hooks owns the webhook ingress on the gateway port (the
// reference's hooks.enabled/token/path): POST <path>/agent starts an agent
// run in a hook:<uuid> session (or the session key the body names) and
// answers with its run id; POST <path>/wake wakes the main session. Every
// request needs the hooks token (Authorization: Bearer or x-openclaw-token),
// compared in constant time; bodies are size-limited and requests rate-limited.
// Only the daemon imports it.
package hooks

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"golang.org/x/time/rate"
)

// Defaults.
const (
	DefaultPath         = "/hooks"
	DefaultMaxBodyBytes = 256 << 10
	DefaultRate         = 20 // requests per second, burst the same
)

// Submit starts one run of message in sessionKey (a request key such as
// "hook:<uuid>" or "main") and returns its run id.
type Submit func(ctx context.Context, sessionKey, message string) (runID string, err error)

// Config configures a Handler. Token and Submit are required.
type Config struct {
	Token        string
	Path         string
	MaxBodyBytes int64
	Rate         rate.Limit
	Submit       Submit
	NewID        func() string
}

// Handler serves the hook paths.
type Handler struct {
	cfg     Config
	limiter *rate.Limiter
}

// New validates cfg and returns a Handler.
func New(cfg Config) (*Handler, error) {
	if strings.TrimSpace(cfg.Token) == "" {
		return nil, errors.New("hooks: hooks.token is required when hooks are enabled")
	}
	if cfg.Submit == nil || cfg.NewID == nil {
		return nil, errors.New("hooks: Submit and NewID are required")
	}
	if cfg.Path == "" {
		cfg.Path = DefaultPath
	}
	cfg.Path = "/" + strings.Trim(cfg.Path, "/")
	if cfg.Path == "/" {
		return nil, errors.New("hooks: hooks.path must not be /")
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Rate <= 0 {
		cfg.Rate = DefaultRate
	}
	return &Handler{cfg: cfg, limiter: rate.NewLimiter(cfg.Rate, int(max(1, cfg.Rate)))}, nil
}

// Pattern is the mux pattern the handler serves (path and subpaths).
func (h *Handler) Pattern() string { return h.cfg.Path + "/" }

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]any{"ok": false, "error": msg})
}

func (h *Handler) authorized(r *http.Request) bool {
	tok := r.Header.Get("x-openclaw-token")
	if a := r.Header.Get("Authorization"); tok == "" && len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		tok = strings.TrimSpace(a[7:])
	}
	return tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(h.cfg.Token)) == 1
}

type body struct {
	Message    string `json:"message"`
	Text       string `json:"text"`
	Name       string `json:"name"`
	SessionKey string `json:"sessionKey"`
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		fail(w, http.StatusMethodNotAllowed, "hooks accept POST only")
		return
	}
	if !h.authorized(r) {
		fail(w, http.StatusUnauthorized, "missing or wrong hooks token")
		return
	}
	if !h.limiter.Allow() {
		w.Header().Set("Retry-After", "1")
		fail(w, http.StatusTooManyRequests, "too many hook requests")
		return
	}
	action := strings.TrimPrefix(r.URL.Path, h.cfg.Path+"/")
	if action != "agent" && action != "wake" {
		fail(w, http.StatusNotFound, fmt.Sprintf("unknown hook %q (want agent or wake)", action))
		return
	}
	var b body
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	if err := dec.Decode(&b); err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", h.cfg.MaxBodyBytes))
			return
		}
		fail(w, http.StatusBadRequest, "body must be a JSON object: "+err.Error())
		return
	}
	key, msg := "hook:"+h.cfg.NewID(), b.Message
	if action == "wake" {
		key, msg = "main", b.Text
		if msg == "" {
			msg = b.Message
		}
	} else if k := strings.TrimSpace(b.SessionKey); k != "" {
		if !strings.HasPrefix(k, "hook:") {
			fail(w, http.StatusBadRequest, "sessionKey must start with hook:")
			return
		}
		key = k
	}
	if strings.TrimSpace(msg) == "" {
		fail(w, http.StatusBadRequest, "message required")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	runID, err := h.cfg.Submit(ctx, key, msg)
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "could not start the run")
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"ok": true, "runId": runID, "sessionKey": key})
}
