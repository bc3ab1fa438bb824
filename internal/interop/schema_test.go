package interop

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// sampleFrame is one line of testdata/frames-sample.jsonl: frames captured from the
// reference gateway (openclaw 2026.9.6) on a loopback test setup (a copy of
// /work/shared/spec/frames-sample.jsonl; its token is a throwaway test token).
type sampleFrame struct {
	Line  int
	T     int64           `json:"t"`
	Dir   string          `json:"dir"` // "c->s" or "s->c"
	Frame json.RawMessage `json:"frame"`
}

func readSample(t *testing.T) []sampleFrame {
	t.Helper()
	f, err := os.Open("testdata/frames-sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var frames []sampleFrame
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for n := 1; sc.Scan(); n++ {
		fr := sampleFrame{Line: n}
		if err := json.Unmarshal(sc.Bytes(), &fr); err != nil {
			t.Fatalf("frames-sample.jsonl:%d: %v", n, err)
		}
		frames = append(frames, fr)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(frames) == 0 {
		t.Fatal("frames-sample.jsonl is empty")
	}
	return frames
}

// payloadOf returns the frame's params (req) or payload (res, event).
func payloadOf(t *testing.T, frame json.RawMessage) (typ, name string, payload json.RawMessage) {
	t.Helper()
	var f struct {
		Type, Method, Event string
		Params, Payload     json.RawMessage
	}
	if err := json.Unmarshal(frame, &f); err != nil {
		t.Fatal(err)
	}
	if f.Type == "req" {
		return f.Type, f.Method, f.Params
	}
	return f.Type, f.Event, f.Payload
}

func TestSampleFramesValidate(t *testing.T) {
	s := RequireSchema(t)
	root, err := s.definition("")
	if err != nil {
		t.Fatal(err)
	}
	serverFrames := 0
	for _, fr := range readSample(t) {
		if err := s.ValidateFrame(fr.Frame); err != nil {
			t.Errorf("frames-sample.jsonl:%d (%s): %v", fr.Line, fr.Dir, err)
		}
		// The discriminator dispatch must agree with the root oneOf.
		v, _ := unmarshalInstance(fr.Frame)
		if err := root.Validate(v); err != nil {
			t.Errorf("frames-sample.jsonl:%d: root schema: %v", fr.Line, err)
		}
		if fr.Dir == "s->c" {
			serverFrames++
		}
	}
	if serverFrames < 20 {
		t.Errorf("only %d server frames in the sample", serverFrames)
	}
}

func TestBrokenFramesFail(t *testing.T) {
	s := RequireSchema(t)
	root, err := s.definition("")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		frame string
		want  string // substring of the error
	}{
		{"res without ok", `{"type":"res","id":"1","payload":{}}`, "missing property 'ok'"},
		{"res extra field", `{"type":"res","id":"1","ok":true,"payload":{},"extra":1}`, "'extra' not allowed"},
		{"res ok not bool", `{"type":"res","id":"1","ok":"yes"}`, "/ok"},
		{"res error without message", `{"type":"res","id":"1","ok":false,"error":{"code":"INVALID_REQUEST"}}`, "missing property 'message'"},
		{"res error empty code", `{"type":"res","id":"1","ok":false,"error":{"code":"","message":"m"}}`, "/error/code"},
		{"res empty id", `{"type":"res","id":"","ok":true}`, "/id"},
		{"req empty method", `{"type":"req","id":"1","method":""}`, "/method"},
		{"req without id", `{"type":"req","method":"health"}`, "missing property 'id'"},
		{"req long traceparent", `{"type":"req","id":"1","method":"health","traceparent":"` + strings.Repeat("0", 129) + `"}`, "/traceparent"},
		{"event negative seq", `{"type":"event","event":"tick","payload":{"ts":1},"seq":-1}`, "/seq"},
		{"event fractional seq", `{"type":"event","event":"tick","seq":1.5}`, "/seq"},
		{"event stateVersion partial", `{"type":"event","event":"presence","stateVersion":{"presence":1}}`, "missing property 'health'"},
		{"event without name", `{"type":"event","payload":{}}`, "missing property 'event'"},
		// "cancel" is additive in protocol 4 but not in the published frame schema.
		{"unknown type", `{"type":"cancel","id":"1"}`, `type is "cancel"`},
		{"no type", `{"id":"1"}`, "type is missing"},
		{"not an object", `[1,2]`, "not an object"},
		{"not JSON", `{"type":"event",`, "invalid JSON"},
		{"trailing data", `{"type":"event","event":"tick"} {}`, "invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.ValidateFrame([]byte(tt.frame))
			if err == nil {
				t.Fatalf("ValidateFrame(%s) = nil, want an error", tt.frame)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Errorf("error %T is not a *ValidationError: %v", err, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error does not mention %q:\n%v", tt.want, err)
			}
			if v, err := unmarshalInstance([]byte(tt.frame)); err == nil && root.Validate(v) == nil {
				t.Errorf("root schema accepts %s", tt.frame)
			}
		})
	}
}

// TestSamplePayloads checks params, results and event payloads of the sample. The
// published payload definitions are closed, and the reference sends more than they
// list; the lenient schema accepts exactly that drift and nothing else.
func TestSamplePayloads(t *testing.T) {
	s := RequireSchema(t)
	lenient, err := s.Lenient()
	if err != nil {
		t.Fatal(err)
	}
	// Properties the reference sent beyond the strict definitions, by sample line.
	agentExtra := []string{"agentId", "sessionKey"}
	wantDrift := map[int][]string{
		3:  {"controlUiLinkReaders", "cpuBreakdown", "method"}, // hello-ok: at /, /snapshot/health/eventLoop, /auth
		7:  agentExtra,
		9:  agentExtra,
		10: {"agentId", "sessionId", "sessionKey"},
		12: agentExtra,
		13: {"agentId", "sessionId", "sessionKey"},
		14: agentExtra,
		16: agentExtra,
		17: {"agentId", "sessionId", "sessionKey"},
		18: {"agentId", "lane", "sessionId", "sessionKey"},
		19: {"agentId", "sessionId", "sessionKey"},
		21: agentExtra,
		22: agentExtra,
		// The sessions_list tool result event also carries the session's row,
		// flattened into the payload (66 fields) plus a "session" object.
		23: nil,
		24: agentExtra,
	}
	const rowLine = 23
	rowSubset := []string{"agentId", "model", "session", "sessionId", "sessionKey", "status", "updatedAt"}
	methods := map[string]string{} // request id → method
	gotDrift := map[int][]string{}
	for _, fr := range readSample(t) {
		typ, name, payload := payloadOf(t, fr.Frame)
		var strictErr, lenientErr error
		switch typ {
		case "req":
			var f struct{ ID string }
			json.Unmarshal(fr.Frame, &f)
			methods[f.ID] = name
			strictErr = s.ValidateParams(name, payload)
			lenientErr = nil // params are closed on the reference too: strict only
		case "res":
			var f struct{ ID string }
			json.Unmarshal(fr.Frame, &f)
			strictErr = s.ValidateResult(methods[f.ID], payload)
			lenientErr = lenient.ValidateResult(methods[f.ID], payload)
		case "event":
			if s.EventDefinition(name) == "" && name != "connect.challenge" {
				t.Errorf("line %d: no definition for event %q", fr.Line, name)
			}
			strictErr = s.ValidateEvent(name, payload)
			lenientErr = lenient.ValidateEvent(name, payload)
		}
		if lenientErr != nil {
			t.Errorf("line %d %s %s: lenient: %v", fr.Line, typ, name, lenientErr)
		}
		if strictErr != nil {
			extra, other := extraProperties(strictErr)
			if other {
				t.Errorf("line %d %s %s: strict schema fails for more than extra properties: %v", fr.Line, typ, name, strictErr)
			}
			gotDrift[fr.Line] = extra
			t.Logf("line %d %s %s: %v", fr.Line, typ, name, strictErr)
		}
	}
	for line := range maps.Keys(gotDrift) {
		if line == rowLine {
			for _, name := range rowSubset {
				if !slices.Contains(gotDrift[line], name) {
					t.Errorf("line %d: extra properties %q lack %q", line, gotDrift[line], name)
				}
			}
			continue
		}
		if want := wantDrift[line]; !slices.Equal(gotDrift[line], want) {
			t.Errorf("line %d: extra properties %q, want %q", line, gotDrift[line], want)
		}
	}
	for line := range maps.Keys(wantDrift) {
		if _, ok := gotDrift[line]; !ok {
			t.Errorf("line %d: strict schema passes, expected extra properties %q", line, wantDrift[line])
		}
	}
}

func TestParams(t *testing.T) {
	s := RequireSchema(t)
	tests := []struct {
		method, params string
		want           string // "" for valid, else a substring of the error
	}{
		{"chat.send", `{"sessionKey":"main","message":"hi","idempotencyKey":"k1"}`, ""},
		{"chat.send", `{"sessionKey":"main","message":"hi"}`, "missing property 'idempotencyKey'"},
		{"sessions.patch", `{"key":"main","bogusField":1}`, "'bogusField' not allowed"},
		{"sessions.list", `{"limit":5}`, ""},
		{"sessions.list", ``, ""}, // absent params count as {}
		{"sessions.list", `{"limit":0}`, "/limit"},
		{"agent.wait", `{"runId":"r1","timeoutMs":30000}`, ""},
		{"chat.history", `{"sessionKey":"main","limit":4}`, ""},
		{"connect", `{"minProtocol":4,"maxProtocol":4,"client":{"id":"cli","version":"1","platform":"linux","mode":"cli"}}`, ""},
		{"connect", `{"minProtocol":4,"maxProtocol":4,"client":{"id":"nope","version":"1","platform":"linux","mode":"cli"}}`, "/client/id"},
		{"health", `{"anything":1}`, ""}, // no HealthParams definition
	}
	for _, tt := range tests {
		err := s.ValidateParams(tt.method, []byte(tt.params))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("ValidateParams(%s, %s): %v", tt.method, tt.params, err)
		case tt.want != "" && err == nil:
			t.Errorf("ValidateParams(%s, %s) = nil, want error containing %q", tt.method, tt.params, tt.want)
		case tt.want != "" && !strings.Contains(err.Error(), tt.want):
			t.Errorf("ValidateParams(%s, %s): error does not mention %q:\n%v", tt.method, tt.params, tt.want, err)
		}
	}
	if err := s.ValidateParams("no.such.method", nil); err == nil || isValidation(err) {
		t.Errorf("unknown method: got %v, want a non-validation error", err)
	}
	if err := s.ValidateResult("no.such.method", nil); err == nil || isValidation(err) {
		t.Errorf("unknown method result: got %v, want a non-validation error", err)
	}
}

