package wire

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// JSONType is the JSON type a Schema admits.
type JSONType uint8

// The JSON types of a Schema.
const (
	// JSONAny admits every value.
	JSONAny JSONType = iota
	JSONString
	JSONInteger // a number with no fractional part, within ±2^53
	JSONNumber
	JSONBoolean
	JSONObject
	JSONArray
)

// String returns the JSON Schema name of the type.
func (t JSONType) String() string {
	switch t {
	case JSONString:
		return "string"
	case JSONInteger:
		return "integer"
	case JSONNumber:
		return "number"
	case JSONBoolean:
		return "boolean"
	case JSONObject:
		return "object"
	case JSONArray:
		return "array"
	}
	return "any"
}

// Schema is the small subset of JSON Schema the protocol's params need. The
// zero value admits any value. Schemas are immutable once built and safe
// for concurrent use.
type Schema struct {
	Type JSONType
	// Nullable also admits null; it behaves like the reference's
	// Union([T, Null]) (an anyOf), including its error messages.
	Nullable bool

	// Strings. Lengths count code points, as the reference does; zero
	// bounds are not checked.
	MinLength, MaxLength int
	// Enum lists the admitted string values; empty admits any.
	Enum []string

	// Numbers: inclusive bounds when HasMin or HasMax is set.
	HasMin, HasMax bool
	Min, Max       float64

	// Objects: the declared properties in order, the required ones, and
	// whether other properties are admitted (Open). Values, when set, is
	// the schema of the other properties of an Open object.
	Props    []Prop
	Required []string
	Open     bool
	Values   *Schema

	// Items is the schema of an array's items; nil admits any items.
	Items *Schema
}

// Prop is one declared property of an object Schema.
type Prop struct {
	Name   string
	Schema *Schema
}

// Issue is one validation failure, in the terms of the reference's
// validator (AJV).
type Issue struct {
	// Path is the JSON pointer of the failing value, "" for the root.
	Path string
	// Keyword is the failing schema keyword: "type", "required",
	// "additionalProperties", "minLength", "maxLength", "minimum",
	// "maximum", "enum" or "anyOf".
	Keyword string
	// Message is the AJV message, e.g. "must be string".
	Message string
	// Property names the missing or unexpected property of required and
	// additionalProperties issues.
	Property string
}

// ValidationError lists why a value does not match its schema. Like the
// reference's validator it stops at the first failing value, so it
// usually holds one issue (three for a failing nullable value).
type ValidationError struct {
	Issues []Issue
}

