package subagent

import (
	"strings"

	"github.com/switchboardhq/switchboard/internal/policy"
)

// NormalizeThinking maps a sessions_spawn thinking value (the explicit
// argument or a configured subagents.thinking default) to a canonical level,
// as in docs/spec/reference-behaviour.md §9.3 step 12.
//
// Empty (or blank) input means "no thinking override" and yields "", nil;
// the spellings recognised are policy.NormalizeThinkLevel's. Anything else
// returns a *ThinkingLevelError.
func NormalizeThinking(raw string) (level string, err error) {
	trimmed := strings.TrimSpace(raw)
	if trimmed == "" {
		return "", nil
	}
	if level, ok := policy.NormalizeThinkLevel(trimmed); ok {
		return level, nil
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

// Error returns `Invalid thinking level "<Raw>". Use one of: <policy.ThinkLevelsHint>.`
// with Raw inserted as is (no escaping).
func (e *ThinkingLevelError) Error() string {
	return `Invalid thinking level "` + e.Raw + `". Use one of: ` + policy.ThinkLevelsHint + "."
}
