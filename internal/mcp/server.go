// Package mcp owns Switchboard's MCP server: it exposes the session tools
// (sessions_list, sessions_history, sessions_send, sessions_spawn,
// agents_list) and each session's transcript as a resource
// (switchboard://sessions/<key>/history, with change notifications) to MCP
// hosts over streamable HTTP, and Proxy re-serves a gateway's MCP endpoint
// over stdio for `switchboard mcp`. Tools run through the same tools.Tool
// values agents get, as a configured caller session, so visibility, send
// policy and agent-to-agent rules apply unchanged.
//
// It imports the tools contract and the MCP Go SDK; the daemon wires it to
// the gateway port and the CLI runs its Proxy.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard/internal/tools"
)

// SessionHeader names the HTTP header that chooses the session an MCP
// caller acts as (default: the main session of the default agent).
const SessionHeader = "X-Switchboard-Session"

// ExposedTools are the tools the MCP server offers, in the order listed.
var ExposedTools = []string{"sessions_list", "sessions_history", "sessions_send", "sessions_spawn", "agents_list"}

// HistoryURITemplate is the URI template of a session's transcript resource.
const HistoryURITemplate = "switchboard://sessions/{key}/history"

// DefaultProgressInterval is how often a long tool call reports progress.
const DefaultProgressInterval = time.Second

// Config configures a Server. Tools and Caller are required.
type Config struct {
	// Tools returns the tools to choose the exposed ones from (called once
	// per tool call and list, so a reloaded set is picked up).
	Tools func() *tools.Set
	// Caller resolves the session key an MCP client chose ("" when it chose
	// none) into the caller the tools run as, or an error for a key that
	// cannot act.
	Caller func(sessionKey string) (tools.Caller, error)
	// WatchSession, when set, starts following one session's stream and
	// returns the follow loop (nil: the key is not one), which the server
	// runs on its own goroutine: it calls changed (which does not block)
	// each time the session's transcript grows after WatchSession
	// returned, until ctx ends. So a change made once a subscribe has
	// returned is never missed. The server follows the sessions whose
	// transcript resource a client subscribed to, one watch per resource.
	WatchSession func(sessionKey string) func(ctx context.Context, changed func())
	// Exists, when set, reports whether a session exists; the transcript
	// resource of one that does not is resource-not-found.
	Exists func(ctx context.Context, sessionKey string) (bool, error)
	// Version is reported as the server implementation's version.
	Version string
	// ProgressInterval is the period of progress notifications during a
	// tool call that asked for them; zero means DefaultProgressInterval.
	ProgressInterval time.Duration
	// Logger receives logs; nil discards them.
	Logger *slog.Logger
}

// Server is the MCP server. Create with New, serve with Handler or
// Connect, stop with Close. Safe for concurrent use.
type Server struct {
	cfg  Config
	log  *slog.Logger
	sdk  *sdk.Server
	http *sdk.StreamableHTTPHandler

	inflight atomic.Int64 // tool calls running

	// mu guards the fields that follow.
	mu      sync.Mutex
	pending map[string]bool        // resource URIs whose transcript grew
	watches map[string]*watchState // followed resources, by URI
	closed  bool

	wake      chan struct{}
	done      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// New returns a server; it starts the goroutine that sends resource change
// notifications, which Close stops.
func New(cfg Config) (*Server, error) {
	if cfg.Tools == nil || cfg.Caller == nil {
		return nil, errors.New("mcp.New: Tools and Caller are required")
	}
	if cfg.ProgressInterval <= 0 {
		cfg.ProgressInterval = DefaultProgressInterval
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:     cfg,
		log:     log.With("component", "mcp"),
		pending: make(map[string]bool),
		watches: make(map[string]*watchState),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	s.sdk = sdk.NewServer(&sdk.Implementation{Name: "switchboard", Version: cfg.Version}, &sdk.ServerOptions{
		Instructions: "Switchboard's session tools: list, read, message and spawn agent sessions. " +
			"Transcripts are resources at " + HistoryURITemplate + ".",
		Capabilities: &sdk.ServerCapabilities{
			Tools:     &sdk.ToolCapabilities{ListChanged: true},
			Resources: &sdk.ResourceCapabilities{ListChanged: true, Subscribe: true},
		},
		SubscribeHandler:   s.subscribe,
		UnsubscribeHandler: s.unsubscribe,
	})
	if err := s.addTools(); err != nil {
		return nil, err
	}
	s.sdk.AddResourceTemplate(&sdk.ResourceTemplate{
		Name:        "session-history",
		Title:       "Session transcript",
		Description: "A session's transcript as sessions_history returns it (the caller's visibility applies).",
		URITemplate: HistoryURITemplate,
		MIMEType:    "application/json",
	}, s.readHistory)
	s.sdk.AddReceivingMiddleware(s.listResources)
	s.http = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.sdk }, &sdk.StreamableHTTPOptions{
		Logger: s.log,
		// The gateway checks the Host of every request on its port
		// (gateway.Server.Doors and RequireBearer), admitting the names
		// it is configured with (gateway.publicOrigin) that the SDK's
		// loopback-only check would refuse behind a reverse proxy.
		DisableLocalhostProtection: true,
	})
	s.wg.Go(s.notifyLoop)
	return s, nil
}

