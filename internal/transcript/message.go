package transcript

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
)

// NewID returns a new random entry id: 16 lowercase hex characters (64 bits
// from crypto/rand). The reference writes 8 hex characters and checks for
// collisions; twice the length makes a collision within one transcript
// negligible without a check. Readers accept any non-empty id.
func NewID() string {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand since Go 1.24)
	return hex.EncodeToString(b[:])
}

// NewHeader returns a header for a new transcript of session id, written by
// this version of the format.
func NewHeader(id string, ts time.Time, cwd string) Header {
	return Header{Type: TypeSession, Version: HeaderVersion, ID: id, Timestamp: FormatTime(ts), Cwd: cwd}
}

// Text returns the text of the message content: the string itself, or the
// text blocks joined with "". It is "" for a nil message.
func (m *Message) Text() string {
	if m == nil {
		return ""
	}
	return m.Content.Text()
}

// AssistantText returns the reply text of an assistant message: its
// non-blank text blocks joined with "" and trimmed. It returns "" for nil,
// for other roles, and (like the reference) for string content.
//
// This is the simple version of the reference's extraction; stripping of
// reasoning tags and downgraded tool-call text is not done here yet.
func AssistantText(m *Message) string {
	if m == nil || m.Role != RoleAssistant || m.Content.String != nil {
		return ""
	}
	var sb strings.Builder
	for _, b := range m.Content.Blocks {
		if b.Type != BlockText || b.Text == nil || strings.TrimSpace(*b.Text) == "" {
			continue
		}
		sb.WriteString(*b.Text)
	}
	return strings.TrimSpace(sb.String())
}

// NewUserMessage returns a user message whose content is one text block, as
// the reference's agent writes a prompt.
func NewUserMessage(text string, ts time.Time) *Message {
	return &Message{Role: RoleUser, Content: BlockContent(TextBlock(text)), Timestamp: ts.UnixMilli()}
}

// NewAssistantMessage returns an assistant message with the given content
// blocks. The caller fills in API, Provider, Model, Usage, StopReason and the
// like. A nil blocks slice is written as empty content ([]).
func NewAssistantMessage(blocks []Block, ts time.Time) *Message {
	return &Message{Role: RoleAssistant, Content: Content{Blocks: blocks}, Timestamp: ts.UnixMilli()}
}

// NewToolResult returns a toolResult message answering the tool call callID:
// its content is one text block holding text, details is the structured
// result (omitted when empty), and isError is always recorded.
func NewToolResult(callID, toolName, text string, details json.RawMessage, isError bool, ts time.Time) *Message {
	return &Message{
		Role:       RoleToolResult,
		Content:    BlockContent(TextBlock(text)),
		Timestamp:  ts.UnixMilli(),
		ToolCallID: callID,
		ToolName:   toolName,
		Details:    details,
		IsError:    &isError,
	}
}

// MessageEntry returns a message entry holding m, stamped with ts. ID and
// ParentID are left empty for the store to assign.
func MessageEntry(m *Message, ts time.Time) Entry {
	return Entry{Type: TypeMessage, Timestamp: FormatTime(ts), Message: m}
}
