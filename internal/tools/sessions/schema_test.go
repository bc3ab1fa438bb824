package sessions

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Every tool's schema is a valid JSON schema of an object, without a
// top-level anyOf/oneOf (which some providers reject), and its properties
// have the reference's types (docs/spec/reference-behaviour.md §1.2).
func TestSchemas(t *testing.T) {
	e := newEnv(t, "")
	wantTypes := map[string]map[string]string{
		"sessions_list":    {"kinds": "array", "limit": "number", "activeMinutes": "number", "messageLimit": "number"},
		"sessions_history": {"sessionKey": "string", "limit": "number", "includeTools": "boolean", "query": "string"},
		"sessions_send":    {"sessionKey": "string", "message": "string", "timeoutSeconds": "number"},
		"agents_list":      {},
	}
	wantRequired := map[string][]string{
		"sessions_history": {"sessionKey"},
	}
	seen := map[string]bool{}
	for _, tl := range e.tools.All() {
		name := tl.Name()
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			if tl.Description() == "" {
				t.Error("no description")
			}
			raw := tl.Schema()
			var s struct {
				Type       string                     `json:"type"`
				Properties map[string]json.RawMessage `json:"properties"`
				Required   []string                   `json:"required"`
				AnyOf      any                        `json:"anyOf"`
				OneOf      any                        `json:"oneOf"`
				AllOf      any                        `json:"allOf"`
			}
			if err := json.Unmarshal(raw, &s); err != nil {
				t.Fatalf("schema is not JSON: %v", err)
			}
			if s.Type != "object" || s.Properties == nil {
				t.Errorf("type = %q, properties = %v; want an object schema", s.Type, s.Properties)
			}
			if s.AnyOf != nil || s.OneOf != nil || s.AllOf != nil {
				t.Error("top-level anyOf/oneOf/allOf")
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			c := jsonschema.NewCompiler()
			if err := c.AddResource("schema.json", doc); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Compile("schema.json"); err != nil {
				t.Errorf("invalid JSON schema: %v", err)
			}
			for prop, p := range s.Properties {
				var ps struct {
					Type    string   `json:"type"`
					Minimum *float64 `json:"minimum"`
					Items   *struct {
						Type string `json:"type"`
					} `json:"items"`
				}
				if err := json.Unmarshal(p, &ps); err != nil {
					t.Fatalf("%s: %v", prop, err)
				}
				if ps.Type == "integer" {
					t.Errorf("%s: integer; the reference declares numbers as \"number\"", prop)
				}
				if ps.Minimum != nil && ps.Type != "number" {
					t.Errorf("%s: minimum on type %q", prop, ps.Type)
				}
				if ps.Type == "array" && (ps.Items == nil || ps.Items.Type != "string") {
					t.Errorf("%s: array items must be strings", prop)
				}
			}
			for prop, typ := range wantTypes[name] {
				var ps struct {
					Type string `json:"type"`
				}
				if err := json.Unmarshal(s.Properties[prop], &ps); err != nil || ps.Type != typ {
					t.Errorf("%s.type = %q, want %q", prop, ps.Type, typ)
				}
			}
			if want, ok := wantRequired[name]; ok && !slices.Equal(s.Required, want) {
				t.Errorf("required = %v, want %v", s.Required, want)
			}
		})
	}
	for name := range wantTypes {
		if !seen[name] {
			t.Errorf("All() lacks %s", name)
		}
	}
}

func TestToolLabels(t *testing.T) {
	e := newEnv(t, "")
	want := map[string]struct{ label, desc string }{
		"sessions_list":    {"Sessions", "List sessions with optional filters and last messages."},
		"sessions_history": {"Session History", "Fetch message history for a session."},
		"agents_list":      {"Agents", "List agent ids you can target with sessions_spawn (based on allowlists)."},
	}
	for _, tl := range e.tools.All() {
		w, ok := want[tl.Name()]
		if !ok {
			continue
		}
		l, ok := tl.(interface{ Label() string })
		if !ok || l.Label() != w.label {
			t.Errorf("%s: label mismatch, want %q", tl.Name(), w.label)
		}
		if tl.Description() != w.desc {
			t.Errorf("%s: description = %q, want %q", tl.Name(), tl.Description(), w.desc)
		}
	}
}
