package wire

import (
	"encoding/json"
	"unicode/utf8"
)

// scanObject is object's fast path: one pass over raw that validates it as
// JSON and splits the top-level object into its members, where
// json.Unmarshal into a map of raw messages validates in one pass and
// decodes in a second, through reflection. Each frame and each request's
// params go through object, so this is on every request's path.
//
// ok reports the result as object reports it; handled is false when raw
// holds what the scanner leaves to encoding/json (a member name with an
// escape or a non-ASCII byte, whose decoded text encoding/json defines,
// or nesting deeper than scanMaxDepth), and then the caller falls back.
// The values are copied out of raw, as json.Unmarshal copies them.
func scanObject(raw []byte) (m map[string]json.RawMessage, ok, handled bool) {
	s := scanner{b: raw}
	s.ws()
	if !s.byte('{') {
		return nil, false, true
	}
	type member struct{ name, start, end int }
	var buf [8]member
	members := buf[:0]
	s.ws()
	if !s.byte('}') {
		for {
			s.ws()
			nameStart := s.i
			if !s.str() {
				return nil, false, !s.punt
			}
			if s.escaped || s.nonASCII {
				return nil, false, false
			}
			s.ws()
			if !s.byte(':') {
				return nil, false, true
			}
			s.ws()
			start := s.i
			if !s.value(1) {
				return nil, false, !s.punt
			}
			members = append(members, member{nameStart, start, s.i})
			s.ws()
			if s.byte('}') {
				break
			}
			if !s.byte(',') {
				return nil, false, true
			}
		}
	}
	s.ws()
	if s.i != len(raw) {
		return nil, false, true
	}
	// One copy holds every value; each member's value is a slice of it
	// with its capacity cut, so that an append to one cannot reach the
	// next.
	n := 0
	for _, mb := range members {
		n += mb.end - mb.start
	}
	vals := make([]byte, 0, n)
	m = make(map[string]json.RawMessage, len(members))
	for _, mb := range members {
		at := len(vals)
		vals = append(vals, raw[mb.start:mb.end]...)
		// The name is a plain ASCII string without escapes: its bytes
		// between the quotes are its text.
		end := mb.name + 1
		for raw[end] != '"' {
			end++
		}
		m[memberName(raw[mb.name+1:end])] = json.RawMessage(vals[at:len(vals):len(vals)])
	}
	return m, true, true
}

// memberName is string(name), without its allocation for the member names
// of a frame and of the params of the requests sent most (chat.send).
func memberName(name []byte) string {
	switch string(name) {
	case "type":
		return "type"
	case "id":
		return "id"
	case "method":
		return "method"
	case "params":
		return "params"
	case "ok":
		return "ok"
	case "payload":
		return "payload"
	case "error":
		return "error"
	case "event":
		return "event"
	case "seq":
		return "seq"
	case "sessionKey":
		return "sessionKey"
	case "message":
		return "message"
	case "idempotencyKey":
		return "idempotencyKey"
	case "thinking":
		return "thinking"
	case "deliver":
		return "deliver"
	case "timeoutMs":
		return "timeoutMs"
	case "attachments":
		return "attachments"
	}
	return string(name)
}

// scanMaxDepth is the nesting the scanner follows; deeper values go to
// encoding/json, whose limit and error are then the ones that apply.
const scanMaxDepth = 64

// scanner is a JSON validator over b from i. After str, escaped and
// nonASCII tell what the string held; punt is set when the scanner gives
// up on input that may be valid (too deep).
type scanner struct {
	b                       []byte
	i                       int
	escaped, nonASCII, punt bool
}

// ws skips JSON whitespace.
func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// byte consumes c if it is next.
func (s *scanner) byte(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// value consumes one JSON value at nesting depth d (1 for a member of the
// top-level object).
func (s *scanner) value(d int) bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return s.str()
	case c == '{' || c == '[':
		if d >= scanMaxDepth {
			s.punt = true
			return false
		}
		return s.container(d)
	case c == 't':
		return s.lit("true")
	case c == 'f':
		return s.lit("false")
	case c == 'n':
		return s.lit("null")
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	}
	return false
}

// container consumes an object or an array whose opening byte is next.
func (s *scanner) container(d int) bool {
	isObject := s.b[s.i] == '{'
	closing := byte(']')
	if isObject {
		closing = '}'
	}
	s.i++
	s.ws()
	if s.byte(closing) {
		return true
	}
	for {
		s.ws()
		if isObject {
			if s.i >= len(s.b) || s.b[s.i] != '"' || !s.str() {
				return false
			}
			s.ws()
			if !s.byte(':') {
				return false
			}
			s.ws()
		}
		if !s.value(d + 1) {
			return false
		}
		s.ws()
		if s.byte(closing) {
			return true
		}
		if !s.byte(',') {
			return false
		}
	}
}

// lit consumes the literal w.
func (s *scanner) lit(w string) bool {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		return false
	}
	s.i += len(w)
	return true
}

// str consumes a string whose opening quote is next: no control bytes,
// only JSON's escapes. Any other byte passes, as encoding/json lets
// invalid UTF-8 through.
func (s *scanner) str() bool {
	if !s.byte('"') {
		return false
	}
	s.escaped, s.nonASCII = false, false
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			s.escaped = true
			s.i++
			if s.i >= len(s.b) {
				return false
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if len(s.b)-s.i < 5 {
					return false
				}
				for _, h := range s.b[s.i+1 : s.i+5] {
					if !isHex(h) {
						return false
					}
				}
				s.i += 5
			default:
				return false
			}
		case c >= utf8.RuneSelf:
			s.nonASCII = true
			s.i++
		default:
			s.i++
		}
	}
	return false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number consumes a number in JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	s.byte('-')
	switch {
	case s.byte('0'):
	case s.i < len(s.b) && s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return false
	}
	if s.byte('.') && !s.digits() {
		return false
	}
	if s.byte('e') || s.byte('E') {
		if !s.byte('+') {
			s.byte('-')
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

// digits consumes one or more decimal digits.
func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// plainString returns the text of raw when raw is a JSON string of
// printable ASCII without escapes (an id, a method, a session key): its
// bytes between the quotes are its text. ok is false for anything else.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	in := raw[1 : len(raw)-1]
	for _, c := range in {
		if c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return "", false
		}
	}
	return string(in), true
}