// addTools registers the exposed tools found in the tool set.
func (s *Server) addTools() error {
	set := s.cfg.Tools()
	for _, name := range ExposedTools {
		t, ok := set.Get(name)
		if !ok {
			continue
		}
		var schema map[string]any
		if err := json.Unmarshal(t.Schema(), &schema); err != nil {
			return fmt.Errorf("mcp: schema of %s: %w", name, err)
		}
		if schema["type"] != "object" {
			schema = map[string]any{"type": "object", "properties": schema["properties"]}
		}
		s.sdk.AddTool(&sdk.Tool{Name: name, Description: t.Description(), InputSchema: schema}, s.callTool(name))
	}
	return nil
}

// Handler returns the streamable HTTP handler (mount it behind the
// gateway's authentication, gateway.Server.RequireBearer, which also
// checks the Host header). The SessionHeader of each request chooses the
// caller session.
func (s *Server) Handler() http.Handler { return s.http }

// Connect serves one MCP session over t (stdio, in-memory) until the peer
// goes away or Close; the caller is the default session.
func (s *Server) Connect(ctx context.Context, t sdk.Transport) (*sdk.ServerSession, error) {
	return s.sdk.Connect(ctx, t, nil)
}

// Inflight reports the tool calls running now.
func (s *Server) Inflight() int64 { return s.inflight.Load() }

// Close ends every MCP session and stops the notification loop. A second
// call returns an error saying the server is closed.
func (s *Server) Close() error {
	first := false
	s.closeOnce.Do(func() {
		first = true
		s.mu.Lock()
		s.closed = true
		for _, w := range s.watches {
			w.cancel()
		}
		s.mu.Unlock()
		close(s.done)
		s.wg.Wait()
		for ss := range s.sdk.Sessions() {
			ss.Close()
		}
	})
	if !first {
		return errClosed
	}
	return nil
}

var errClosed = errors.New("mcp: server closed")

// callerFor resolves the caller of one request: the SessionHeader of an
// HTTP request, else the default session.
func (s *Server) callerFor(extra *sdk.RequestExtra) (tools.Caller, error) {
	key := ""
	if extra != nil && extra.Header != nil {
		key = strings.TrimSpace(extra.Header.Get(SessionHeader))
	}
	return s.cfg.Caller(key)
}

// callTool runs the named tool as the request's caller; a tool error
// becomes an MCP tool error result in the reference's envelope.
func (s *Server) callTool(name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		s.inflight.Add(1)
		defer s.inflight.Add(-1)
		caller, err := s.callerFor(req.Extra)
		if err != nil {
			return toResult(tools.ErrorResult(name, err)), nil
		}
		t, ok := s.cfg.Tools().Get(name)
		if !ok {
			return toResult(tools.ErrorResult(name, errors.New("tool not available"))), nil
		}
		args := json.RawMessage(req.Params.Arguments)
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		stop := s.progress(ctx, req, name, args)
		res, err := t.Call(tools.WithCaller(ctx, caller), args)
		stop()
		if ctx.Err() != nil {
			return nil, ctx.Err() // cancelled: the SDK sends no reply
		}
		if err != nil {
			res = tools.ErrorResult(name, err)
		}
		return toResult(res), nil
	}
}

// toResult converts a tool result: the text block, and the details as
// structured content when they are a JSON object.
func toResult(r *tools.Result) *sdk.CallToolResult {
	out := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: r.Text}}, IsError: r.IsError}
	if b, err := json.Marshal(r.Details); err == nil && len(b) > 0 && b[0] == '{' {
		out.StructuredContent = json.RawMessage(b)
	}
	return out
}

