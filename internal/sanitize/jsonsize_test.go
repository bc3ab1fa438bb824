package sanitize

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// Expected sizes are Buffer.byteLength(JSON.stringify(v)) under Node.
func TestJSONSize(t *testing.T) {
	type point struct {
		X int    `json:"x"`
		S string `json:"s"`
	}
	tests := []struct {
		name string
		v    any
		want int
	}{
		{"null", nil, 4},
		{"true", true, 4},
		{"false", false, 5},
		{"empty string", "", 2},
		{"ascii", "abc", 5},
		{"html characters are not escaped", "<a&b>", 7},    // Marshal: 25
		{"line separators are raw", "\u2028\u2029", 8},     // Marshal: 14
		{"short escapes", "\"\\\b\f\n\r\t", 16},            // 2 + 7×2
		{"other controls", "\x00\x1f", 14},                 // 2 + 2×6
		{"DEL is raw", "\x7f", 3},                          //
		{"multi-byte", "é😀", 2 + 2 + 4},                    //
		{"invalid UTF-8 reads as U+FFFD", "a\xffb", 2 + 5}, // Marshal: \ufffd, 6 bytes
		{"zero", 0.0, 1},
		{"negative zero", math.Copysign(0, -1), 1}, // Marshal: "-0"
		{"integer float", 42.0, 2},
		{"fraction", 1.5, 3},
		{"exponent", 1e21, 5},        // 1e+21
		{"small exponent", 1e-7, 4},  // 1e-7
		{"just below", 1e-6, 8},      // 0.000001
		{"big integer", 1e20, 21},    // 100000000000000000000
		{"NaN", math.NaN(), 4},       // null
		{"infinity", math.Inf(1), 4}, // null
		{"int", 123, 3},
		{"int64 beyond 2^53", int64(1<<53 + 1), 16}, // 9007199254740992
		{"json.Number by value", json.Number("1.50"), 3},
		{"json.Number exponent", json.Number("1E3"), 4},
		{"empty object", map[string]any{}, 2},
		{"object", map[string]any{"a": 1.0, "b<": "x"}, len(`{"a":1,"b<":"x"}`)},
		{"nil map", map[string]any(nil), 4},
		{"empty array", []any{}, 2},
		{"nil array", []any(nil), 4},
		{"array", []any{1.0, "a", nil, true}, len(`[1,"a",null,true]`)},
		{"typed arrays", []map[string]any{{"a": "b"}, nil}, len(`[{"a":"b"},null]`)},
		{"strings", []string{"a", "<"}, len(`["a","<"]`)},
		{"struct through Marshal", point{X: 1, S: "<\u2028"}, len(`{"x":1,"s":"<`) + 3 + 2},
		{"raw message", json.RawMessage(`{ "a" : [ 1.0 , 2 ] }`), len(`{"a":[1,2]}`)},
		{"unmarshallable", make(chan int), 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := JSONSize(tt.v); got != tt.want {
				t.Errorf("JSONSize(%#v) = %d, want %d", tt.v, got, tt.want)
			}
		})
	}
}

// jsMeasure is an independent oracle for JSONSize on values Marshal
// accepts: it marshals v with SetEscapeHTML(false) and then counts the
// bytes JSON.stringify would have written instead of Marshal's \u2028,
// \u2029 and \ufffd escapes (3 bytes each) and "-0" (1 byte).
func jsMeasure(t testing.TB, v any) int {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	n := 0
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString && c == '\\':
			if b[i+1] == 'u' {
				switch string(b[i+2 : i+6]) {
				case "2028", "2029", "fffd":
					n += 3
				default:
					n += 6
				}
				i += 5
			} else {
				n += 2
				i++
			}
		case c == '"':
			inString = !inString
			n++
		case !inString && c == '-' && i+1 < len(b) && b[i+1] == '0' && (i+2 == len(b) || !isNumberByte(b[i+2])):
			n++ // -0 is written "0"
			i++
		default:
			n++
		}
	}
	return n
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

func TestJSONSizeMatchesOracle(t *testing.T) {
	values := []any{
		map[string]any{"role": "user", "content": "a < b && c > d \u2028 \x01 \xff é 😀", "n": math.Copysign(0, -1), "f": 1e-9},
		[]any{"x", 1.25, nil, false, map[string]any{"k\u2029": []any{}}},
		[]map[string]any{{"content": []any{map[string]any{"type": "text", "text": "\"quoted\"\n"}}}},
	}
	for i, v := range values {
		if got, want := JSONSize(v), jsMeasure(t, v); got != want {
			t.Errorf("value %d: JSONSize = %d, oracle = %d", i, got, want)
		}
	}
}

func TestAppendJSNumber(t *testing.T) {
	// Number.prototype.toString outputs.
	tests := map[float64]string{
		1:        "1",
		-1.5:     "-1.5",
		0.1:      "0.1",
		1e21:     "1e+21",
		1.5e-7:   "1.5e-7",
		123e-20:  "1.23e-18",
		1e300:    "1e+300",
		5e-324:   "5e-324",
		0.000001: "0.000001",
		2e20:     "200000000000000000000",
	}
	for f, want := range tests {
		if got := string(appendJSNumber(nil, f)); got != want {
			t.Errorf("appendJSNumber(%v) = %q, want %q", f, got, want)
		}
		if got := jsonNumberSize(f); got != len(want) {
			t.Errorf("jsonNumberSize(%v) = %d, want %d", f, got, len(want))
		}
	}
}
