package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProxyConfig configures Proxy. Endpoint is required.
type ProxyConfig struct {
	// Endpoint is the gateway's MCP URL, e.g. http://127.0.0.1:18789/mcp
	// (see EndpointFromGatewayURL).
	Endpoint string
	// Token is sent as "Authorization: Bearer <Token>" (the gateway token
	// or password).
	Token string
	// Session chooses the session the MCP client acts as ("" = default).
	Session string
	// HTTPClient carries the requests; nil means a default client.
	HTTPClient *http.Client
	// Version is reported as the proxy's implementation version.
	Version string
	// Logger receives logs; nil discards them.
	Logger *slog.Logger
	// Missing, when not "", says what the caller could not find (no
	// credentials): it is added to the error of a first connection that
	// fails.
	Missing string
}

// EndpointFromGatewayURL turns the gateway's WebSocket URL (ws://host:port,
// wss://…) into the URL of its MCP endpoint.
func EndpointFromGatewayURL(gw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(gw))
	if err != nil {
		return "", fmt.Errorf("mcp: gateway URL %q: %w", gw, err)
	}
	switch u.Scheme {
	case "ws", "http":
		u.Scheme = "http"
	case "wss", "https":
		u.Scheme = "https"
	default:
		return "", fmt.Errorf("mcp: gateway URL %q: want ws://, wss://, http:// or https://", gw)
	}
	u.User = nil
	u.Path = strings.TrimSuffix(u.Path, "/") + "/mcp"
	u.RawQuery, u.Fragment = "", ""
	return u.String(), nil
}

