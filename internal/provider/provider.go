// Package provider owns the model-provider contract: one streaming interface
// for every LLM API, with request, message and event types. Adapters live in
// sub-packages (openai, anthropic, scripted); the agent runner consumes the
// interface. Stdlib only; it never imports its users.
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net"
	"strconv"
)

// Provider streams one model turn. Implementations are safe for concurrent
// use. Breaking out of the range stops the request.
type Provider interface {
	// Stream sends req and yields events as they arrive. The sequence ends
	// after an EventDone, or with a non-nil error (the event is then nil).
	Stream(ctx context.Context, req *Request) iter.Seq2[*Event, error]
}

// Roles of a Message.
type Role string

// The roles of a Message: what the user said, what the model answered, and
// tool results sent back to the model.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	// RoleTool is a tool result sent back to the model.
	RoleTool Role = "tool"
)

// Request is one model turn.
type Request struct {
	// Model is the provider's model id (without the "<provider>/" prefix).
	Model    string
	System   string
	Messages []Message
	Tools    []ToolDef
	// MaxTokens bounds the output; 0 means the adapter's default.
	MaxTokens int
	// Thinking is the requested thinking level ("", "off", "low", ...).
	// Adapters that cannot honour it ignore it.
	Thinking string
	// Sampling is the caller's best-effort sampling settings; nil leaves
	// every one to the provider.
	Sampling *Sampling
}

// Sampling holds sampling settings a caller asked for (the OpenAI-compatible
// HTTP API forwards them). Each is best-effort: a nil member is left to the
// provider, and an adapter whose API has no such setting drops it.
type Sampling struct {
	// MaxTokens caps one model call's output; 0 means no caller cap. The
	// run uses the smaller of this and the model's configured maxTokens.
	MaxTokens        int      `json:"maxTokens,omitempty"`
	Temperature      *float64 `json:"temperature,omitempty"`
	TopP             *float64 `json:"topP,omitempty"`
	FrequencyPenalty *float64 `json:"frequencyPenalty,omitempty"`
	PresencePenalty  *float64 `json:"presencePenalty,omitempty"`
	Seed             *int64   `json:"seed,omitempty"`
	Stop             []string `json:"stop,omitempty"`
}

// CapMaxTokens is the output cap of a call whose model allows configured
// tokens (0: no configured cap) under s: the smaller positive of the two.
func (s *Sampling) CapMaxTokens(configured int) int {
	if s == nil || s.MaxTokens <= 0 {
		return configured
	}
	if configured <= 0 {
		return s.MaxTokens
	}
	return min(configured, s.MaxTokens)
}

// Message is one conversation message sent to a model.
type Message struct {
	Role Role
	// Text is the text content (user, assistant, or the tool result text).
	Text string
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall
	// ToolCallID and ToolName identify the call a RoleTool message answers.
	ToolCallID string
	ToolName   string
	IsError    bool
	// Images are images a user message carries beside its text.
	Images []Image
}

// Image is an inline image: its MIME type (image/png, image/jpeg, ...) and
// its bytes in standard base64.
type Image struct {
	MimeType string
	Data     string
}

// ToolDef describes a tool offered to the model.
type ToolDef struct {
	Name        string
	Description string
	// Parameters is a JSON schema object.
	Parameters json.RawMessage
}

// ToolCall is a model's request to call a tool.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage // a JSON object
}

// EventType discriminates Event.
type EventType int

const (
	// EventTextDelta carries an increment of assistant text in Text.
	EventTextDelta EventType = iota + 1
	// EventThinkingDelta carries an increment of reasoning text in Text.
	EventThinkingDelta
	// EventToolCall carries one complete tool call in ToolCall.
	EventToolCall
	// EventUsage carries token usage in Usage (may come more than once; the
	// last one wins).
	EventUsage
	// EventDone ends the turn; StopReason and ResponseID are set.
	EventDone
)

// Stop reasons, as recorded in transcripts.
const (
	StopEnd     = "stop"
	StopToolUse = "toolUse"
	StopLength  = "length"
	StopError   = "error"
	StopAborted = "aborted"
)

// Event is one streamed item of a model turn.
type Event struct {
	Type       EventType
	Text       string
	ToolCall   *ToolCall
	Usage      *Usage
	StopReason string
	ResponseID string
}

// Usage is token usage of one model turn.
type Usage struct {
	Input      int64
	Output     int64
	CacheRead  int64
	CacheWrite int64
}

// Total returns all tokens counted in u.
func (u Usage) Total() int64 { return u.Input + u.Output + u.CacheRead + u.CacheWrite }

// Error is an error returned by a provider API, with the HTTP status when
// there was one.
type Error struct {
	Provider   string
	StatusCode int
	Message    string
	// Retryable is set for rate limits and transient server errors.
	Retryable bool
}

// Error formats the failure as "<provider>: HTTP <status>: <message>", or
// "<provider>: <message>" when there is no status code.
func (e *Error) Error() string {
	if e.StatusCode != 0 {
		return e.Provider + ": HTTP " + strconv.Itoa(e.StatusCode) + ": " + e.Message
	}
	return e.Provider + ": " + e.Message
}

// UnreachableHint returns what to check, to append to the message, when
// err is a failure to connect to provider name's server (refused, no
// route, unknown host); "" for any other error.
func UnreachableHint(name string, err error) string {
	if op, ok := errors.AsType[*net.OpError](err); ok && op.Op == "dial" {
		return " (cannot connect: is the server running, and is models.providers." + name + ".baseUrl right?)"
	}
	return ""
}

// ErrUnknownModel is returned when a model reference cannot be resolved.
var ErrUnknownModel = errors.New("unknown model")

// ErrNoEmbeddings marks an agent without a usable embedding provider.
var ErrNoEmbeddings = errors.New("no embedding provider")

// Collect drains a stream into a final result: the concatenated text, the
// tool calls in order, the last usage and the done event. It is a helper for
// callers that do not need deltas.
func Collect(seq iter.Seq2[*Event, error]) (text string, calls []ToolCall, usage Usage, done *Event, err error) {
	var buf []byte
	for ev, err := range seq {
		if err != nil {
			return string(buf), calls, usage, nil, err
		}
		switch ev.Type {
		case EventTextDelta:
			buf = append(buf, ev.Text...)
		case EventToolCall:
			calls = append(calls, *ev.ToolCall)
		case EventUsage:
			usage = *ev.Usage
		case EventDone:
			done = ev
		}
	}
	return string(buf), calls, usage, done, nil
}

// EmbedRequest asks for one embedding vector per input text.
type EmbedRequest struct {
	// Model is the provider's embedding model id.
	Model string
	Input []string
	// Dimensions asks for vectors of this size; 0 leaves it to the model.
	Dimensions int
}

// EmbedResult is the vectors, in input order, and the tokens counted.
type EmbedResult struct {
	Vectors      [][]float64
	PromptTokens int64
	TotalTokens  int64
}

// Embedder is a provider that also serves embeddings.
type Embedder interface {
	Embed(ctx context.Context, req *EmbedRequest) (*EmbedResult, error)
}
