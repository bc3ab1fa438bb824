package wire

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Protocol versions and the HTTP header that names the one a request
// speaks. A server that speaks both takes a request without the header as
// 0.3.
const (
	Version10     = "1.0"
	Version03     = "0.3"
	VersionHeader = "A2A-Version"
)

// v03Name is the 0.3 JSON-RPC name of a method a client calls (a switch
// rather than a map, so that the package has no init-time work).
func v03Name(m Method) (string, bool) {
	switch m {
	case MethodSendMessage:
		return "message/send", true
	case MethodSendStreamingMessage:
		return "message/stream", true
	case MethodGetTask:
		return "tasks/get", true
	case MethodCancelTask:
		return "tasks/cancel", true
	case MethodSubscribeToTask:
		return "tasks/resubscribe", true
	}
	return "", false
}

// MethodName is m's JSON-RPC name in protocol version v (Version03 or
// anything else for 1.0).
func MethodName(v string, m Method) string {
	if n, ok := v03Name(m); ok && v == Version03 {
		return n
	}
	return string(m)
}

// IsV03Name reports whether a JSON-RPC method name is a protocol 0.3 name
// ("message/send", "tasks/get", ...): its caller speaks 0.3 and gets 0.3
// shapes back.
func IsV03Name(name string) bool {
	_, ok := ResolveMethod(name)
	return ok && strings.Contains(name, "/")
}

// states maps 1.0 task states to their 0.3 names (a table rather than a
// map, so that the package has no init-time work).
var states = [...]struct{ v10, v03 string }{
	{StateSubmitted, "submitted"},
	{StateWorking, "working"},
	{StateCompleted, "completed"},
	{StateFailed, "failed"},
	{StateCanceled, "canceled"},
	{StateRejected, "rejected"},
	{"TASK_STATE_INPUT_REQUIRED", "input-required"},
	{"TASK_STATE_AUTH_REQUIRED", "auth-required"},
	{"TASK_STATE_UNSPECIFIED", "unknown"},
}

func stateToV03(s string) string {
	for _, st := range states {
		if st.v10 == s {
			return st.v03
		}
	}
	return "unknown"
}

func stateFromV03(s string) string {
	for _, st := range states {
		if st.v03 == s {
			return st.v10
		}
	}
	return "TASK_STATE_UNSPECIFIED"
}

func roleToV03(r string) string {
	if r == RoleAgent {
		return "agent"
	}
	return "user"
}

func roleFromV03(r string) string {
	if r == "agent" {
		return RoleAgent
	}
	return RoleUser
}

// V03Part is a part in protocol 0.3 form: its kind names which field is
// set.
type V03Part struct {
	Kind     string          `json:"kind"`
	Text     *string         `json:"text,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	File     *V03File        `json:"file,omitempty"`
	Metadata map[string]any  `json:"metadata,omitempty"`
}

// V03File is a 0.3 file part's file: by URI or as base64 bytes.
type V03File struct {
	URI      string `json:"uri,omitempty"`
	Bytes    string `json:"bytes,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Name     string `json:"name,omitempty"`
}

