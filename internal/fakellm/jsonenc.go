package fakellm

import (
	"strconv"
	"unicode/utf8"
)

// The responses are built by appending to byte slices: every chunk has a
// fixed shape, and this keeps the hot path free of reflection.

const hexDigits = "0123456789abcdef"

// appendString appends s to b as a JSON string, byte for byte as
// encoding/json writes it with HTML escaping off: quotes, backslashes,
// control characters, U+2028 and U+2029 are escaped, and each invalid UTF-8
// byte becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendInt appends n in decimal.
func appendInt[T ~int | ~int64](b []byte, n T) []byte {
	return strconv.AppendInt(b, int64(n), 10)
}

// splitArgs splits tool call arguments into two fragments at a rune
// boundary near the middle. When there is no such boundary (one rune or
// less) the second fragment is empty.
func splitArgs(s string) (first, second string) {
	i := len(s) / 2
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	if i == 0 {
		return s, ""
	}
	return s[:i], s[i:]
}
