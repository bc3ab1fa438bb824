package config

import (
	"encoding/json"
	"reflect"
	"strings"
)

// JSONSchema returns the JSON Schema (draft-07) of the config file as
// Switchboard reads it, derived from the Config type: every section and
// key with its JSON type. Maps are objects with any keys; keys Switchboard
// does not know are rejected by the loader, so objects are closed.
func JSONSchema() map[string]any {
	s := typeSchema(reflect.TypeFor[Config](), map[reflect.Type]bool{})
	s["$schema"] = "http://json-schema.org/draft-07/schema#"
	s["title"] = "Switchboard config"
	return s
}

var (
	rawMessage  = reflect.TypeFor[json.RawMessage]()
	unmarshaler = reflect.TypeFor[json.Unmarshaler]()
)

// typeSchema is the schema of t; seen holds the struct types being
// described, so a recursive type becomes an unconstrained value.
func typeSchema(t reflect.Type, seen map[reflect.Type]bool) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	// A type that decodes itself (a rawMessage, a value that may be a
	// string or an object) takes any JSON value.
	if t == rawMessage || reflect.PointerTo(t).Implements(unmarshaler) {
		return map[string]any{}
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": typeSchema(t.Elem(), seen)}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": typeSchema(t.Elem(), seen)}
	case reflect.Struct:
		if seen[t] {
			return map[string]any{}
		}
		seen[t] = true
		defer delete(seen, t)
		props := map[string]any{}
		addFields(t, props, seen)
		return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	}
	return map[string]any{}
}

// addFields adds the JSON-visible fields of struct type t to props,
// flattening embedded structs as encoding/json does.
func addFields(t reflect.Type, props map[string]any, seen map[reflect.Type]bool) {
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addFields(ft, props, seen)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = typeSchema(f.Type, seen)
	}
}
