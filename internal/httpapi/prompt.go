package httpapi

import (
	"encoding/json"
	"strings"
)

// Markers the reference puts around earlier turns it folds into one
// prompt.
const (
	historyMarker = "[Chat messages since your last reply - for context]"
	currentMarker = "[Current message - respond to this]"
)

// prompt is what a request's messages become: the one message of the run
// and the text appended to the system prompt.
type prompt struct {
	Message     string
	ExtraSystem string
	// Images counts the image parts of the active user turn; ImageURLs are
	// their sources (data: URLs or remote URLs), "" for a part without one.
	Images    int
	ImageURLs []string
}

// convEntry is one conversation turn folded into the prompt.
type convEntry struct {
	role   string // user, assistant or tool
	sender string
	body   string
}

// chatMessage is the part of an OpenAI chat message the prompt uses.
type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       json.RawMessage `json:"name"`
	ToolCallID json.RawMessage `json:"tool_call_id"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
}

// str returns a JSON string value trimmed, "" for anything else.
func str(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

// contentText extracts the text of a content value: a string, or the text
// and input_text parts of an array joined by "\n". ok is false for other
// shapes (and for an array with non-text parts but no text).
func contentText(raw json.RawMessage) (text string, ok bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var parts []json.RawMessage
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	var texts []string
	all := true
	for _, p := range parts {
		var part struct {
			Type      string          `json:"type"`
			Text      json.RawMessage `json:"text"`
			InputText json.RawMessage `json:"input_text"`
		}
		if json.Unmarshal(p, &part) != nil {
			all = false
			continue
		}
		var t string
		switch {
		case (part.Type == "text" || part.Type == "input_text" || part.Type == "output_text") && json.Unmarshal(part.Text, &t) == nil:
			texts = append(texts, t)
		case json.Unmarshal(part.InputText, &t) == nil:
			texts = append(texts, t)
		default:
			all = false
		}
	}
	joined := strings.Join(texts, "\n")
	if strings.TrimSpace(joined) != "" || all {
		return joined, true
	}
	return "", false
}

// imageSources returns the source of each image part of a content array:
// image_url's url (a string or {url}), input_image's image_url, or its
// base64 source as a data: URL; "" for a part without a usable source.
func imageSources(raw json.RawMessage) []string {
	var parts []struct {
		Type     string          `json:"type"`
		ImageURL json.RawMessage `json:"image_url"`
		Source   *struct {
			Type      string `json:"type"`
			MediaType string `json:"media_type"`
			Data      string `json:"data"`
			URL       string `json:"url"`
		} `json:"source"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return nil
	}
	var out []string
	for _, p := range parts {
		if p.Type != "image_url" && p.Type != "input_image" {
			continue
		}
		src := str(p.ImageURL)
		if src == "" {
			var obj struct {
				URL string `json:"url"`
			}
			if json.Unmarshal(p.ImageURL, &obj) == nil {
				src = strings.TrimSpace(obj.URL)
			}
		}
		if src == "" && p.Source != nil {
			switch p.Source.Type {
			case "base64":
				if p.Source.Data != "" {
					src = "data:" + p.Source.MediaType + ";base64," + p.Source.Data
				}
			case "url":
				src = strings.TrimSpace(p.Source.URL)
			}
		}
		out = append(out, src)
	}
	return out
}

// toolCallSummary renders an assistant message's tool calls as the
// reference folds them into history.
func toolCallSummary(raw json.RawMessage) string {
	var calls []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &calls) != nil {
		return ""
	}
	var lines []string
	for _, c := range calls {
		name := strings.TrimSpace(c.Function.Name)
		if strings.TrimSpace(c.ID) == "" || name == "" {
			continue
		}
		args := ""
		if s, ok := contentTextString(c.Function.Arguments); ok {
			args = s
		} else if len(c.Function.Arguments) > 0 && string(c.Function.Arguments) != "null" {
			args = string(c.Function.Arguments)
		}
		lines = append(lines, "tool_call id="+strings.TrimSpace(c.ID)+" name="+name+" arguments="+args)
	}
	return strings.Join(lines, "\n")
}

func contentTextString(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// chatPrompt folds OpenAI chat messages into one prompt as the reference's
// buildAgentPrompt does: system and developer messages join the system
// prompt; the last user or tool message is the current message and the
// turns before it become history lines ("User: …", "Assistant: …",
// "Tool:<id>: …") under the history markers.
func chatPrompt(messages []json.RawMessage) prompt {
	var p prompt
	var systemParts []string
	var entries []convEntry
	active := -1
	for i := len(messages) - 1; i >= 0; i-- {
		var m chatMessage
		if json.Unmarshal(messages[i], &m) != nil {
			continue
		}
		if r := strings.TrimSpace(m.Role); r == "user" || r == "tool" || r == "function" {
			active = i
			if r == "user" {
				p.ImageURLs = imageSources(m.Content)
				p.Images = len(p.ImageURLs)
			}
			break
		}
	}
	for i, raw := range messages {
		var m chatMessage
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		role := strings.TrimSpace(m.Role)
		var content string
		contentOK := false
		if role == "function" && (len(m.Content) == 0 || string(m.Content) == "null") {
			contentOK = true
		} else {
			content, contentOK = contentText(m.Content)
			content = strings.TrimSpace(content)
		}
		switch role {
		case "":
			continue
		case "system", "developer":
			if content != "" {
				systemParts = append(systemParts, content)
			}
			continue
		case "function":
			role = "tool"
		case "user", "assistant", "tool":
		default:
			continue
		}
		body := content
		if role == "user" && body == "" && i == active && p.Images > 0 {
			body = "User sent image(s) with no text."
		}
		if role == "assistant" {
			if sum := toolCallSummary(m.ToolCalls); sum != "" {
				body = strings.TrimSpace(strings.Join(nonEmpty(body, sum), "\n"))
			}
		}
		name, callID := str(m.Name), str(m.ToolCallID)
		isToolResult := role == "tool" && contentOK && (callID != "" || strings.TrimSpace(m.Role) == "function" && name != "")
		if body == "" && !isToolResult {
			continue
		}
		sender := map[string]string{"assistant": "Assistant", "user": "User"}[role]
		if role == "tool" {
			switch {
			case callID != "":
				sender = "Tool:" + callID
			case name != "":
				sender = "Tool:" + name
			default:
				sender = "Tool"
			}
		}
		entries = append(entries, convEntry{role: role, sender: sender, body: body})
	}
	p.Message = foldEntries(entries)
	p.ExtraSystem = strings.Join(systemParts, "\n\n")
	return p
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// foldEntries builds the run's message: the current (last user or tool)
// turn, preceded by the earlier turns as history.
func foldEntries(entries []convEntry) string {
	if len(entries) == 0 {
		return ""
	}
	cur := len(entries) - 1
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].role == "user" || entries[i].role == "tool" {
			cur = i
			break
		}
	}
	var history []string
	for _, e := range entries[:cur] {
		history = append(history, e.sender+": "+e.body)
	}
	c := entries[cur]
	if len(history) == 0 && c.role != "tool" {
		return c.body
	}
	current := c.sender + ": " + c.body
	if strings.TrimSpace(strings.Join(history, "\n")) == "" {
		return current
	}
	return strings.Join([]string{historyMarker, strings.Join(history, "\n"), "", currentMarker, current}, "\n")
}
