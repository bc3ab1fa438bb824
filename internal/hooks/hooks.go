// Package hooks owns the webhook ingress on the gateway port, with the
// reference's paths, config and answers (hooks.enabled, token, path,
// defaultSessionKey, allowRequestSessionKey, allowedSessionKeyPrefixes,
// allowedAgentIds, mappings): POST <path>/agent starts an agent run and
// answers {ok, runId} (with waitForCompletion, once the run ended), POST
// <path>/wake posts a notification to the main session, POST
// <path>/<name> goes through the first matching mapping, whose templates
// turn the payload into an agent or wake action. Every request needs the
// hooks token (Authorization: Bearer or x-openclaw-token), compared in
// constant time; bodies are size-limited, requests rate-limited, and an
// Idempotency-Key replays the run it started. Only the daemon imports it.
package hooks

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults.
const (
	DefaultPath         = "/hooks"
	DefaultMaxBodyBytes = 256 << 10
	DefaultRate         = 20 // requests per second, burst the same
	// admissionTimeout bounds starting a run.
	admissionTimeout = 15 * time.Second
	// maxReplay bounds the idempotency keys remembered.
	maxReplay = 1000
	// maxKeyLen bounds an idempotency key.
	maxKeyLen = 256
)

// Action is what a hook request asks for, after its mapping and policy.
type Action struct {
	// Kind is "agent" or "wake".
	Kind string
	// AgentID is the agent to run ("" = the default agent).
	AgentID string
	// SessionKey is the logical session key (hook:<uuid>, a mapping's or
	// the request's own); for wake, "" is the main session.
	SessionKey string
	// Message is the agent turn's input; Text the wake notification.
	Message, Text string
	// Name labels the run ("Hook" by default).
	Name string
	// Model and Thinking override the agent's.
	Model, Thinking string
	// Timeout bounds the turn (0: the agent's default).
	Timeout time.Duration
	// Deliver, Channel, To and AccountID: where the run's reply goes
	// (Deliver with a channel and to: that chat).
	Deliver                bool
	Channel, To, AccountID string
}

// Completion is how an agent run ended, as waitForCompletion reports it.
type Completion struct {
	// Status is "ok", "error" or "skipped".
	Status string `json:"status"`
	// ReplyDisposition is "visible", "silent" or "empty".
	ReplyDisposition  string `json:"replyDisposition,omitempty"`
	Delivered         *bool  `json:"delivered,omitempty"`
	DeliveryAttempted *bool  `json:"deliveryAttempted,omitempty"`
}

// Refused is a Runner's refusal of an action (the session's send policy,
// its queue cap): the request is answered with Code and the refusal's
// text, not as a failure to start.
type Refused struct {
	// Code is the HTTP status (403, 429).
	Code int
	// Err is the refusal.
	Err error
}

// Error is the refusal's text.
func (e *Refused) Error() string { return e.Err.Error() }

// Unwrap returns the refusal.
func (e *Refused) Unwrap() error { return e.Err }

// startFailed answers an action that did not start: a refusal with its
// own status and text, anything else as 503 with msg.
func startFailed(w http.ResponseWriter, err error, msg string) {
	if r := (*Refused)(nil); errors.As(err, &r) {
		fail(w, r.Code, r.Error())
		return
	}
	fail(w, http.StatusServiceUnavailable, msg)
}

// Runner carries out actions.
type Runner interface {
	// Agent starts an agent run and returns its id once it is stored.
	Agent(ctx context.Context, a Action) (runID string, err error)
	// Wake posts a notification to the main session (or a session).
	Wake(ctx context.Context, a Action) error
	// Wait waits for an agent run to end.
	Wait(ctx context.Context, runID string) (Completion, error)
}

// Mapping is one hooks.mappings entry.
type Mapping struct {
	ID                      string
	MatchPath, MatchSource  string
	Action, WakeMode        string
	Name, AgentID           string
	SessionKey, SessionMode string
	MessageTemplate         string
	TextTemplate            string
	Deliver                 *bool
	Channel, To             string
	Model, Thinking         string
	TimeoutSeconds          int
}

// Config configures a Handler. Token, Runner and NewID are required.
type Config struct {
	Token        string
	Path         string
	MaxBodyBytes int64
	Rate         rate.Limit
	// DefaultSessionKey, AllowRequestSessionKey, AllowedSessionKeyPrefixes
	// and AllowedAgentIDs are the session and agent policy.
	DefaultSessionKey         string
	AllowRequestSessionKey    bool
	AllowedSessionKeyPrefixes []string
	AllowedAgentIDs           []string
	// KnownAgent reports whether an agent id is configured (nil: any).
	KnownAgent func(id string) bool
	Mappings   []Mapping
	Runner     Runner
	NewID      func() string
	Now        func() time.Time
}

