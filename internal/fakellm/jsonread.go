package fakellm

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"
)

// reader decodes a request body in one pass without reflection. Request
// bodies are mostly prompt text (60-160 KB from the reference gateway), and
// encoding/json scans every byte two or three times, which made decoding
// most of the server's cost. The reader accepts exactly the documents
// json.Valid accepts (it fully checks the values it skips), takes null for
// any absent value, and matches object keys exactly.
//
// Errors are sticky: after the first one every method returns zero values,
// loops over containers end, and err holds it.
type reader struct {
	b     []byte
	i     int
	depth int
	err   error
}

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

// container is an object or array being read; see open and more.
type container struct {
	close byte
	n     int
	done  bool
}

// ws skips whitespace and returns the next byte, or 0 at the end.
func (r *reader) ws() byte {
	for r.i < len(r.b) {
		switch c := r.b[r.i]; c {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return c
		}
	}
	return 0
}

// syntax records a syntax error at the current offset.
func (r *reader) syntax() {
	if r.err != nil {
		return
	}
	if r.i >= len(r.b) {
		r.err = errors.New("unexpected end of JSON input")
		return
	}
	r.err = fmt.Errorf("invalid character %q at offset %d", r.b[r.i], r.i)
}

// mismatch records that the value at the current offset is not of the
// kind wanted, or a syntax error if no value starts there.
func (r *reader) mismatch(want string) {
	if r.err != nil {
		return
	}
	var got string
	switch c := r.ws(); {
	case c == '"':
		got = "string"
	case c == '{':
		got = "object"
	case c == '[':
		got = "array"
	case c == 't' || c == 'f':
		got = "boolean"
	case c == 'n':
		got = "null"
	case c == '-' || isDigit(c):
		got = "number"
	default:
		r.syntax()
		return
	}
	r.err = fmt.Errorf("unexpected %s at offset %d, want %s", got, r.i, want)
}

// open starts reading an object ('{') or array ('['). A null gives an
// empty container; any other value is an error.
func (r *reader) open(kind byte) container {
	if r.err != nil {
		return container{done: true}
	}
	switch r.ws() {
	case kind:
		r.i++
		r.depth++
		if r.depth > maxDepth {
			r.err = errors.New("exceeded max depth")
			return container{done: true}
		}
		if kind == '{' {
			return container{close: '}'}
		}
		return container{close: ']'}
	case 'n':
		r.literal("null")
		return container{done: true}
	}
	if kind == '{' {
		r.mismatch("object")
	} else {
		r.mismatch("array")
	}
	return container{done: true}
}

// more reports whether c has another element, consuming the comma before
// it, or the closing bracket after the last one. For an object the caller
// then reads the key, then the value; for an array the value.
func (r *reader) more(c *container) bool {
	if c.done || r.err != nil {
		return false
	}
	ch := r.ws()
	if ch == c.close {
		r.i++
		r.depth--
		c.done = true
		return false
	}
	if c.n > 0 {
		if ch != ',' {
			r.syntax()
			return false
		}
		r.i++
	}
	c.n++
	return true
}

// key reads an object key and its colon. The result may alias the body.
func (r *reader) key() []byte {
	if r.ws() != '"' {
		r.syntax()
		return nil
	}
	raw, simple := r.rawString()
	if r.err != nil {
		return nil
	}
	if r.ws() != ':' {
		r.syntax()
		return nil
	}
	r.i++
	if simple {
		return raw[1 : len(raw)-1]
	}
	s, _ := unquote(raw)
	return []byte(s)
}

// plain marks the bytes that need no attention inside a string.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// rawString reads a string literal, which must start at r.i, and returns
// it with its quotes; simple reports that it has no escapes.
func (r *reader) rawString() (raw []byte, simple bool) {
	start, i, b := r.i, r.i+1, r.b
	simple = true
	for {
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			r.i = i
			r.syntax()
			return nil, false
		}
		switch b[i] {
		case '"':
			r.i = i + 1
			return b[start:r.i], simple
		case '\\':
			simple = false
			if i+1 >= len(b) {
				r.i = i + 1
				r.syntax()
				return nil, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for k := i + 2; k < i+6; k++ {
					if k >= len(b) || !isHex(b[k]) {
						r.i = k
						r.syntax()
						return nil, false
					}
				}
				i += 6
			default:
				r.i = i + 1
				r.syntax()
				return nil, false
			}
		default: // a control character
			r.i = i
			r.syntax()
			return nil, false
		}
	}
}

