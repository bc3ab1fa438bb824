package wire

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// This reader stays hand-rolled on purpose: it reproduces the reference
// gateway's validation messages (which property is missing, unexpected or
// of the wrong type, in its words) that clients match on, which a struct
// decoder cannot report.
//
// The validator works on raw JSON values and decodes only what a schema
// looks at: objects into maps of raw members, arrays into raw items,
// strings only when a length or enum is checked. Objects are split by
// one validating pass of our own (scanObject), plain strings read as they
// are; encoding/json's decoder does the rest of the scanning, so large
// values (a long chat message) cost a few fast passes. Member order, which only matters for naming the first unexpected
// property, is recovered with a token scan on that error path alone.

type jsonKind uint8

const (
	kindInvalid jsonKind = iota
	kindNull
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// kindOf returns the kind of a valid JSON value by its first byte.
func kindOf(raw []byte) jsonKind {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return kindInvalid
	}
	switch raw[0] {
	case '{':
		return kindObject
	case '[':
		return kindArray
	case '"':
		return kindString
	case 't', 'f':
		return kindBool
	case 'n':
		return kindNull
	}
	return kindNumber
}

// object decodes a JSON object into its members; a repeated member keeps
// the last value, as JSON.parse does.
func object(raw []byte) (map[string]json.RawMessage, bool) {
	if m, ok, handled := scanObject(raw); handled {
		return m, ok
	}
	var m map[string]json.RawMessage
	if kindOf(raw) != kindObject || json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	return m, true
}

// memberOrder returns the member names of a JSON object in the order they
// first appear.
func memberOrder(raw []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var names []string
	seen := make(map[string]bool)
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return names
		}
		name, _ := t.(string)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return names
		}
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	return names
}

// maxSafeInteger is the largest integer a JavaScript number holds exactly.
const maxSafeInteger = 1<<53 - 1

// integer returns the value of a number that is an integer in the
// JavaScript sense (1, 1.0 and 1e3 are integers), within ±2^53.
func integer(raw []byte) (int64, bool) {
	if kindOf(raw) != kindNumber {
		return 0, false
	}
	s := string(bytes.TrimSpace(raw))
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, i >= -maxSafeInteger && i <= maxSafeInteger
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > maxSafeInteger {
		return 0, false
	}
	return int64(f), true
}

// number returns the value of a number.
func number(raw []byte) float64 {
	f, _ := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
	return f
}

// str decodes a JSON string.
func str(raw []byte) string {
	if s, ok := plainString(raw); ok {
		return s
	}
	var s string
	json.Unmarshal(raw, &s)
	return s
}

// compact returns raw without insignificant whitespace, in a new slice.
func compact(raw []byte) json.RawMessage {
	var buf bytes.Buffer
	buf.Grow(len(raw))
	if err := json.Compact(&buf, raw); err != nil {
		// raw was accepted by the decoder, so it is valid JSON.
		panic("wire: compact of a decoded value failed: " + err.Error())
	}
	return buf.Bytes()
}
