package config

import (
	"encoding/json"
	"testing"
)

// TestJSONSchema: the schema follows the Config type's JSON names and
// types, closed objects, maps with any keys.
func TestJSONSchema(t *testing.T) {
	s := JSONSchema()
	at := func(path ...string) map[string]any {
		t.Helper()
		cur := s
		for _, p := range path {
			next, ok := cur[p].(map[string]any)
			if !ok {
				t.Fatalf("no %q under %v", p, path)
			}
			cur = next
		}
		return cur
	}
	if s["$schema"] == nil || s["type"] != "object" || s["additionalProperties"] != false {
		t.Errorf("root = %v", s)
	}
	for _, tc := range []struct {
		path []string
		want string
	}{
		{[]string{"properties", "gateway", "properties", "auth", "properties", "token"}, "string"},
		{[]string{"properties", "hooks", "properties", "enabled"}, "boolean"},
		{[]string{"properties", "hooks", "properties", "maxBodyBytes"}, "integer"},
		{[]string{"properties", "hooks", "properties", "mappings"}, "array"},
		{[]string{"properties", "hooks", "properties", "internal", "properties", "entries"}, "object"},
	} {
		if got := at(tc.path...)["type"]; got != tc.want {
			t.Errorf("%v type = %v, want %s", tc.path, got, tc.want)
		}
	}
	if ap := at("properties", "hooks", "properties", "internal", "properties", "entries", "additionalProperties"); ap["type"] != "object" {
		t.Errorf("hooks.internal.entries values = %v", ap)
	}
	if _, err := json.Marshal(s); err != nil {
		t.Fatalf("the schema does not encode: %v", err)
	}
}

// TestLookupSchema: paths into the schema, map keys and array items by
// "*" (or any key, or an index), the root, and paths that are not there.
func TestLookupSchema(t *testing.T) {
	s := JSONSchema()
	for _, tc := range []struct {
		path, norm, typ string
		children        int
		ok              bool
	}{
		{"hooks.internal.entries", "hooks.internal.entries", "object", 1, true},
		{"hooks.internal.entries.audit.events", "hooks.internal.entries.audit.events", "array", 1, true},
		{"hooks.mappings[*].id", "hooks.mappings.*.id", "string", 0, true},
		{"hooks.mappings.0", "hooks.mappings.0", "object", -1, true},
		{".", ".", "object", -1, true},
		{"hooks.nothing", "", "", 0, false},
		{"", "", "", 0, false},
		{"hooks.mappings.first", "", "", 0, false},
	} {
		node, children, norm, ok := LookupSchema(s, tc.path)
		if ok != tc.ok || norm != tc.norm || ok && node["type"] != tc.typ || tc.children >= 0 && ok && len(children) != tc.children {
			t.Errorf("LookupSchema(%q) = %v %d children %q %v", tc.path, node, len(children), norm, ok)
		}
	}
}
