package policy

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// jsTrim removes leading and trailing white space as JavaScript's
// String.prototype.trim does (the reference trims config values and
// parameters with it).
func jsTrim(s string) string { return strings.TrimFunc(s, isJSSpace) }

// isJSSpace reports whether r is JavaScript WhiteSpace or LineTerminator:
// the set String.prototype.trim strips and a regular expression's \s
// matches. It differs from unicode.IsSpace in U+FEFF (included) and U+0085
// (excluded).
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', '\u00a0', '\u1680',
		'\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff':
		return true
	}
	return r >= '\u2000' && r <= '\u200a'
}

// lowerTrim is the reference's value?.trim().toLowerCase().
func lowerTrim(s string) string { return strings.ToLower(jsTrim(s)) }

// foldCanonical maps every rune to one fixed member of its Unicode simple
// case-folding orbit (the smallest), so that two strings are equal under
// case-insensitive matching, as Go's regexp (?i) defines it, exactly when
// their foldCanonical forms are byte-equal. Invalid UTF-8 bytes become
// U+FFFD, as regexp reads them.
func foldCanonical(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteRune(foldMin(r))
	}
	return b.String()
}

// foldMin returns the smallest rune of r's simple case-folding orbit. For
// ASCII that is the upper-case letter ({A, a}, {K, k, U+212A}, {S, s,
// U+017F}) or r itself.
func foldMin(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			return r - ('a' - 'A')
		}
		return r
	}
	best := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		best = min(best, f)
	}
	return best
}

// compareAgentIDs orders normalized agent ids as the reference's
// a.localeCompare(b) does (ICU root collation, as in Node): over the agent-id
// alphabet [a-z0-9_-] every character has its own primary weight, ordered
// '_' < '-' < '0'…'9' < 'a'…'z', and a proper prefix sorts first. This is
// not byte order: "a_b" < "a-b" < "a1" < "ab". Runes outside the alphabet
// (never in a normalized id) sort after it, by code point.
func compareAgentIDs(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if wa, wb := collationWeight(ra), collationWeight(rb); wa != wb {
			if wa < wb {
				return -1
			}
			return 1
		}
		a, b = a[na:], b[nb:]
	}
	switch {
	case a == "" && b == "":
		return 0
	case a == "":
		return -1
	}
	return 1
}

// collationWeight is the primary weight rank of r for compareAgentIDs.
func collationWeight(r rune) int {
	switch {
	case r == '_':
		return 0
	case r == '-':
		return 1
	case '0' <= r && r <= '9':
		return 2 + int(r-'0')
	case 'a' <= r && r <= 'z':
		return 12 + int(r-'a')
	}
	return 38 + int(r)
}
