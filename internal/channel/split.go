package channel

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Split breaks text into lines of at most maxBytes bytes for a line-based
// channel: at line breaks first, then at the last space that fits, else at
// a rune boundary. Control characters other than tab (which becomes a
// space) are removed, blank lines are dropped, and invalid UTF-8 becomes
// U+FFFD. maxBytes below 8 is treated as 8.
func Split(text string, maxBytes int) []string {
	maxBytes = max(maxBytes, 8)
	text = strings.ToValidUTF8(text, "\uFFFD")
	var out []string
	for line := range strings.Lines(text) {
		line = strings.TrimRight(clean(line), " ")
		for strings.TrimSpace(line) != "" {
			if len(line) <= maxBytes {
				out = append(out, line)
				break
			}
			cut := strings.LastIndexByte(line[:maxBytes+1], ' ')
			if cut <= 0 {
				cut = maxBytes
				for cut > 0 && !utf8.RuneStart(line[cut]) {
					cut--
				}
			}
			if piece := strings.TrimRight(line[:cut], " "); piece != "" {
				out = append(out, piece)
			}
			line = strings.TrimLeft(line[cut:], " ")
		}
	}
	return out
}

// clean removes control characters (CR, LF, NUL and the rest), turning
// tabs into spaces.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t':
			return ' '
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, s)
}
