// Package openai owns the adapter from the provider contract to the OpenAI
// Chat Completions streaming API ("openai-completions"), as spoken by OpenAI
// and by OpenAI-compatible servers (Ollama, vLLM, llama.cpp, LM Studio,
// OpenRouter, ...). It maps requests and messages to the wire format, streamed
// chunks to provider events, and HTTP failures to *provider.Error. It imports
// only provider and the official openai-go SDK; the daemon wires it up.
//
// Mapping notes:
//   - Request.Thinking is ignored: reasoning_effort is rejected by models
//     that do not reason, and the contract does not say which ones do.
//     Reasoning text that a server streams (delta.reasoning_content, or
//     delta.reasoning) is still surfaced as EventThinkingDelta.
//   - Message.IsError has no Chat Completions field; the tool result text is
//     sent as is.
//   - Tool call arguments that arrive empty become {}; arguments that are not
//     a JSON object (truncated or malformed model output) become
//     {"_raw": "<the text received>"}, so ToolCall.Arguments is always an
//     object and the tool can report the problem to the model.
//   - Ambient OPENAI_* environment variables are never read; everything comes
//     from Config.
package openai

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/switchboardhq/switchboard/internal/provider"
)

// DefaultBaseURL is the API root used when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config configures a Provider. Zero values are the documented defaults.
type Config struct {
	// BaseURL is the API root that "chat/completions" is appended to, for
	// example "http://127.0.0.1:11434/v1". Empty means DefaultBaseURL.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <APIKey>". Empty sends no
	// Authorization header, which local servers accept.
	APIKey string
	// Headers are added to every request (they may override SDK headers).
	Headers map[string]string
	// HTTPClient sends the requests; nil means http.DefaultClient. Its
	// Timeout must be zero or longer than any reply: it bounds the stream.
	HTTPClient *http.Client
	// MaxRetries is how many times a request is retried after a connection
	// error or an HTTP 408, 409, 429 or 5xx, before any event is streamed.
	// 0 sends it once. Negative values are invalid.
	MaxRetries int
	// Name is the provider id used in errors; empty means "openai".
	Name string
}

// Provider streams model turns from a Chat Completions endpoint. It is safe
// for concurrent use.
type Provider struct {
	name  string
	chat  openai.ChatCompletionService
	embed openai.EmbeddingService
}

var (
	_ provider.Provider = (*Provider)(nil)
	_ provider.Embedder = (*Provider)(nil)
)

// New returns a Provider for cfg. It reports an invalid BaseURL or a
// negative MaxRetries.
func New(cfg Config) (*Provider, error) {
	name := cfg.Name
	if name == "" {
		name = "openai"
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai.New: %s: invalid BaseURL %q", name, base)
	}
	if cfg.MaxRetries < 0 {
		return nil, fmt.Errorf("openai.New: %s: negative MaxRetries %d", name, cfg.MaxRetries)
	}
	// The service is built directly, not through openai.NewClient, so that
	// OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_ORG_ID, OPENAI_CUSTOM_HEADERS
	// and the like never leak into a configured provider.
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(cfg.MaxRetries),
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	for k, v := range cfg.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	return &Provider{name: name, chat: openai.NewChatCompletionService(opts...), embed: openai.NewEmbeddingService(opts...)}, nil
}

// Name returns the provider id used in errors.
func (p *Provider) Name() string { return p.name }

// Stream sends req as a streaming chat completion and yields its events:
// text and thinking deltas as they arrive, each tool call once complete, one
// usage event when the server reports usage, then EventDone. Failures are
// yielded as *provider.Error, or as ctx.Err() once ctx is done. Breaking
// out of the range closes the response body.
func (p *Provider) Stream(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Event, error] {
	return func(yield func(*provider.Event, error) bool) {
		params, err := newParams(req)
		if err != nil {
			yield(nil, fmt.Errorf("openai.Stream: %s: %w", p.name, err))
			return
		}
		var failed failedResponse
		stream := p.chat.NewStreaming(ctx, params, option.WithMiddleware(failed.capture))
		defer stream.Close()

		var st streamState
		for stream.Next() {
			chunk := stream.Current()
			st.chunk(&chunk)
			if !st.drain(yield) {
				return
			}
		}
		if err := stream.Err(); err != nil {
			yield(nil, p.mapError(ctx, err, &failed))
			return
		}
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		if st.chunks == 0 {
			// A server that ignored stream:true, or an empty body.
			yield(nil, &provider.Error{Provider: p.name, Message: "no chat.completion.chunk in the response stream"})
			return
		}
		st.finish()
		st.drain(yield)
	}
}

// mapError turns an SDK or transport error into ctx.Err() or a
// *provider.Error.
func (p *Provider) mapError(ctx context.Context, err error, failed *failedResponse) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return classify(p.name, err, failed)
}
