package tools

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"unicode"
)

// Params reads tool arguments the way the reference's helpers do
// (docs/spec/reference-behaviour.md §1.2): strings are trimmed and empty means absent, a
// camelCase key falls back to its snake_case form, numbers must be JSON
// numbers (strings are not coerced), and booleans must be JSON booleans.
type Params map[string]any

// ParseParams decodes a JSON object of arguments. Anything that is not an
// object (including null) gives empty params, as the reference treats
// non-object arguments.
func ParseParams(args json.RawMessage) (Params, error) {
	if len(args) == 0 {
		return Params{}, nil
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(string(args)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, &InputError{Msg: "invalid arguments: " + err.Error()}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return Params{}, nil
	}
	return Params(m), nil
}

// Has reports whether key is present (with any value).
func (p Params) Has(key string) bool {
	_, ok := p[key]
	return ok
}

// lookup returns key's value, or its snake_case alias's.
func (p Params) lookup(key string, snake bool) (any, bool) {
	if v, ok := p[key]; ok {
		return v, true
	}
	if snake {
		if s := SnakeCase(key); s != key {
			v, ok := p[s]
			return v, ok
		}
	}
	return nil, false
}

// String returns the trimmed string at key (or its snake_case alias); a
// non-string or blank value is absent ("").
func (p Params) String(key string) string {
	v, _ := p.lookup(key, true)
	s, ok := v.(string)
	if !ok {
		return ""
	}
	return strings.TrimSpace(s)
}

// RawString is String without the snake_case fallback.
func (p Params) RawString(key string) string {
	s, ok := p[key].(string)
	if !ok {
		return ""
	}
	return strings.TrimSpace(s)
}

// RequiredString is String, failing with "<key> required" when absent.
func (p Params) RequiredString(key string) (string, error) {
	s := p.String(key)
	if s == "" {
		return "", errors.New(key + " required")
	}
	return s, nil
}

// Strings reads a string array: non-strings dropped, items trimmed, empties
// dropped; a single string counts as a one-element array. Empty → nil.
func (p Params) Strings(key string) []string {
	v, _ := p.lookup(key, true)
	var out []string
	switch v := v.(type) {
	case string:
		if s := strings.TrimSpace(v); s != "" {
			out = append(out, s)
		}
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok {
				if s = strings.TrimSpace(s); s != "" {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// Number returns the finite JSON number at key (no snake_case fallback,
// no string coercion).
func (p Params) Number(key string) (float64, bool) {
	switch v := p[key].(type) {
	case json.Number:
		f, err := v.Float64()
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return 0, false
		}
		return f, true
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return 0, false
		}
		return v, true
	}
	return 0, false
}

// Int returns floor(Number) clamped to at least min, and whether the key
// held a number.
func (p Params) Int(key string, min int) (int, bool) {
	f, ok := p.Number(key)
	if !ok {
		return 0, false
	}
	f = math.Floor(f)
	if f < float64(min) {
		return min, true
	}
	if f > math.MaxInt32 {
		return math.MaxInt32, true
	}
	return int(f), true
}

// Bool returns the JSON boolean at key (or its snake_case alias).
func (p Params) Bool(key string) (value, ok bool) {
	v, _ := p.lookup(key, true)
	b, ok := v.(bool)
	return b, ok
}

// Truthy reports whether key holds a value JavaScript treats as true.
func (p Params) Truthy(key string) bool {
	v, ok := p.lookup(key, true)
	if !ok {
		return false
	}
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case string:
		return v != ""
	case json.Number:
		f, err := v.Float64()
		return err == nil && f != 0 && !math.IsNaN(f)
	case float64:
		return v != 0 && !math.IsNaN(v)
	}
	return true
}

// SnakeCase converts a camelCase key to snake_case ("sessionKey" →
// "session_key").
func SnakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
