package attachments

import (
	"encoding/base64"
	"strings"
	"unicode/utf8"
)

// checkName applies the reference's name rules to a trimmed name: not
// empty; no '/', '\\', NUL or other control character (U+0000–U+001F,
// U+007F); not ".", ".." or the manifest's name. Switchboard also rejects
// names that are not valid UTF-8 (JSON arguments cannot carry them).
func checkName(name string) error {
	if name == "" {
		return failf("attachments_invalid_name (empty)")
	}
	if !utf8.ValidString(name) || strings.ContainsFunc(name, func(r rune) bool {
		return r == '/' || r == '\\' || r < 0x20 || r == 0x7f
	}) {
		return failf("attachments_invalid_name (%s)", name)
	}
	switch name {
	case ".", "..", ManifestName:
		return failf("attachments_invalid_name (%s)", name)
	}
	return nil
}

// decodeStrictBase64 decodes s as the reference's strict base64 with a
// limit of max decoded bytes, reporting false for anything it rejects:
// more than twice the largest allowed encoding before whitespace is
// stripped (measured in UTF-16 code units, as JavaScript does); after
// stripping all whitespace, empty, a length that is not a multiple of 4,
// anything but [A-Za-z0-9+/] followed by at most two '=', an encoding
// longer than ceil(max/3)*4, or more than max decoded bytes. As in the
// reference, non-zero padding bits are ignored.
func decodeStrictBase64(s string, max int) ([]byte, bool) {
	maxEncoded := (max + 2) / 3 * 4
	if utf16Len(s) > 2*maxEncoded {
		return nil, false
	}
	norm := strings.Map(func(r rune) rune {
		if jsSpace(r) {
			return -1
		}
		return r
	}, s)
	if norm == "" || len(norm)%4 != 0 || !base64Shape(norm) || len(norm) > maxEncoded {
		return nil, false
	}
	b, err := base64.StdEncoding.DecodeString(norm)
	if err != nil || len(b) > max {
		return nil, false
	}
	return b, true
}

// base64Shape reports whether s matches ^[A-Za-z0-9+/]+={0,2}$.
func base64Shape(s string) bool {
	body := strings.TrimRight(s, "=")
	if body == "" || len(s)-len(body) > 2 {
		return false
	}
	for _, c := range []byte(body) {
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '+', c == '/':
		default:
			return false
		}
	}
	return true
}

// utf16Len returns the length of s in UTF-16 code units (JavaScript's
// String length); each invalid byte counts as one unit.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// jsSpace reports whether r is whitespace to JavaScript's \s and trim():
// the WhiteSpace and LineTerminator code points of ECMA-262.
func jsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return 0x2000 <= r && r <= 0x200a
}

// jsTrim is JavaScript's String.prototype.trim.
func jsTrim(s string) string { return strings.TrimFunc(s, jsSpace) }