// V03Message is a message in protocol 0.3 form.
type V03Message struct {
	Kind      string         `json:"kind"`
	MessageID string         `json:"messageId"`
	ContextID string         `json:"contextId,omitempty"`
	TaskID    string         `json:"taskId,omitempty"`
	Role      string         `json:"role"`
	Parts     []V03Part      `json:"parts"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// V03TaskStatus is a task status in protocol 0.3 form.
type V03TaskStatus struct {
	State     string      `json:"state"`
	Message   *V03Message `json:"message,omitempty"`
	Timestamp string      `json:"timestamp,omitempty"`
}

// V03Artifact is an artifact in protocol 0.3 form.
type V03Artifact struct {
	ArtifactID string         `json:"artifactId"`
	Name       string         `json:"name,omitempty"`
	Parts      []V03Part      `json:"parts"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// V03Task is a task in protocol 0.3 form.
type V03Task struct {
	Kind      string         `json:"kind"`
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    V03TaskStatus  `json:"status"`
	Artifacts []V03Artifact  `json:"artifacts,omitempty"`
	History   []V03Message   `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// V03StatusUpdate is a streamed status change in protocol 0.3 form.
type V03StatusUpdate struct {
	Kind      string         `json:"kind"`
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Status    V03TaskStatus  `json:"status"`
	Final     bool           `json:"final"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// V03ArtifactUpdate is a streamed artifact chunk in protocol 0.3 form.
type V03ArtifactUpdate struct {
	Kind      string      `json:"kind"`
	TaskID    string      `json:"taskId"`
	ContextID string      `json:"contextId"`
	Artifact  V03Artifact `json:"artifact"`
	Append    bool        `json:"append,omitempty"`
	LastChunk bool        `json:"lastChunk,omitempty"`
}

func partsToV03(ps []Part) []V03Part {
	out := make([]V03Part, 0, len(ps))
	for _, p := range ps {
		switch {
		case p.Text != nil:
			out = append(out, V03Part{Kind: "text", Text: p.Text, Metadata: p.Metadata})
		case len(p.Data) > 0:
			out = append(out, V03Part{Kind: "data", Data: p.Data, Metadata: p.Metadata})
		case p.URL != "" || p.Raw != "":
			out = append(out, V03Part{Kind: "file", File: &V03File{URI: p.URL, Bytes: p.Raw, MimeType: p.MediaType, Name: p.Filename}, Metadata: p.Metadata})
		}
	}
	return out
}

func partsFromV03(ps []V03Part) []Part {
	out := make([]Part, 0, len(ps))
	for _, p := range ps {
		q := Part{Text: p.Text, Data: p.Data, Metadata: p.Metadata}
		if p.File != nil {
			q.URL, q.Raw, q.MediaType, q.Filename = p.File.URI, p.File.Bytes, p.File.MimeType, p.File.Name
		}
		out = append(out, q)
	}
	return out
}

// ToV03Message is m in protocol 0.3 form.
func ToV03Message(m *Message) *V03Message {
	if m == nil {
		return nil
	}
	return &V03Message{Kind: "message", MessageID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID,
		Role: roleToV03(m.Role), Parts: partsToV03(m.Parts), Metadata: m.Metadata}
}

func messageFromV03(m *V03Message) *Message {
	if m == nil {
		return nil
	}
	return &Message{MessageID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID,
		Role: roleFromV03(m.Role), Parts: partsFromV03(m.Parts), Metadata: m.Metadata}
}

func statusToV03(s TaskStatus) V03TaskStatus {
	return V03TaskStatus{State: stateToV03(s.State), Message: ToV03Message(s.Message), Timestamp: s.Timestamp}
}

func statusFromV03(s V03TaskStatus) TaskStatus {
	return TaskStatus{State: stateFromV03(s.State), Message: messageFromV03(s.Message), Timestamp: s.Timestamp}
}

func artifactToV03(a Artifact) V03Artifact {
	return V03Artifact{ArtifactID: a.ArtifactID, Name: a.Name, Parts: partsToV03(a.Parts), Metadata: a.Metadata}
}

func artifactFromV03(a V03Artifact) Artifact {
	return Artifact{ArtifactID: a.ArtifactID, Name: a.Name, Parts: partsFromV03(a.Parts), Metadata: a.Metadata}
}

// ToV03Task is t in protocol 0.3 form.
func ToV03Task(t *Task) *V03Task {
	if t == nil {
		return nil
	}
	out := &V03Task{Kind: "task", ID: t.ID, ContextID: t.ContextID, Status: statusToV03(t.Status), Metadata: t.Metadata}
	for _, a := range t.Artifacts {
		out.Artifacts = append(out.Artifacts, artifactToV03(a))
	}
	for i := range t.History {
		out.History = append(out.History, *ToV03Message(&t.History[i]))
	}
	return out
}

func taskFromV03(t *V03Task) *Task {
	out := &Task{ID: t.ID, ContextID: t.ContextID, Status: statusFromV03(t.Status), Metadata: t.Metadata}
	for _, a := range t.Artifacts {
		out.Artifacts = append(out.Artifacts, artifactFromV03(a))
	}
	for i := range t.History {
		out.History = append(out.History, *messageFromV03(&t.History[i]))
	}
	return out
}

// ToV03Result is a method's 1.0 result in protocol 0.3 form: a send result
// becomes its task or message itself, a task gets its kind, and stream
// events become the 0.3 event of their kind. Other values are returned as
// they are.
func ToV03Result(v any) any {
	switch r := v.(type) {
	case *SendResult:
		if r.Task != nil {
			return ToV03Task(r.Task)
		}
		return ToV03Message(r.Message)
	case *Task:
		return ToV03Task(r)
	case Task:
		return ToV03Task(&r)
	case StreamResponse:
		return toV03Event(r)
	}
	return v
}

func toV03Event(ev StreamResponse) any {
	switch {
	case ev.Task != nil:
		return ToV03Task(ev.Task)
	case ev.Message != nil:
		return ToV03Message(ev.Message)
	case ev.StatusUpdate != nil:
		u := ev.StatusUpdate
		return V03StatusUpdate{Kind: "status-update", TaskID: u.TaskID, ContextID: u.ContextID, Status: statusToV03(u.Status),
			Final: Terminal(u.Status.State), Metadata: u.Metadata}
	case ev.ArtifactUpdate != nil:
		u := ev.ArtifactUpdate
		return V03ArtifactUpdate{Kind: "artifact-update", TaskID: u.TaskID, ContextID: u.ContextID, Artifact: artifactToV03(u.Artifact),
			Append: u.Append, LastChunk: u.LastChunk}
	}
	return ev
}

// EncodeSendParams is the params object of a send in protocol version v.
func EncodeSendParams(v string, p SendParams) any {
	if v != Version03 {
		return p
	}
	out := struct {
		Message       *V03Message    `json:"message"`
		Configuration map[string]any `json:"configuration,omitempty"`
		Metadata      map[string]any `json:"metadata,omitempty"`
	}{Message: ToV03Message(&p.Message), Metadata: p.Metadata}
	if p.Configuration != nil {
		out.Configuration = map[string]any{"blocking": !p.Immediate()}
		if len(p.Configuration.AcceptedOutputModes) > 0 {
			out.Configuration["acceptedOutputModes"] = p.Configuration.AcceptedOutputModes
		}
	}
	return out
}

// DecodeStreamEvent decodes one result of a send, a stream event or a task
// read, as peer version v sends it, into its 1.0 stream form (exactly one
// field set). A 1.0 send result ({"task":...} or {"message":...}) decodes
// as well.
func DecodeStreamEvent(v string, raw json.RawMessage) (*StreamResponse, error) {
	if v != Version03 {
		var ev StreamResponse
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, err
		}
		return &ev, nil
	}
	var head struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	switch head.Kind {
	case "task":
		var t V03Task
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, err
		}
		return &StreamResponse{Task: taskFromV03(&t)}, nil
	case "message":
		var m V03Message
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		return &StreamResponse{Message: messageFromV03(&m)}, nil
	case "status-update":
		var u V03StatusUpdate
		if err := json.Unmarshal(raw, &u); err != nil {
			return nil, err
		}
		return &StreamResponse{StatusUpdate: &StatusUpdate{TaskID: u.TaskID, ContextID: u.ContextID, Status: statusFromV03(u.Status), Metadata: u.Metadata}}, nil
	case "artifact-update":
		var u V03ArtifactUpdate
		if err := json.Unmarshal(raw, &u); err != nil {
			return nil, err
		}
		return &StreamResponse{ArtifactUpdate: &ArtifactUpdate{TaskID: u.TaskID, ContextID: u.ContextID, Artifact: artifactFromV03(u.Artifact),
			Append: u.Append, LastChunk: u.LastChunk}}, nil
	}
	return nil, fmt.Errorf("unknown 0.3 result kind %q", head.Kind)
}

