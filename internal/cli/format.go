package cli

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// relativeAge describes how long ago something happened: "just now",
// "42s ago", "3m ago", "5h ago", "2d ago". A future time (clock skew)
// counts as now.
func relativeAge(d time.Duration) string {
	switch {
	case d < 5*time.Second:
		return "just now"
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s ago"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m ago"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h ago"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + "d ago"
}

// formatTokens prints a token count compactly: 950, 12.3k, 1.2M.
func formatTokens(n int64) string {
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 1_000_000:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/1e3)) + "k"
	}
	return trimZero(fmt.Sprintf("%.1f", float64(n)/1e6)) + "M"
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }

// excerpt returns s on one line, cut to max runes followed by "…" when
// longer.
func excerpt(s string, max int) string {
	s = oneLine(s)
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max]) + "…"
}

// chatMessage is the part of a transcript message (chat.history, chat
// events) the CLI shows.
type chatMessage struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	ToolName     string          `json:"toolName"`
	ToolCallID   string          `json:"toolCallId"`
	IsError      bool            `json:"isError"`
	StopReason   string          `json:"stopReason"`
	ErrorMessage string          `json:"errorMessage"`
	Meta         struct {
		RunID string `json:"runId"`
	} `json:"__openclaw"`
	Provenance *struct {
		Kind             string `json:"kind"`
		SourceSessionKey string `json:"sourceSessionKey"`
		SourceTool       string `json:"sourceTool"`
		ChainID          string `json:"chainId"`
		ChainHops        int    `json:"chainHops"`
		Untrusted        string `json:"untrusted"`
	} `json:"provenance"`
}

// origin describes where a message from another session came from, with
// its place in the chain of causes: "from agent:main:a via sessions_send,
// chain 1f2e3d4c hop 2" ("" for a person's message).
func (m chatMessage) origin() string {
	p := m.Provenance
	if p == nil || (p.SourceSessionKey == "" && p.ChainID == "") {
		return ""
	}
	var parts []string
	if p.SourceSessionKey != "" {
		from := "from " + p.SourceSessionKey
		if p.SourceTool != "" {
			from += " via " + p.SourceTool
		}
		parts = append(parts, from)
	}
	if p.ChainID != "" {
		id := p.ChainID
		if len(id) > 8 {
			id = id[:8]
		}
		parts = append(parts, fmt.Sprintf("chain %s hop %d", id, p.ChainHops))
	}
	if p.Untrusted != "" {
		parts = append(parts, "from outside the operator ("+p.Untrusted+")")
	}
	return strings.Join(parts, ", ")
}

// contentBlock is one block of a message's content.
type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// decodeMessage decodes raw, which may be empty.
func decodeMessage(raw json.RawMessage) (chatMessage, error) {
	var m chatMessage
	if len(raw) == 0 || string(raw) == "null" {
		return m, nil
	}
	err := json.Unmarshal(raw, &m)
	return m, err
}

// blocks returns the content blocks; plain string content is one text
// block.
func (m chatMessage) blocks() []contentBlock {
	if len(m.Content) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []contentBlock{{Type: "text", Text: s}}
	}
	var bs []contentBlock
	if json.Unmarshal(m.Content, &bs) != nil {
		return nil
	}
	return bs
}

// text returns the text of the message's text blocks, concatenated.
func (m chatMessage) text() string {
	var b strings.Builder
	for _, bl := range m.blocks() {
		if bl.Type == "text" {
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}

// messageText is the text of a raw message, "" when it has none or does
// not decode.
func messageText(raw json.RawMessage) string {
	m, err := decodeMessage(raw)
	if err != nil {
		return ""
	}
	return m.text()
}

// dash is s, or "-" when s is empty (an empty table cell).
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