// Proxy serves MCP on t (stdio for `switchboard mcp`) by forwarding to the
// gateway's /mcp endpoint, so that every tool call and resource read is
// decided by the gateway's policy for the chosen session. Tools, resources,
// subscriptions, progress notifications and cancellation pass through. It
// returns when the local peer goes away or ctx ends, once the calls it
// sent before it went are answered (see drainTransport); an unreachable or
// refusing gateway is an error before any local traffic.
func Proxy(ctx context.Context, cfg ProxyConfig, t sdk.Transport) error {
	if cfg.Endpoint == "" {
		return errors.New("mcp.Proxy: no endpoint")
	}
	t = drainTransport{Transport: t}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &proxy{log: log, tokens: make(map[any]*sdk.ServerSession), subs: make(map[string]bool)}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	h := http.Header{}
	if cfg.Token != "" {
		h.Set("Authorization", "Bearer "+cfg.Token)
	}
	if cfg.Session != "" {
		h.Set(SessionHeader, cfg.Session)
	}
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	hc2 := *hc
	hc2.Transport = headerTransport{h: h, next: next}

	p.local = sdk.NewServer(&sdk.Implementation{Name: "switchboard", Version: cfg.Version}, &sdk.ServerOptions{
		Instructions: "Switchboard's session tools: list, read, message and spawn agent sessions. " +
			"Transcripts are resources at " + HistoryURITemplate + ".",
		Capabilities: &sdk.ServerCapabilities{
			Tools:     &sdk.ToolCapabilities{ListChanged: true},
			Resources: &sdk.ResourceCapabilities{ListChanged: true, Subscribe: true},
		},
		SubscribeHandler: func(ctx context.Context, r *sdk.SubscribeRequest) error {
			err := p.do(ctx, func(up *sdk.ClientSession) error {
				return up.Subscribe(ctx, &sdk.SubscribeParams{URI: r.Params.URI})
			})
			if err != nil {
				return err
			}
			p.mu.Lock()
			p.subs[r.Params.URI] = true
			p.mu.Unlock()
			return nil
		},
		UnsubscribeHandler: func(ctx context.Context, r *sdk.UnsubscribeRequest) error {
			p.mu.Lock()
			delete(p.subs, r.Params.URI)
			p.mu.Unlock()
			return p.do(ctx, func(up *sdk.ClientSession) error {
				return up.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: r.Params.URI})
			})
		},
	})
	client := sdk.NewClient(&sdk.Implementation{Name: "switchboard-mcp-proxy", Version: cfg.Version}, &sdk.ClientOptions{
		ProgressNotificationHandler: p.forwardProgress,
		ResourceUpdatedHandler: func(ctx context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
			if err := p.local.ResourceUpdated(ctx, r.Params); err != nil {
				log.Debug("forward resources/updated", "err", err)
			}
		},
		ToolListChangedHandler: func(ctx context.Context, r *sdk.ToolListChangedRequest) {
			if err := p.syncTools(ctx, r.Session); err != nil {
				log.Warn("refresh tools from the gateway", "err", err)
			}
		},
	})
	p.dial = func(ctx context.Context) (*sdk.ClientSession, error) {
		up, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: cfg.Endpoint, HTTPClient: &hc2}, nil)
		if err != nil {
			return nil, fmt.Errorf("mcp: connect to the gateway's MCP endpoint %s: %w", cfg.Endpoint, err)
		}
		return up, nil
	}
	defer p.close()
	up, err := p.upstream(ctx)
	if err != nil {
		if cfg.Missing != "" {
			err = fmt.Errorf("%w (%s)", err, cfg.Missing)
		}
		return serveFailure(ctx, cfg, log, t, err)
	}
	if err := p.syncTools(ctx, up); err != nil {
		return err
	}
	p.local.AddResourceTemplate(&sdk.ResourceTemplate{
		Name: "session-history", Title: "Session transcript", URITemplate: HistoryURITemplate, MIMEType: "application/json",
	}, func(ctx context.Context, r *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		var res *sdk.ReadResourceResult
		err := p.do(ctx, func(up *sdk.ClientSession) (err error) {
			res, err = up.ReadResource(ctx, &sdk.ReadResourceParams{URI: r.Params.URI})
			return err
		})
		return res, err
	})
	p.local.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "resources/list" {
				params := &sdk.ListResourcesParams{}
				if lp, ok := req.GetParams().(*sdk.ListResourcesParams); ok && lp != nil {
					params.Cursor = lp.Cursor
				}
				var res *sdk.ListResourcesResult
				err := p.do(ctx, func(up *sdk.ClientSession) (err error) {
					res, err = up.ListResources(ctx, params)
					return err
				})
				return res, err
			}
			return next(ctx, method, req)
		}
	})
	err = p.local.Run(ctx, t)
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// serveFailure tells the local MCP host why the proxy cannot serve: err
// goes to the log (stderr) and answers every request, initialize included,
// as a JSON-RPC error, until the host goes away. It returns err.
func serveFailure(ctx context.Context, cfg ProxyConfig, log *slog.Logger, t sdk.Transport, err error) error {
	log.Error("switchboard mcp cannot serve", "err", err)
	srv := sdk.NewServer(&sdk.Implementation{Name: "switchboard", Version: cfg.Version}, nil)
	srv.AddReceivingMiddleware(func(sdk.MethodHandler) sdk.MethodHandler {
		return func(context.Context, string, sdk.Request) (sdk.Result, error) {
			return nil, &jsonrpc.Error{Code: CodeGatewayUnavailable, Message: err.Error()}
		}
	})
	_ = srv.Run(ctx, t) // ends when the host closes the connection
	return err
}

// CodeGatewayUnavailable is the JSON-RPC error code with which `switchboard
// mcp` answers when it cannot reach or authenticate to the gateway.
const CodeGatewayUnavailable = -32000

type proxy struct {
	log   *slog.Logger
	local *sdk.Server
	dial  func(ctx context.Context) (*sdk.ClientSession, error)
	wg    sync.WaitGroup // upstream watchers

	// upMu serialises (re)connecting; it is taken before mu.
	upMu sync.Mutex
	// mu guards the fields that follow.
	mu     sync.Mutex
	up     *sdk.ClientSession // nil once it ended
	closed bool
	subs   map[string]bool // resource subscriptions to renew on reconnect
	tools  map[string]bool
	tokens map[any]*sdk.ServerSession // progress token → local session
}