// DecodeTaskResult decodes a GetTask or CancelTask result as peer version v
// sends it.
func DecodeTaskResult(v string, raw json.RawMessage) (*Task, error) {
	if v != Version03 {
		var t Task
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, err
		}
		return &t, nil
	}
	ev, err := DecodeStreamEvent(v, raw)
	if err != nil {
		return nil, err
	}
	if ev.Task == nil {
		return nil, fmt.Errorf("0.3 result is not a task")
	}
	return ev.Task, nil
}

// ChooseVersion reads an agent card (1.0 or 0.3 form) and returns the
// protocol version to speak to its JSON-RPC interface: Version10 when the
// card declares a 1.x JSON-RPC interface (so a card listing both is spoken
// to in 1.0), Version03 when it declares only 0.x ones, and ok false when
// it declares no JSON-RPC interface with a version this package speaks.
func ChooseVersion(card []byte) (version string, ok bool) {
	i, ok := ChooseInterface(card)
	return i.Version, ok
}

// Interface is the JSON-RPC interface of a card a client speaks to: its
// protocol version (Version10 or Version03) and the URL the card declares
// for it, as written (possibly relative, possibly empty).
type Interface struct {
	Version string
	URL     string
}

// ChooseInterface reads an agent card (1.0 or 0.3 form) and returns the
// JSON-RPC interface to speak to, chosen as ChooseVersion says (the first
// 1.x one, else the first 0.x one), with its URL.
func ChooseInterface(card []byte) (Interface, bool) {
	var c struct {
		SupportedInterfaces []AgentInterface `json:"supportedInterfaces"`
		// 0.3 form
		URL                  string `json:"url"`
		PreferredTransport   string `json:"preferredTransport"`
		ProtocolVersion      string `json:"protocolVersion"`
		AdditionalInterfaces []struct {
			URL       string `json:"url"`
			Transport string `json:"transport"`
		} `json:"additionalInterfaces"`
	}
	if json.Unmarshal(card, &c) != nil {
		return Interface{}, false
	}
	jsonrpc := func(binding string) bool { return strings.EqualFold(binding, "JSONRPC") }
	var found []Interface
	for _, i := range c.SupportedInterfaces {
		if jsonrpc(i.ProtocolBinding) {
			found = append(found, Interface{Version: i.ProtocolVersion, URL: i.URL})
		}
	}
	if len(c.SupportedInterfaces) == 0 && c.URL != "" {
		// A 0.3 card: the main interface, then the additional ones, all of
		// the card's protocolVersion.
		v := c.ProtocolVersion
		if v == "" {
			v = Version03
		}
		if c.PreferredTransport == "" || jsonrpc(c.PreferredTransport) {
			found = append(found, Interface{Version: v, URL: c.URL})
		}
		for _, a := range c.AdditionalInterfaces {
			if jsonrpc(a.Transport) {
				found = append(found, Interface{Version: v, URL: a.URL})
			}
		}
	}
	var legacy *Interface
	for _, i := range found {
		switch major(i.Version) {
		case 1:
			return Interface{Version: Version10, URL: i.URL}, true
		case 0:
			if legacy == nil {
				legacy = &Interface{Version: Version03, URL: i.URL}
			}
		}
	}
	if legacy != nil {
		return *legacy, true
	}
	return Interface{}, false
}

// major is the major number of a version "M.m" (-1 when unreadable).
func major(v string) int {
	m, _, _ := strings.Cut(strings.TrimSpace(v), ".")
	n, err := strconv.Atoi(m)
	if err != nil {
		return -1
	}
	return n
}
