package subagent

import (
	"strings"
	"unicode"
)

// ThinkingLevels lists, in order, every canonical level NormalizeThinking can
// return. The slice is shared; do not modify it.
var ThinkingLevels = []string{"off", "minimal", "low", "medium", "high", "xhigh", "adaptive"}

// ThinkingLevelsHint is the "<levels>" part of the invalid-level error:
// ThinkingLevels joined with ", ".
//
// The reference builds this list per target model (formatThinkingLevels):
// "off, minimal, low, medium, high", then "xhigh" only for models that
// advertise it, then "adaptive" (its default model therefore prints
// "off, minimal, low, medium, high, adaptive"). Switchboard does not gate
// xhigh per model, so it always lists every level the normaliser accepts.
const ThinkingLevelsHint = "off, minimal, low, medium, high, xhigh, adaptive"

// NormalizeThinking maps a sessions_spawn thinking value (the explicit
// argument or a configured subagents.thinking default) to a canonical level,
// as in docs/spec/reference-behaviour.md §9.3 step 12.
//
// raw is trimmed and lowercased first. Empty (or blank) input means "no
// thinking override" and yields "", nil. Recognised spellings:
//
//	off                                                  → off
//	on, enable, enabled                                  → low
//	min, minimal, think                                  → minimal
//	low, thinkhard, think-hard, think_hard               → low
//	mid, med, medium, thinkharder, think-harder, harder  → medium
//	high, ultra, ultrathink, thinkhardest, highest, max  → high
//	xhigh, extrahigh (ignoring spaces, '-' and '_')      → xhigh
//	adaptive, auto   (ignoring spaces, '-' and '_')      → adaptive
//
// Anything else returns a *ThinkingLevelError.
func NormalizeThinking(raw string) (level string, err error) {
	trimmed := strings.TrimSpace(raw)
	if trimmed == "" {
		return "", nil
	}
	key := strings.ToLower(trimmed)
	collapsed := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || unicode.IsSpace(r) {
			return -1
		}
		return r
	}, key)
	switch collapsed {
	case "adaptive", "auto":
		return "adaptive", nil
	case "xhigh", "extrahigh":
		return "xhigh", nil
	}
	// Order matters: "think-hard" appears in the reference's low and high
	// lists; the low list is checked first and wins.
	switch key {
	case "off":
		return "off", nil
	case "on", "enable", "enabled":
		return "low", nil
	case "min", "minimal":
		return "minimal", nil
	case "low", "thinkhard", "think-hard", "think_hard":
		return "low", nil
	case "mid", "med", "medium", "thinkharder", "think-harder", "harder":
		return "medium", nil
	case "high", "ultra", "ultrathink", "thinkhardest", "highest", "max":
		return "high", nil
	case "think":
		return "minimal", nil
	}
	return "", &ThinkingLevelError{Raw: trimmed}
}

// ThinkingLevelError reports an unrecognised thinking level. Its message is
// the reference's tool error text, returned to the model verbatim as
// {status:"error", error:<message>}.
type ThinkingLevelError struct {
	// Raw is the rejected value, trimmed (the reference reads it with its
	// trimming string reader, so its message never shows surrounding blanks).
	Raw string
}

// Error returns `Invalid thinking level "<Raw>". Use one of: <ThinkingLevelsHint>.`
// with Raw inserted as is (no escaping).
func (e *ThinkingLevelError) Error() string {
	return `Invalid thinking level "` + e.Raw + `". Use one of: ` + ThinkingLevelsHint + "."
}
