package sanitize

import (
	"maps"
	"strconv"

	"github.com/switchboardhq/switchboard/internal/transcript"
)

// Limits of sessions_history (docs/spec/reference-behaviour.md §5).
const (
	// DefaultMaxChars is the per-text limit in UTF-16 units.
	DefaultMaxChars = 4000
	// DefaultMaxBytes is the cap on the JSON size of the messages array
	// (80 KiB).
	DefaultMaxBytes = 80 * 1024
	// TruncatedSuffix is appended to a text cut at the per-text limit.
	TruncatedSuffix = "\n…(truncated)…"
	// OmittedPlaceholder is the content of the single assistant message that
	// replaces the history when even its newest message exceeds the cap.
	OmittedPlaceholder = "[sessions_history omitted: message too large]"
)

// HistoryOptions configures SanitizeHistory. The zero value is the
// reference's sessions_history without includeTools.
type HistoryOptions struct {
	// IncludeTools keeps toolResult and tool messages.
	IncludeTools bool
	// Redactor masks secrets in every text; nil means DefaultRedactor().
	// Pass NewRedactor(RedactOptions{Mode: RedactOff}) to disable it.
	Redactor *Redactor
	// MaxChars is the per-text limit in UTF-16 units; 0 (or less) means
	// DefaultMaxChars.
	MaxChars int
	// MaxBytes caps JSONSize of the messages array; 0 (or less) means
	// DefaultMaxBytes.
	MaxBytes int
}

// HistoryResult is the outcome of SanitizeHistory; its fields are the
// sessions_history result members of the same names.
type HistoryResult struct {
	// Messages are the sanitised messages, oldest first. Never nil.
	Messages []map[string]any
	// Truncated is DroppedMessages || ContentTruncated.
	Truncated bool
	// DroppedMessages reports that messages were dropped for the byte cap,
	// or that the history was replaced by the placeholder.
	DroppedMessages bool
	// ContentTruncated reports that a field was deleted (details, usage,
	// cost, thinkingSignature, image data) or a text was cut.
	ContentTruncated bool
	// ContentRedacted reports that redaction changed a text.
	ContentRedacted bool
	// Bytes is JSONSize(Messages).
	Bytes int
}

// SanitizeHistory implements steps 6-9 of sessions_history on the messages
// chat.history returned (docs/spec/reference-behaviour.md §5). It never modifies msgs or
// anything they hold: changed messages and content blocks are shallow
// copies, and untouched values are shared with the input.
//
//  1. Unless IncludeTools, messages with role "toolResult" or "tool" are
//     dropped.
//  2. Each message: the top-level members details, usage and cost are
//     deleted; a string content and a string top-level text are redacted and
//     truncated; in an array content, each object block has its string text
//     (any block type) and partialJson redacted and truncated, a "thinking"
//     block also its string thinking, with thinkingSignature deleted, and an
//     "image" block loses data and gets omitted:true and, when data was a
//     non-empty string, bytes: the string's length (base64 characters, not
//     decoded bytes, as in the reference). A block that is itself an array
//     becomes an object keyed "0", "1", … (JavaScript's {...array}); other
//     non-object blocks are kept.
//  3. Redaction first, then truncation: a text longer than MaxChars UTF-16
//     units keeps its first MaxChars units (one fewer rather than split a
//     surrogate pair) followed by TruncatedSuffix.
//  4. While the JSON size of the array exceeds MaxBytes and more than one
//     message remains, the oldest is dropped. If the last message alone is
//     still too big, the result is the single placeholder
//     {role:"assistant", content:OmittedPlaceholder}, which may itself
//     exceed a very small MaxBytes.
func SanitizeHistory(msgs []map[string]any, opts HistoryOptions) HistoryResult {
	s := historySanitizer{redactor: opts.Redactor, maxChars: opts.MaxChars}
	if s.redactor == nil {
		s.redactor = defaultRedactor()
	}
	if s.maxChars <= 0 {
		s.maxChars = DefaultMaxChars
	}
	maxBytes := opts.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}

	selected := make([]map[string]any, 0, len(msgs))
	for _, m := range msgs {
		if !opts.IncludeTools && isToolMessage(m) {
			continue
		}
		selected = append(selected, s.message(m))
	}

	// Byte cap: drop the oldest while over the cap and more than one remains.
	sizes := make([]int, len(selected))
	total := 2
	for i, m := range selected {
		sizes[i] = JSONSize(m)
		total += sizes[i]
		if i > 0 {
			total++
		}
	}
	start := 0
	for total > maxBytes && start < len(selected)-1 {
		total -= sizes[start] + 1
		start++
	}
	kept := selected[start:]
	res := HistoryResult{
		Messages:         kept,
		DroppedMessages:  len(kept) < len(selected),
		ContentTruncated: s.truncated,
		ContentRedacted:  s.redacted,
		Bytes:            total,
	}
	if total > maxBytes {
		res.DroppedMessages = true
		res.Messages, res.Bytes = hardCap(kept, maxBytes)
	}
	res.Truncated = res.DroppedMessages || res.ContentTruncated
	return res
}

