package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// messageParams is the body of a streaming POST /v1/messages.
type messageParams struct {
	Model         string    `json:"model"`
	MaxTokens     int64     `json:"max_tokens"`
	Stream        bool      `json:"stream"`
	System        []block   `json:"system,omitempty"`
	Messages      []message `json:"messages"`
	Tools         []tool    `json:"tools,omitempty"`
	Thinking      *thinking `json:"thinking,omitempty"`
	Temperature   *float64  `json:"temperature,omitempty"`
	TopP          *float64  `json:"top_p,omitempty"`
	StopSequences []string  `json:"stop_sequences,omitempty"`
}

type message struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

// block is a content block of any type: text, image, tool_use or
// tool_result.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Source    *imageSource    `json:"source,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   []block         `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

type imageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

type tool struct {
	Name        string                     `json:"name"`
	Description string                     `json:"description,omitempty"`
	InputSchema map[string]json.RawMessage `json:"input_schema"`
}

type thinking struct {
	Type         string `json:"type"`
	BudgetTokens int64  `json:"budget_tokens"`
}

func textBlock(s string) block { return block{Type: "text", Text: s} }

// The roles of a Messages conversation.
const (
	roleUser      = "user"
	roleAssistant = "assistant"
)

// thinkingBudget maps Request.Thinking to an extended-thinking budget.
func thinkingBudget(level string) int64 {
	switch level {
	case "low":
		return 1024
	case "medium":
		return 4096
	case "high":
		return 16384
	}
	return 0
}

// newParams maps a provider request to Messages parameters.
func newParams(req *provider.Request, defaultMaxTokens int) (*messageParams, error) {
	if req == nil {
		return nil, errors.New("nil request")
	}
	if req.Model == "" {
		return nil, errors.New("empty model")
	}
	params := &messageParams{Model: req.Model, Stream: true}
	maxTokens := int64(req.MaxTokens)
	if maxTokens <= 0 {
		maxTokens = int64(defaultMaxTokens)
	}
	params.MaxTokens = maxTokens
	if req.System != "" {
		params.System = []block{textBlock(req.System)}
	}

	msgs, err := newMessages(req.Messages)
	if err != nil {
		return nil, err
	}
	params.Messages = msgs

	for _, t := range req.Tools {
		schema, err := inputSchema(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		params.Tools = append(params.Tools, tool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}

	thinkingOn := false
	if budget := thinkingBudget(req.Thinking); budget > 0 && !lastAssistantCallsTools(req.Messages) {
		thinkingOn = true
		params.Thinking = &thinking{Type: "enabled", BudgetTokens: budget}
		if params.MaxTokens <= budget {
			params.MaxTokens = budget + maxTokens
		}
	}
	applySampling(params, req.Sampling, thinkingOn)
	return params, nil
}

// applySampling sets the caller's sampling settings that the Messages API
// has: temperature (its range is 0–1, so a higher OpenAI-style value is
// clamped to 1), top_p and stop sequences. Penalties and seed have no
// Anthropic field and are dropped. With extended thinking on, the API
// refuses a changed temperature or top_p, so only the stop sequences go.
func applySampling(params *messageParams, s *provider.Sampling, thinking bool) {
	if s == nil {
		return
	}
	if len(s.Stop) > 0 {
		params.StopSequences = s.Stop
	}
	if thinking {
		return
	}
	if s.Temperature != nil {
		t := min(max(*s.Temperature, 0), 1)
		params.Temperature = &t
	}
	if s.TopP != nil {
		params.TopP = s.TopP
	}
}

// newMessages maps the conversation, merging consecutive messages of one
// role: Anthropic wants alternating turns, and all tool results for one
// assistant turn in the next user turn, ahead of any text.
func newMessages(in []provider.Message) ([]message, error) {
	out := make([]message, 0, len(in))
	add := func(role string, blocks ...block) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, message{Role: role, Content: blocks})
	}
	for i, m := range in {
		switch m.Role {
		case provider.RoleUser:
			// Images first, then the text that refers to them, as
			// Anthropic recommends.
			blocks := make([]block, 0, len(m.Images)+1)
			for _, img := range m.Images {
				blocks = append(blocks, block{Type: "image", Source: &imageSource{Type: "base64", MediaType: img.MimeType, Data: img.Data}})
			}
			if m.Text != "" {
				blocks = append(blocks, textBlock(m.Text))
			}
			add(roleUser, blocks...)
		case provider.RoleAssistant:
			var blocks []block
			if m.Text != "" {
				blocks = append(blocks, textBlock(m.Text))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, block{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: objectArguments(tc.Arguments)})
			}
			add(roleAssistant, blocks...)
		case provider.RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("message %d: tool result without ToolCallID", i)
			}
			result := block{Type: "tool_result", ToolUseID: m.ToolCallID, IsError: m.IsError}
			if m.Text != "" {
				result.Content = []block{textBlock(m.Text)}
			}
			n := len(out)
			if n == 0 || out[n-1].Role != roleUser {
				add(roleUser, result)
				continue
			}
			// Insert after the tool results already in this user turn.
			content := out[n-1].Content
			k := 0
			for k < len(content) && content[k].Type == "tool_result" {
				k++
			}
			out[n-1].Content = append(content[:k], append([]block{result}, content[k:]...)...)
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	return out, nil
}

// lastAssistantCallsTools reports whether the last assistant message made
// tool calls, i.e. the request continues a tool loop.
func lastAssistantCallsTools(msgs []provider.Message) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == provider.RoleAssistant {
			return len(msgs[i].ToolCalls) > 0
		}
	}
	return false
}

// inputSchema maps a JSON schema object to input_schema, keeping every
// keyword as raw JSON. The type is always "object", as the API requires.
func inputSchema(raw json.RawMessage) (map[string]json.RawMessage, error) {
	schema := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &schema); err != nil {
			return nil, fmt.Errorf("parameters: %w", err)
		}
		if schema == nil {
			return nil, errors.New("parameters: not a JSON object")
		}
	}
	if req, ok := schema["required"]; ok {
		var names []string
		if err := json.Unmarshal(req, &names); err != nil {
			return nil, fmt.Errorf("parameters: required: %w", err)
		}
	}
	schema["type"] = json.RawMessage(`"object"`)
	if p, ok := schema["properties"]; !ok || string(bytes.TrimSpace(p)) == "null" {
		schema["properties"] = json.RawMessage(`{}`)
	}
	return schema, nil
}

// objectArguments returns tool arguments as a JSON object: {} when empty or
// null, the text itself when it is an object, else {"_raw": text}.
func objectArguments(args []byte) json.RawMessage {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return json.RawMessage("{}")
	}
	if trimmed[0] == '{' && json.Valid(trimmed) {
		return json.RawMessage(bytes.Clone(trimmed))
	}
	raw, _ := json.Marshal(map[string]string{"_raw": string(args)})
	return raw
}
