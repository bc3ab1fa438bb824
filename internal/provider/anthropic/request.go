package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/switchboardhq/switchboard/internal/provider"
)

// thinkingBudgets maps Request.Thinking to an extended-thinking budget.
var thinkingBudgets = map[string]int64{
	"low":    1024,
	"medium": 4096,
	"high":   16384,
}

// newParams maps a provider request to Messages parameters.
func newParams(req *provider.Request, defaultMaxTokens int) (anthropic.MessageNewParams, error) {
	var params anthropic.MessageNewParams
	if req == nil {
		return params, errors.New("nil request")
	}
	if req.Model == "" {
		return params, errors.New("empty model")
	}
	params.Model = anthropic.Model(req.Model)
	maxTokens := int64(req.MaxTokens)
	if maxTokens <= 0 {
		maxTokens = int64(defaultMaxTokens)
	}
	params.MaxTokens = maxTokens
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.System}}
	}

	msgs, err := newMessages(req.Messages)
	if err != nil {
		return params, err
	}
	params.Messages = msgs

	for _, t := range req.Tools {
		schema, err := inputSchema(t.Parameters)
		if err != nil {
			return params, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		tool := &anthropic.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: tool})
	}

	thinking := false
	if budget := thinkingBudgets[req.Thinking]; budget > 0 && !lastAssistantCallsTools(req.Messages) {
		thinking = true
		params.Thinking.OfEnabled = &anthropic.ThinkingConfigEnabledParam{BudgetTokens: budget}
		if params.MaxTokens <= budget {
			params.MaxTokens = budget + maxTokens
		}
	}
	applySampling(&params, req.Sampling, thinking)
	return params, nil
}

// applySampling sets the caller's sampling settings that the Messages API
// has: temperature (its range is 0–1, so a higher OpenAI-style value is
// clamped to 1), top_p and stop sequences. Penalties and seed have no
// Anthropic field and are dropped. With extended thinking on, the API
// refuses a changed temperature or top_p, so only the stop sequences go.
func applySampling(params *anthropic.MessageNewParams, s *provider.Sampling, thinking bool) {
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
		params.Temperature = anthropic.Float(min(max(*s.Temperature, 0), 1))
	}
	if s.TopP != nil {
		params.TopP = anthropic.Float(*s.TopP)
	}
}

// newMessages maps the conversation, merging consecutive messages of one
// role: Anthropic wants alternating turns, and all tool results for one
// assistant turn in the next user turn, ahead of any text.
func newMessages(in []provider.Message) ([]anthropic.MessageParam, error) {
	out := make([]anthropic.MessageParam, 0, len(in))
	add := func(role anthropic.MessageParamRole, blocks ...anthropic.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, anthropic.MessageParam{Role: role, Content: blocks})
	}
	for i, m := range in {
		switch m.Role {
		case provider.RoleUser:
			// Images first, then the text that refers to them, as
			// Anthropic recommends.
			blocks := make([]anthropic.ContentBlockParamUnion, 0, len(m.Images)+1)
			for _, img := range m.Images {
				blocks = append(blocks, anthropic.NewImageBlockBase64(img.MimeType, img.Data))
			}
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			add(anthropic.MessageParamRoleUser, blocks...)
		case provider.RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, objectArguments(tc.Arguments), tc.Name))
			}
			add(anthropic.MessageParamRoleAssistant, blocks...)
		case provider.RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("message %d: tool result without ToolCallID", i)
			}
			result := &anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if m.Text != "" {
				result.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: m.Text}}}
			}
			if m.IsError {
				result.IsError = anthropic.Bool(true)
			}
			block := anthropic.ContentBlockParamUnion{OfToolResult: result}
			n := len(out)
			if n == 0 || out[n-1].Role != anthropic.MessageParamRoleUser {
				add(anthropic.MessageParamRoleUser, block)
				continue
			}
			// Insert after the tool results already in this user turn.
			content := out[n-1].Content
			k := 0
			for k < len(content) && content[k].OfToolResult != nil {
				k++
			}
			out[n-1].Content = append(content[:k], append([]anthropic.ContentBlockParamUnion{block}, content[k:]...)...)
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
func inputSchema(raw json.RawMessage) (anthropic.ToolInputSchemaParam, error) {
	var schema anthropic.ToolInputSchemaParam
	if len(bytes.TrimSpace(raw)) == 0 {
		schema.Properties = map[string]any{}
		return schema, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return schema, fmt.Errorf("parameters: %w", err)
	}
	if fields == nil {
		return schema, errors.New("parameters: not a JSON object")
	}
	extra := make(map[string]any)
	for k, v := range fields {
		switch k {
		case "type":
		case "properties":
			schema.Properties = v
		case "required":
			if err := json.Unmarshal(v, &schema.Required); err != nil {
				return schema, fmt.Errorf("parameters: required: %w", err)
			}
		default:
			extra[k] = v
		}
	}
	if schema.Properties == nil {
		schema.Properties = map[string]any{}
	}
	if len(extra) > 0 {
		schema.ExtraFields = extra
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