// hardCap keeps only the last message if it fits alone, else returns the
// placeholder. Like the reference, a nil last message counts as absent.
func hardCap(kept []map[string]any, maxBytes int) ([]map[string]any, int) {
	var last map[string]any
	if len(kept) > 0 {
		last = kept[len(kept)-1]
	}
	if last == nil {
		if 2 <= maxBytes {
			return []map[string]any{}, 2
		}
	} else if n := 2 + JSONSize(last); n <= maxBytes {
		return []map[string]any{last}, n
	}
	ph := []map[string]any{{"role": transcript.RoleAssistant, "content": OmittedPlaceholder}}
	return ph, JSONSize(ph)
}

// isToolMessage reports whether m has role toolResult or tool.
func isToolMessage(m map[string]any) bool {
	role, _ := m["role"].(string)
	return role == transcript.RoleToolResult || role == transcript.RoleTool
}

// historySanitizer sanitises messages and accumulates the flags.
type historySanitizer struct {
	redactor  *Redactor
	maxChars  int
	truncated bool
	redacted  bool
}

// text redacts and truncates one text.
func (s *historySanitizer) text(t string) string {
	out, changed := s.redactor.Redact(t)
	if changed {
		s.redacted = true
	}
	if utf16Len(out) <= s.maxChars {
		return out
	}
	s.truncated = true
	return utf16Prefix(out, s.maxChars) + TruncatedSuffix
}

// message sanitises one message; nil stays nil.
func (s *historySanitizer) message(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := maps.Clone(m)
	for _, k := range [...]string{"details", "usage", "cost"} {
		if _, ok := out[k]; ok {
			delete(out, k)
			s.truncated = true
		}
	}
	switch c := out["content"].(type) {
	case string:
		out["content"] = s.text(c)
	case []any:
		blocks := make([]any, len(c))
		for i, b := range c {
			blocks[i] = s.block(b)
		}
		out["content"] = blocks
	case []map[string]any:
		blocks := make([]any, len(c))
		for i, b := range c {
			blocks[i] = s.block(b)
		}
		out["content"] = blocks
	}
	if t, ok := out["text"].(string); ok {
		out["text"] = s.text(t)
	}
	return out
}

// block sanitises one content block.
func (s *historySanitizer) block(b any) any {
	var e map[string]any
	switch b := b.(type) {
	case map[string]any:
		if b == nil {
			return b
		}
		e = maps.Clone(b)
	case []any:
		// JavaScript's {...array}: an object keyed by index.
		e = make(map[string]any, len(b))
		for i, v := range b {
			e[strconv.Itoa(i)] = v
		}
	default:
		return b
	}
	typ, _ := e["type"].(string)
	if t, ok := e["text"].(string); ok {
		e["text"] = s.text(t)
	}
	if typ == transcript.BlockThinking {
		if t, ok := e["thinking"].(string); ok {
			e["thinking"] = s.text(t)
		}
		if _, ok := e["thinkingSignature"]; ok {
			delete(e, "thinkingSignature")
			s.truncated = true
		}
	}
	if t, ok := e["partialJson"].(string); ok {
		e["partialJson"] = s.text(t)
	}
	if typ == transcript.BlockImage {
		data, isString := e["data"].(string)
		if _, ok := e["data"]; ok {
			delete(e, "data")
			s.truncated = true
		}
		e["omitted"] = true
		if isString && data != "" {
			e["bytes"] = float64(utf16Len(data))
		}
	}
	return e
}
