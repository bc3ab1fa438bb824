package sanitize

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Helpers that give Go strings the semantics of the reference's JavaScript
// strings: UTF-16 lengths, surrogate-safe cuts, String.prototype.trim and
// ASCII-only case folding.

// jsSpaceChars lists the characters of JavaScript's \s (WhiteSpace and
// LineTerminator), in regexp character-class syntax without the brackets.
const jsSpaceChars = `\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}`

// jsSpace is JavaScript's \s as a regexp character class.
const jsSpace = `[` + jsSpaceChars + `]`

// isJSSpace reports whether r is in JavaScript's \s.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// jsTrim is String.prototype.trim.
func jsTrim(s string) string {
	return strings.TrimFunc(s, isJSSpace)
}

// isBlank reports whether s.trim() is empty.
func isBlank(s string) bool {
	return jsTrim(s) == ""
}

// utf16Len is the JavaScript length of s: its UTF-16 code units. An invalid
// byte counts as one unit (U+FFFD).
func utf16Len(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
		i += size
	}
	return n
}

// utf16Prefix returns the longest prefix of s that is at most max UTF-16
// units long without splitting a surrogate pair, as the reference's
// truncateUtf16Safe does (a cut inside a pair keeps max-1 units).
func utf16Prefix(s string, max int) string {
	n := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if n+w > max {
			return s[:i]
		}
		n += w
	}
	return s
}

// utf16Suffix returns the longest suffix of s that is at most max UTF-16
// units long without splitting a surrogate pair.
func utf16Suffix(s string, max int) string {
	n := 0
	i := len(s)
	for i > 0 {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if n+w > max {
			break
		}
		n += w
		i -= size
	}
	return s[i:]
}

// asciiLower lowercases the ASCII letters of s only, like the reference's
// case-insensitive matching of its (ASCII) patterns.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; 'A' <= c && c <= 'Z' {
					b[j] = c + ('a' - 'A')
				}
			}
			return string(b)
		}
	}
	return s
}

// hasPrefixFold reports whether s starts with the lowercase ASCII prefix,
// ignoring the case of ASCII letters only.
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

// ci turns a literal into a regexp that matches it ignoring the case of ASCII
// letters only: ci("Key-") is `[Kk][Ee][Yy]\-`. Go's (?i) would also fold
// U+212A (Kelvin) into k and U+017F (long s) into s, which JavaScript's
// non-Unicode /i does not.
func ci(lit string) string {
	var b strings.Builder
	for _, r := range lit {
		switch {
		case 'a' <= r && r <= 'z':
			b.WriteByte('[')
			b.WriteRune(r)
			b.WriteRune(r - 'a' + 'A')
			b.WriteByte(']')
		case 'A' <= r && r <= 'Z':
			b.WriteByte('[')
			b.WriteRune(r)
			b.WriteRune(r - 'A' + 'a')
			b.WriteByte(']')
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	return b.String()
}

// ciAlt is ci over alternatives: (?:alt1|alt2|...).
func ciAlt(alts ...string) string {
	parts := make([]string, len(alts))
	for i, a := range alts {
		parts[i] = ci(a)
	}
	return `(?:` + strings.Join(parts, `|`) + `)`
}
