package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/switchboardhq/switchboard/internal/provider"
)

// newParams maps a provider request to Chat Completions parameters.
func newParams(req *provider.Request) (openai.ChatCompletionNewParams, error) {
	var params openai.ChatCompletionNewParams
	if req == nil {
		return params, errors.New("nil request")
	}
	if req.Model == "" {
		return params, errors.New("empty model")
	}
	params.Model = shared.ChatModel(req.Model)
	params.StreamOptions.IncludeUsage = openai.Bool(true)
	if req.MaxTokens > 0 {
		params.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
	}
	applySampling(&params, req.Sampling)

	msgs := make([]openai.ChatCompletionMessageParamUnion, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, openai.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		msg, err := newMessage(&m)
		if err != nil {
			return params, fmt.Errorf("message %d: %w", i, err)
		}
		msgs = append(msgs, msg)
	}
	params.Messages = msgs

	if len(req.Tools) > 0 {
		tools := make([]openai.ChatCompletionToolUnionParam, 0, len(req.Tools))
		for _, t := range req.Tools {
			schema, err := schemaObject(t.Parameters)
			if err != nil {
				return params, fmt.Errorf("tool %q: %w", t.Name, err)
			}
			def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
			if t.Description != "" {
				def.Description = openai.String(t.Description)
			}
			tools = append(tools, openai.ChatCompletionFunctionTool(def))
		}
		params.Tools = tools
		params.ToolChoice.OfAuto = openai.String(string(openai.ChatCompletionToolChoiceOptionAutoAuto))
	}
	return params, nil
}

func newMessage(m *provider.Message) (openai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case provider.RoleUser:
		if len(m.Images) == 0 {
			return openai.UserMessage(m.Text), nil
		}
		parts := make([]openai.ChatCompletionContentPartUnionParam, 0, len(m.Images)+1)
		if m.Text != "" {
			parts = append(parts, openai.TextContentPart(m.Text))
		}
		for _, img := range m.Images {
			parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{
				URL: "data:" + img.MimeType + ";base64," + img.Data,
			}))
		}
		return openai.UserMessage(parts), nil
	case provider.RoleAssistant:
		a := openai.ChatCompletionAssistantMessageParam{}
		if m.Text != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = openai.String(m.Text)
		}
		for _, tc := range m.ToolCalls {
			args := string(bytes.TrimSpace(tc.Arguments))
			if args == "" {
				args = "{}"
			}
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: tc.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      tc.Name,
						Arguments: args,
					},
				},
			})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	case provider.RoleTool:
		if m.ToolCallID == "" {
			return openai.ChatCompletionMessageParamUnion{}, errors.New("tool result without ToolCallID")
		}
		return openai.ToolMessage(m.Text, m.ToolCallID), nil
	default:
		return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", m.Role)
	}
}

// schemaObject splits a JSON schema object into the SDK's parameters map.
// Values stay raw JSON, so the schema is sent exactly as given. An empty
// schema is an object without properties.
func schemaObject(raw json.RawMessage) (shared.FunctionParameters, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return shared.FunctionParameters{"type": "object", "properties": map[string]any{}}, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	if fields == nil {
		return nil, errors.New("parameters: not a JSON object")
	}
	schema := make(shared.FunctionParameters, len(fields))
	for k, v := range fields {
		schema[k] = v
	}
	return schema, nil
}

// applySampling sets the caller's sampling settings; Chat Completions has
// a field for each.
func applySampling(params *openai.ChatCompletionNewParams, s *provider.Sampling) {
	if s == nil {
		return
	}
	if s.Temperature != nil {
		params.Temperature = openai.Float(*s.Temperature)
	}
	if s.TopP != nil {
		params.TopP = openai.Float(*s.TopP)
	}
	if s.FrequencyPenalty != nil {
		params.FrequencyPenalty = openai.Float(*s.FrequencyPenalty)
	}
	if s.PresencePenalty != nil {
		params.PresencePenalty = openai.Float(*s.PresencePenalty)
	}
	if s.Seed != nil {
		params.Seed = openai.Int(*s.Seed)
	}
	if len(s.Stop) > 0 {
		params.Stop.OfStringArray = s.Stop
	}
}
