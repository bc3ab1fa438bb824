package wire

import (
	"encoding/json"
	"fmt"
)

// MaxNesting bounds how deeply objects and arrays may nest in a frame.
// Real frames nest a few levels; encoding/json stops at 10000, too late to
// answer the request, so deeper frames are caught first and answered with
// INVALID_REQUEST naming this limit.
const MaxNesting = 256

// nestingExceeds reports whether the JSON text data nests objects and
// arrays more than limit levels deep. It scans bytes only (strings and
// their escapes are skipped), so it costs one pass and no allocation.
func nestingExceeds(data []byte, limit int) bool {
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
			if depth > limit {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}

// topLevelStrings returns the string values of the members type and id of
// the top-level object in data, skipping nested values without parsing
// them, so that a frame too deep to decode can still be answered.
func topLevelStrings(data []byte) (typ, id string) {
	depth := 0
	var key []byte // the last top-level string, a key until ':' says so
	expectValue := false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '"':
			start := i
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
			if depth != 1 || i >= len(data) {
				continue
			}
			tok := data[start : i+1]
			if expectValue {
				var v string
				if json.Unmarshal(tok, &v) == nil {
					var k string
					json.Unmarshal(key, &k)
					switch k {
					case "type":
						typ = v
					case "id":
						id = v
					}
				}
				expectValue = false
				key = nil
				continue
			}
			key = tok
		case ':':
			if depth == 1 && key != nil {
				expectValue = true
			}
		case ',':
			if depth == 1 {
				expectValue, key = false, nil
			}
		case '{', '[':
			depth++
			if depth > 1 {
				expectValue = false
			}
		case '}', ']':
			depth--
		}
	}
	return typ, id
}

func tooDeep(data []byte) *DecodeError {
	typ, id := topLevelStrings(data)
	return &DecodeError{Type: typ, ID: id, Reason: fmt.Sprintf("nested more than %d levels deep", MaxNesting)}
}
