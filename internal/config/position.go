package config

import (
	"bytes"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The JSON5 decoder gives no positions, so this file re-scans the source
// with a small, forgiving tokenizer and records the line of every object key
// and array element by key path. It never fails: on input it does not
// understand it stops and keeps what it has found so far.

// pathElem is one step of a keyPath: an object key, or an array index when
// index >= 0.
type pathElem struct {
	key   string
	index int
}

// keyPath addresses a value inside the configuration tree. Its String form
// is the dotted path shown to users, such as agents.list[0].id.
type keyPath []pathElem

func (p keyPath) key(k string) keyPath {
	q := make(keyPath, len(p), len(p)+1)
	copy(q, p)
	return append(q, pathElem{key: k, index: -1})
}

func (p keyPath) index(i int) keyPath {
	q := make(keyPath, len(p), len(p)+1)
	copy(q, p)
	return append(q, pathElem{index: i})
}

// String renders p. Keys made of letters, digits, '_', '$' and '-' (not
// starting with a digit or '-') are joined with dots; other keys are quoted
// in brackets, so the rendering is unambiguous.
func (p keyPath) String() string {
	var b strings.Builder
	for i, e := range p {
		switch {
		case e.index >= 0:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(e.index))
			b.WriteByte(']')
		case plainKey(e.key):
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(e.key)
		default:
			b.WriteByte('[')
			b.WriteString(strconv.Quote(e.key))
			b.WriteByte(']')
		}
	}
	return b.String()
}

func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for i, r := range k {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_', r == '$':
		case (r >= '0' && r <= '9') || r == '-':
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// sourceMap is what scanSource learns about a JSON5 text.
type sourceMap struct {
	// lines maps keyPath.String() to the 1-based line of that key (or of
	// the first token of that array element). For a repeated key the last
	// occurrence wins, as it does in the decoder.
	lines map[string]int
	// dups lists keys that appear more than once in the same object, at
	// the line of each repetition.
	dups []located
	// tokens is false when the text holds only whitespace and comments.
	tokens bool
}

type located struct {
	path keyPath
	line int
}

// lineOf returns the line of p, or of its nearest ancestor that has one, or
// 0.
func (m *sourceMap) lineOf(p keyPath) int {
	if m == nil {
		return 0
	}
	for i := len(p); i > 0; i-- {
		if l, ok := m.lines[p[:i].String()]; ok {
			return l
		}
	}
	return m.lines[""]
}

// has reports whether the source has a key or element at exactly p.
func (m *sourceMap) has(p keyPath) bool {
	if m == nil {
		return false
	}
	_, ok := m.lines[p.String()]
	return ok
}

// lineAtOffset returns the 1-based line holding byte offset off of src.
func lineAtOffset(src []byte, off int) int {
	off = min(max(off, 0), len(src))
	line := 1
	for i := 0; i < off; i++ {
		switch src[i] {
		case '\n':
			line++
		case '\r':
			if i+1 >= len(src) || src[i+1] != '\n' {
				line++
			}
		}
	}
	return line
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokPunct
	tokString
	tokWord
	tokBad
)

type token struct {
	kind  tokKind
	punct byte
	text  string // unescaped string body, or the word as written
	line  int
}

type lexer struct {
	src  []byte
	pos  int
	line int
}

func (l *lexer) next() token {
	l.skipSpace()
	if l.pos >= len(l.src) {
		return token{kind: tokEOF, line: l.line}
	}
	c := l.src[l.pos]
	switch c {
	case '{', '}', '[', ']', ':', ',':
		l.pos++
		return token{kind: tokPunct, punct: c, line: l.line}
	case '"', '\'':
		return l.str(c)
	case '/':
		return token{kind: tokBad, line: l.line}
	}
	return l.word()
}

// newline advances over a line terminator at l.pos if there is one.
func (l *lexer) newline() bool {
	switch l.src[l.pos] {
	case '\n':
		l.pos++
	case '\r':
		l.pos++
		if l.pos < len(l.src) && l.src[l.pos] == '\n' {
			l.pos++
		}
	default:
		return false
	}
	l.line++
	return true
}

func (l *lexer) skipSpace() {
	for l.pos < len(l.src) {
		if l.newline() {
			continue
		}
		c := l.src[l.pos]
		if c == '/' && l.pos+1 < len(l.src) {
			switch l.src[l.pos+1] {
			case '/':
				for l.pos < len(l.src) && l.src[l.pos] != '\n' && l.src[l.pos] != '\r' {
					l.pos++
				}
				continue
			case '*':
				l.pos += 2
				for l.pos < len(l.src) {
					if l.src[l.pos] == '*' && l.pos+1 < len(l.src) && l.src[l.pos+1] == '/' {
						l.pos += 2
						break
					}
					if !l.newline() {
						l.pos++
					}
				}
				continue
			}
		}
		r, size := utf8.DecodeRune(l.src[l.pos:])
		if !isSpace(r) || (r == utf8.RuneError && size <= 1) {
			return
		}
		l.pos += size
	}
}

func isSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\v', '\f', 0xA0, 0xFEFF, 0x2028, 0x2029:
		return true
	}
	return unicode.Is(unicode.Zs, r)
}

