package fakellm

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// The request bodies are decoded with encoding/json into the small structs
// below: test code wants clarity over speed. Fields a dialect does not use
// are left out and ignored.

// decodeBody decodes body into v, wrapping any error as the wire reports
// it ("invalid JSON body: …").
func decodeBody(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("invalid JSON body: %w", err)
	}
	return nil
}

// isString reports whether raw holds a JSON string.
func isString(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '"'
}

// Chat Completions.

type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Tools         []chatTool    `json:"tools"`
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           int    `json:"max_tokens"`
	MaxCompletionTokens int    `json:"max_completion_tokens"`
	ReasoningEffort     string `json:"reasoning_effort"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"` // a string, null or content parts
	ToolCalls  []chatToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatTool struct {
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// chatContentText is a message's text: the string, or its text parts
// joined with "\n".
func chatContentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if isString(raw) {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	var text string
	for _, p := range parts {
		if p.Type == "text" {
			text = joinLine(text, p.Text)
		}
	}
	return text, nil
}

// chatRequestOf maps a decoded Chat Completions body to a provider request.
func chatRequestOf(in *chatRequest, m meta) (*provider.Request, error) {
	req := &provider.Request{Model: in.Model, Thinking: in.ReasoningEffort, MaxTokens: in.MaxCompletionTokens}
	if req.MaxTokens == 0 {
		req.MaxTokens = in.MaxTokens
	}
	for i, msg := range in.Messages {
		text, err := chatContentText(msg.Content)
		if err != nil {
			return nil, fmt.Errorf("invalid JSON body: messages[%d].content: %w", i, err)
		}
		switch msg.Role {
		case "system", "developer":
			req.System = joinLine(req.System, text)
		case "user":
			req.Messages = addUser(req.Messages, text, m)
		case "assistant":
			var calls []provider.ToolCall
			for _, c := range msg.ToolCalls {
				calls = append(calls, provider.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: arguments([]byte(c.Function.Arguments))})
			}
			req.Messages = append(req.Messages, provider.Message{Role: provider.RoleAssistant, Text: text, ToolCalls: calls})
		case "tool":
			if msg.ToolCallID == "" {
				return nil, fmt.Errorf("messages[%d]: tool message without tool_call_id", i)
			}
			req.Messages = append(req.Messages, provider.Message{
				Role: provider.RoleTool, Text: text, ToolCallID: msg.ToolCallID, ToolName: toolName(req.Messages, msg.ToolCallID),
			})
		default:
			return nil, fmt.Errorf("messages[%d]: unknown role %q", i, msg.Role)
		}
	}
	for _, t := range in.Tools {
		req.Tools = append(req.Tools, provider.ToolDef{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	return req, nil
}

// Anthropic Messages.

type messagesRequest struct {
	Model     string             `json:"model"`
	MaxTokens int                `json:"max_tokens"`
	System    json.RawMessage    `json:"system"` // a string or text blocks
	Messages  []anthropicMessage `json:"messages"`
	Tools     []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	Stream   bool `json:"stream"`
	Thinking *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking"`
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or blocks
}

// blocksOf decodes content given as a string (one text block), null or an
// array of blocks; a block's own content is decoded the same way.
func blocksOf(raw json.RawMessage) ([]block, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if isString(raw) {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []block{{Type: "text", Text: s}}, nil
	}
	var in []struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		IsError   bool            `json:"is_error"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, err
	}
	out := make([]block, len(in))
	for i, b := range in {
		out[i] = block{Type: b.Type, Text: b.Text, ID: b.ID, Name: b.Name, Input: b.Input, ToolUseID: b.ToolUseID, IsError: b.IsError}
		content, err := blocksOf(b.Content)
		if err != nil {
			return nil, err
		}
		out[i].Content = content
	}
	return out, nil
}

// messagesRequestOf maps a decoded Messages body to a provider request.
func messagesRequestOf(in *messagesRequest, m meta) (*provider.Request, error) {
	system, err := blocksOf(in.System)
	if err != nil {
		return nil, fmt.Errorf("invalid JSON body: system: %w", err)
	}
	req := &provider.Request{Model: in.Model, MaxTokens: in.MaxTokens, System: blocksText(system)}
	if t := in.Thinking; t != nil && t.Type == "enabled" {
		switch {
		case t.BudgetTokens <= 1024:
			req.Thinking = "low"
		case t.BudgetTokens <= 4096:
			req.Thinking = "medium"
		default:
			req.Thinking = "high"
		}
	}
	for i, msg := range in.Messages {
		content, err := blocksOf(msg.Content)
		if err != nil {
			return nil, fmt.Errorf("invalid JSON body: messages.%d.content: %w", i, err)
		}
		switch msg.Role {
		case "user":
			for j, bl := range content {
				switch bl.Type {
				case "text":
					req.Messages = addUser(req.Messages, bl.Text, m)
				case "tool_result":
					if bl.ToolUseID == "" {
						return nil, fmt.Errorf("messages.%d.content.%d: tool_result without tool_use_id", i, j)
					}
					req.Messages = append(req.Messages, provider.Message{
						Role: provider.RoleTool, Text: blocksText(bl.Content), ToolCallID: bl.ToolUseID,
						ToolName: toolName(req.Messages, bl.ToolUseID), IsError: bl.IsError,
					})
				}
			}
		case "assistant":
			out := provider.Message{Role: provider.RoleAssistant}
			for _, bl := range content {
				switch bl.Type {
				case "text":
					out.Text = joinLine(out.Text, bl.Text)
				case "tool_use":
					out.ToolCalls = append(out.ToolCalls, provider.ToolCall{ID: bl.ID, Name: bl.Name, Arguments: arguments(bl.Input)})
				}
			}
			req.Messages = append(req.Messages, out)
		default:
			return nil, fmt.Errorf("messages.%d: unknown role %q", i, msg.Role)
		}
	}
	for _, t := range in.Tools {
		req.Tools = append(req.Tools, provider.ToolDef{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	return req, nil
}