// Handler serves the hook paths.
type Handler struct {
	cfg     Config
	limiter *rate.Limiter

	mu     sync.Mutex
	replay map[string]string // idempotency key + request identity → run id
	order  []string
}

// New validates cfg and returns a Handler.
func New(cfg Config) (*Handler, error) {
	if strings.TrimSpace(cfg.Token) == "" {
		return nil, errors.New("hooks: hooks.token is required when hooks are enabled")
	}
	if cfg.Runner == nil || cfg.NewID == nil {
		return nil, errors.New("hooks: Runner and NewID are required")
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
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Handler{cfg: cfg, limiter: rate.NewLimiter(cfg.Rate, int(max(1, cfg.Rate))), replay: map[string]string{}}, nil
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

// agentBody is POST <path>/agent's payload.
type agentBody struct {
	Message           string          `json:"message"`
	Name              string          `json:"name"`
	AgentID           string          `json:"agentId"`
	SessionKey        string          `json:"sessionKey"`
	SessionMode       string          `json:"sessionMode"`
	WakeMode          string          `json:"wakeMode"`
	Deliver           *bool           `json:"deliver"`
	Channel           string          `json:"channel"`
	To                string          `json:"to"`
	AccountID         string          `json:"accountId"`
	Model             string          `json:"model"`
	Thinking          string          `json:"thinking"`
	TimeoutSeconds    json.RawMessage `json:"timeoutSeconds"`
	IdempotencyKey    string          `json:"idempotencyKey"`
	WaitForCompletion bool            `json:"waitForCompletion"`
}

// wakeBody is POST <path>/wake's payload.
type wakeBody struct {
	Text       string `json:"text"`
	Message    string `json:"message"`
	Mode       string `json:"mode"`
	AgentID    string `json:"agentId"`
	SessionKey string `json:"sessionKey"`
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		fail(w, http.StatusMethodNotAllowed, "hooks accept POST only")
		return
	}
	if r.URL.Query().Has("token") {
		fail(w, http.StatusBadRequest, "query-string token authentication is not accepted; send Authorization: Bearer <token>")
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
	name := strings.Trim(strings.TrimPrefix(r.URL.Path, h.cfg.Path), "/")
	raw, err := readBody(w, r, h.cfg.MaxBodyBytes)
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", h.cfg.MaxBodyBytes))
			return
		}
		fail(w, http.StatusBadRequest, "body must be a JSON object: "+err.Error())
		return
	}
	switch name {
	case "agent":
		h.direct(w, r, raw)
	case "wake":
		h.wake(w, r, raw)
	default:
		h.mapped(w, r, name, raw)
	}
}

// readBody reads a JSON object body within limit.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) (json.RawMessage, error) {
	var raw json.RawMessage
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit)).Decode(&raw); err != nil {
		return nil, err
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, errors.New("not an object")
	}
	return raw, nil
}

// direct serves POST <path>/agent.
func (h *Handler) direct(w http.ResponseWriter, r *http.Request, raw json.RawMessage) {
	var b agentBody
	if err := json.Unmarshal(raw, &b); err != nil {
		fail(w, http.StatusBadRequest, "invalid payload: "+err.Error())
		return
	}
	if strings.TrimSpace(b.Message) == "" {
		fail(w, http.StatusBadRequest, "message required")
		return
	}
	a := Action{Kind: "agent", Message: b.Message, Name: b.Name, Model: b.Model, Thinking: b.Thinking,
		Channel: strings.TrimSpace(b.Channel), To: strings.TrimSpace(b.To), AccountID: strings.TrimSpace(b.AccountID)}
	a.Deliver = b.Deliver == nil || *b.Deliver
	if len(b.TimeoutSeconds) > 0 && string(b.TimeoutSeconds) != "null" {
		var secs float64
		if json.Unmarshal(b.TimeoutSeconds, &secs) != nil || secs <= 0 || secs != float64(int64(secs)) {
			fail(w, http.StatusBadRequest, "timeoutSeconds must be a positive integer")
			return
		}
		a.Timeout = time.Duration(secs) * time.Second
	}
	if a.Deliver && (a.Channel != "" || a.To != "" || a.AccountID != "") {
		// A direct hook names a whole destination or none.
		if a.Channel == "" || a.To == "" || strings.EqualFold(a.Channel, "last") {
			fail(w, http.StatusBadRequest, "delivery needs both a concrete channel and to (channel \"last\" is not accepted here)")
			return
		}
	}
	if !a.Deliver {
		a.Channel, a.To, a.AccountID = "", "", ""
	}
	var err error
	if a.AgentID, err = h.agent(b.AgentID, true); err != nil {
		fail(w, http.StatusBadRequest, err.Error())
		return
	}
	if a.SessionKey, err = h.sessionKey(b.SessionKey, b.SessionMode, false); err != nil {
		fail(w, http.StatusBadRequest, err.Error())
		return
	}
	idem := idempotencyKey(r, b.IdempotencyKey)
	runID, err := h.startAgent(r.Context(), a, idem, r.URL.Path)
	if err != nil {
		startFailed(w, err, "could not start the run")
		return
	}
	res := map[string]any{"ok": true, "runId": runID}
	if b.WaitForCompletion {
		c, err := h.cfg.Runner.Wait(r.Context(), runID)
		if err != nil {
			fail(w, http.StatusGatewayTimeout, "the run did not settle before the request ended")
			return
		}
		res["completion"] = c
	}
	writeJSON(w, http.StatusOK, res)
}

