package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// chatParams is the body of a streaming POST /chat/completions.
type chatParams struct {
	Model               string        `json:"model"`
	Messages            []chatMessage `json:"messages"`
	Stream              bool          `json:"stream"`
	StreamOptions       streamOptions `json:"stream_options"`
	MaxCompletionTokens int           `json:"max_completion_tokens,omitempty"`
	Temperature         *float64      `json:"temperature,omitempty"`
	TopP                *float64      `json:"top_p,omitempty"`
	FrequencyPenalty    *float64      `json:"frequency_penalty,omitempty"`
	PresencePenalty     *float64      `json:"presence_penalty,omitempty"`
	Seed                *int64        `json:"seed,omitempty"`
	Stop                []string      `json:"stop,omitempty"`
	Tools               []chatTool    `json:"tools,omitempty"`
	ToolChoice          string        `json:"tool_choice,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// chatMessage is one message of any role. Content is a string, or for a
// user message with images an array of parts; an assistant message that
// only calls tools has none.
type chatMessage struct {
	Role       string         `json:"role"`
	Content    any            `json:"content,omitempty"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type contentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string      `json:"type"`
	Function functionDef `json:"function"`
}

type functionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// newParams maps a provider request to Chat Completions parameters.
func newParams(req *provider.Request) (*chatParams, error) {
	if req == nil {
		return nil, errors.New("nil request")
	}
	if req.Model == "" {
		return nil, errors.New("empty model")
	}
	params := &chatParams{Model: req.Model, Stream: true, StreamOptions: streamOptions{IncludeUsage: true}}
	if req.MaxTokens > 0 {
		params.MaxCompletionTokens = req.MaxTokens
	}
	applySampling(params, req.Sampling)

	msgs := make([]chatMessage, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, chatMessage{Role: "system", Content: req.System})
	}
	for i, m := range req.Messages {
		msg, err := newMessage(&m)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		msgs = append(msgs, msg)
	}
	params.Messages = msgs

	if len(req.Tools) > 0 {
		tools := make([]chatTool, 0, len(req.Tools))
		for _, t := range req.Tools {
			schema, err := schemaObject(t.Parameters)
			if err != nil {
				return nil, fmt.Errorf("tool %q: %w", t.Name, err)
			}
			tools = append(tools, chatTool{Type: "function", Function: functionDef{Name: t.Name, Description: t.Description, Parameters: schema}})
		}
		params.Tools = tools
		params.ToolChoice = "auto"
	}
	return params, nil
}

func newMessage(m *provider.Message) (chatMessage, error) {
	switch m.Role {
	case provider.RoleUser:
		if len(m.Images) == 0 {
			return chatMessage{Role: "user", Content: m.Text}, nil
		}
		parts := make([]contentPart, 0, len(m.Images)+1)
		if m.Text != "" {
			parts = append(parts, contentPart{Type: "text", Text: m.Text})
		}
		for _, img := range m.Images {
			parts = append(parts, contentPart{Type: "image_url", ImageURL: &imageURL{URL: "data:" + img.MimeType + ";base64," + img.Data}})
		}
		return chatMessage{Role: "user", Content: parts}, nil
	case provider.RoleAssistant:
		a := chatMessage{Role: "assistant"}
		if m.Text != "" || len(m.ToolCalls) == 0 {
			a.Content = m.Text
		}
		for _, tc := range m.ToolCalls {
			args := string(bytes.TrimSpace(tc.Arguments))
			if args == "" {
				args = "{}"
			}
			a.ToolCalls = append(a.ToolCalls, chatToolCall{ID: tc.ID, Type: "function", Function: functionCall{Name: tc.Name, Arguments: args}})
		}
		return a, nil
	case provider.RoleTool:
		if m.ToolCallID == "" {
			return chatMessage{}, errors.New("tool result without ToolCallID")
		}
		return chatMessage{Role: "tool", Content: m.Text, ToolCallID: m.ToolCallID}, nil
	default:
		return chatMessage{}, fmt.Errorf("unknown role %q", m.Role)
	}
}

// emptySchema is the parameters of a tool that declares none.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// schemaObject checks that a tool's JSON schema is an object and returns
// it as given. An empty schema is an object without properties.
func schemaObject(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return emptySchema, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	if fields == nil {
		return nil, errors.New("parameters: not a JSON object")
	}
	return raw, nil
}

// applySampling sets the caller's sampling settings; Chat Completions has
// a field for each.
func applySampling(params *chatParams, s *provider.Sampling) {
	if s == nil {
		return
	}
	params.Temperature, params.TopP = s.Temperature, s.TopP
	params.FrequencyPenalty, params.PresencePenalty = s.FrequencyPenalty, s.PresencePenalty
	params.Seed = s.Seed
	if len(s.Stop) > 0 {
		params.Stop = s.Stop
	}
}
