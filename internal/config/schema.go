package config

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strconv"
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

// typeSchema is the schema of t; seen holds the struct types being
// described, so a recursive type becomes an unconstrained value.
func typeSchema(t reflect.Type, seen map[reflect.Type]bool) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	// A type that decodes itself (a rawMessage, a value that may be a
	// string or an object) takes any JSON value.
	if t == reflect.TypeFor[json.RawMessage]() || reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()) {
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

// SchemaChild is one member of a schema node LookupSchema found.
type SchemaChild struct {
	Key         string `json:"key"`
	Path        string `json:"path"`
	Type        string `json:"type,omitempty"`
	Required    bool   `json:"required"`
	HasChildren bool   `json:"hasChildren"`
}

// maxLookupSegments bounds a LookupSchema path (the reference's limit).
const maxLookupSegments = 32

// LookupSchema finds the node of schema (JSONSchema's) at a dotted config
// path ("memory.search"; "*", "[]" or "[*]" stand for any map key or
// array item; "." is the root) and returns it without its members, and
// its members. ok is false when there is no such path.
func LookupSchema(schema map[string]any, path string) (node map[string]any, children []SchemaChild, norm string, ok bool) {
	path = strings.TrimSpace(path)
	cur := schema
	if path != "." {
		path = strings.NewReplacer("[*]", ".*", "[]", ".*").Replace(path)
		parts := strings.FieldsFunc(path, func(r rune) bool { return r == '.' })
		if len(parts) == 0 || len(parts) > maxLookupSegments {
			return nil, nil, "", false
		}
		for _, seg := range parts {
			if cur = schemaChild(cur, seg); cur == nil {
				return nil, nil, "", false
			}
		}
		path = strings.Join(parts, ".")
	}
	node = map[string]any{}
	for k, v := range cur {
		switch k {
		case "properties", "items", "additionalProperties":
		default:
			node[k] = v
		}
	}
	prefix := ""
	if path != "." {
		prefix = path + "."
	}
	add := func(key string, s map[string]any) {
		t, _ := s["type"].(string)
		children = append(children, SchemaChild{Key: key, Path: prefix + key, Type: t, HasChildren: hasMembers(s)})
	}
	if props, ok := cur["properties"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(props)) {
			if s, ok := props[k].(map[string]any); ok {
				add(k, s)
			}
		}
	}
	for _, k := range []string{"additionalProperties", "items"} {
		if s, ok := cur[k].(map[string]any); ok {
			add("*", s)
		}
	}
	if children == nil {
		children = []SchemaChild{}
	}
	return node, children, path, true
}

// schemaChild is the schema of member seg of s, nil when it has none.
func schemaChild(s map[string]any, seg string) map[string]any {
	if props, ok := s["properties"].(map[string]any); ok {
		if c, ok := props[seg].(map[string]any); ok {
			return c
		}
	}
	if c, ok := s["additionalProperties"].(map[string]any); ok {
		return c
	}
	if c, ok := s["items"].(map[string]any); ok {
		if _, err := strconv.Atoi(seg); err == nil || seg == "*" {
			return c
		}
	}
	return nil
}

func hasMembers(s map[string]any) bool {
	if props, ok := s["properties"].(map[string]any); ok && len(props) > 0 {
		return true
	}
	_, ap := s["additionalProperties"].(map[string]any)
	_, items := s["items"].(map[string]any)
	return ap || items
}
