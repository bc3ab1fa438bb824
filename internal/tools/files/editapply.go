package files

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// replacement is one {oldText, newText} pair of an edit call.
type replacement struct {
	OldText string `json:"oldText"`
	NewText string `json:"newText"`
}

// errNoChange marks an edit whose replacements leave the file as it was.
var errNoChange = errors.New("no change")

// mismatchHintLimit caps the file contents appended to a not-found error.
const mismatchHintLimit = 800

// applyReplacements applies reps to content, all matched against the
// original text, and returns the new text. Every oldText must be non-empty
// and occur exactly once, and matches must not overlap. path names the file
// in error messages, which follow the reference's wording (a single
// replacement is "the text", several are "edits[i]"). Line endings: a file
// whose every newline is CRLF is matched with LF-normalised texts and
// written back with CRLF; any other file is matched byte for byte. A
// leading UTF-8 byte-order mark is kept and never matched.
func applyReplacements(content string, reps []replacement, path string) (string, error) {
	bom := ""
	if strings.HasPrefix(content, "\ufeff") {
		bom, content = "\ufeff", content[len("\ufeff"):]
	}
	crlf := strings.Contains(content, "\r\n") && strings.Count(content, "\r\n") == strings.Count(content, "\n")
	text := content
	if crlf {
		text = strings.ReplaceAll(content, "\r\n", "\n")
	}
	type match struct {
		index, start, end int
		newText           string
	}
	n := len(reps)
	matches := make([]match, 0, n)
	for i, r := range reps {
		oldText, newText := r.OldText, r.NewText
		if crlf {
			oldText = strings.ReplaceAll(oldText, "\r\n", "\n")
			newText = strings.ReplaceAll(newText, "\r\n", "\n")
		}
		if oldText == "" {
			if n == 1 {
				return "", fmt.Errorf("oldText must not be empty in %s.", path)
			}
			return "", fmt.Errorf("edits[%d].oldText must not be empty in %s.", i, path)
		}
		switch count := strings.Count(text, oldText); {
		case count == 0:
			what := "Could not find the exact text"
			if n > 1 {
				what = fmt.Sprintf("Could not find edits[%d]", i)
			}
			return "", fmt.Errorf("%s in %s. The old text must match exactly including all whitespace and newlines.\nCurrent file contents:\n%s",
				what, path, hintSnippet(text))
		case count > 1:
			if n == 1 {
				return "", fmt.Errorf("Found %d occurrences of the text in %s. The text must be unique. Please provide more context to make it unique.", count, path)
			}
			return "", fmt.Errorf("Found %d occurrences of edits[%d] in %s. Each oldText must be unique. Please provide more context to make it unique.", count, i, path)
		}
		start := strings.Index(text, oldText)
		matches = append(matches, match{index: i, start: start, end: start + len(oldText), newText: newText})
	}
	sort.Slice(matches, func(a, b int) bool { return matches[a].start < matches[b].start })
	for i := 1; i < len(matches); i++ {
		if prev, cur := matches[i-1], matches[i]; prev.end > cur.start {
			return "", fmt.Errorf("edits[%d] and edits[%d] overlap in %s. Merge them into one edit or target disjoint regions.", prev.index, cur.index, path)
		}
	}
	var b strings.Builder
	last := 0
	for _, m := range matches {
		b.WriteString(text[last:m.start])
		b.WriteString(m.newText)
		last = m.end
	}
	b.WriteString(text[last:])
	out := b.String()
	if out == text {
		return "", errNoChange
	}
	if crlf {
		out = strings.ReplaceAll(out, "\n", "\r\n")
	}
	return bom + out, nil
}

// hintSnippet is the file text shown after a not-found error: all of it up
// to mismatchHintLimit bytes, else a prefix cut at a rune boundary.
func hintSnippet(text string) string {
	if len(text) <= mismatchHintLimit {
		return text
	}
	cut := mismatchHintLimit
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "\n... (truncated)"
}

// firstChangedLine is the 1-based line of after where it first differs
// from before.
func firstChangedLine(before, after string) int {
	i := 0
	for i < len(before) && i < len(after) && before[i] == after[i] {
		i++
	}
	return strings.Count(after[:i], "\n") + 1
}