// startAgent starts a, or returns the run an earlier request with the same
// idempotency key (and path and action) started.
func (h *Handler) startAgent(ctx context.Context, a Action, idem, path string) (string, error) {
	var id string
	if idem != "" {
		b, _ := json.Marshal(a)
		id = path + "\x00" + idem + "\x00" + string(b)
		h.mu.Lock()
		runID, ok := h.replay[id]
		h.mu.Unlock()
		if ok {
			return runID, nil
		}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), admissionTimeout)
	defer cancel()
	runID, err := h.cfg.Runner.Agent(ctx, a)
	if err != nil || id == "" {
		return runID, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.replay[id]; !ok {
		h.replay[id] = runID
		h.order = append(h.order, id)
		if len(h.order) > maxReplay {
			delete(h.replay, h.order[0])
			h.order = h.order[1:]
		}
	}
	return runID, nil
}

// idempotencyKey is the request's replay key: the Idempotency-Key header,
// X-OpenClaw-Idempotency-Key, then the payload's.
func idempotencyKey(r *http.Request, payload string) string {
	for _, k := range []string{r.Header.Get("Idempotency-Key"), r.Header.Get("X-OpenClaw-Idempotency-Key"), payload} {
		if k = strings.TrimSpace(k); k != "" && len(k) <= maxKeyLen {
			return k
		}
	}
	return ""
}

// wake serves POST <path>/wake.
func (h *Handler) wake(w http.ResponseWriter, r *http.Request, raw json.RawMessage) {
	var b wakeBody
	if err := json.Unmarshal(raw, &b); err != nil {
		fail(w, http.StatusBadRequest, "invalid payload: "+err.Error())
		return
	}
	text := strings.TrimSpace(b.Text)
	if text == "" {
		text = strings.TrimSpace(b.Message)
	}
	if text == "" {
		fail(w, http.StatusBadRequest, "text required")
		return
	}
	if b.Mode != "" && b.Mode != "now" && b.Mode != "next-heartbeat" {
		fail(w, http.StatusBadRequest, `mode must be "now" or "next-heartbeat"`)
		return
	}
	a := Action{Kind: "wake", Text: text}
	var err error
	if a.AgentID, err = h.agent(b.AgentID, true); err != nil {
		fail(w, http.StatusBadRequest, err.Error())
		return
	}
	if strings.TrimSpace(b.SessionKey) != "" {
		if b.Mode == "next-heartbeat" {
			fail(w, http.StatusBadRequest, `a sessionKey needs mode "now"`)
			return
		}
		if a.SessionKey, err = h.sessionKey(b.SessionKey, "persistent", false); err != nil {
			fail(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), admissionTimeout)
	defer cancel()
	if err := h.cfg.Runner.Wake(ctx, a); err != nil {
		startFailed(w, err, "could not queue the wake")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "eventOutcome": "queued"})
}

