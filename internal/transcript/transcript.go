// Package transcript owns the on-disk transcript line format shared with the
// reference gateway (the "pi" session format): a header line followed by one
// JSON entry per line, each entry linked to the previous one by parentId.
//
// It is a leaf package (stdlib only) that anyone may import. The store
// persists entries in this format, the agent runner builds them, and
// export/import round-trips them as JSONL (Encoder, Decoder).
//
// # Round-tripping
//
// Header, Entry, Message, Block and Meta have their own JSON methods so that
// a line written by the reference decodes and re-encodes without loss:
// unknown members are kept in the Extra maps verbatim and written back after
// the known ones, sorted by name. Known members are matched by exact name
// and decoded strictly: a value of the wrong JSON type (a non-string role, a
// fractional timestamp) is an error, while null reads as the zero value.
//
// Extra may also hold a known member whose value the typed field alone would
// not reproduce: a null, an empty string in an optional field, or a usage or
// provenance object with members the Go type lacks. Such a "shadow" is
// written instead of the field only while it still decodes to the field's
// current value, so setting the field always wins.
//
// Two normalisations remain: the members every entry and message carries
// (type, id, parentId, timestamp; role, content, timestamp) are written even
// when the input lacked them, and null content is written as [].
package transcript

import (
	"encoding/json"
	"strings"
	"time"
)

// HeaderVersion is the transcript header version Switchboard writes.
// Readers accept any version.
const HeaderVersion = 4

// Roles of a message entry.
const (
	RoleUser       = "user"
	RoleAssistant  = "assistant"
	RoleToolResult = "toolResult"
	// RoleTool is the legacy spelling of RoleToolResult found in old transcripts.
	RoleTool = "tool"
)

// Entry types. Readers accept any non-empty type; these are the ones the
// reference writes.
const (
	TypeSession             = "session" // the header line
	TypeMessage             = "message"
	TypeModelChange         = "model_change"
	TypeThinkingLevelChange = "thinking_level_change"
	TypeCustom              = "custom"
	TypeCustomMessage       = "custom_message"
	TypeCompaction          = "compaction"
	TypeBranchSummary       = "branch_summary"
	TypeLabel               = "label"
	TypeSessionInfo         = "session_info"
	TypeReset               = "reset"

	// TypeThinkingLevelChang is a misspelling kept for existing callers.
	//
	// Deprecated: use TypeThinkingLevelChange.
	TypeThinkingLevelChang = TypeThinkingLevelChange
)

// Content block types.
const (
	BlockText     = "text"
	BlockThinking = "thinking"
	BlockToolCall = "toolCall"
	BlockImage    = "image"
)

// Provenance kinds.
const (
	ProvenanceInterSession = "inter_session"
)

// Header is the first line of a transcript.
type Header struct {
	Type string `json:"type"` // always "session"
	// Version is the format version; 0 means the header had none, and is
	// then not written.
	Version   int    `json:"version"`
	ID        string `json:"id"`        // the sessionId
	Timestamp string `json:"timestamp"` // ISO 8601, see FormatTime
	// Cwd is the agent workspace the session ran in.
	Cwd string `json:"cwd,omitempty"`
	// ParentSession names the transcript this one was forked from.
	ParentSession string `json:"parentSession,omitempty"`

	// Extra holds unknown header fields, verbatim.
	Extra map[string]json.RawMessage `json:"-"`
}

// Entry is one transcript line after the header. Message entries carry
// Message; other entry types keep their type-specific fields in Extra so that
// imported transcripts round-trip without loss.
type Entry struct {
	Type string `json:"type"` // one of the Type constants, or any other
	ID   string `json:"id"`   // unique within the transcript; see NewID
	// ParentID is the id of the previous entry on this branch, nil (JSON
	// null) for the first entry.
	ParentID  *string  `json:"parentId"`
	Timestamp string   `json:"timestamp"` // ISO 8601, see FormatTime
	Message   *Message `json:"message,omitempty"`

	// Extra holds fields other than the ones above (for entries other than
	// messages, that includes "message"), verbatim; see the package doc.
	Extra map[string]json.RawMessage `json:"-"`
}

