package httpapi

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// jsonKind names the JSON type of raw as the reference's schema errors do.
func jsonKind(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "undefined"
	}
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// field describes one request member for checkFields.
type field struct {
	name     string
	kinds    []string // accepted JSON kinds ("integer" = whole number)
	nullable bool
	positive bool
}

// checkFields checks the members of a request object against fields and
// returns the first problem as "<name>: Invalid input: expected <kind>,
// received <kind>", the shape of the reference's schema errors; "" when
// all fit. Absent members always fit.
func checkFields(obj map[string]json.RawMessage, fields []field) string {
	for _, f := range fields {
		raw, ok := obj[f.name]
		if !ok {
			continue
		}
		k := jsonKind(raw)
		if k == "null" && f.nullable {
			continue
		}
		fits := false
		for _, want := range f.kinds {
			switch {
			case want == k:
				fits = true
			case want == "integer" && k == "number":
				var x float64
				if json.Unmarshal(raw, &x) == nil && x == math.Trunc(x) && !math.IsInf(x, 0) {
					fits = true
				} else {
					return fmt.Sprintf("%s: Invalid input: expected int, received number", f.name)
				}
			}
		}
		if !fits {
			return fmt.Sprintf("%s: Invalid input: expected %s, received %s", f.name, strings.ReplaceAll(f.kinds[0], "integer", "number"), k)
		}
		if f.positive {
			var x float64
			if json.Unmarshal(raw, &x) == nil && x <= 0 {
				return fmt.Sprintf("%s: Too small: expected number to be >0", f.name)
			}
		}
	}
	return ""
}

// number returns a JSON number member (ok false when absent or null).
func number(obj map[string]json.RawMessage, name string) (float64, bool) {
	var x *float64
	if json.Unmarshal(obj[name], &x) != nil || x == nil {
		return 0, false
	}
	return *x, true
}

// samplingError checks the sampling members' ranges with the reference's
// texts ("" when they fit).
func samplingError(obj map[string]json.RawMessage) string {
	ranges := []struct {
		name     string
		min, max float64
		text     string
	}{
		{"temperature", 0, 2, "`temperature` must be between 0 and 2."},
		{"top_p", 0, 1, "`top_p` must be between 0 and 1."},
		{"frequency_penalty", -2, 2, "`frequency_penalty` must be between -2.0 and 2.0."},
		{"presence_penalty", -2, 2, "`presence_penalty` must be between -2.0 and 2.0."},
	}
	for _, r := range ranges {
		if x, ok := number(obj, r.name); ok && (x < r.min || x > r.max) {
			return r.text
		}
	}
	if x, ok := number(obj, "seed"); ok && x != math.Trunc(x) {
		return "`seed` must be an integer."
	}
	return ""
}

// stopError checks the stop member: a string or up to 4 non-empty strings.
func stopError(raw json.RawMessage) string {
	if len(raw) == 0 || jsonKind(raw) == "null" || jsonKind(raw) == "string" {
		return ""
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return "Invalid stop: stop must be a string or array of strings"
	}
	if len(list) > 4 {
		return "Invalid stop: stop supports at most 4 sequences"
	}
	for _, it := range list {
		var s string
		if json.Unmarshal(it, &s) != nil || s == "" {
			return "Invalid stop: stop entries must be non-empty strings"
		}
	}
	return ""
}

// toolChoice is a parsed tool_choice that constrains the reply.
type toolChoice struct {
	Required bool   // "required"
	Function string // a pinned function
}

