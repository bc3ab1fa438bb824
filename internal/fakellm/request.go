package fakellm

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// internalMarker opens the internal-context user message that the
// reference gateway appends after the history on every model call.
const internalMarker = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"

// addUser appends a user message unless it is internal context to leave out.
func addUser(msgs []provider.Message, text string, m meta) []provider.Message {
	if !m.keepInternal && strings.Contains(text, internalMarker) {
		return msgs
	}
	return append(msgs, provider.Message{Role: provider.RoleUser, Text: text})
}

// toolName returns the name of the latest tool call with id in the
// assistant messages of msgs, or "" if there is none.
func toolName(msgs []provider.Message, id string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != provider.RoleAssistant {
			continue
		}
		for _, c := range msgs[i].ToolCalls {
			if c.ID == id {
				return c.Name
			}
		}
	}
	return ""
}

// arguments returns tool call arguments as raw JSON, {} when empty.
func arguments(raw []byte) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(raw)
}

// joinLine appends s to text, separated by a newline when both are set.
func joinLine(text, s string) string {
	if text == "" {
		return s
	}
	if s == "" {
		return text
	}
	return text + "\n" + s
}

// unquote decodes a JSON string literal exactly as encoding/json does
// (invalid UTF-8 and lone surrogates become U+FFFD); ok is false if b is not
// a well-formed literal. Content strings, which hold most of a request's
// bytes, are decoded with it rather than a second json.Unmarshal, which
// would scan them twice more.
func unquote(b []byte) (s string, ok bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	b = b[1 : len(b)-1]
	i := 0
	for i < len(b) {
		c := b[i]
		if c == '\\' || c == '"' || c < ' ' {
			break
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		i += size
	}
	if i == len(b) {
		return string(b), true
	}
	out := make([]byte, i, len(b)+2*utf8.UTFMax)
	copy(out, b[:i])
	for i < len(b) {
		switch c := b[i]; {
		case c == '\\':
			if i+1 == len(b) {
				return "", false
			}
			switch e := b[i+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := hex4(b[i:])
				if r < 0 {
					return "", false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if dec := utf16.DecodeRune(r, hex4(b[i:])); dec != utf8.RuneError {
						out = utf8.AppendRune(out, dec)
						i += 6
						continue
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
				continue
			default:
				return "", false
			}
			i += 2
		case c == '"' || c < ' ':
			return "", false
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				out = append(out, string(utf8.RuneError)...)
			} else {
				out = append(out, b[i:i+size]...)
			}
			i += size
		}
	}
	return string(out), true
}

// hex4 returns the rune of a \uXXXX escape at the start of b, or -1.
func hex4(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}
