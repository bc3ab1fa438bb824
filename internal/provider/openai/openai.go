// Package openai owns the adapter from the provider contract to the OpenAI
// Chat Completions streaming API ("openai-completions"), as spoken by OpenAI
// and by OpenAI-compatible servers (Ollama, vLLM, llama.cpp, LM Studio,
// OpenRouter, ...). It maps requests and messages to the wire format, streamed
// chunks to provider events, and HTTP failures to *provider.Error. It speaks
// the wire format itself (a few JSON structs and an SSE reader) and imports
// only provider; the daemon wires it up. The official SDK it replaced was
// about 8 MB of the binary and 1-7 ms of initialisation at every start.
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
	"bytes"
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
	// Headers are added to every request (they may override the
	// Content-Type and Authorization headers).
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
	name       string
	base       string // BaseURL without a trailing slash
	apiKey     string
	headers    map[string]string
	client     *http.Client // nil: http.DefaultClient
	maxRetries int
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
	// Ambient OPENAI_* variables are never read: everything is in cfg.
	return &Provider{name: name, base: strings.TrimSuffix(base, "/"), apiKey: cfg.APIKey, headers: cfg.Headers,
		client: cfg.HTTPClient, maxRetries: cfg.MaxRetries}, nil
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
		body, err := json.Marshal(params)
		if err != nil {
			yield(nil, fmt.Errorf("openai.Stream: %s: %w", p.name, err))
			return
		}
		res, err := p.post(ctx, "/chat/completions", body)
		if err != nil {
			yield(nil, err)
			return
		}
		defer res.Body.Close()

		var st streamState
		events := transport.NewSSEReader(res.Body)
		for {
			ev, ok := events.Next()
			if !ok {
				break
			}
			data := ev.Data
			if len(data) == 0 {
				continue
			}
			if bytes.HasPrefix(data, []byte("[DONE]")) {
				break
			}
			var c chatChunk
			if err := json.Unmarshal(data, &c); err != nil {
				yield(nil, &provider.Error{Provider: p.name, Message: "decode chat.completion.chunk: " + err.Error()})
				return
			}
			if c.Error != nil {
				yield(nil, streamError(p.name, data))
				return
			}
			st.chunk(&c)
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
		if st.chunks == 0 {
			// A server that ignored stream:true, or an empty body.
			yield(nil, &provider.Error{Provider: p.name, Message: "no chat.completion.chunk in the response stream"})
			return
		}
		st.finish()
		st.drain(yield)
	}
}

// post sends body to path with the provider's headers and retries; its
// errors are *provider.Error or ctx.Err().
func (p *Provider) post(ctx context.Context, path string, body []byte) (*http.Response, error) {
	h := make(http.Header, len(p.headers)+1)
	if p.apiKey != "" {
		h.Set("Authorization", "Bearer "+p.apiKey)
	}
	for k, v := range p.headers {
		h.Set(k, v)
	}
	res, err := transport.Post(ctx, transport.Request{Client: p.client, URL: p.base + path, Header: h, Body: body, MaxRetries: p.maxRetries})
	if serr, ok := errors.AsType[*transport.StatusError](err); ok {
		return nil, httpError(p.name, serr.Status, serr.Body)
	}
	if err != nil {
		return nil, p.mapError(ctx, err)
	}
	return res, nil
}

// mapError turns a transport error into ctx.Err() or a *provider.Error.
func (p *Provider) mapError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return transportError(p.name, err)
}