// progress reports, while a tool call that carries a progress token runs,
// the seconds waited so far (out of timeoutSeconds when the arguments set
// one). The returned func stops the reports and waits for the reporter.
func (s *Server) progress(ctx context.Context, req *sdk.CallToolRequest, name string, args json.RawMessage) func() {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return func() {}
	}
	var p struct {
		TimeoutSeconds *float64 `json:"timeoutSeconds"`
		SessionKey     string   `json:"sessionKey"`
		Label          string   `json:"label"`
	}
	_ = json.Unmarshal(args, &p) // the tool reports bad arguments itself
	total := 0.0
	if p.TimeoutSeconds != nil && *p.TimeoutSeconds > 0 {
		total = *p.TimeoutSeconds
	}
	target := p.SessionKey
	if target == "" {
		target = p.Label
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		start := time.Now()
		tick := time.NewTicker(s.cfg.ProgressInterval)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case now := <-tick.C:
				waited := now.Sub(start).Seconds()
				msg := fmt.Sprintf("%s: waiting %.0fs", name, waited)
				if target != "" {
					msg = fmt.Sprintf("%s: waiting %.0fs for %s", name, waited, target)
				}
				err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
					ProgressToken: token, Progress: waited, Total: total, Message: msg,
				})
				if err != nil {
					s.log.Debug("progress notification failed", "tool", name, "err", err)
				}
			}
		}
	})
	return func() { close(stop); wg.Wait() }
}

// HistoryURI returns the transcript resource URI of a session key.
func HistoryURI(key string) string {
	return "switchboard://sessions/" + escapeKey(key) + "/history"
}

// escapeKey percent-encodes everything but unreserved characters, so that
// a key's colons survive URI template matching.
func escapeKey(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// KeyFromURI returns the session key of a transcript resource URI.
func KeyFromURI(uri string) (string, error) {
	rest, ok := strings.CutPrefix(uri, "switchboard://sessions/")
	if !ok {
		return "", fmt.Errorf("not a switchboard session URI: %q", uri)
	}
	enc, ok := strings.CutSuffix(rest, "/history")
	if !ok || enc == "" || strings.Contains(enc, "/") {
		return "", fmt.Errorf("not a session history URI: %q", uri)
	}
	key, err := url.PathUnescape(enc)
	if err != nil || strings.TrimSpace(key) == "" {
		return "", fmt.Errorf("bad session key in %q", uri)
	}
	return key, nil
}

// readHistory reads a transcript resource through sessions_history as the
// caller: what the caller may not see is "not found".
func (s *Server) readHistory(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	text, err := s.history(ctx, req.Extra, req.Params.URI)
	if err != nil {
		return nil, err
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{
		URI: req.Params.URI, MIMEType: "application/json", Text: text,
	}}}, nil
}

func (s *Server) history(ctx context.Context, extra *sdk.RequestExtra, uri string) (string, error) {
	key, err := KeyFromURI(uri)
	if err != nil {
		return "", ResourceNotFound(uri, "")
	}
	caller, err := s.callerFor(extra)
	if err != nil {
		return "", err
	}
	t, ok := s.cfg.Tools().Get("sessions_history")
	if !ok {
		return "", ResourceNotFound(uri, "")
	}
	args, _ := json.Marshal(map[string]any{"sessionKey": key})
	res, err := t.Call(tools.WithCaller(ctx, caller), args)
	if err != nil {
		return "", fmt.Errorf("sessions_history: %w", err)
	}
	if res.IsError || statusOf(res.Details) != "" {
		return "", ResourceNotFound(uri, strings.TrimSpace(res.Text))
	}
	if s.cfg.Exists != nil {
		ok, err := s.cfg.Exists(ctx, key)
		if err != nil {
			return "", fmt.Errorf("mcp: session %q: %w", key, err)
		}
		if !ok {
			return "", ResourceNotFound(uri, "no session "+key)
		}
	}
	return res.Text, nil
}

// CodeResourceNotFound is MCP's resource-not-found error code.
const CodeResourceNotFound = -32002

// ResourceNotFound is the resources/read error for uri: code -32002 with
// the URI in its data, and why (when not "") after the message.
func ResourceNotFound(uri, why string) error {
	msg := "Resource not found"
	if why != "" {
		msg += ": " + why
	}
	data, _ := json.Marshal(map[string]string{"uri": uri})
	return &jsonrpc.Error{Code: CodeResourceNotFound, Message: msg, Data: data}
}

// statusOf returns the "status" of a tool result payload when it is not
// "ok" (the session tools answer forbidden and error that way).
func statusOf(details any) string {
	b, err := json.Marshal(details)
	if err != nil {
		return "error"
	}
	var v struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(b, &v)
	if v.Status == "" || v.Status == "ok" {
		return ""
	}
	return v.Status
}

