package interop

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlclark/regexp2"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// protocol.schema.json (@openclaw/gateway-protocol 2026.9.1, 3.5 MB) looks like this:
//
//	{
//	  "$schema": "http://json-schema.org/draft-07/schema#",
//	  "$id": "https://openclaw.ai/protocol.schema.json",
//	  "oneOf": [{"$ref": "#/definitions/RequestFrame"},
//	            {"$ref": "#/definitions/ResponseFrame"},
//	            {"$ref": "#/definitions/EventFrame"}],
//	  "discriminator": {"propertyName": "type",
//	                    "mapping": {"req": "#/definitions/RequestFrame", "res": …, "event": …}},
//	  "methods": {"sessions.list": {"since": "<=2026.7", "scope": "operator.read"}, …},  // 410 methods
//	  "definitions": {"RequestFrame": {…}, "HelloOk": {…}, "ChatSendParams": {…}, …}    // 877 definitions
//	}
//
// The root is the frame schema. The three frame definitions are closed objects
// (additionalProperties: false) whose params/payload are unconstrained ({}); error
// is an inline ErrorShape. Every definition is self-contained: the three $refs
// above are the only ones in the file.
//
// The methods map gives only the required operator scope and a "since" version per
// method; it does NOT name params or result schemas. Those are found by the naming
// convention of the definitions: method "sessions.list" → "SessionsListParams" /
// "SessionsListResult" (each dot- or dash-separated part capitalised), used only
// when such a definition exists. That covers 282 of 410 methods for params and 167
// for results, plus "connect" → HelloOk, mapped by hand. The methods the session
// tools use have params but no result definition: sessions.list, chat.send,
// agent.wait, and chat.history (only its cursor mode has one,
// ChatHistoryCursorResult, which is left unmapped). Event
// payloads follow the same convention: event "chat" → "ChatEvent", "agent" →
// "AgentEvent", "tick" → "TickEvent".
//
// The patterns are ECMA-262 regular expressions (negative lookahead, \uXXXX), so
// they are compiled with regexp2 in ECMAScript mode, not Go's regexp.

// methodResultOverrides names result definitions that the convention misses.
var methodResultOverrides = map[string]string{
	"connect": "HelloOk",
}

// Method describes one entry of the schema's methods map.
type Method struct {
	Name   string
	Scope  string // operator scope the reference requires, e.g. "operator.read"
	Since  string // reference version that introduced it, e.g. "<=2026.7"
	Params string // definition for req.params, or "" when the schema has none
	Result string // definition for an ok res.payload, or "" when the schema has none
}

// Schema is protocol.schema.json compiled for validation. It is safe for
// concurrent use.
//
// Payload definitions are closed objects, and the reference itself sends more
// than they allow (see [Schema.Lenient]); frames themselves match exactly.
type Schema struct {
	path      string
	url       string            // resource URL: the document's $id
	frameDefs map[string]string // frame "type" → definition name (the discriminator)
	defs      map[string]bool   // definition names
	methods   map[string]Method
	lenient   bool // compiled with every "additionalProperties": false dropped

	relaxed func() (*Schema, error) // Lenient's result, built on first use

	mu       sync.Mutex // guards the fields that follow
	compiler *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema // by definition name; "" is the root
}

// ValidationError reports a value that does not match a schema definition.
type ValidationError struct {
	What       string // e.g. "frame", "chat.send params", "connect result", "chat event payload"
	Definition string // e.g. "RequestFrame", "ChatSendParams"
	Err        error  // *jsonschema.ValidationError, or a JSON syntax error
}

// Error reports what did not match which definition, followed by the
// validator's list of failing locations.
func (e *ValidationError) Error() string {
	var ve *jsonschema.ValidationError
	if !errors.As(e.Err, &ve) {
		return fmt.Sprintf("interop: %s: %v", e.What, e.Err)
	}
	// Drop the library's header line ("jsonschema validation failed with '…'"),
	// keep its indented list of "- at '/json/pointer': reason" lines.
	msg := ve.Error()
	if _, rest, ok := strings.Cut(msg, "\n"); ok {
		msg = rest
	}
	return fmt.Sprintf("interop: %s: does not match %s:\n%s", e.What, e.Definition, indent(msg))
}