// upstream returns the gateway session, connecting again when the last
// one ended (the gateway restarted): the tools are listed again and the
// resource subscriptions renewed.
func (p *proxy) upstream(ctx context.Context) (*sdk.ClientSession, error) {
	p.upMu.Lock()
	defer p.upMu.Unlock()
	p.mu.Lock()
	up, closed, renew := p.up, p.closed, p.tools != nil
	p.mu.Unlock()
	if up != nil {
		return up, nil
	}
	if closed {
		return nil, errors.New("mcp: proxy closed")
	}
	up, err := p.dial(ctx)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.up = up
	var subs []string
	for uri := range p.subs {
		subs = append(subs, uri)
	}
	p.mu.Unlock()
	p.wg.Go(func() {
		err := up.Wait()
		p.mu.Lock()
		if p.up == up {
			p.up = nil
		}
		p.mu.Unlock()
		p.log.Debug("gateway MCP session ended", "err", err)
	})
	if renew {
		p.log.Info("reconnected to the gateway's MCP endpoint")
		if err := p.syncTools(ctx, up); err != nil {
			return nil, err
		}
		for _, uri := range subs {
			if err := up.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
				p.log.Warn("renew resource subscription", "uri", uri, "err", err)
			}
		}
	}
	return up, nil
}

// close ends the upstream session and waits for its watcher.
func (p *proxy) close() {
	p.upMu.Lock()
	p.mu.Lock()
	up := p.up
	p.closed = true
	p.mu.Unlock()
	p.upMu.Unlock()
	if up != nil {
		up.Close()
	}
	p.wg.Wait()
}

// syncTools mirrors the gateway's tool list onto the local server.
func (p *proxy) syncTools(ctx context.Context, up *sdk.ClientSession) error {
	lt, err := up.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("mcp: list the gateway's tools: %w", err)
	}
	seen := make(map[string]bool, len(lt.Tools))
	for _, tool := range lt.Tools {
		seen[tool.Name] = true
		p.local.AddTool(tool, p.forwardCall(tool.Name))
	}
	p.mu.Lock()
	var gone []string
	for name := range p.tools {
		if !seen[name] {
			gone = append(gone, name)
		}
	}
	p.tools = seen
	p.mu.Unlock()
	if len(gone) > 0 {
		p.local.RemoveTools(gone...)
	}
	return nil
}

// forwardCall forwards a tool call with its progress token; cancelling the
// local call cancels the gateway's.
func (p *proxy) forwardCall(name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		// Only the progress token of _meta is forwarded: the rest belongs
		// to the local session's protocol version.
		params := &sdk.CallToolParams{Name: name, Arguments: req.Params.Arguments}
		if tok := req.Params.GetProgressToken(); tok != nil {
			// Set as decoded: a JSON number arrives as float64, which
			// SetProgressToken refuses.
			params.Meta = sdk.Meta{"progressToken": tok}
			key := tokenKey(tok)
			p.mu.Lock()
			p.tokens[key] = req.Session
			p.mu.Unlock()
			defer func() {
				p.mu.Lock()
				delete(p.tokens, key)
				p.mu.Unlock()
			}()
		}
		var res *sdk.CallToolResult
		err := p.do(ctx, func(up *sdk.ClientSession) (err error) {
			res, err = up.CallTool(ctx, params)
			return err
		})
		return res, err
	}
}

// do runs fn on the gateway session, once more on a new connection when
// the gateway refused it unseen: the connection had closed, or the gateway
// restarted and no longer knows the session.
func (p *proxy) do(ctx context.Context, fn func(up *sdk.ClientSession) error) error {
	up, err := p.upstream(ctx)
	if err != nil {
		return err
	}
	err = fn(up)
	if errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing) {
		p.dropUpstream(up)
		up.Close()
		if up, err = p.upstream(ctx); err != nil {
			return err
		}
		err = fn(up)
	}
	return err
}

// dropUpstream forgets up so that the next use connects again.
func (p *proxy) dropUpstream(up *sdk.ClientSession) {
	p.mu.Lock()
	if p.up == up {
		p.up = nil
	}
	p.mu.Unlock()
}

// tokenKey makes JSON numbers and strings comparable map keys.
func tokenKey(tok any) any { return fmt.Sprintf("%T:%v", tok, tok) }

// forwardProgress passes a gateway progress notification to the local
// session whose call carries the token.
func (p *proxy) forwardProgress(ctx context.Context, r *sdk.ProgressNotificationClientRequest) {
	p.mu.Lock()
	ss := p.tokens[tokenKey(r.Params.ProgressToken)]
	p.mu.Unlock()
	if ss == nil {
		return
	}
	if err := ss.NotifyProgress(ctx, r.Params); err != nil {
		p.log.Debug("forward progress", "err", err)
	}
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	h    http.Header
	next http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return t.next.RoundTrip(r)
}
