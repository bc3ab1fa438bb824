package policy

import (
	"cmp"
	"fmt"
	"strings"
	"unicode"
)

// ThinkLevels lists, in order, every level NormalizeThinkLevel can
// return: the levels a session, a spawn and sessions.patch take. The
// slice is shared; do not modify it.
var ThinkLevels = []string{"off", "minimal", "low", "medium", "high", "xhigh", "adaptive"}

// ThinkLevelsHint is ThinkLevels joined with ", ".
//
// The reference builds this list per target model (formatThinkingLevels):
// "off, minimal, low, medium, high", then "xhigh" only for models that
// advertise it, then "adaptive". Switchboard does not gate xhigh per
// model, so it always lists every level the normaliser accepts.
const ThinkLevelsHint = "off, minimal, low, medium, high, xhigh, adaptive"

// NormalizeThinkLevel maps a thinking level as people write it (the
// reference's spellings) to a canonical level; ok is false for anything
// else. raw is trimmed and lowercased first; blank input is not a level.
//
//	off                                                  → off
//	on, enable, enabled                                  → low
//	min, minimal, think                                  → minimal
//	low, thinkhard, think-hard, think_hard               → low
//	mid, med, medium, thinkharder, think-harder, harder  → medium
//	high, ultra, ultrathink, thinkhardest, highest, max  → high
//	xhigh, extrahigh (ignoring spaces, '-' and '_')      → xhigh
//	adaptive, auto   (ignoring spaces, '-' and '_')      → adaptive
func NormalizeThinkLevel(raw string) (level string, ok bool) {
	key := strings.ToLower(strings.TrimSpace(raw))
	if key == "" {
		return "", false
	}
	collapsed := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || unicode.IsSpace(r) {
			return -1
		}
		return r
	}, key)
	switch collapsed {
	case "adaptive", "auto":
		return "adaptive", true
	case "xhigh", "extrahigh":
		return "xhigh", true
	}
	// Order matters: "think-hard" appears in the reference's low and high
	// lists; the low list is checked first and wins.
	switch key {
	case "off":
		return "off", true
	case "on", "enable", "enabled":
		return "low", true
	case "min", "minimal":
		return "minimal", true
	case "low", "thinkhard", "think-hard", "think_hard":
		return "low", true
	case "mid", "med", "medium", "thinkharder", "think-harder", "harder":
		return "medium", true
	case "high", "ultra", "ultrathink", "thinkhardest", "highest", "max":
		return "high", true
	case "think":
		return "minimal", true
	}
	return "", false
}

// IsDefaultWord reports whether a /think or /model argument clears the
// session's choice (the reference's words for it).
func IsDefaultWord(s string) bool {
	switch strings.ToLower(s) {
	case "default", "inherit", "inherited", "clear", "reset", "unpin":
		return true
	}
	return false
}

// SplitCommand splits a message that starts with a slash command (after
// white space) into the command's name, lowercased, without the slash
// and the optional colon the reference allows after it ("/Status:" is
// "status"), and the text after it with its leading white space removed.
// ok is false when the message does not start with "/".
func SplitCommand(text string) (name, rest string, ok bool) {
	s := strings.TrimLeftFunc(text, unicode.IsSpace)
	if !strings.HasPrefix(s, "/") {
		return "", "", false
	}
	end := strings.IndexFunc(s, unicode.IsSpace)
	if end < 0 {
		end = len(s)
	}
	return strings.TrimSuffix(strings.ToLower(s[1:end]), ":"), strings.TrimLeftFunc(s[end:], unicode.IsSpace), true
}

// ThinkCommand is a parsed "/think" message (aliases "/thinking", "/t").
type ThinkCommand struct {
	// Show: no argument; the reply names the session's level.
	Show bool
	// Reset: "default" (or another IsDefaultWord): the session's level is
	// cleared.
	Reset bool
	// Level is the canonical level to set ("" with Show, Reset or
	// Invalid).
	Level string
	// Invalid is an argument that is no level (the reply says so).
	Invalid string
	// Text is the rest of a message that starts with "/think <level>":
	// that message runs at Level and the session's level is left as it
	// is (the reference's inline hint). "" for a standalone command.
	Text string
}

// ParseThinkCommand parses a message that starts with /think, /thinking
// or /t (case-insensitive, an optional colon after the name). Alone or
// with one word it is the command; with more text after a level (or a
// it is an inline hint for that message (Text). ok is false for any other
// message, including "/think" followed by more than one word that does
// not start with a level: that goes to the model as it is.
//
//	ParseThinkCommand("/think")              // Show
//	ParseThinkCommand("/t max")              // Level "high"
//	ParseThinkCommand("/think high\nwhy?")   // Level "high", Text "why?"
//	ParseThinkCommand("/think about it")     // not a command
func ParseThinkCommand(text string) (cmd ThinkCommand, ok bool) {
	name, rest, ok := SplitCommand(text)
	switch {
	case !ok:
		return ThinkCommand{}, false
	case name == "think", name == "thinking", name == "t":
	default:
		return ThinkCommand{}, false
	}
	word, after := rest, ""
	if i := strings.IndexFunc(rest, unicode.IsSpace); i >= 0 {
		word, after = rest[:i], strings.TrimSpace(rest[i:])
	}
	word = strings.TrimSpace(word)
	level, isLevel := NormalizeThinkLevel(word)
	switch {
	case word == "":
		return ThinkCommand{Show: true}, true
	case after != "" && isLevel:
		return ThinkCommand{Level: level, Text: after}, true
	case after != "":
		return ThinkCommand{}, false
	case IsDefaultWord(word):
		return ThinkCommand{Reset: true}, true
	case isLevel:
		return ThinkCommand{Level: level}, true
	}
	return ThinkCommand{Invalid: word}, true
}

// Reply is the answer to a standalone c on a session whose level is cur
// ("" the default): the reference's wording.
func (c ThinkCommand) Reply(cur string) string {
	options := "default, " + ThinkLevelsHint
	switch {
	case c.Show:
		return fmt.Sprintf("Current thinking level: %s.\nOptions: %s.", cmp.Or(cur, "default"), options)
	case c.Invalid != "":
		return fmt.Sprintf("Unrecognized thinking level %q. Valid levels: %s.", c.Invalid, options)
	case c.Reset:
		return "Thinking level reset to default."
	case c.Level == "off":
		return "Thinking disabled."
	}
	return fmt.Sprintf("Thinking level set to %s.", c.Level)
}

// Sets reports whether a standalone c changes the session's level.
func (c ThinkCommand) Sets() bool { return c.Text == "" && (c.Reset || c.Level != "") }