func TestResultsAndEvents(t *testing.T) {
	s := RequireSchema(t)
	if err := s.ValidateResult("sessions.list", []byte(`"no schema, anything goes"`)); err != nil {
		t.Errorf("sessions.list has no result definition, got %v", err)
	}
	if err := s.ValidateResult("connect", nil); err == nil {
		t.Error("connect with no payload: want an error (HelloOk)")
	}
	if err := s.ValidateResult("sessions.resolve", []byte(`{}`)); err == nil {
		t.Error("sessions.resolve {}: want an error (SessionsResolveResult)")
	}
	if err := s.ValidateEvent("tick", []byte(`{"ts":1795301135563}`)); err != nil {
		t.Errorf("tick: %v", err)
	}
	if err := s.ValidateEvent("tick", []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "TickEvent") {
		t.Errorf("tick {}: got %v, want a TickEvent error", err)
	}
	if err := s.ValidateEvent("shutdown", []byte(`{"reason":"restart","restartExpectedMs":500}`)); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if err := s.ValidateEvent("chat", []byte(`{"runId":"r","sessionKey":"agent:main:main","seq":1,"state":"bogus"}`)); err == nil {
		t.Error("chat event with state bogus: want an error")
	}
	if err := s.ValidateEvent("presence", []byte(`"no schema"`)); err != nil {
		t.Errorf("presence has no definition, got %v", err)
	}
}

