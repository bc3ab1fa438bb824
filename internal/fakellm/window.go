package fakellm

import (
	"context"
	"fmt"
	"iter"
	"net/http"

	"github.com/switchboardhq/switchboard/internal/jsonenc"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/provider/scripted"
)

// CountTokens is the server's default prompt tokenizer: one token per
// three bytes of the system prompt, tool definitions, message texts and
// tool calls, plus three per message. It counts denser than Switchboard's
// own estimate, as real tokenizers do, so the gateway must calibrate from
// the reported usage.
func CountTokens(req *provider.Request) int {
	n := len(req.System)
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	msgs := 0
	for i := range req.Messages {
		m := &req.Messages[i]
		n += len(m.Text) + len(m.ToolCallID)
		for _, c := range m.ToolCalls {
			n += len(c.ID) + len(c.Name) + len(c.Arguments)
		}
		msgs++
	}
	return (n+2)/3 + 3*msgs
}

// overflowed reports whether req exceeds the server's context window, and
// writes the API's own refusal then: OpenAI's 400 context_length_exceeded
// body, or Anthropic's 400 "prompt is too long" invalid_request_error.
func (s *Server) overflowed(w http.ResponseWriter, req *provider.Request, d dialect) bool {
	if s.window <= 0 {
		return false
	}
	n := s.countTokens(req)
	if n <= s.window {
		return false
	}
	s.overflows.Add(1)
	var b []byte
	switch d.(type) {
	case anthropicAPI:
		b = append(b, `{"type":"error","error":{"type":"invalid_request_error","message":`...)
		b = jsonenc.AppendString(b, fmt.Sprintf("prompt is too long: %d tokens > %d maximum", n, s.window))
		b = append(b, "}}\n"...)
	default:
		b = append(b, `{"error":{"message":`...)
		b = jsonenc.AppendString(b, fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", s.window, n))
		b = append(b, `,"type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`+"\n"...)
	}
	writeJSON(w, http.StatusBadRequest, b)
	return true
}

// Overflows returns how many requests were refused for exceeding
// Options.ContextWindow.
func (s *Server) Overflows() int { return int(s.overflows.Load()) }

// countedModel answers summariser requests itself and, with report set,
// reports the server's token count as the prompt tokens of every reply.
type countedModel struct {
	inner provider.Provider
	count func(*provider.Request) int
	// report replaces the inner model's input usage with count.
	report bool
}

func (m countedModel) Stream(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Event, error] {
	in := int64(m.count(req))
	if IsSummaryRequest(req) {
		text := Summary(req)
		return func(yield func(*provider.Event, error) bool) {
			_ = yield(&provider.Event{Type: provider.EventTextDelta, Text: text}, nil) &&
				yield(&provider.Event{Type: provider.EventUsage, Usage: &provider.Usage{Input: in, Output: int64(len(text) / 3)}}, nil) &&
				yield(&provider.Event{Type: provider.EventDone, StopReason: provider.StopEnd}, nil)
		}
	}
	return func(yield func(*provider.Event, error) bool) {
		for ev, err := range m.inner.Stream(ctx, req) {
			if m.report && err == nil && ev.Type == provider.EventUsage && ev.Usage != nil {
				u := *ev.Usage
				u.Input = in
				ev = &provider.Event{Type: provider.EventUsage, Usage: &u}
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// IsSummaryRequest reports whether req is a compaction summariser call
// (its system prompt is the summariser's).
func IsSummaryRequest(req *provider.Request) bool { return scripted.IsSummaryRequest(req) }

// Summary is the fake model's answer to a summariser prompt, the offline
// model's (scripted.Summary).
func Summary(req *provider.Request) string { return scripted.Summary(req) }
