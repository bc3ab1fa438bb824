package compaction

import (
	"encoding/json"
	"slices"
	"strings"
)

// MaxSummaryChars bounds a stored summary.
const MaxSummaryChars = 16000

// truncatedMarker ends a summary cut to MaxSummaryChars.
const truncatedMarker = "\n\n[Compaction summary truncated to fit budget]"

// maxLatestRequestChars bounds the latest request quoted in a summary.
const maxLatestRequestChars = 800

// ContinuationPrompt is sent as the user turn when a turn is retried after
// a compaction whose kept tail no longer holds the user's message.
const ContinuationPrompt = "Continue the current task from the existing transcript, preserving completed work. If an action was interrupted, inspect its state before deciding whether to retry it. Do not restart the task or repeat completed actions."

// UnrecoverableText ends a run whose context overflow compaction could not
// fix.
const UnrecoverableText = "⚠️ Auto-compaction could not recover this turn. I kept this conversation mapped to the current session. Please try again, use /compact, or use /new to start a fresh session."

// SummaryPrefix and SummarySuffix wrap a summary in the message the model
// gets in place of the compacted history.
const (
	SummaryPrefix = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
	SummarySuffix = "\n</summary>"
)

// SummaryMessage is the text the model gets in place of compacted history.
func SummaryMessage(summary string) string { return SummaryPrefix + summary + SummarySuffix }

// LatestRequest shortens a user request for quoting: whole up to 800
// characters, else its head and tail around a marker.
func LatestRequest(s string) string {
	s = strings.TrimSpace(s)
	r := []rune(s)
	if len(r) <= maxLatestRequestChars {
		return s
	}
	return string(r[:379]) + "\n[... latest user request truncated ...]\n" + string(r[len(r)-380:])
}

// Audit checks a safeguard summary: every required heading present in
// order, and, when latest is set, the latest request (or its first line)
// quoted in ## Pending user asks. It returns "" when the summary passes,
// else what is wrong.
func Audit(summary, latest string) string {
	lines := strings.Split(summary, "\n")
	cursor := 0
	for _, h := range RequiredSections {
		i := slices.IndexFunc(lines[cursor:], func(l string) bool { return strings.TrimSpace(l) == h })
		if i < 0 {
			return "missing section " + h
		}
		cursor += i + 1
	}
	if latest == "" {
		return ""
	}
	pending := section(summary, "## Pending user asks")
	want := strings.TrimSpace(strings.SplitN(latest, "\n", 2)[0])
	if len(want) > 200 {
		want = want[:200]
	}
	if !strings.Contains(pending, want) {
		return "## Pending user asks does not hold the latest user request"
	}
	return ""
}

// section returns the body of heading up to the next "## " heading.
func section(summary, heading string) string {
	_, rest, ok := strings.Cut(summary, heading+"\n")
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// Assemble builds the stored summary: "## Latest unresolved user request"
// with the request as a JSON string when there is one, then the model's
// summary, capped at MaxSummaryChars.
func Assemble(body, latest string) string {
	head := ""
	if latest != "" {
		q, _ := json.Marshal(latest)
		head = "## Latest unresolved user request\n" + string(q) + "\n\n"
	}
	body = strings.TrimSpace(body)
	if room := MaxSummaryChars - len(head); len(body) > room {
		cut := max(room-len(truncatedMarker), 0)
		for cut > 0 && !utf8Start(body[cut]) {
			cut--
		}
		body = body[:cut] + truncatedMarker
	}
	return head + body
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// ParseSummary splits a stored summary into the latest unresolved request
// (decoded from its JSON string) and the body after it. A summary without
// the heading, or with a heading whose value does not decode, is all body.
func ParseSummary(s string) (latest, body string) {
	const h = "## Latest unresolved user request\n"
	rest, ok := strings.CutPrefix(s, h)
	if !ok {
		return "", s
	}
	line, after, _ := strings.Cut(rest, "\n")
	var q string
	if json.Unmarshal([]byte(line), &q) != nil {
		return "", s
	}
	return q, strings.TrimPrefix(after, "\n")
}

func sortStrings(s []string) { slices.Sort(s) }
