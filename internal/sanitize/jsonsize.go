package sanitize

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// JSONSize returns the byte length of the reference's measure of v: the
// UTF-8 length of JavaScript's JSON.stringify(v), compact. The reference
// caps sessions_history with it, so the sizes must agree byte for byte.
//
// Go's json.Marshal differs from JSON.stringify in ways that change the
// length, and JSONSize follows JavaScript:
//
//   - Marshal escapes <, > and & as \u003c, \u003e, \u0026 (6 bytes
//     each); JSON.stringify writes them as they are (1 byte). An Encoder
//     with SetEscapeHTML(false) avoids this one.
//   - Marshal escapes U+2028 and U+2029 as \u2028, \u2029 even with
//     SetEscapeHTML(false) (6 bytes); JSON.stringify writes them raw
//     (3 bytes).
//   - Marshal writes each invalid UTF-8 byte as \ufffd (6 bytes); here it
//     counts as the raw U+FFFD a JavaScript peer would have decoded (3).
//   - Numbers: JavaScript has only doubles, so every number is measured as
//     the shortest round-trip form of its float64 value (what Marshal
//     writes for a float64); -0 is "0", NaN and ±Inf are "null", and a
//     json.Number is measured by its value, not its spelling ("1.50" is
//     "1.5").
//
// Both escape \b, \f, \n, \r, \t, " and \ with two bytes and other control
// characters with six. Key order does not matter to the length. A nil map
// or slice is "null", as Marshal writes it. Values of other types are
// measured by what Marshal (with SetEscapeHTML(false)) writes for them,
// decoded again into generic JSON; a value Marshal rejects counts as
// "null".
func JSONSize(v any) int {
	switch v := v.(type) {
	case nil:
		return 4
	case string:
		return jsonStringSize(v)
	case bool:
		if v {
			return 4
		}
		return 5
	case float64:
		return jsonNumberSize(v)
	case float32:
		return jsonNumberSize(float64(v))
	case int:
		return jsonNumberSize(float64(v))
	case int64:
		return jsonNumberSize(float64(v))
	case int32:
		return jsonNumberSize(float64(v))
	case uint64:
		return jsonNumberSize(float64(v))
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return len(v)
		}
		return jsonNumberSize(f)
	case map[string]any:
		if v == nil {
			return 4
		}
		n := 2
		first := true
		for k, e := range v {
			if !first {
				n++
			}
			first = false
			n += jsonStringSize(k) + 1 + JSONSize(e)
		}
		return n
	case []any:
		if v == nil {
			return 4
		}
		n := 2
		for i, e := range v {
			if i > 0 {
				n++
			}
			n += JSONSize(e)
		}
		return n
	case []map[string]any:
		if v == nil {
			return 4
		}
		n := 2
		for i, e := range v {
			if i > 0 {
				n++
			}
			n += JSONSize(e)
		}
		return n
	case []string:
		if v == nil {
			return 4
		}
		n := 2
		for i, e := range v {
			if i > 0 {
				n++
			}
			n += jsonStringSize(e)
		}
		return n
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return 4
	}
	var generic any
	if err := json.Unmarshal(buf.Bytes(), &generic); err != nil {
		return 4
	}
	return JSONSize(generic)
}

// jsonStringSize is the length of s as a JSON string literal written by
// JSON.stringify.
func jsonStringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			case c < 0x20:
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			n += 3 // read as U+FFFD
		} else {
			n += size
		}
		i += size
	}
	return n
}

// jsonNumberSize is the length of String(f) for a JSON number.
func jsonNumberSize(f float64) int {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 4 // null
	}
	if f == 0 {
		return 1 // "0", also for -0
	}
	var buf [32]byte
	return len(appendJSNumber(buf[:0], f))
}

// appendJSNumber appends f as JavaScript's Number.prototype.toString (for
// finite f) writes it; encoding/json uses the same algorithm for float64.
func appendJSNumber(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// strconv writes e-07; JavaScript writes e-7.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