// chatToolsError validates the function-tool subset of a chat request
// (tools and tool_choice) with the reference's texts, and returns the
// constraint tool_choice puts on the reply (nil for auto or none).
func chatToolsError(toolsRaw, choiceRaw json.RawMessage) (*toolChoice, string) {
	const prefix = "Invalid tools/tool_choice: "
	var names []string
	if len(toolsRaw) > 0 && jsonKind(toolsRaw) != "null" {
		var list []json.RawMessage
		if json.Unmarshal(toolsRaw, &list) != nil {
			return nil, prefix + "tools must be an array"
		}
		for _, it := range list {
			var t map[string]json.RawMessage
			if json.Unmarshal(it, &t) != nil || t == nil {
				return nil, prefix + "each tool must be an object"
			}
			if str(t["type"]) != "function" {
				return nil, prefix + "only function tools are supported"
			}
			var fn map[string]json.RawMessage
			if json.Unmarshal(t["function"], &fn) != nil || fn == nil {
				return nil, prefix + "tool.function is required"
			}
			name := str(fn["name"])
			if name == "" {
				return nil, prefix + "tool.function.name is required"
			}
			names = append(names, name)
		}
	}
	if len(choiceRaw) == 0 || jsonKind(choiceRaw) == "null" {
		return nil, ""
	}
	var c *toolChoice
	switch jsonKind(choiceRaw) {
	case "string":
		switch str(choiceRaw) {
		case "auto", "none":
			return nil, ""
		case "required":
			c = &toolChoice{Required: true}
		default:
			return nil, prefix + "tool_choice must be a string or object"
		}
	case "object":
		var o map[string]json.RawMessage
		_ = json.Unmarshal(choiceRaw, &o)
		typ := jsonKind(o["type"])
		if typ != "string" {
			return nil, prefix + "unsupported tool_choice type"
		}
		if str(o["type"]) != "function" {
			return nil, prefix + "tool_choice " + str(o["type"]) + " is not supported"
		}
		var fn map[string]json.RawMessage
		_ = json.Unmarshal(o["function"], &fn)
		name := str(fn["name"])
		if name == "" {
			return nil, prefix + "tool_choice.function.name is required"
		}
		c = &toolChoice{Function: name}
	default:
		return nil, prefix + "tool_choice must be a string or object"
	}
	if c.Function != "" {
		found := false
		for _, n := range names {
			found = found || n == c.Function
		}
		if !found {
			return nil, prefix + "tool_choice requested unknown tool: " + c.Function
		}
	} else if len(names) == 0 {
		return nil, prefix + "tool_choice=required but no tools were provided"
	}
	return c, ""
}

// unsatisfied is the reference's error for a reply without the tool call
// tool_choice required.
func (c *toolChoice) unsatisfied() string {
	if c.Function != "" {
		return fmt.Sprintf("tool_choice required a %s tool call, but the agent did not produce one", c.Function)
	}
	return "tool_choice=required was not satisfied by the agent response"
}

// chatSampling is what a validated chat completion request asks of the
// model, forwarded best-effort (nil when it asks nothing):
// max_completion_tokens wins over the legacy max_tokens when both are set.
func chatSampling(obj map[string]json.RawMessage) *provider.Sampling {
	var sp provider.Sampling
	if n, ok := number(obj, "max_completion_tokens"); ok {
		sp.MaxTokens = int(n)
	} else if n, ok := number(obj, "max_tokens"); ok {
		sp.MaxTokens = int(n)
	}
	sp.Temperature = optNumber(obj, "temperature")
	sp.TopP = optNumber(obj, "top_p")
	sp.FrequencyPenalty = optNumber(obj, "frequency_penalty")
	sp.PresencePenalty = optNumber(obj, "presence_penalty")
	if x, ok := number(obj, "seed"); ok {
		seed := int64(x)
		sp.Seed = &seed
	}
	if raw := obj["stop"]; jsonKind(raw) == "string" {
		if stop := str(raw); stop != "" {
			sp.Stop = []string{stop}
		}
	} else {
		_ = json.Unmarshal(raw, &sp.Stop) // checked by stopError
	}
	return nonZeroSampling(sp)
}

// responsesSampling is chatSampling for a /v1/responses request:
// max_output_tokens, temperature and top_p.
func responsesSampling(obj map[string]json.RawMessage) *provider.Sampling {
	var sp provider.Sampling
	if n, ok := number(obj, "max_output_tokens"); ok {
		sp.MaxTokens = int(n)
	}
	sp.Temperature = optNumber(obj, "temperature")
	sp.TopP = optNumber(obj, "top_p")
	return nonZeroSampling(sp)
}

func optNumber(obj map[string]json.RawMessage, name string) *float64 {
	if x, ok := number(obj, name); ok {
		return &x
	}
	return nil
}

func nonZeroSampling(sp provider.Sampling) *provider.Sampling {
	if sp.MaxTokens == 0 && sp.Temperature == nil && sp.TopP == nil && sp.FrequencyPenalty == nil &&
		sp.PresencePenalty == nil && sp.Seed == nil && len(sp.Stop) == 0 {
		return nil
	}
	return &sp
}
