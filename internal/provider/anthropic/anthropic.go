// Package anthropic owns the adapter from the provider contract to the
// Anthropic Messages streaming API ("anthropic-messages"). It maps requests
// and messages to the wire format (system prompt, tools with input_schema,
// tool_use and tool_result blocks, extended thinking), streamed events to
// provider events, and HTTP failures to *provider.Error. It speaks the wire
// format itself (a few JSON structs over the shared provider/transport) and
// imports nothing else; the daemon wires it up. The official SDK it
// replaced was about 2.5 MB of the binary.
//
// Mapping notes:
//   - Consecutive tool results, and any user text that follows them, are
//     merged into one user message with the tool_result blocks first, as the
//     API requires. Message.IsError becomes is_error.
//   - Request.Thinking "low", "medium" and "high" enable extended thinking
//     with a budget of 1024, 4096 and 16384 tokens; any other value leaves it
//     off. When the budget does not fit under max_tokens, max_tokens is
//     raised to budget+MaxTokens. Because the contract carries no thinking
//     signatures, thinking is also left off while the last assistant message
//     has tool calls (the API would demand that turn's signed thinking block).
//   - Tool call arguments that arrive empty become {}; arguments that are not
//     a JSON object (for example cut off by max_tokens) become
//     {"_raw": "<the text received>"}, so ToolCall.Arguments is always an
//     object.
//   - Ambient ANTHROPIC_* environment variables and credential profiles are
//     never read; everything comes from Config.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strings"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/provider/transport"
)

// apiVersion is the anthropic-version header sent with every request.
const apiVersion = "2023-06-01"

// DefaultBaseURL is the API root used when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultMaxTokens is the max_tokens sent when neither the request nor
// Config sets one; the Messages API requires it.
const DefaultMaxTokens = 4096

// Config configures a Provider. Zero values are the documented defaults.
type Config struct {
	// BaseURL is the API root that "v1/messages" is appended to, so it
	// excludes /v1. Empty means DefaultBaseURL.
	BaseURL string
	// APIKey is sent as the x-api-key header. Empty sends none (for proxies
	// that add credentials themselves).
	APIKey string
	// Headers are added to every request (they may override the default
	// ones, e.g. anthropic-version; anthropic-beta goes here).
	Headers map[string]string
	// HTTPClient sends the requests; nil means http.DefaultClient. Its
	// Timeout must be zero or longer than any reply: it bounds the stream.
	HTTPClient *http.Client
	// MaxRetries is how many times a request is retried after a connection
	// error or an HTTP 408, 409, 429 or 5xx, before any event is streamed.
	// 0 sends it once. Negative values are invalid.
	MaxRetries int
	// Name is the provider id used in errors; empty means "anthropic".
	Name string
	// DefaultMaxTokens is max_tokens for requests with MaxTokens 0; 0 means
	// DefaultMaxTokens.
	DefaultMaxTokens int
}

// Provider streams model turns from the Anthropic Messages API. It is safe
// for concurrent use.
type Provider struct {
	name       string
	maxTokens  int
	url        string // the messages endpoint
	header     http.Header
	client     *http.Client // nil: http.DefaultClient
	maxRetries int
}

var _ provider.Provider = (*Provider)(nil)

// New returns a Provider for cfg. It reports an invalid BaseURL or negative
// MaxRetries or DefaultMaxTokens.
func New(cfg Config) (*Provider, error) {
	name := cfg.Name
	if name == "" {
		name = "anthropic"
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("anthropic.New: %s: invalid BaseURL %q", name, base)
	}
	if cfg.MaxRetries < 0 {
		return nil, fmt.Errorf("anthropic.New: %s: negative MaxRetries %d", name, cfg.MaxRetries)
	}
	if cfg.DefaultMaxTokens < 0 {
		return nil, fmt.Errorf("anthropic.New: %s: negative DefaultMaxTokens %d", name, cfg.DefaultMaxTokens)
	}
	maxTokens := cfg.DefaultMaxTokens
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokens
	}
	// Ambient ANTHROPIC_* variables are never read: everything is in cfg.
	h := http.Header{}
	h.Set("anthropic-version", apiVersion)
	if cfg.APIKey != "" {
		h.Set("x-api-key", cfg.APIKey)
	}
	for k, v := range cfg.Headers {
		h.Set(k, v)
	}
	return &Provider{name: name, maxTokens: maxTokens, url: strings.TrimSuffix(base, "/") + "/v1/messages", header: h,
		client: cfg.HTTPClient, maxRetries: cfg.MaxRetries}, nil
}

// Name returns the provider id used in errors.
func (p *Provider) Name() string { return p.name }

// Stream sends req as a streaming Messages request and yields its events:
// text and thinking deltas as they arrive, each tool call when its block
// closes, one combined usage event, then EventDone. Failures are yielded as
// *provider.Error, or as ctx.Err() once ctx is done. Breaking out of the
// range closes the response body.
func (p *Provider) Stream(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Event, error] {
	return func(yield func(*provider.Event, error) bool) {
		params, err := newParams(req, p.maxTokens)
		if err != nil {
			yield(nil, fmt.Errorf("anthropic.Stream: %s: %w", p.name, err))
			return
		}
		body, err := json.Marshal(params)
		if err != nil {
			yield(nil, fmt.Errorf("anthropic.Stream: %s: %w", p.name, err))
			return
		}
		res, err := transport.Post(ctx, transport.Request{Client: p.client, URL: p.url, Header: p.header, Body: body, MaxRetries: p.maxRetries})
		if err != nil {
			yield(nil, p.mapError(ctx, err))
			return
		}
		defer res.Body.Close()

		var st streamState
		events := transport.NewSSEReader(res.Body)
		for {
			sse, ok := events.Next()
			if !ok {
				break
			}
			if len(sse.Data) == 0 {
				continue
			}
			var ev streamEvent
			if err := json.Unmarshal(sse.Data, &ev); err != nil {
				yield(nil, &provider.Error{Provider: p.name, Message: "decode stream event: " + err.Error()})
				return
			}
			if sse.Type == "error" || ev.Type == "error" {
				yield(nil, errorResponse(p.name, 0, sse.Data))
				return
			}
			st.event(&ev)
			if !st.drain(yield) {
				return
			}
		}
		if err := events.Err(); err != nil {
			yield(nil, p.mapError(ctx, err))
			return
		}
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		if !st.stopped {
			yield(nil, &provider.Error{Provider: p.name, Message: "stream ended before message_stop", Retryable: true})
			return
		}
		st.finish()
		st.drain(yield)
	}
}

// mapError turns a transport error into ctx.Err() or a *provider.Error.
func (p *Provider) mapError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return classify(p.name, err)
}
