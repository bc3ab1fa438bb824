package fakellm

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// internalMarker opens the internal-context user message that the
// reference gateway appends after the history on every model call.
const internalMarker = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"

// addUser appends a user message unless it is internal context to leave out.
func addUser(msgs []provider.Message, text string, m meta) []provider.Message {
	if !m.keepInternal && strings.Contains(text, internalMarker) {
		return msgs
	}
	return append(msgs, provider.Message{Role: provider.RoleUser, Text: text})
}

// toolName returns the name of the latest tool call with id in the
// assistant messages of msgs, or "" if there is none.
func toolName(msgs []provider.Message, id string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != provider.RoleAssistant {
			continue
		}
		for _, c := range msgs[i].ToolCalls {
			if c.ID == id {
				return c.Name
			}
		}
	}
	return ""
}

// arguments returns tool call arguments as raw JSON, {} when empty.
func arguments(raw []byte) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(raw)
}

// joinLine appends s to text, separated by a newline when both are set.
func joinLine(text, s string) string {
	if text == "" {
		return s
	}
	if s == "" {
		return text
	}
	return text + "\n" + s
}
