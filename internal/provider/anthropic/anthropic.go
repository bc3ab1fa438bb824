// Package anthropic owns the adapter from the provider contract to the
// Anthropic Messages streaming API ("anthropic-messages"). It maps requests
// and messages to the wire format (system prompt, tools with input_schema,
// tool_use and tool_result blocks, extended thinking), streamed events to
// provider events, and HTTP failures to *provider.Error. It imports only
// provider and the official anthropic-sdk-go SDK; the daemon wires it up.
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
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/switchboardhq/switchboard/internal/provider"
)

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
	// Headers are added to every request (they may override SDK headers,
	// e.g. anthropic-beta).
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
	name      string
	maxTokens int
	messages  anthropic.MessageService
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
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(base),
		option.WithMaxRetries(cfg.MaxRetries),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	for k, v := range cfg.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	client := anthropic.NewClient(opts...)
	return &Provider{name: name, maxTokens: maxTokens, messages: client.Messages}, nil
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
		stream := p.messages.NewStreaming(ctx, params)
		defer stream.Close()

		var st streamState
		for stream.Next() {
			ev := stream.Current()
			st.event(&ev)
			if !st.drain(yield) {
				return
			}
		}
		if err := stream.Err(); err != nil {
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

// mapError turns an SDK or transport error into ctx.Err() or a
// *provider.Error.
func (p *Provider) mapError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return classify(p.name, err)
}