// TestECMAPatterns covers patterns Go's regexp cannot compile (which is why
// google/jsonschema-go cannot load this schema).
func TestECMAPatterns(t *testing.T) {
	s := RequireSchema(t)
	tests := []struct {
		def, value string
		ok         bool
	}{
		{"NodeSkillDescriptor", `{"name":"a-b","description":"d","content":"c"}`, true},
		{"NodeSkillDescriptor", `{"name":"a--b","description":"d","content":"c"}`, false}, // (?!.*--)
		{"UpdateRunParams", `{"target":{"kind":"git","upstreamRef":"main","upstreamSha":"0000000000000000000000000000000000000000"}}`, true},
		{"UpdateRunParams", `{"target":{"kind":"git","upstreamRef":"ma\u0001in","upstreamSha":"0000000000000000000000000000000000000000"}}`, false}, // [^\s\u0000-\u001f…]+
	}
	for _, tt := range tests {
		if !s.HasDefinition(tt.def) {
			t.Fatalf("no definition %s", tt.def)
		}
		err := s.ValidateDefinition(tt.def, []byte(tt.value))
		if (err == nil) != tt.ok {
			t.Errorf("%s %s: got %v, want ok=%v", tt.def, tt.value, err, tt.ok)
		}
	}
}

// TestMethodsMap pins the shape documented in schema.go and the entries the
// session tools depend on.
func TestMethodsMap(t *testing.T) {
	s := RequireSchema(t)
	doc, err := readJSON(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range doc["methods"].(map[string]any) {
		if keys := slices.Sorted(maps.Keys(v.(map[string]any))); !slices.Equal(keys, []string{"scope", "since"}) {
			t.Errorf("methods[%q] has keys %q; schema.go assumes only scope and since (do params/result come from the map now?)", name, keys)
		}
	}
	want := []Method{
		{Name: "agent.wait", Scope: "operator.write", Since: "<=2026.7", Params: "AgentWaitParams"},
		{Name: "chat.history", Scope: "operator.read", Since: "<=2026.7", Params: "ChatHistoryParams"},
		{Name: "chat.send", Scope: "operator.write", Since: "<=2026.7", Params: "ChatSendParams"},
		{Name: "connect", Scope: "operator.admin", Since: "<=2026.7", Params: "ConnectParams", Result: "HelloOk"},
		{Name: "sessions.list", Scope: "operator.read", Since: "<=2026.7", Params: "SessionsListParams"},
		{Name: "sessions.resolve", Scope: "operator.read", Since: "<=2026.7", Params: "SessionsResolveParams", Result: "SessionsResolveResult"},
	}
	for _, w := range want {
		got, ok := s.Method(w.Name)
		if !ok || got != w {
			t.Errorf("Method(%q) = %+v, %v; want %+v", w.Name, got, ok, w)
		}
	}
	if n := len(s.Methods()); n < 400 {
		t.Errorf("%d methods, want the 410 of 2026.9.1", n)
	}
}

func TestDefinitionBase(t *testing.T) {
	for in, want := range map[string]string{
		"sessions.list":       "SessionsList",
		"chat.send":           "ChatSend",
		"last-heartbeat":      "LastHeartbeat",
		"exec.approval.get":   "ExecApprovalGet",
		"tools.github.status": "ToolsGithubStatus",
		"connect.challenge":   "ConnectChallenge",
	} {
		if got := definitionBase(in); got != want {
			t.Errorf("definitionBase(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLenientIsSeparate(t *testing.T) {
	s := RequireSchema(t)
	lenient, err := s.Lenient()
	if err != nil {
		t.Fatal(err)
	}
	params := []byte(`{"sessionKey":"main","message":"hi","idempotencyKey":"k","bogus":1}`)
	if err := s.ValidateParams("chat.send", params); err == nil {
		t.Error("strict schema accepts an extra chat.send param")
	}
	if err := lenient.ValidateParams("chat.send", params); err != nil {
		t.Errorf("lenient schema rejects an extra chat.send param: %v", err)
	}
	if err := lenient.ValidateParams("chat.send", []byte(`{"sessionKey":"main","message":"hi"}`)); err == nil {
		t.Error("lenient schema accepts a missing idempotencyKey")
	}
	if again, _ := lenient.Lenient(); again != lenient {
		t.Error("Lenient of a lenient schema is not itself")
	}
}

func TestChecker(t *testing.T) {
	s := RequireSchema(t)
	lenient, err := s.Lenient()
	if err != nil {
		t.Fatal(err)
	}
	check := func(c *Checker) (failed []int) {
		for _, fr := range readSample(t) {
			var err error
			if fr.Dir == "c->s" {
				err = c.Client(fr.Frame)
			} else {
				err = c.Server(fr.Frame)
			}
			if err != nil {
				failed = append(failed, fr.Line)
			}
		}
		if p := c.Pending(); len(p) != 0 {
			t.Errorf("requests without a response: %v", p)
		}
		return failed
	}
	if failed := check(NewChecker(s, lenient)); len(failed) != 0 {
		t.Errorf("lenient payloads: lines %v fail", failed)
	}
	if failed := check(NewChecker(s, s)); len(failed) != 15 {
		t.Errorf("strict payloads: lines %v fail, want the 15 drifting ones (see TestSamplePayloads)", failed)
	}

	c := NewChecker(s, lenient)
	if err := c.Server([]byte(`{"type":"res","id":"nobody","ok":true,"payload":{}}`)); err == nil {
		t.Error("response to an unknown id: want an error")
	}
	if err := c.Client([]byte(`{"type":"req","id":"1","method":"chat.send","params":{"sessionKey":"main"}}`)); err == nil {
		t.Error("chat.send without message and idempotencyKey: want an error")
	}
	if err := c.Server([]byte(`{"type":"res","id":"1","ok":false,"error":{"code":"INVALID_REQUEST","message":"invalid chat.send params"}}`)); err != nil {
		t.Errorf("error response: %v", err)
	}
	if err := c.Client([]byte(`{"type":"req","id":"2","method":"connect","params":{}}`)); err == nil {
		t.Error("connect with {}: want an error")
	}
	if err := c.Server([]byte(`{"type":"res","id":"2","ok":true,"payload":{"type":"hello-ok"}}`)); err == nil {
		t.Error("hello-ok without required fields: want an error")
	}
}

// extraProperties returns the property names of the additionalProperties errors
// in err, sorted, and whether err has any other kind of leaf error.
func extraProperties(err error) (names []string, other bool) {
	var ve *ValidationError
	if !errors.As(err, &ve) {
		return nil, true
	}
	names, other = leafExtraProperties(ve.Err)
	slices.Sort(names)
	return slices.Compact(names), other
}

func isValidation(err error) bool {
	var ve *ValidationError
	return errors.As(err, &ve)
}

func unmarshalInstance(data []byte) (any, error) {
	return jsonschema.UnmarshalJSON(bytes.NewReader(data))
}

func leafExtraProperties(err error) (names []string, other bool) {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, true
	}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		if k, ok := e.ErrorKind.(*kind.AdditionalProperties); ok {
			names = append(names, k.Properties...)
			return
		}
		other = true
	}
	walk(ve)
	return names, other
}

// TestConcurrentUse runs validations (and first compilations of definitions) from
// several goroutines; run with -race.
func TestConcurrentUse(t *testing.T) {
	s := RequireSchema(t)
	lenient, err := s.Lenient()
	if err != nil {
		t.Fatal(err)
	}
	sample := readSample(t)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for _, fr := range sample {
				if err := s.ValidateFrame(fr.Frame); err != nil {
					t.Error(err)
				}
				typ, name, payload := payloadOf(t, fr.Frame)
				if typ == "event" {
					if err := lenient.ValidateEvent(name, payload); err != nil {
						t.Error(err)
					}
				}
			}
			// Definitions nobody compiled yet, a different one per goroutine.
			for _, def := range []string{"SessionsPatchParams", "SessionsDeleteParams", "AgentsListResult", "ChatAbortParams"}[i:] {
				s.ValidateDefinition(def, []byte(`{}`))
			}
		})
	}
	wg.Wait()
}

func TestAllowExtraProperties(t *testing.T) {
	doc := map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"properties": map[string]any{
			// a property named like a keyword is still a schema
			"default": map[string]any{"type": "object", "additionalProperties": false},
			"c":       map[string]any{"const": map[string]any{"additionalProperties": false}},
			"open":    map[string]any{"additionalProperties": map[string]any{"type": "object", "additionalProperties": false}},
		},
	}
	allowExtraProperties(doc)
	got, _ := json.Marshal(doc)
	want := `{"properties":{"c":{"const":{"additionalProperties":false}},"default":{"type":"object"},"open":{"additionalProperties":{"type":"object"}}},"type":"object"}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
