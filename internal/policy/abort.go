package policy

import (
	"strings"
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
	s := strings.Join(strings.FieldsFunc(strings.ToLower(text), isJSSpace), " ")
	s = strings.NewReplacer("’", "'", "`", "'").Replace(s)
	for s != "" {
		r, n := utf8.DecodeLastRuneInString(s)
		if !strings.ContainsRune(trailingAbortPunctuation, r) {
			break
		}
		s = s[:len(s)-n]
	}
	return isAbortPhrase(strings.TrimSpace(s))
}

// maxAbortTriggerLen bounds the messages IsAbortTrigger reads: the
// longest phrase is 23 bytes, so this leaves room for any spacing and
// punctuation a person types around one.
const maxAbortTriggerLen = 128

// trailingAbortPunctuation is what IsAbortTrigger drops from the end of a
// message (the reference's TRAILING_ABORT_PUNCTUATION_RE).
const trailingAbortPunctuation = ".!?！？…,，。;；:：'\"’”)]}"

// isAbortPhrase reports whether s (normalised) is an abort trigger. (A
// switch, not a map literal: a package-level map is built at every start.)
func isAbortPhrase(s string) bool {
	switch s {
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
