package fakellm

import (
	"strconv"
	"unicode/utf8"
)

// The responses are built by appending to byte slices: every chunk has a
// fixed shape, and this keeps the hot path free of reflection.

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