func (l *lexer) word() token {
	t := token{kind: tokWord, line: l.line}
	start := l.pos
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		if strings.IndexByte("{}[]:,\"'/\n\r", c) >= 0 {
			break
		}
		r, size := utf8.DecodeRune(l.src[l.pos:])
		if isSpace(r) && !(r == utf8.RuneError && size <= 1) {
			break
		}
		l.pos += size
	}
	if l.pos == start { // cannot happen, but never loop without progress
		l.pos++
		return token{kind: tokBad, line: t.line}
	}
	t.text = string(l.src[start:l.pos])
	return t
}

func (l *lexer) str(q byte) token {
	t := token{kind: tokString, line: l.line}
	l.pos++
	start := l.pos
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == q:
			t.text = unescape(l.src[start:l.pos])
			l.pos++
			return t
		case c == '\\':
			l.pos++
			if l.pos < len(l.src) && !l.newline() {
				l.pos++
			}
		case l.newline():
		default:
			l.pos++
		}
	}
	return token{kind: tokBad, line: t.line}
}

// unescape decodes a JSON5 string body the way the decoder does; escapes it
// does not know are kept as the escaped character.
func unescape(s []byte) string {
	if bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		return string(s)
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			r, size := utf8.DecodeRune(s[i:])
			b.WriteRune(r) // invalid bytes become U+FFFD, as in the decoder
			i += size
			continue
		}
		i++
		if i >= len(s) {
			break
		}
		switch s[i] {
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case '\n':
		case '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				i++
			}
		case 'u':
			r, ok := hex4(s[i+1:])
			if !ok {
				b.WriteByte('u')
				break
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					if r2, ok := hex4(s[i+3:]); ok {
						if d := utf16.DecodeRune(r, r2); d != unicode.ReplacementChar {
							b.WriteRune(d)
							i += 6
							break
						}
					}
				}
				r = unicode.ReplacementChar
			}
			b.WriteRune(r)
		default:
			r, size := utf8.DecodeRune(s[i:])
			b.WriteRune(r)
			i += size - 1
		}
		i++
	}
	return b.String()
}

func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// Parser states inside a container frame.
const (
	wantKey   = iota // object: a key or '}'
	wantColon        // object: ':'
	wantValue        // object: a value; array: a value or ']'
	wantComma        // after a value: ',' or the closing bracket
)

type frame struct {
	object bool
	path   keyPath
	state  int
	n      int     // array: elements seen
	key    keyPath // object: path of the current key
	seen   map[string]bool
}

// nesting returns the deepest nesting of objects and arrays in src and the
// line where it occurs. Unlike scanSource it reads to the end whatever the
// grammar, skipping bytes it cannot make sense of, so it never undercounts
// text the decoder accepts.
func nesting(src []byte) (depth, line int) {
	lx := &lexer{src: src, line: 1}
	cur := 0
	for {
		t := lx.next()
		switch {
		case t.kind == tokEOF:
			return depth, line
		case t.kind == tokBad:
			lx.pos++ // a lone '/' or an unterminated string: step over
		case t.kind == tokPunct && (t.punct == '{' || t.punct == '['):
			cur++
			if cur > depth {
				depth, line = cur, t.line
			}
		case t.kind == tokPunct && (t.punct == '}' || t.punct == ']'):
			cur = max(cur-1, 0)
		}
	}
}

// scanSource maps every key path of the JSON5 text src to its line.
func scanSource(src []byte) *sourceMap {
	m := &sourceMap{lines: make(map[string]int)}
	lx := &lexer{src: src, line: 1}
	var stack []*frame
	rootDone := false

	// value handles the first token of a value at path p.
	value := func(t token, p keyPath) bool {
		switch {
		case t.kind == tokPunct && (t.punct == '{' || t.punct == '['):
			f := &frame{object: t.punct == '{', path: p}
			if f.object {
				f.state = wantKey
				f.seen = make(map[string]bool)
			} else {
				f.state = wantValue
			}
			stack = append(stack, f)
			return true
		case t.kind == tokString || t.kind == tokWord:
			return true
		}
		return false
	}

	for {
		t := lx.next()
		if t.kind == tokEOF {
			return m
		}
		m.tokens = true
		if t.kind == tokBad {
			return m
		}
		if len(stack) == 0 {
			if rootDone {
				return m
			}
			rootDone = true
			m.lines[""] = t.line
			if !value(t, nil) {
				return m
			}
			continue
		}
		f := stack[len(stack)-1]
		closing := t.kind == tokPunct && ((f.object && t.punct == '}') || (!f.object && t.punct == ']'))
		switch {
		case closing && (f.state == wantComma || (f.object && f.state == wantKey) || (!f.object && f.state == wantValue)):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				stack[len(stack)-1].state = wantComma
			}
		case t.kind == tokPunct && t.punct == ',' && f.state == wantComma:
			if f.object {
				f.state = wantKey
			} else {
				f.state = wantValue
			}
		case f.object && f.state == wantKey && (t.kind == tokString || t.kind == tokWord):
			f.key = f.path.key(t.text)
			if f.seen[t.text] {
				m.dups = append(m.dups, located{path: f.key, line: t.line})
			}
			f.seen[t.text] = true
			m.lines[f.key.String()] = t.line
			f.state = wantColon
		case f.object && f.state == wantColon && t.kind == tokPunct && t.punct == ':':
			f.state = wantValue
		case f.state == wantValue:
			p := f.key
			if !f.object {
				p = f.path.index(f.n)
				f.n++
				m.lines[p.String()] = t.line
			}
			f.state = wantComma // set before value pushes a child frame
			if !value(t, p) {
				return m
			}
		default:
			return m
		}
	}
}
