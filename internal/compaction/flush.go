package compaction

import (
	"fmt"
	"strings"
	"time"
)

// SilentToken is the reply that means "deliver nothing" (the reference's
// NO_REPLY, matched case-insensitively).
const SilentToken = "NO_REPLY"

// DefaultFlushSoftTokens is memoryFlush.softThresholdTokens by default: the
// gap below the compaction threshold at which the memory flush runs.
const DefaultFlushSoftTokens = 4000

// The reference's memory-flush hints; a custom prompt gets the ones it
// lacks appended.
const (
	flushTargetHint   = "Store durable memories only in memory/YYYY-MM-DD.md (create memory/ if needed)."
	flushAppendHint   = "If memory/YYYY-MM-DD.md already exists, APPEND new content only and do not overwrite existing entries."
	flushReadOnlyHint = "Treat workspace bootstrap/reference files such as MEMORY.md, DREAMS.md, SOUL.md, and AGENTS.md as read-only during this flush; never overwrite, replace, or edit them."
)

// DefaultFlushPrompt is the reference's memory-flush user prompt (its
// sentences joined by spaces).
const DefaultFlushPrompt = "Pre-compaction memory flush. " +
	flushTargetHint + " " +
	flushReadOnlyHint + " " +
	flushAppendHint + " " +
	"Do NOT create timestamped variant files (e.g., YYYY-MM-DD-HHMM.md); always use the canonical YYYY-MM-DD.md filename. " +
	"If nothing to store, reply with " + SilentToken + "."

// DefaultFlushSystemPrompt is the reference's memory-flush system prompt.
const DefaultFlushSystemPrompt = "Pre-compaction memory flush turn. " +
	"The session is near auto-compaction; capture durable memories to disk. " +
	flushTargetHint + " " +
	flushReadOnlyHint + " " +
	flushAppendHint + " " +
	"You may reply, but usually " + SilentToken + " is correct."

// FlushSystemMarker opens every memory-flush system prompt built from the
// default; tests and logs recognise the flush turn by it.
const FlushSystemMarker = "Pre-compaction memory flush turn."

// FlushPrompts returns the user and system prompts of a memory flush at
// now: prompt and system (the defaults when blank) with the reference's
// safety hints and NO_REPLY hint added when missing, YYYY-MM-DD replaced by
// the date in loc, and the current time appended to the user prompt.
func FlushPrompts(prompt, system string, now time.Time, loc *time.Location) (user, sys string) {
	if loc == nil {
		loc = time.UTC
	}
	if strings.TrimSpace(prompt) == "" {
		prompt = DefaultFlushPrompt
	}
	if strings.TrimSpace(system) == "" {
		system = DefaultFlushSystemPrompt
	}
	local := now.In(loc)
	stamp := local.Format("2006-01-02")
	user = strings.ReplaceAll(noReplyHint(safetyHints(prompt)), "YYYY-MM-DD", stamp)
	sys = strings.ReplaceAll(noReplyHint(safetyHints(system)), "YYYY-MM-DD", stamp)
	if !strings.Contains(user, "Current time:") {
		user = strings.TrimRight(user, " \t\r\n") + "\n" + timeLine(now, loc)
	}
	return user, sys
}

// FlushPath is the workspace-relative memory file of a flush at now.
func FlushPath(now time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	return "memory/" + now.In(loc).Format("2006-01-02") + ".md"
}

func safetyHints(text string) string {
	text = strings.TrimSpace(text)
	for _, h := range []string{flushTargetHint, flushAppendHint, flushReadOnlyHint} {
		if !strings.Contains(text, h) {
			if text != "" {
				text += "\n\n"
			}
			text += h
		}
	}
	return text
}

func noReplyHint(text string) string {
	if strings.Contains(text, SilentToken) {
		return text
	}
	return text + "\n\nIf no user-visible reply is needed, start with " + SilentToken + "."
}

// timeLine is the reference's "Current time: … (zone)\nReference UTC: …"
// block (24-hour clock).
func timeLine(now time.Time, loc *time.Location) string {
	l := now.In(loc)
	day := l.Day()
	formatted := fmt.Sprintf("%s, %s %d%s, %d - %s", l.Weekday(), l.Month(), day, ordinal(day), l.Year(), l.Format("15:04"))
	return fmt.Sprintf("Current time: %s (%s)\nReference UTC: %s UTC", formatted, loc.String(), now.UTC().Format("2006-01-02 15:04"))
}

func ordinal(n int) string {
	if n >= 11 && n <= 13 {
		return "th"
	}
	switch n % 10 {
	case 1:
		return "st"
	case 2:
		return "nd"
	case 3:
		return "rd"
	}
	return "th"
}

// FlushThreshold is the projected prompt size at which the memory flush
// runs: the compaction threshold minus the soft margin, the margin capped
// at half of what the reserve leaves of the window (the reference's rule).
// It returns threshold itself when soft is 0.
func FlushThreshold(window, reserveTokens, soft int) int {
	threshold := Threshold(window, reserveTokens)
	if soft <= 0 {
		return threshold
	}
	soft = min(soft, max((window-Reserve(window, reserveTokens))/2, 0))
	return threshold - soft
}

// IsSilent reports whether a reply is the silent token alone, or starts
// with it (the reference suppresses both).
func IsSilent(text string) bool {
	t := strings.TrimSpace(text)
	return len(t) >= len(SilentToken) && strings.EqualFold(t[:len(SilentToken)], SilentToken)
}

// The reference's compaction notices (agents.defaults.compaction.notifyUser).
const (
	NoticeStart         = "🧹 Compacting context..."
	NoticeEnd           = "🧹 Compaction complete"
	NoticeIncomplete    = "🧹 Compaction incomplete"
	NoticeFlushDegraded = "⚠️ Memory maintenance temporarily failed; continuing your reply."
)