// Unwrap returns the underlying validation or JSON syntax error.
func (e *ValidationError) Unwrap() error { return e.Err }

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n")
}

var loaded sync.Map // path → func() (*Schema, error)

// Load returns the schema from the npm cache (see [SchemaPath]), loading and
// caching it on first use.
func Load() (*Schema, error) {
	path, err := SchemaPath()
	if err != nil {
		return nil, fmt.Errorf("interop.Load: %w", err)
	}
	f, _ := loaded.LoadOrStore(path, sync.OnceValues(func() (*Schema, error) { return LoadFile(path) }))
	return f.(func() (*Schema, error))()
}

// RequireSchema returns [Load]'s schema, or ends the test: skipped when the npm
// cache is missing (failed under CI=true), failed on any other error.
func RequireSchema(t testing.TB) *Schema {
	t.Helper()
	s, err := Load()
	if errors.Is(err, errNoCache) {
		skipOrFatal(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// LoadFile reads and compiles a protocol.schema.json.
func LoadFile(path string) (*Schema, error) {
	doc, err := readJSON(path)
	if err != nil {
		return nil, fmt.Errorf("interop.LoadFile: %w", err)
	}
	return newSchema(path, doc, false)
}

func readJSON(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: not a JSON object", path)
	}
	return doc, nil
}

func newSchema(path string, doc map[string]any, lenient bool) (*Schema, error) {
	s := &Schema{
		path:      path,
		url:       "file://" + path,
		frameDefs: map[string]string{},
		defs:      map[string]bool{},
		methods:   map[string]Method{},
		lenient:   lenient,
		compiled:  map[string]*jsonschema.Schema{},
	}
	s.relaxed = sync.OnceValues(func() (*Schema, error) {
		doc, err := readJSON(path)
		if err != nil {
			return nil, fmt.Errorf("interop: lenient schema: %w", err)
		}
		return newSchema(path, doc, true)
	})
	if id, ok := doc["$id"].(string); ok && id != "" {
		s.url = id
	}
	defs, _ := doc["definitions"].(map[string]any)
	if len(defs) == 0 {
		return nil, fmt.Errorf("%s: no definitions", path)
	}
	for name := range defs {
		s.defs[name] = true
	}
	// Frame types, from the discriminator.
	disc, _ := doc["discriminator"].(map[string]any)
	mapping, _ := disc["mapping"].(map[string]any)
	for typ, ref := range mapping {
		name, ok := strings.CutPrefix(fmt.Sprint(ref), "#/definitions/")
		if !ok || !s.defs[name] {
			return nil, fmt.Errorf("%s: discriminator maps %q to %v, not a definition", path, typ, ref)
		}
		s.frameDefs[typ] = name
	}
	if len(s.frameDefs) == 0 {
		return nil, fmt.Errorf("%s: no frame discriminator mapping", path)
	}
	// Methods.
	methods, _ := doc["methods"].(map[string]any)
	if len(methods) == 0 {
		return nil, fmt.Errorf("%s: no methods map", path)
	}
	for name, v := range methods {
		entry, _ := v.(map[string]any)
		m := Method{Name: name}
		m.Scope, _ = entry["scope"].(string)
		m.Since, _ = entry["since"].(string)
		base := definitionBase(name)
		if s.defs[base+"Params"] {
			m.Params = base + "Params"
		}
		if s.defs[base+"Result"] {
			m.Result = base + "Result"
		}
		if r, ok := methodResultOverrides[name]; ok && s.defs[r] {
			m.Result = r
		}
		s.methods[name] = m
	}

	if lenient {
		allowExtraProperties(doc)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	c.UseRegexpEngine(ecmaRegexp)
	if err := c.AddResource(s.url, doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.compiler = c
	// Compile the frame definitions now, so a schema the library cannot handle
	// fails here rather than in the first validation.
	for _, name := range s.frameDefs {
		if _, err := s.definition(name); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// definitionBase turns a method or event name into the prefix of its definitions:
// "sessions.list" → "SessionsList", "last-heartbeat" → "LastHeartbeat".
func definitionBase(name string) string {
	var b strings.Builder
	for part := range strings.FieldsFuncSeq(name, func(r rune) bool { return r == '.' || r == '-' }) {
		b.WriteString(strings.ToUpper(part[:1]))
		b.WriteString(part[1:])
	}
	return b.String()
}

// allowExtraProperties removes every "additionalProperties": false from a schema
// document, in place. Literal values (const, enum, default, examples) are left
// alone; maps from names to schemas (properties, definitions, …) are walked as such.
func allowExtraProperties(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, sub := range v {
			switch k {
			case "additionalProperties":
				if sub == false {
					delete(v, k)
				} else {
					allowExtraProperties(sub)
				}
			case "const", "enum", "default", "examples":
			case "properties", "patternProperties", "definitions", "$defs", "dependencies":
				if named, ok := sub.(map[string]any); ok {
					for _, schema := range named {
						allowExtraProperties(schema)
					}
				}
			default:
				allowExtraProperties(sub)
			}
		}
	case []any:
		for _, sub := range v {
			allowExtraProperties(sub)
		}
	}
}

// ecmaRegexp compiles a schema "pattern" as ECMA-262, as the JSON Schema spec asks.
func ecmaRegexp(expr string) (jsonschema.Regexp, error) {
	re, err := regexp2.Compile(expr, regexp2.ECMAScript)
	if err != nil {
		return nil, err
	}
	re.MatchTimeout = 5 * time.Second
	return (*ecmaRE)(re), nil
}

type ecmaRE regexp2.Regexp

func (re *ecmaRE) MatchString(s string) bool {
	ok, err := (*regexp2.Regexp)(re).MatchString(s)
	return err == nil && ok
}

func (re *ecmaRE) String() string { return (*regexp2.Regexp)(re).String() }

// definition returns the compiled definition name ("" for the root schema).
func (s *Schema) definition(name string) (*jsonschema.Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sch, ok := s.compiled[name]; ok {
		return sch, nil
	}
	loc := s.url
	if name != "" {
		if !s.defs[name] {
			return nil, fmt.Errorf("interop: %s has no definition %q", s.path, name)
		}
		loc += "#/definitions/" + name
	}
	sch, err := s.compiler.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("interop: compile %s: %w", loc, err)
	}
	s.compiled[name] = sch
	return sch, nil
}

// Path returns the file the schema was loaded from.
func (s *Schema) Path() string { return s.path }

// Methods returns the methods map, sorted by name.
func (s *Schema) Methods() []Method {
	ms := make([]Method, 0, len(s.methods))
	for _, m := range s.methods {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b Method) int { return strings.Compare(a.Name, b.Name) })
	return ms
}

// Method returns the methods-map entry for name.
func (s *Schema) Method(name string) (Method, bool) {
	m, ok := s.methods[name]
	return m, ok
}

// HasDefinition reports whether the schema defines name.
func (s *Schema) HasDefinition(name string) bool { return s.defs[name] }

// EventDefinition returns the definition for the payload of event, or "".
func (s *Schema) EventDefinition(event string) string {
	if name := definitionBase(event) + "Event"; s.defs[name] {
		return name
	}
	return ""
}

// Lenient returns a variant of s in which objects accept properties their
// definition does not list (every "additionalProperties": false is dropped);
// everything else (required properties, types, enums, patterns) still applies.
//
// Use it for payloads: the reference gateway sends fields its published schema does
// not declare (frames-sample.jsonl: hello-ok's auth.method and
// controlUiLinkReaders, agent events' sessionKey/agentId/sessionId/lane), and
// clients such as openclaw-node rely on some of them. Frames and params are closed
// on the reference too, so check them with the strict schema.
func (s *Schema) Lenient() (*Schema, error) {
	if s.lenient {
		return s, nil
	}
	return s.relaxed()
}

// ValidateFrame checks one WebSocket text frame against the frame schema: the
// definition its "type" selects (RequestFrame, ResponseFrame, EventFrame). It does
// not look inside params or payload; see ValidateParams, ValidateResult,
// ValidateEvent, or [Checker] for whole conversations.
func (s *Schema) ValidateFrame(frame []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(frame))
	if err != nil {
		return &ValidationError{What: "frame", Err: fmt.Errorf("invalid JSON: %w", err)}
	}
	return s.validateFrameValue(v)
}

func (s *Schema) validateFrameValue(v any) error {
	obj, _ := v.(map[string]any)
	typ, _ := obj["type"].(string)
	name, ok := s.frameDefs[typ]
	if !ok {
		types := make([]string, 0, len(s.frameDefs))
		for t := range s.frameDefs {
			types = append(types, fmt.Sprintf("%q", t))
		}
		slices.Sort(types)
		return &ValidationError{What: "frame", Err: fmt.Errorf("type is %s, want an object whose \"type\" is one of %s",
			describe(obj, v), strings.Join(types, ", "))}
	}
	return s.validate("frame", name, v)
}

func describe(obj map[string]any, v any) string {
	switch {
	case obj == nil:
		return fmt.Sprintf("%T (not an object)", v)
	case obj["type"] == nil:
		return "missing"
	default:
		return fmt.Sprintf("%#v", obj["type"])
	}
}

// ValidateParams checks the params of a request for method. Absent params (nil)
// count as {}. It returns nil when the schema has no params definition for the
// method, and an error when the method is not in the methods map.
func (s *Schema) ValidateParams(method string, params []byte) error {
	m, ok := s.methods[method]
	if !ok {
		return fmt.Errorf("interop: unknown method %q (not in the methods map of %s)", method, s.path)
	}
	if m.Params == "" {
		return nil
	}
	if len(params) == 0 {
		params = []byte("{}")
	}
	return s.validateBytes(method+" params", m.Params, params)
}

// ValidateResult checks the payload of an ok response to method. Absent payload
// (nil) counts as null. It returns nil when the schema has no result definition for
// the method, and an error when the method is not in the methods map.
func (s *Schema) ValidateResult(method string, payload []byte) error {
	m, ok := s.methods[method]
	if !ok {
		return fmt.Errorf("interop: unknown method %q (not in the methods map of %s)", method, s.path)
	}
	if m.Result == "" {
		return nil
	}
	if len(payload) == 0 {
		payload = []byte("null")
	}
	return s.validateBytes(method+" result", m.Result, payload)
}

// ValidateEvent checks the payload of event; nil when the schema has no definition
// for the event.
func (s *Schema) ValidateEvent(event string, payload []byte) error {
	name := s.EventDefinition(event)
	if name == "" {
		return nil
	}
	if len(payload) == 0 {
		payload = []byte("null")
	}
	return s.validateBytes(event+" event payload", name, payload)
}

// ValidateDefinition checks a JSON value against the named definition.
func (s *Schema) ValidateDefinition(name string, value []byte) error {
	return s.validateBytes(name, name, value)
}

func (s *Schema) validateBytes(what, name string, data []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return &ValidationError{What: what, Definition: name, Err: fmt.Errorf("invalid JSON: %w", err)}
	}
	return s.validate(what, name, v)
}

func (s *Schema) validate(what, name string, v any) error {
	sch, err := s.definition(name)
	if err != nil {
		return err
	}
	if err := sch.Validate(v); err != nil {
		return &ValidationError{What: what, Definition: name, Err: err}
	}
	return nil
}
