package policy

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"
)

// IsAbortTrigger reports whether a whole message is one of the words or
// phrases that stop a session's run, as the reference's abort triggers:
// "stop", "esc", "abort", "please stop", "стоп", "停止", … — compared
// lowercased, with runs of white space as one space, typographic
// apostrophes as plain ones, and trailing punctuation ("stop!", "stop.")
// dropped. "/stop" itself is a command (compaction.ParseCommand).
func IsAbortTrigger(text string) bool {
	if len(text) > maxAbortTriggerLen {
		return false // every message but the shortest goes this way, unread
	}
	// The normalised text, built in place: it runs for every message
	// that is not a command, so it allocates nothing.
	var buf [2 * maxAbortTriggerLen]byte
	b := buf[:0]
	space := false
	for _, r := range text {
		if isJSSpace(r) {
			space = len(b) > 0
			continue
		}
		if space {
			b, space = append(b, ' '), false
		}
		if r == '’' || r == '`' {
			r = '\''
		}
		b = utf8.AppendRune(b, unicode.ToLower(r))
	}
	for len(b) > 0 {
		r, n := utf8.DecodeLastRune(b)
		if !strings.ContainsRune(trailingAbortPunctuation, r) {
			break
		}
		b = b[:len(b)-n]
	}
	return isAbortPhrase(bytes.TrimSuffix(b, []byte(" ")))
}

// maxAbortTriggerLen bounds the messages IsAbortTrigger reads: the
// longest phrase is 23 bytes, so this leaves room for any spacing and
// punctuation a person types around one.
const maxAbortTriggerLen = 128

// trailingAbortPunctuation is what IsAbortTrigger drops from the end of a
// message (the reference's TRAILING_ABORT_PUNCTUATION_RE).
const trailingAbortPunctuation = ".!?！？…,，。;；:：'\"’”)]}"

// isAbortPhrase reports whether b (normalised) is an abort trigger. (A
// switch, not a map literal: a package-level map is built at every start.)
func isAbortPhrase(b []byte) bool {
	switch string(b) {
	case "stop", "esc", "abort", "exit", "interrupt", "halt", "stopp", "pare",
		"detente", "deten", "detén", "arrete", "arrête", "anhalten", "aufhören", "hoer auf",
		"停止", "停下来", "暂停", "やめて", "止めて", "रुको", "توقف",
		"стоп", "остановись", "останови", "остановить", "прекрати",
		"stop openclaw", "openclaw stop", "stop switchboard", "switchboard stop",
		"stop action", "stop current action", "stop run", "stop current run", "stop agent", "stop the agent",
		"stop don't do anything", "stop dont do anything", "stop do not do anything", "stop doing anything",
		"do not do that", "please stop", "stop please":
		return true
	}
	return false
}
