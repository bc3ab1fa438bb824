package httpapi

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// msgToolConfig answers client tools whose names collide with the agent's
// tools or with each other (the reference's text).
const msgToolConfig = "invalid tool configuration"

// toolConflict reports whether a run failed because of its client tools'
// names.
func toolConflict(end runEnd) bool {
	return end.Run.Status == store.RunError && strings.HasPrefix(end.Run.Error, agent.ClientToolConflict)
}

// emptySchema is the parameters of a function tool that declares none.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// argumentChunk is how many bytes of a call's arguments one stream chunk
// carries, as the reference splits them.
const argumentChunk = 256

// clientToolDefs maps the validated tools member of a chat request to tool
// definitions the agent is offered.
func clientToolDefs(raw json.RawMessage) []provider.ToolDef {
	var list []struct {
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	defs := make([]provider.ToolDef, 0, len(list))
	for _, t := range list {
		params := t.Function.Parameters
		if jsonKind(params) != "object" {
			params = emptySchema
		}
		defs = append(defs, provider.ToolDef{Name: t.Function.Name, Description: t.Function.Description, Parameters: params})
	}
	return defs
}

// responsesToolDefs maps the validated tools member of a /v1/responses
// request ({type: "function", name, description, parameters}).
func responsesToolDefs(raw json.RawMessage) []provider.ToolDef {
	var list []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	defs := make([]provider.ToolDef, 0, len(list))
	for _, t := range list {
		params := t.Parameters
		if jsonKind(params) != "object" {
			params = emptySchema
		}
		defs = append(defs, provider.ToolDef{Name: strings.TrimSpace(t.Name), Description: t.Description, Parameters: params})
	}
	return defs
}

// applyToolChoice narrows the client tools as tool_choice asks: none offers
// none, a pinned function only that one.
func applyToolChoice(defs []provider.ToolDef, choiceRaw json.RawMessage, c *toolChoice) []provider.ToolDef {
	if jsonKind(choiceRaw) == "string" && str(choiceRaw) == "none" {
		return nil
	}
	if c == nil || c.Function == "" {
		return defs
	}
	var out []provider.ToolDef
	for _, d := range defs {
		if d.Name == c.Function {
			out = append(out, d)
		}
	}
	return out
}

// instruction is the system prompt line that asks the agent for the call
// (the reference's texts); "" when nothing is required.
func (c *toolChoice) instruction() string {
	switch {
	case c == nil:
		return ""
	case c.Function != "":
		return "You must call the " + c.Function + " tool before responding."
	default:
		return "You must call one of the available tools before responding."
	}
}

// satisfied reports whether the pending calls carry the call c requires.
func (c *toolChoice) satisfied(pending []chatToolCall) bool {
	if c == nil {
		return true
	}
	for _, p := range pending {
		if c.Function == "" || p.Function.Name == c.Function {
			return true
		}
	}
	return false
}

// pendingClientCalls returns the calls of client tools in the run's last
// assistant message: the run ended to let the caller answer them.
func pendingClientCalls(last *transcript.Message, client []provider.ToolDef) []chatToolCall {
	if last == nil || len(client) == 0 {
		return nil
	}
	names := make(map[string]bool, len(client))
	for _, d := range client {
		names[d.Name] = true
	}
	var out []chatToolCall
	for _, b := range last.Content.ToolCalls() {
		if !names[b.Name] {
			continue
		}
		args := string(b.Arguments)
		if args == "" || args == "null" {
			args = "{}"
		}
		out = append(out, chatToolCall{ID: b.ID, Type: "function", Function: chatFunctionCall{Name: b.Name, Arguments: args}})
	}
	return out
}

// streamedToolCalls splits pending calls into the stream's tool_calls
// deltas: per call, one with its id and name and empty arguments, then the
// arguments in pieces of at most argumentChunk bytes (never splitting a
// UTF-8 sequence).
func streamedToolCalls(calls []chatToolCall) []chatToolCall {
	var out []chatToolCall
	for i, c := range calls {
		idx := i
		out = append(out, chatToolCall{Index: &idx, ID: c.ID, Type: "function", Function: chatFunctionCall{Name: c.Function.Name}})
		args := c.Function.Arguments
		for len(args) > 0 {
			n := min(argumentChunk, len(args))
			for n < len(args) && n > 0 && !utf8.RuneStart(args[n]) {
				n--
			}
			out = append(out, chatToolCall{Index: &idx, Function: chatFunctionCall{Arguments: args[:n]}})
			args = args[n:]
		}
	}
	return out
}
