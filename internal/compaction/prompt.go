package compaction

import (
	"encoding/json"
	"strings"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// Modes of agents.defaults.compaction.mode.
const (
	ModeDefault   = "default"
	ModeSafeguard = "safeguard"
)

// SystemPrompt is the summariser's system prompt (the reference's wording).
const SystemPrompt = `You are a context summarization assistant. Your task is to read a conversation between a user and an AI assistant, then produce a structured summary following the exact format specified.

When a conversation line includes sender={...}, that JSON identifies the author of that user turn. The id is authoritative; name and username are readable labels only. Preserve attribution for material facts, preferences, instructions, decisions, and disagreements; never transfer them to another sender or an anonymous user. A user line without sender={...} is unattributed: preserve its facts as unattributed and do not assign them to a known sender.

Do NOT continue the conversation. Do NOT respond to any questions in the conversation. ONLY output the structured summary.`

// defaultPrompt is the first summary's instruction in "default" mode.
const defaultPrompt = `The messages above are a conversation to summarize. Create a structured context checkpoint summary that another LLM will use to continue the work.

Use this EXACT format:

## Goal
[What is the user trying to accomplish? Can be multiple items if the session covers different tasks.]

## Constraints & Preferences
- [Any constraints, preferences, or requirements mentioned by user]
- [Or "(none)" if none were mentioned]

## Progress
### Done
- [x] [Completed tasks/changes]

### In Progress
- [ ] [Current work]

### Blocked
- [Issues preventing progress, if any]

## Key Decisions
- **[Decision]**: [Brief rationale]

## Next Steps
1. [Ordered list of what should happen next]

## Critical Context
- [Any data, examples, or references needed to continue]
- [Or "(none)" if not applicable]

Keep each section concise. Preserve exact file paths, function names, and error messages.`

// updatePrompt re-distils a previous summary with new messages in
// "default" mode.
const updatePrompt = `The messages above are NEW conversation messages to incorporate into the existing summary provided in <previous-summary> tags.

Update the existing structured summary with new information. RULES:
- PRESERVE all existing information from the previous summary
- ADD new progress, decisions, and context from the new messages
- UPDATE the Progress section: move items from "In Progress" to "Done" when completed
- UPDATE "Next Steps" based on what was accomplished
- PRESERVE exact file paths, function names, and error messages
- If something is no longer relevant, you may remove it

Use this EXACT format:

## Goal
[Preserve existing goals, add new ones if the task expanded]

## Constraints & Preferences
- [Preserve existing, add new ones discovered]

## Progress
### Done
- [x] [Include previously done items AND newly completed items]

### In Progress
- [ ] [Current work - update based on progress]

### Blocked
- [Current blockers - remove if resolved]

## Key Decisions
- **[Decision]**: [Brief rationale] (preserve all previous, add new)

## Next Steps
1. [Update based on current state]

## Critical Context
- [Preserve important context, add new if needed]

Keep each section concise. Preserve exact file paths, function names, and error messages.`

// RequiredSections are the headings a safeguard summary must contain, in
// order.
var RequiredSections = []string{
	"## Decisions",
	"## Open TODOs",
	"## Constraints/Rules",
	"## Pending user asks",
	"## Exact identifiers",
}

const (
	strictIdentifiers = "For ## Exact identifiers, preserve literal values exactly as seen (IDs, URLs, file paths, ports, hashes, dates, times)."
	offIdentifiers    = "For ## Exact identifiers, include identifiers only when needed for continuity; do not enforce literal-preservation rules."
	redistilPrompt    = "Update the previous summary with the new conversation. Preserve relevant facts, decisions, and unresolved asks; remove stale or duplicate detail. Use the format below."
)

// maxInstructionRunes bounds operator focus text (/compact instructions).
const maxInstructionRunes = 800

// maxToolResultChars bounds one tool result in the summariser's input.
const maxToolResultChars = 2000

// LatestRequestMarker opens the block naming the latest unresolved user
// request inside a safeguard prompt; UntrustedEnd closes such blocks.
const (
	LatestRequestMarker = "<<<Latest unresolved user request>>>"
	UntrustedEnd        = "<<<end>>>"
	focusMarker         = "<<<Additional context from /compact>>>"
)

// PromptInput is what one summariser call is built from.
type PromptInput struct {
	Mode            string
	Messages        []provider.Message // the history to summarise
	PreviousSummary string
	// Instructions is operator focus (/compact <instructions>).
	Instructions string
	// IdentifierPolicy is "strict" (default) or "off".
	IdentifierPolicy string
	// LatestRequest is the latest user request (safeguard mode).
	LatestRequest string
}

// BuildRequest returns the summariser request for in: the conversation
// serialised as text inside <conversation>, the previous summary inside
// <previous-summary>, then the mode's instructions.
func BuildRequest(in PromptInput, model string, maxTokens int) *provider.Request {
	var b strings.Builder
	b.WriteString("<conversation>\n")
	b.WriteString(Serialize(in.Messages))
	b.WriteString("\n</conversation>\n\n")
	if in.PreviousSummary != "" {
		b.WriteString("<previous-summary>\n")
		b.WriteString(in.PreviousSummary)
		b.WriteString("\n</previous-summary>\n\n")
	}
	focus := truncateRunes(strings.TrimSpace(in.Instructions), maxInstructionRunes)
	if in.Mode == ModeSafeguard {
		if in.PreviousSummary != "" {
			b.WriteString(redistilPrompt + "\n\n")
		}
		b.WriteString(safeguardInstructions(in.IdentifierPolicy, in.LatestRequest, focus))
	} else {
		if in.PreviousSummary != "" {
			b.WriteString(updatePrompt)
		} else {
			b.WriteString(defaultPrompt)
		}
		if focus != "" {
			b.WriteString("\n\nAdditional focus: " + focus)
		}
	}
	return &provider.Request{
		Model:     model,
		System:    SystemPrompt,
		Messages:  []provider.Message{{Role: provider.RoleUser, Text: b.String()}},
		MaxTokens: maxTokens,
	}
}

func safeguardInstructions(policy, latest, focus string) string {
	ident := strictIdentifiers
	if policy == "off" {
		ident = offIdentifiers
	}
	parts := []string{strings.Join(append(append([]string{
		"Produce a compact, factual summary with these exact section headings:"},
		RequiredSections...),
		ident,
		"Do not omit unresolved asks from the user.",
		"Record completed requests outside ## Pending user asks; list only unresolved user requests there.",
		"When prior compaction summaries are present, re-distill them with new messages and remove stale duplicate detail.",
	), "\n")}
	if latest != "" {
		parts = append(parts, strings.Join([]string{
			"Make the exact request below the first item in ## Pending user asks.",
			"Its run owner will resume it after compaction, so summary prose cannot mark it complete.",
			untrusted(LatestRequestMarker, latest),
		}, "\n"))
	}
	if focus != "" {
		parts = append(parts, untrusted(focusMarker, focus))
	}
	return strings.Join(parts, "\n\n")
}

// untrusted wraps text as prompt data between a label and UntrustedEnd,
// with the end marker defused inside it.
func untrusted(label, text string) string {
	text = strings.ReplaceAll(text, UntrustedEnd, "<<end>>")
	return label + "\n" + text + "\n" + UntrustedEnd
}

// Serialize renders messages as the summariser reads them: "[User]: …",
// "[Assistant]: …", "[Assistant tool calls]: name(args)", "[Tool result]:
// …" (long results truncated), separated by blank lines.
func Serialize(msgs []provider.Message) string {
	parts := make([]string, 0, len(msgs))
	for _, m := range msgs {
		switch m.Role {
		case provider.RoleUser:
			if m.Text != "" {
				parts = append(parts, "[User]: "+m.Text)
			}
		case provider.RoleAssistant:
			if m.Text != "" {
				parts = append(parts, "[Assistant]: "+m.Text)
			}
			if len(m.ToolCalls) > 0 {
				calls := make([]string, len(m.ToolCalls))
				for i, c := range m.ToolCalls {
					calls[i] = c.Name + "(" + argString(c.Arguments) + ")"
				}
				parts = append(parts, "[Assistant tool calls]: "+strings.Join(calls, "; "))
			}
		case provider.RoleTool:
			if m.Text != "" {
				parts = append(parts, "[Tool result]: "+truncateRunes(m.Text, maxToolResultChars))
			}
		}
	}
	return strings.Join(parts, "\n\n")
}

// argString renders tool arguments as k=v pairs when they are an object.
func argString(raw json.RawMessage) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return string(raw)
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sortStrings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k + "=" + string(obj[k])
	}
	return strings.Join(out, ", ")
}

func truncateRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