// mapped serves POST <path>/<name> through the first matching mapping.
func (h *Handler) mapped(w http.ResponseWriter, r *http.Request, name string, raw json.RawMessage) {
	var payload map[string]any
	if err := json.Unmarshal(raw, &payload); err != nil {
		fail(w, http.StatusBadRequest, "invalid payload: "+err.Error())
		return
	}
	source, _ := payload["source"].(string)
	var m *Mapping
	for i := range h.cfg.Mappings {
		c := &h.cfg.Mappings[i]
		if (c.MatchPath == "" || strings.Trim(c.MatchPath, "/") == name) && (c.MatchSource == "" || c.MatchSource == source) {
			m = c
			break
		}
	}
	if m == nil {
		fail(w, http.StatusNotFound, fmt.Sprintf("no hook mapping for %q", name))
		return
	}
	sc := scope{payload: payload, headers: map[string]string{}, query: map[string]string{}, path: name, now: h.cfg.Now()}
	for k, v := range r.Header {
		if !strings.EqualFold(k, "Authorization") && !strings.EqualFold(k, "X-Openclaw-Token") && len(v) > 0 {
			sc.headers[strings.ToLower(k)] = v[0]
		}
	}
	for k, v := range r.URL.Query() {
		if len(v) > 0 {
			sc.query[k] = v[0]
		}
	}
	agentID, err := h.agent(m.AgentID, false)
	if err != nil {
		fail(w, http.StatusBadRequest, err.Error())
		return
	}
	if m.Action == "wake" {
		text := strings.TrimSpace(render(m.TextTemplate, sc))
		if text == "" {
			w.WriteHeader(http.StatusNoContent) // nothing to do
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), admissionTimeout)
		defer cancel()
		if err := h.cfg.Runner.Wake(ctx, Action{Kind: "wake", AgentID: agentID, Text: text}); err != nil {
			startFailed(w, err, "could not queue the wake")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "eventOutcome": "queued"})
		return
	}
	msg := strings.TrimSpace(render(m.MessageTemplate, sc))
	if msg == "" {
		w.WriteHeader(http.StatusNoContent) // nothing to do
		return
	}
	a := Action{Kind: "agent", AgentID: agentID, Message: msg, Name: render(m.Name, sc),
		Model: render(m.Model, sc), Thinking: render(m.Thinking, sc), Deliver: m.Deliver == nil || *m.Deliver,
		Channel: m.Channel, To: render(m.To, sc)}
	if a.Deliver && strings.EqualFold(a.Channel, "last") {
		a.Channel = "last"
	}
	if !a.Deliver {
		a.Channel, a.To = "", ""
	}
	if m.TimeoutSeconds > 0 {
		a.Timeout = time.Duration(m.TimeoutSeconds) * time.Second
	}
	key := m.SessionKey
	templated := strings.Contains(key, "{{")
	if templated {
		if key = strings.TrimSpace(render(key, sc)); key == "" {
			fail(w, http.StatusBadRequest, "the mapping's session key template rendered empty")
			return
		}
	}
	if a.SessionKey, err = h.sessionKey(key, m.SessionMode, !templated); err != nil {
		fail(w, http.StatusBadRequest, err.Error())
		return
	}
	runID, err := h.startAgent(r.Context(), a, idempotencyKey(r, ""), r.URL.Path)
	if err != nil {
		startFailed(w, err, "could not start the run")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "runId": runID})
}

// agent resolves and checks a requested agent id.
func (h *Handler) agent(id string, strict bool) (string, error) {
	id = strings.ToLower(strings.TrimSpace(id))
	if id == "" {
		return "", nil
	}
	if h.cfg.KnownAgent != nil && !h.cfg.KnownAgent(id) {
		if strict {
			return "", fmt.Errorf("unknown agentId %q", id)
		}
		return "", nil // mappings fall back to the default agent
	}
	if len(h.cfg.AllowedAgentIDs) > 0 && !slices.ContainsFunc(h.cfg.AllowedAgentIDs, func(a string) bool { return strings.EqualFold(strings.TrimSpace(a), id) }) {
		return "", fmt.Errorf("agentId %q is not in hooks.allowedAgentIds", id)
	}
	return id, nil
}

// sessionKey applies the session policy: a requested key needs
// allowRequestSessionKey (unless it is a mapping's static key); keys must
// match allowedSessionKeyPrefixes; persistent mode needs a stable key;
// else the default key or a fresh hook:<uuid>.
func (h *Handler) sessionKey(requested, mode string, static bool) (string, error) {
	requested = strings.TrimSpace(requested)
	if mode != "" && mode != "isolated" && mode != "persistent" {
		return "", errors.New(`sessionMode must be "isolated" or "persistent"`)
	}
	key := requested
	if key != "" && !static && !h.cfg.AllowRequestSessionKey {
		return "", errors.New("sessionKey is not allowed here: set hooks.allowRequestSessionKey to let requests choose their session")
	}
	if key == "" {
		key = strings.TrimSpace(h.cfg.DefaultSessionKey)
	}
	if mode == "persistent" && key == "" {
		return "", errors.New("a persistent hook session needs a sessionKey (or hooks.defaultSessionKey)")
	}
	if key == "" {
		key = "hook:" + h.cfg.NewID()
	}
	if !h.prefixAllowed(key) {
		return "", fmt.Errorf("sessionKey %q is outside hooks.allowedSessionKeyPrefixes", key)
	}
	return key, nil
}

func (h *Handler) prefixAllowed(key string) bool {
	restricted := false
	for _, p := range h.cfg.AllowedSessionKeyPrefixes {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		restricted = true
		if strings.HasPrefix(strings.ToLower(key), strings.ToLower(p)) {
			return true
		}
	}
	return !restricted
}
