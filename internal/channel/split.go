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

// Chunk breaks text into messages of at most maxBytes bytes for a channel
// that keeps line breaks inside one message (Telegram): at the last line
// break that fits first, then at the last space, else at a rune boundary.
// CRLF becomes LF, pieces are trimmed of surrounding white space, empty
// pieces are dropped, and invalid UTF-8 becomes U+FFFD. maxBytes below 8
// is treated as 8. A byte limit is also a limit in UTF-16 code units
// (Telegram counts those), as no rune takes more units than bytes.
func Chunk(text string, maxBytes int) []string {
	maxBytes = max(maxBytes, 8)
	text = strings.ToValidUTF8(text, "\uFFFD")
	text = strings.TrimSpace(strings.ReplaceAll(text, "\r\n", "\n"))
	var out []string
	for len(text) > maxBytes {
		cut := strings.LastIndexByte(text[:maxBytes+1], '\n')
		if cut <= 0 {
			cut = strings.LastIndexByte(text[:maxBytes+1], ' ')
		}
		if cut <= 0 {
			cut = maxBytes
			for cut > 0 && !utf8.RuneStart(text[cut]) {
				cut--
			}
		}
		if piece := strings.TrimSpace(text[:cut]); piece != "" {
			out = append(out, piece)
		}
		text = strings.TrimSpace(text[cut:])
	}
	if text != "" {
		out = append(out, text)
	}
	return out
}