// str reads a string (null is "").
func (r *reader) str() string {
	switch r.ws() {
	case '"':
		raw, simple := r.rawString()
		if r.err != nil {
			return ""
		}
		if inner := raw[1 : len(raw)-1]; simple && utf8.Valid(inner) {
			return string(inner)
		}
		s, _ := unquote(raw)
		return s
	case 'n':
		r.literal("null")
		return ""
	}
	r.mismatch("string")
	return ""
}

// boolean reads true or false (null is false).
func (r *reader) boolean() bool {
	switch r.ws() {
	case 't':
		r.literal("true")
		return r.err == nil
	case 'f':
		r.literal("false")
		return false
	case 'n':
		r.literal("null")
		return false
	}
	r.mismatch("boolean")
	return false
}

// integer reads an integer that fits an int (null is 0). Like
// encoding/json, it rejects fractions and exponents.
func (r *reader) integer() int {
	switch c := r.ws(); {
	case c == 'n':
		r.literal("null")
		return 0
	case c == '-' || isDigit(c):
		start := r.i
		if !r.number() {
			if r.err == nil {
				r.err = fmt.Errorf("number %s at offset %d is not an integer", r.b[start:r.i], start)
			}
			return 0
		}
		digits, neg := r.b[start:r.i], false
		if digits[0] == '-' {
			digits, neg = digits[1:], true
		}
		const maxInt = int(^uint(0) >> 1)
		n := 0
		for _, d := range digits {
			if n > (maxInt-int(d-'0'))/10 {
				r.err = fmt.Errorf("number %s at offset %d overflows an int", r.b[start:r.i], start)
				return 0
			}
			n = n*10 + int(d-'0')
		}
		if neg {
			return -n
		}
		return n
	}
	r.mismatch("integer")
	return 0
}

// number reads a number, which must start at r.i, and reports whether it
// is an integer (no fraction or exponent).
func (r *reader) number() (integer bool) {
	b, i := r.b, r.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && isDigit(b[i]) && b[i] != '0':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		r.i = i
		r.syntax()
		return false
	}
	integer = true
	if i < len(b) && b[i] == '.' {
		integer = false
		i++
		if i >= len(b) || !isDigit(b[i]) {
			r.i = i
			r.syntax()
			return false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integer = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			r.i = i
			r.syntax()
			return false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	r.i = i
	return integer
}

// literal reads the literal word, which must start at r.i.
func (r *reader) literal(word string) {
	if r.err != nil {
		return
	}
	rest := r.b[r.i:]
	if bytes.HasPrefix(rest, []byte(word)) {
		r.i += len(word)
		return
	}
	// Point at the first byte that differs, or at the end.
	k := 0
	for k < len(rest) && k < len(word) && rest[k] == word[k] {
		k++
	}
	r.i += k
	r.syntax()
}

// skip reads and discards one value of any kind.
func (r *reader) skip() {
	switch c := r.ws(); {
	case c == '"':
		r.rawString()
	case c == '{':
		o := r.open('{')
		for r.more(&o) {
			r.key()
			r.skip()
		}
	case c == '[':
		a := r.open('[')
		for r.more(&a) {
			r.skip()
		}
	case c == 't':
		r.literal("true")
	case c == 'f':
		r.literal("false")
	case c == 'n':
		r.literal("null")
	case c == '-' || isDigit(c):
		r.number()
	default:
		r.syntax()
	}
}

// raw reads one value of any kind and returns its bytes, which alias the
// body.
func (r *reader) raw() []byte {
	r.ws()
	start := r.i
	r.skip()
	if r.err != nil {
		return nil
	}
	return r.b[start:r.i]
}

// end checks that only whitespace is left.
func (r *reader) end() {
	r.ws()
	if r.err == nil && r.i != len(r.b) {
		r.syntax()
	}
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