// subscribe admits a subscription to a transcript the caller can read,
// and follows the session while any client subscribes to it.
func (s *Server) subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	if _, err := s.history(ctx, req.Extra, req.Params.URI); err != nil {
		return err
	}
	s.watch(req.Params.URI, req.Session)
	return nil
}

// unsubscribe ends a subscription; the session is no longer followed
// when it was the resource's last.
func (s *Server) unsubscribe(_ context.Context, req *sdk.UnsubscribeRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.watches[req.Params.URI]; w != nil {
		delete(w.subscribers, req.Session)
	}
	s.dropUnwatchedLocked()
	return nil
}

// watchState is one followed transcript resource.
type watchState struct {
	// subscribers are the MCP sessions subscribed to it (as the SDK
	// counts them: once per session).
	subscribers map[*sdk.ServerSession]bool
	cancel      context.CancelFunc
}

// watch records a subscription of ss to uri, starting to follow its
// session at the first.
func (s *Server) watch(uri string, ss *sdk.ServerSession) {
	key, err := KeyFromURI(uri)
	if err != nil || s.cfg.WatchSession == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.dropUnwatchedLocked()
	if w := s.watches[uri]; w != nil {
		w.subscribers[ss] = true
		return
	}
	follow := s.cfg.WatchSession(key)
	if follow == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.watches[uri] = &watchState{subscribers: map[*sdk.ServerSession]bool{ss: true}, cancel: cancel}
	s.wg.Go(func() { follow(ctx, func() { s.changed(uri) }) })
}

// dropUnwatchedLocked forgets the subscribers whose MCP session ended
// (the SDK drops their subscriptions without calling unsubscribe) and
// stops following the resources nobody subscribes to. s.mu is held.
func (s *Server) dropUnwatchedLocked() {
	live := map[*sdk.ServerSession]bool{}
	for ss := range s.sdk.Sessions() {
		live[ss] = true
	}
	for uri, w := range s.watches {
		for ss := range w.subscribers {
			if !live[ss] {
				delete(w.subscribers, ss)
			}
		}
		if len(w.subscribers) == 0 {
			w.cancel()
			delete(s.watches, uri)
		}
	}
}

// Watched returns the transcript resources followed now (subscribed to by
// at least one client), by URI.
func (s *Server) Watched() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropUnwatchedLocked()
	out := make([]string, 0, len(s.watches))
	for uri := range s.watches {
		out = append(out, uri)
	}
	slices.Sort(out)
	return out
}

// listResources answers resources/list with the transcripts of the
// sessions the caller sees (sessions_list), newest first.
func (s *Server) listResources(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method != "resources/list" {
			return next(ctx, method, req)
		}
		caller, err := s.callerFor(req.GetExtra())
		if err != nil {
			return nil, err
		}
		t, ok := s.cfg.Tools().Get("sessions_list")
		if !ok {
			return &sdk.ListResourcesResult{Resources: []*sdk.Resource{}}, nil
		}
		res, err := t.Call(tools.WithCaller(ctx, caller), json.RawMessage(`{"limit":100}`))
		if err != nil {
			return nil, fmt.Errorf("sessions_list: %w", err)
		}
		b, _ := json.Marshal(res.Details)
		var list struct {
			Sessions []struct {
				Key         string `json:"key"`
				DisplayName string `json:"displayName"`
			} `json:"sessions"`
		}
		_ = json.Unmarshal(b, &list)
		out := &sdk.ListResourcesResult{Resources: []*sdk.Resource{}}
		for _, r := range list.Sessions {
			out.Resources = append(out.Resources, &sdk.Resource{
				URI: HistoryURI(r.Key), Name: r.Key, Title: r.DisplayName, MIMEType: "application/json",
			})
		}
		return out, nil
	}
}

// changed records that a followed transcript resource grew; it never
// blocks.
func (s *Server) changed(uri string) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.pending[uri] = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// notifyLoop sends resources/updated for the transcripts that grew,
// coalescing bursts, until Close.
func (s *Server) notifyLoop() {
	for {
		select {
		case <-s.done:
			return
		case <-s.wake:
		}
		s.mu.Lock()
		uris := s.pending
		s.pending = make(map[string]bool)
		s.dropUnwatchedLocked() // subscribers gone since, and what only they followed
		s.mu.Unlock()
		for uri := range uris {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := s.sdk.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
				s.log.Debug("resource update notification failed", "uri", uri, "err", err)
			}
			cancel()
		}
	}
}