// Message is the "message" field of a message entry.
type Message struct {
	Role string `json:"role"` // one of the Role constants, or any other
	// Content is a JSON string or an array of Blocks.
	Content Content `json:"content"`
	// Timestamp is milliseconds since the Unix epoch.
	Timestamp int64 `json:"timestamp"`

	// Assistant fields.
	API          string `json:"api,omitempty"`
	Provider     string `json:"provider,omitempty"`
	Model        string `json:"model,omitempty"`
	Usage        *Usage `json:"usage,omitempty"`
	StopReason   string `json:"stopReason,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	ResponseID   string `json:"responseId,omitempty"`

	// ToolResult fields.
	ToolCallID string          `json:"toolCallId,omitempty"`
	ToolName   string          `json:"toolName,omitempty"`
	Details    json.RawMessage `json:"details,omitempty"`
	IsError    *bool           `json:"isError,omitempty"`

	// User fields.
	IdempotencyKey string      `json:"idempotencyKey,omitempty"`
	Provenance     *Provenance `json:"provenance,omitempty"`

	// Meta is the reference's "__openclaw" metadata block.
	Meta *Meta `json:"__openclaw,omitempty"`

	// Extra holds unknown message fields, verbatim.
	Extra map[string]json.RawMessage `json:"-"`
}

// Provenance records where a user-role message came from when it was not
// typed by a person (for example a sessions_send from another session).
type Provenance struct {
	Kind             string `json:"kind"`
	SourceSessionKey string `json:"sourceSessionKey,omitempty"`
	SourceChannel    string `json:"sourceChannel,omitempty"`
	SourceTool       string `json:"sourceTool,omitempty"`
	// ChainID and ChainHops place the message in its chain of causes
	// (user message → run → sessions_send → … ): Switchboard's loop
	// protection and tracing follow them.
	ChainID   string `json:"chainId,omitempty"`
	ChainHops int    `json:"chainHops,omitempty"`
	// Untrusted names the origin outside the operator the message's chain
	// of causes comes from ("webhook", "a2a", "<channel> room"; see
	// tools.Chain.Untrusted): the run it started had no host-acting tools
	// unless the operator granted them.
	Untrusted string `json:"untrusted,omitempty"`
}

// Meta is the reference's "__openclaw" block on a message.
type Meta struct {
	RunID string `json:"runId,omitempty"`
	// Extra holds unknown metadata fields, verbatim.
	Extra map[string]json.RawMessage `json:"-"`
}

// MetaCarries is the Meta extra field of a collected turn's input message:
// the ids of the queued runs whose messages it collected (a JSON array),
// which end with the run that wrote it.
const MetaCarries = "carries"

// Usage is token usage as recorded on an assistant message.
type Usage struct {
	Input       int64 `json:"input"`
	Output      int64 `json:"output"`
	CacheRead   int64 `json:"cacheRead"`
	CacheWrite  int64 `json:"cacheWrite"`
	TotalTokens int64 `json:"totalTokens"`
	Cost        *Cost `json:"cost,omitempty"`
}

// Add adds o to u.
func (u *Usage) Add(o Usage) {
	u.Input += o.Input
	u.Output += o.Output
	u.CacheRead += o.CacheRead
	u.CacheWrite += o.CacheWrite
	u.TotalTokens += o.TotalTokens
	if o.Cost != nil {
		if u.Cost == nil {
			u.Cost = &Cost{}
		}
		u.Cost.Input += o.Cost.Input
		u.Cost.Output += o.Cost.Output
		u.Cost.CacheRead += o.Cost.CacheRead
		u.Cost.CacheWrite += o.Cost.CacheWrite
		u.Cost.Total += o.Cost.Total
	}
}

// Cost is the money cost of a usage record, in the provider's currency.
type Cost struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
	Total      float64 `json:"total"`
}

// Block is one content block.
type Block struct {
	Type string `json:"type"`

	// text blocks (Text), and thinking blocks (Thinking and its signature).
	// Text and Thinking are pointers so that an empty string round-trips.
	Text              *string `json:"text,omitempty"`
	Thinking          *string `json:"thinking,omitempty"`
	ThinkingSignature string  `json:"thinkingSignature,omitempty"`

	// toolCall blocks.
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`

	// image blocks.
	Data     string `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`

	// Extra holds fields unknown for the block's type, verbatim.
	Extra map[string]json.RawMessage `json:"-"`
}

// TextBlock returns a text block holding s.
func TextBlock(s string) Block { return Block{Type: BlockText, Text: &s} }

// ToolCallBlock returns a toolCall block.
func ToolCallBlock(id, name string, args json.RawMessage) Block {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return Block{Type: BlockToolCall, ID: id, Name: name, Arguments: args}
}

// Content is a message's content: either a plain string or a list of blocks.
// The zero value marshals as an empty block list.
type Content struct {
	// String is set when the content is a plain JSON string.
	String *string
	// Blocks is the content when String is nil.
	Blocks []Block
}

// StringContent returns content that marshals as the JSON string s.
func StringContent(s string) Content { return Content{String: &s} }

// BlockContent returns content made of the given blocks.
func BlockContent(b ...Block) Content { return Content{Blocks: b} }

// Text returns the concatenated text of the content: the string itself, or
// the text of every text block joined with "".
func (c Content) Text() string {
	if c.String != nil {
		return *c.String
	}
	var n, count int
	var only string
	for _, b := range c.Blocks {
		if b.Type == BlockText && b.Text != nil {
			n += len(*b.Text)
			count++
			only = *b.Text
		}
	}
	if count <= 1 {
		// The common case, one text block: its string as is, no copy
		// (a model request reads the text of every message in its window).
		return only
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, b := range c.Blocks {
		if b.Type == BlockText && b.Text != nil {
			sb.WriteString(*b.Text)
		}
	}
	return sb.String()
}

// ToolCalls returns the toolCall blocks of the content.
func (c Content) ToolCalls() []Block {
	var out []Block
	for _, b := range c.Blocks {
		if b.Type == BlockToolCall {
			out = append(out, b)
		}
	}
	return out
}

// FormatTime formats t the way transcript timestamps are written (RFC 3339
// with milliseconds, UTC).
func FormatTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
