package sanitize

import (
	"strings"

	"github.com/switchboardhq/switchboard/internal/transcript"
)

// Skip tokens of the agent-to-agent flow (docs/spec/reference-behaviour.md §1.4).
const (
	// AnnounceSkip, as the whole reply of the announce step, suppresses the
	// announcement.
	AnnounceSkip = "ANNOUNCE_SKIP"
	// ReplySkip, as the whole reply of a ping-pong turn, ends the ping-pong.
	ReplySkip = "REPLY_SKIP"
	// NoReply is the silent token: the agent chose not to reply.
	NoReply = "NO_REPLY"
)

// IsSkip reports whether reply is exactly token once surrounding whitespace
// is trimmed: IsSkip("  ANNOUNCE_SKIP\n", AnnounceSkip) is true,
// IsSkip("ANNOUNCE_SKIP.", AnnounceSkip) is false.
func IsSkip(reply, token string) bool {
	return jsTrim(reply) == token
}

// AssistantText returns the user-facing reply text of one message, or ""
// (docs/spec/reference-behaviour.md §6.6). Only a message with role "assistant" and array
// content has any; string content gives "".
//
// Each block of type "text" with a string text is cleaned in three steps:
//
//  1. MiniMax tool-call XML: when the text mentions "minimax:tool_call",
//     <invoke …>…</invoke> blocks and <minimax:tool_call> tags are removed.
//  2. Downgraded tool calls: "[Tool Call: name (ID: …)]" markers (with a
//     following "Arguments: {…}"), "[Tool Result for ID …]" blocks and
//     "[Historical context: …]" markers are removed, and the text trimmed.
//  3. Reasoning tags: <think>, <thinking>, <thought> and <antthinking>
//     blocks are removed with their content and <final> tags without it,
//     except inside Markdown code, and the text trimmed.
//
// A step that finds nothing leaves the text as it is, untrimmed. Blocks
// that are then blank are dropped; the rest are joined with "" and trimmed,
// so "Hi " + "<think>secret</think>there" gives "Hi there". Finally <final>
// tags are removed, leading blank lines and repeated consecutive paragraphs
// dropped, and — only when the message failed (stopReason "error" or a
// non-blank errorMessage) — a raw provider error is rewritten for users,
// first match wins:
//
//   - "incorrect role information" / "roles must alternate": "Message
//     ordering conflict - please try again. …";
//   - a context-window overflow given as an API error: "Context overflow:
//     prompt too large for the model. …";
//   - a billing error (402, "payment required", "insufficient credits", …):
//     "⚠️ API provider returned a billing error — …";
//   - a JSON API error payload or an HTTP status line with an error hint:
//     reformatted, e.g. "500 Internal Server Error" → "HTTP 500: Internal
//     Server Error", `{"error":{"type":"x","message":"m"}}` → "LLM error x:
//     m", a Cloudflare 52x → "The AI service is temporarily unavailable
//     (HTTP 522). …";
//   - an error-prefixed text ("Error: …", "OpenAI API error: …", "request
//     failed: …"): the rate-limit, overloaded, network ("LLM request failed:
//     …") or timeout ("LLM request timed out.") message, else reformatted as
//     above.
//
// Text of a successful message is never rewritten, even when it mentions
// billing or errors.
func AssistantText(msg map[string]any) string {
	if msg == nil {
		return ""
	}
	if role, _ := msg["role"].(string); role != transcript.RoleAssistant {
		return ""
	}
	var chunks []string
	add := func(b any) {
		block, _ := b.(map[string]any)
		if typ, _ := block["type"].(string); typ != transcript.BlockText {
			return
		}
		text, ok := block["text"].(string)
		if !ok {
			return
		}
		if t := sanitizeTextContent(text); !isBlank(t) {
			chunks = append(chunks, t)
		}
	}
	switch c := msg["content"].(type) {
	case []any:
		for _, b := range c {
			add(b)
		}
	case []map[string]any:
		for _, b := range c {
			add(b)
		}
	default:
		return ""
	}
	joined := jsTrim(strings.Join(chunks, ""))
	if joined == "" {
		return ""
	}
	errorContext := msg["stopReason"] == "error"
	if em, ok := msg["errorMessage"].(string); ok && !isBlank(em) {
		errorContext = true
	}
	return sanitizeUserFacingText(joined, errorContext)
}

// LatestReply returns the newest non-blank assistant reply in msgs (oldest
// first), skipping tool messages (role "toolResult" or "tool"), or "" when
// there is none. It is the reference's "latest reply" read of the A2A flow.
func LatestReply(msgs []map[string]any) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if isToolMessage(msgs[i]) {
			continue
		}
		if t := AssistantText(msgs[i]); !isBlank(t) {
			return t
		}
	}
	return ""
}

// LastMessageReply returns the reply of sessions_send's "ok" result: the
// AssistantText of the last message in msgs that is not a tool message, or
// "" when there is none. A quirk kept from the reference
// (docs/spec/reference-behaviour.md §14.2): only that last message counts, so when it is
// not an assistant message (or has no text) the reply is "" even if an
// earlier assistant message has one.
func LastMessageReply(msgs []map[string]any) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if !isToolMessage(msgs[i]) {
			return AssistantText(msgs[i])
		}
	}
	return ""
}
