package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// This file holds the low-level JSON helpers the codecs use: a member
// iterator over already-validated JSON, strict scalar decoders, and
// appenders that write compact JSON without HTML escaping (as the reference,
// a JavaScript program, does).
//
// Every decode helper assumes its input is valid JSON with no surrounding
// space: the entry points (UnmarshalJSON methods, ParseLine, ParseHeader)
// check validity once with json.Valid and everything below relies on it.

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index just past the valid JSON value starting at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default: // number, true, false, null
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// member is one name/value pair of a JSON object. Both slices alias the
// input unless the name needed unescaping.
type member struct {
	name []byte
	val  []byte
}

// appendMembers appends the members of the valid JSON object obj to dst.
func appendMembers(dst []member, obj []byte) []member {
	i := skipSpace(obj, 1) // past '{'
	for i < len(obj) && obj[i] != '}' {
		end := skipString(obj, i)
		name := unquote(obj[i:end])
		i = skipSpace(obj, end)
		i = skipSpace(obj, i+1) // past ':'
		end = skipValue(obj, i)
		dst = append(dst, member{name: name, val: obj[i:end]})
		i = skipSpace(obj, end)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return dst
}

// eachElement calls fn with the index and value of each element of the valid
// JSON array arr.
func eachElement(arr []byte, fn func(i int, val []byte) error) error {
	i := skipSpace(arr, 1) // past '['
	for n := 0; i < len(arr) && arr[i] != ']'; n++ {
		end := skipValue(arr, i)
		if err := fn(n, arr[i:end]); err != nil {
			return err
		}
		i = skipSpace(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i = skipSpace(arr, i+1)
		}
	}
	return nil
}

// unquote returns the contents of the valid JSON string q, unescaped and
// coerced to valid UTF-8 the way encoding/json does. When q needs no
// unescaping the result aliases q.
func unquote(q []byte) []byte {
	s := q[1 : len(q)-1]
	if bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		return s
	}
	var out string
	if err := json.Unmarshal(q, &out); err != nil {
		// Unreachable for valid JSON; keep the bytes rather than panic.
		return s
	}
	return []byte(out)
}

// kindOf names the JSON type of the valid JSON value v for error messages.
func kindOf(v []byte) string {
	switch v[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func isNull(v []byte) bool { return v[0] == 'n' }

func typeError(want string, v []byte) error {
	return fmt.Errorf("want %s, got %s", want, kindOf(v))
}

// decodeString decodes a JSON string or null (as "").
func decodeString(v []byte) (string, error) {
	switch v[0] {
	case '"':
		return string(unquote(v)), nil
	case 'n':
		return "", nil
	}
	return "", typeError("string", v)
}

// decodeInt decodes a JSON number holding an integer, or null (as 0).
// Integral numbers in exponent form (1.7e12) are accepted.
func decodeInt(v []byte) (int64, error) {
	if isNull(v) {
		return 0, nil
	}
	if kindOf(v) != "number" {
		return 0, typeError("integer", v)
	}
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, fmt.Errorf("want integer, got %.32s", v)
	}
	return int64(f), nil
}

// decodeFloat decodes a JSON number, or null (as 0).
func decodeFloat(v []byte) (float64, error) {
	if isNull(v) {
		return 0, nil
	}
	if kindOf(v) != "number" {
		return 0, typeError("number", v)
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return 0, fmt.Errorf("number %.32s out of range", v)
	}
	return f, nil
}

// decodeBool decodes a JSON boolean; null is reported as null=true.
func decodeBool(v []byte) (b, null bool, err error) {
	switch v[0] {
	case 't':
		return true, false, nil
	case 'f':
		return false, false, nil
	case 'n':
		return false, true, nil
	}
	return false, false, typeError("boolean", v)
}

// cloneRaw returns a compact copy of the valid JSON value v.
func cloneRaw(v []byte) json.RawMessage {
	if !bytes.ContainsAny(v, " \t\r\n") {
		return bytes.Clone(v)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil {
		return bytes.Clone(v) // unreachable for valid JSON
	}
	return buf.Bytes()
}

// syntaxError describes why data is not valid JSON.
func syntaxError(data []byte) error {
	var v json.RawMessage
	err := json.Unmarshal(data, &v)
	if err == nil {
		err = errors.New("unexpected end of JSON input")
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

// appendRaw appends the JSON value raw, compacted. It fails if raw is not
// valid JSON, so a hand-built Extra value can never break a JSONL line.
func appendRaw(b []byte, raw []byte) ([]byte, error) {
	if len(raw) == 0 {
		return b, errors.New("empty raw JSON value")
	}
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, raw); err != nil {
		return b, err
	}
	return buf.Bytes(), nil
}

// appendFloat appends f the way encoding/json formats a float64.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, fmt.Errorf("unsupported number %v", f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}