// Error formats the issues as the reference's formatValidationErrors does:
// unexpected properties as "at <path|root>: unexpected property '<name>'",
// the others as "[at <path>: ]<message>", duplicates dropped, joined with
// "; ".
func (e *ValidationError) Error() string {
	if len(e.Issues) == 0 {
		return "unknown validation error"
	}
	var parts []string
	for _, is := range e.Issues {
		var s string
		switch {
		case is.Keyword == "additionalProperties" && is.Property != "":
			where := "at root"
			if is.Path != "" {
				where = "at " + is.Path
			}
			s = where + ": unexpected property '" + is.Property + "'"
		case is.Path != "":
			s = "at " + is.Path + ": " + is.Message
		default:
			s = is.Message
		}
		if !slices.Contains(parts, s) {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "; ")
}

// Validate checks the JSON value data against s. It returns a
// *ValidationError when the value does not match, or a syntax error when
// data is not one JSON value.
func (s *Schema) Validate(data []byte) error {
	if !json.Valid(data) {
		var v any
		return json.Unmarshal(data, &v)
	}
	return s.validateRaw(data)
}

// validateRaw validates a value already known to be valid JSON.
func (s *Schema) validateRaw(raw []byte) error {
	var buf [8]string
	if issues := s.check(raw, rootPath(&buf)); len(issues) > 0 {
		return &ValidationError{Issues: issues}
	}
	return nil
}

// path is a JSON pointer's tokens, made into the pointer only when an
// issue needs it. A child's tokens are appended to its parent's, into the
// array the validation started with (rootPath), which the siblings of a
// child reuse: a valid request's validation makes nothing of it (a node
// for each member checked was an allocation).
type path []string

// rootPath is the empty path, with room for a few levels on the stack of
// the caller that declares buf.
func rootPath(buf *[8]string) path { return buf[:0] }

func (p path) child(token string) path { return append(p, token) }

func (p path) String() string {
	var b strings.Builder
	for _, tok := range p {
		b.WriteByte('/')
		b.WriteString(escapePointer(tok))
	}
	return b.String()
}

// check validates raw at p and returns the issues of the first failure.
// The order of checks follows AJV: the type, then for objects required,
// additionalProperties and the properties in schema order, then for other
// types the value keywords.
func (s *Schema) check(raw []byte, p path) []Issue {
	if s.Nullable {
		if kindOf(raw) == kindNull {
			return nil
		}
		issues := s.checkValue(raw, p)
		if len(issues) == 0 {
			return nil
		}
		at := p.String()
		return append(issues,
			Issue{Path: at, Keyword: "type", Message: "must be null"},
			Issue{Path: at, Keyword: "anyOf", Message: "must match a schema in anyOf"})
	}
	return s.checkValue(raw, p)
}

func (s *Schema) checkValue(raw []byte, p path) []Issue {
	if !s.typeOK(raw) {
		return []Issue{{Path: p.String(), Keyword: "type", Message: "must be " + s.Type.String()}}
	}
	switch s.Type {
	case JSONString:
		if s.MinLength == 0 && s.MaxLength == 0 && len(s.Enum) == 0 {
			return nil
		}
		v := str(raw)
		count := utf8.RuneCountInString(v)
		if s.MinLength > 0 && count < s.MinLength {
			return []Issue{{Path: p.String(), Keyword: "minLength", Message: "must NOT have fewer than " + strconv.Itoa(s.MinLength) + " characters"}}
		}
		if s.MaxLength > 0 && count > s.MaxLength {
			return []Issue{{Path: p.String(), Keyword: "maxLength", Message: "must NOT have more than " + strconv.Itoa(s.MaxLength) + " characters"}}
		}
		if len(s.Enum) > 0 && !slices.Contains(s.Enum, v) {
			return []Issue{{Path: p.String(), Keyword: "enum", Message: "must be equal to one of the allowed values"}}
		}
	case JSONInteger, JSONNumber:
		v := number(raw)
		if s.HasMin && v < s.Min {
			return []Issue{{Path: p.String(), Keyword: "minimum", Message: "must be >= " + formatNum(s.Min)}}
		}
		if s.HasMax && v > s.Max {
			return []Issue{{Path: p.String(), Keyword: "maximum", Message: "must be <= " + formatNum(s.Max)}}
		}
	case JSONObject:
		return s.checkObject(raw, p)
	case JSONArray:
		if s.Items != nil {
			var items []json.RawMessage
			json.Unmarshal(raw, &items)
			for i, item := range items {
				if issues := s.Items.check(item, p.child(strconv.Itoa(i))); len(issues) > 0 {
					return issues
				}
			}
		}
	}
	return nil
}

func (s *Schema) checkObject(raw []byte, p path) []Issue {
	if len(s.Required) == 0 && len(s.Props) == 0 && s.Open && s.Values == nil {
		return nil // any object; nothing to look at
	}
	members, _ := object(raw)
	return s.checkMembers(members, raw, p)
}

// checkMembers is checkObject on an object already decoded into members.
func (s *Schema) checkMembers(members map[string]json.RawMessage, raw []byte, p path) []Issue {
	for _, name := range s.Required {
		if _, ok := members[name]; !ok {
			return []Issue{{Path: p.String(), Keyword: "required", Message: "must have required property '" + name + "'", Property: name}}
		}
	}
	if !s.Open {
		var unexpected []string
		for name := range members {
			if s.prop(name) == nil {
				unexpected = append(unexpected, name)
			}
		}
		if len(unexpected) > 1 {
			// Report the first in document order, as the reference does.
			for _, name := range memberOrder(raw) {
				if s.prop(name) == nil {
					unexpected[0] = name
					break
				}
			}
		}
		if len(unexpected) > 0 {
			return []Issue{{Path: p.String(), Keyword: "additionalProperties", Message: "must NOT have additional properties", Property: unexpected[0]}}
		}
	}
	for _, pr := range s.Props {
		if v, ok := members[pr.Name]; ok {
			if issues := pr.Schema.check(v, p.child(pr.Name)); len(issues) > 0 {
				return issues
			}
		}
	}
	if s.Open && s.Values != nil {
		var extra []string
		for name := range members {
			if s.prop(name) == nil {
				extra = append(extra, name)
			}
		}
		if len(extra) > 1 {
			extra = slices.DeleteFunc(memberOrder(raw), func(name string) bool { return s.prop(name) != nil })
		}
		for _, name := range extra {
			if issues := s.Values.check(members[name], p.child(name)); len(issues) > 0 {
				return issues
			}
		}
	}
	return nil
}

func (s *Schema) prop(name string) *Schema {
	for _, p := range s.Props {
		if p.Name == name {
			return p.Schema
		}
	}
	return nil
}

func (s *Schema) typeOK(raw []byte) bool {
	k := kindOf(raw)
	switch s.Type {
	case JSONAny:
		return true
	case JSONString:
		return k == kindString
	case JSONInteger:
		_, ok := integer(raw)
		return ok
	case JSONNumber:
		return k == kindNumber
	case JSONBoolean:
		return k == kindBool
	case JSONObject:
		return k == kindObject
	case JSONArray:
		return k == kindArray
	}
	return false
}

func formatNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// escapePointer escapes a JSON pointer token (RFC 6901).
func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// Schema constructors used by the method tables. They return fresh values.

// Str is a string schema.
func Str() *Schema { return &Schema{Type: JSONString} }

// NonEmptyStr is a string of at least one character.
func NonEmptyStr() *Schema { return &Schema{Type: JSONString, MinLength: 1} }

// Int is an integer schema with an inclusive lower bound.
func Int(min float64) *Schema { return &Schema{Type: JSONInteger, HasMin: true, Min: min} }

// IntRange is an integer schema with inclusive bounds.
func IntRange(min, max float64) *Schema {
	return &Schema{Type: JSONInteger, HasMin: true, Min: min, HasMax: true, Max: max}
}

// Bool is a boolean schema.
func Bool() *Schema { return &Schema{Type: JSONBoolean} }

// Any admits every value.
func Any() *Schema { return &Schema{} }

// Enum is a string schema admitting only values.
func Enum(values ...string) *Schema { return &Schema{Type: JSONString, Enum: values} }

// StrArray is an array of strings.
func StrArray() *Schema { return &Schema{Type: JSONArray, Items: Str()} }

// Array is an array of any items.
func Array() *Schema { return &Schema{Type: JSONArray} }

// OrNull returns a copy of s that also admits null.
func OrNull(s *Schema) *Schema {
	c := *s
	c.Nullable = true
	return &c
}

// Object is a closed object schema with the given properties; required
// names the required ones.
func Object(required []string, props ...Prop) *Schema {
	return &Schema{Type: JSONObject, Props: props, Required: required}
}

// OpenObject is an object schema that admits any property.
func OpenObject() *Schema { return &Schema{Type: JSONObject, Open: true} }

// P declares a property.
func P(name string, s *Schema) Prop { return Prop{Name: name, Schema: s} }

// decodeInto validates data against s and, when it matches, unmarshals it
// into v. An absent value (nil data) is treated as an empty object.
func decodeInto(s *Schema, data []byte, v any) error {
	if len(data) == 0 {
		data = []byte("{}")
	}
	var issues []Issue
	var buf [8]string
	members, ok := object(data)
	if ok && s.Type == JSONObject && !s.Nullable {
		issues = s.checkMembers(members, data, rootPath(&buf)) // one decode validates and splits
	} else if members = nil; !json.Valid(data) {
		return &ValidationError{Issues: []Issue{{Keyword: "type", Message: "must be valid JSON"}}}
	} else {
		issues = s.check(data, rootPath(&buf))
	}
	if len(issues) > 0 {
		return &ValidationError{Issues: issues}
	}
	if v == nil {
		return nil
	}
	if d, ok := v.(membersDecoder); ok && members != nil && d.decodeMembers(members) {
		return nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return &ValidationError{Issues: []Issue{{Keyword: "type", Message: err.Error()}}}
	}
	return nil
}
