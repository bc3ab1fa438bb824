// Package wire is Switchboard's typed form of the A2A 1.0 JSON-RPC binding:
// the request and response envelopes, the messages, tasks and agent card in
// the JSON form of the spec's a2a.proto, the method names of protocol 1.0
// with their 0.3 aliases, and the decoding and limits the reference's A2A
// channel applies to what a peer sends. v03.go converts to and from the
// protocol 0.3 forms (kinds, 0.3 state names) and picks the version to
// speak from a peer's card. It is a leaf: it knows nothing of sessions,
// stores or HTTP servers.
package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits the reference applies to one HTTP exchange and one message.
const (
	// MaxRequestBytes caps a request body.
	MaxRequestBytes = 1 << 20
	// MaxResponseBytes caps a response body.
	MaxResponseBytes = 1 << 20
	// MaxBatch caps the entries of a JSON-RPC batch.
	MaxBatch = 30
	// MaxTextBytes caps the text taken from one inbound message.
	MaxTextBytes = 64 << 10
)

// TruncationMarker ends a message text cut at MaxTextBytes.
const TruncationMarker = "\n[message truncated at 65536 bytes]"

// JSON-RPC and A2A error codes, as the reference uses them.
const (
	CodeParseError      = -32700
	CodeInvalidRequest  = -32600
	CodeMethodNotFound  = -32601
	CodeInvalidParams   = -32602
	CodeServerError     = -32000
	CodeTaskNotFound    = -32001
	CodeTaskNotCancel   = -32002
	CodeUnsupportedOp   = -32004
	CodeContentTypeFail = -32005
)

// Task states in their 1.0 JSON form.
const (
	StateSubmitted = "TASK_STATE_SUBMITTED"
	StateWorking   = "TASK_STATE_WORKING"
	StateCompleted = "TASK_STATE_COMPLETED"
	StateFailed    = "TASK_STATE_FAILED"
	StateCanceled  = "TASK_STATE_CANCELED"
	StateRejected  = "TASK_STATE_REJECTED"
)

// Terminal reports whether a task in state s will not change again.
func Terminal(s string) bool {
	return s != StateSubmitted && s != StateWorking
}

// Roles in their 1.0 JSON form.
const (
	RoleUser  = "ROLE_USER"
	RoleAgent = "ROLE_AGENT"
)

// Method is a protocol 1.0 method name.
type Method string

// The protocol 1.0 methods.
const (
	MethodSendMessage          Method = "SendMessage"
	MethodSendStreamingMessage Method = "SendStreamingMessage"
	MethodGetTask              Method = "GetTask"
	MethodCancelTask           Method = "CancelTask"
	MethodListTasks            Method = "ListTasks"
	MethodSubscribeToTask      Method = "SubscribeToTask"
	MethodGetExtendedAgentCard Method = "GetExtendedAgentCard"
	MethodCreatePushConfig     Method = "CreateTaskPushNotificationConfig"
	MethodGetPushConfig        Method = "GetTaskPushNotificationConfig"
	MethodListPushConfigs      Method = "ListTaskPushNotificationConfigs"
	MethodDeletePushConfig     Method = "DeleteTaskPushNotificationConfig"
)

// methods maps each method name (1.0 and 0.3 aliases) to its 1.0 method. A
// table rather than a map, so that the package has no init-time work.
var methods = [...]struct {
	name   string
	method Method
}{
	{"SendMessage", MethodSendMessage},
	{"SendStreamingMessage", MethodSendStreamingMessage},
	{"GetTask", MethodGetTask},
	{"CancelTask", MethodCancelTask},
	{"ListTasks", MethodListTasks},
	{"SubscribeToTask", MethodSubscribeToTask},
	{"GetExtendedAgentCard", MethodGetExtendedAgentCard},
	{"CreateTaskPushNotificationConfig", MethodCreatePushConfig},
	{"SetTaskPushNotificationConfig", MethodCreatePushConfig},
	{"GetTaskPushNotificationConfig", MethodGetPushConfig},
	{"ListTaskPushNotificationConfig", MethodListPushConfigs},
	{"ListTaskPushNotificationConfigs", MethodListPushConfigs},
	{"DeleteTaskPushNotificationConfig", MethodDeletePushConfig},
	// protocol 0.3 aliases
	{"message/send", MethodSendMessage},
	{"message/stream", MethodSendStreamingMessage},
	{"tasks/get", MethodGetTask},
	{"tasks/cancel", MethodCancelTask},
	{"tasks/list", MethodListTasks},
	{"tasks/resubscribe", MethodSubscribeToTask},
	{"agent/getAuthenticatedExtendedCard", MethodGetExtendedAgentCard},
	{"tasks/pushNotificationConfig/set", MethodCreatePushConfig},
	{"tasks/pushNotificationConfig/get", MethodGetPushConfig},
	{"tasks/pushNotificationConfig/list", MethodListPushConfigs},
	{"tasks/pushNotificationConfig/delete", MethodDeletePushConfig},
}

// ResolveMethod maps a 1.0 name or a 0.3 alias to its 1.0 method.
func ResolveMethod(name string) (Method, bool) {
	for _, m := range methods {
		if m.name == name {
			return m.method, true
		}
	}
	return "", false
}

// Part is one piece of a message or artifact (1.0 JSON form: the kind is
// given by which field is set).
type Part struct {
	Text      *string         `json:"text,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	URL       string          `json:"url,omitempty"`
	Raw       string          `json:"raw,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
}

// TextPart returns a part carrying s.
func TextPart(s string) Part { return Part{Text: &s} }

// Message is one turn from a user or an agent.
type Message struct {
	MessageID string         `json:"messageId"`
	ContextID string         `json:"contextId,omitempty"`
	TaskID    string         `json:"taskId,omitempty"`
	Role      string         `json:"role"`
	Parts     []Part         `json:"parts"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// TaskStatus is a task's state, with the agent's message for it.
type TaskStatus struct {
	State     string   `json:"state"`
	Message   *Message `json:"message,omitempty"`
	Timestamp string   `json:"timestamp,omitempty"`
}

// Artifact is an output of a task.
type Artifact struct {
	ArtifactID string         `json:"artifactId"`
	Name       string         `json:"name,omitempty"`
	Parts      []Part         `json:"parts"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// Task is the unit of work a peer asks for.
type Task struct {
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    TaskStatus     `json:"status"`
	Artifacts []Artifact     `json:"artifacts,omitempty"`
	History   []Message      `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// AgentInterface is one endpoint an agent card advertises.
type AgentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

// Capabilities says which optional parts of the protocol a server speaks.
type Capabilities struct {
	Streaming         bool `json:"streaming"`
	PushNotifications bool `json:"pushNotifications"`
}

// Skill is one exposed agent on the card.
type Skill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
}

// AgentCard is the public description served at /.well-known/agent-card.json.
// URL, PreferredTransport and ProtocolVersion are its protocol 0.3 form, for
// 0.3 clients, which read the main interface from them.
type AgentCard struct {
	Name                string           `json:"name"`
	Description         string           `json:"description"`
	SupportedInterfaces []AgentInterface `json:"supportedInterfaces"`
	URL                 string           `json:"url,omitempty"`
	PreferredTransport  string           `json:"preferredTransport,omitempty"`
	ProtocolVersion     string           `json:"protocolVersion,omitempty"`
	Version             string           `json:"version"`
	Capabilities        Capabilities     `json:"capabilities"`
	DefaultInputModes   []string         `json:"defaultInputModes"`
	DefaultOutputModes  []string         `json:"defaultOutputModes"`
	Skills              []Skill          `json:"skills"`
}

// SendConfiguration is SendMessageRequest.configuration.
type SendConfiguration struct {
	AcceptedOutputModes []string `json:"acceptedOutputModes,omitempty"`
	HistoryLength       *int     `json:"historyLength,omitempty"`
	ReturnImmediately   bool     `json:"returnImmediately,omitempty"`
	// Blocking is the 0.3 spelling: false means return immediately.
	Blocking *bool `json:"blocking,omitempty"`
}

// SendParams is the params object of SendMessage and SendStreamingMessage.
type SendParams struct {
	Message       Message            `json:"message"`
	Configuration *SendConfiguration `json:"configuration,omitempty"`
	Tenant        string             `json:"tenant,omitempty"`
	Metadata      map[string]any     `json:"metadata,omitempty"`
}

// Immediate reports whether the sender asked not to wait for the reply.
func (p SendParams) Immediate() bool {
	c := p.Configuration
	return c != nil && (c.ReturnImmediately || (c.Blocking != nil && !*c.Blocking))
}

// TaskParams is the params object of GetTask, CancelTask and SubscribeToTask.
type TaskParams struct {
	ID            string `json:"id"`
	HistoryLength *int   `json:"historyLength,omitempty"`
	Tenant        string `json:"tenant,omitempty"`
}

// ListParams is the params object of ListTasks.
type ListParams struct {
	ContextID string `json:"contextId,omitempty"`
	Status    string `json:"status,omitempty"`
	PageSize  int    `json:"pageSize,omitempty"`
	PageToken string `json:"pageToken,omitempty"`
}

// ListResult is the result of ListTasks.
type ListResult struct {
	Tasks         []Task `json:"tasks"`
	NextPageToken string `json:"nextPageToken"`
	PageSize      int    `json:"pageSize"`
	TotalSize     int    `json:"totalSize"`
}

// SendResult is the result of SendMessage: exactly one of Task and Message.
type SendResult struct {
	Task    *Task    `json:"task,omitempty"`
	Message *Message `json:"message,omitempty"`
}

// StatusUpdate is a streamed change of a task's status.
type StatusUpdate struct {
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Status    TaskStatus     `json:"status"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// ArtifactUpdate is a streamed chunk of a task's artifact.
type ArtifactUpdate struct {
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Artifact  Artifact `json:"artifact"`
	Append    bool     `json:"append,omitempty"`
	LastChunk bool     `json:"lastChunk,omitempty"`
}

// StreamResponse is one SSE event of SendStreamingMessage or SubscribeToTask:
// exactly one field is set.
type StreamResponse struct {
	Task           *Task           `json:"task,omitempty"`
	Message        *Message        `json:"message,omitempty"`
	StatusUpdate   *StatusUpdate   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *ArtifactUpdate `json:"artifactUpdate,omitempty"`
}

// Error is a JSON-RPC error object; it is also a Go error.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Error formats the code and message.
func (e *Error) Error() string { return fmt.Sprintf("a2a error %d: %s", e.Code, e.Message) }

// Errorf builds an *Error.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Request is one JSON-RPC request as decoded. HasID is false for a
// notification (no "id" member), which gets no response.
type Request struct {
	ID     json.RawMessage
	HasID  bool
	Name   string
	Method Method
	Params json.RawMessage
}

// Response is one JSON-RPC response.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

var nullID = json.RawMessage("null")

// Result builds a success response to id.
func Result(id json.RawMessage, v any) Response {
	return Response{JSONRPC: "2.0", ID: idOrNull(id), Result: v}
}

// Fail builds an error response to id (nil id becomes null).
func Fail(id json.RawMessage, e *Error) Response {
	return Response{JSONRPC: "2.0", ID: idOrNull(id), Error: e}
}

func idOrNull(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return nullID
	}
	return id
}

// ErrEmptyBatch, ErrBatchTooLarge report a batch the server refuses whole.
var (
	ErrEmptyBatch    = errors.New("empty JSON-RPC batch")
	ErrBatchTooLarge = errors.New("A2A batch exceeds the 30 request limit") // MaxBatch; a test checks it

)

// Body is a decoded request body: one entry, or a batch of them. Entries
// are raw so that each can fail on its own.
type Body struct {
	Batch   bool
	Entries []json.RawMessage
}

// DecodeBody splits a request body into its entries. A body that is not
// JSON gives a parse *Error; an empty or oversize batch gives ErrEmptyBatch
// or ErrBatchTooLarge.
func DecodeBody(body []byte) (Body, error) {
	trimmed := strings.TrimLeft(string(body), " \t\r\n")
	if !json.Valid(body) {
		return Body{}, &Error{Code: CodeParseError, Message: "Parse error"}
	}
	if strings.HasPrefix(trimmed, "[") {
		var entries []json.RawMessage
		if err := json.Unmarshal(body, &entries); err != nil {
			return Body{}, &Error{Code: CodeParseError, Message: "Parse error"}
		}
		if len(entries) == 0 {
			return Body{}, ErrEmptyBatch
		}
		if len(entries) > MaxBatch {
			return Body{}, ErrBatchTooLarge
		}
		return Body{Batch: true, Entries: entries}, nil
	}
	return Body{Entries: []json.RawMessage{json.RawMessage(body)}}, nil
}

// DecodeRequest validates one JSON-RPC entry. On error the returned Request
// still carries the id when one could be read, so the error can answer it.
func DecodeRequest(raw json.RawMessage) (Request, *Error) {
	invalid := &Error{Code: CodeInvalidRequest, Message: "Invalid JSON-RPC request"}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return Request{}, invalid
	}
	var req Request
	if id, ok := obj["id"]; ok {
		req.HasID = true
		if validID(id) {
			req.ID = id
		} else {
			return req, invalid
		}
	}
	var version string
	if err := json.Unmarshal(obj["jsonrpc"], &version); err != nil || version != "2.0" {
		return req, invalid
	}
	if err := json.Unmarshal(obj["method"], &req.Name); err != nil || req.Name == "" {
		return req, invalid
	}
	req.Params = obj["params"]
	m, ok := ResolveMethod(req.Name)
	if !ok {
		return req, Errorf(CodeMethodNotFound, "Method not found: %s", req.Name)
	}
	req.Method = m
	return req, nil
}

// validID accepts a string, a finite number or null, as JSON-RPC does.
func validID(id json.RawMessage) bool {
	var v any
	if err := json.Unmarshal(id, &v); err != nil {
		return false
	}
	switch v.(type) {
	case string, float64, nil:
		return true
	}
	return false
}

// ValidContextID reports whether id is a context id the reference accepts:
// 1 to 128 of A-Z, a-z, 0-9 and "._:-" (the reference's
// /^[A-Za-z0-9._:-]{1,128}$/).
func ValidContextID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// DecodeSend decodes and checks SendMessage params.
func DecodeSend(params json.RawMessage) (SendParams, *Error) {
	bad := &Error{Code: CodeInvalidParams, Message: "Invalid SendMessage params: message and parts required"}
	var p SendParams
	if len(params) == 0 || json.Unmarshal(params, &p) != nil || p.Message.Parts == nil {
		return SendParams{}, bad
	}
	switch p.Message.Role {
	case RoleUser, RoleAgent:
	case "user":
		p.Message.Role = RoleUser
	case "agent":
		p.Message.Role = RoleAgent
	default:
		return SendParams{}, bad
	}
	if p.Message.ContextID != "" && !ValidContextID(p.Message.ContextID) {
		return SendParams{}, &Error{Code: CodeInvalidParams, Message: "Invalid message contextId"}
	}
	return p, nil
}

// DecodeTask decodes and checks task params (GetTask, CancelTask,
// SubscribeToTask).
func DecodeTask(params json.RawMessage) (TaskParams, *Error) {
	var p TaskParams
	if len(params) == 0 || json.Unmarshal(params, &p) != nil || p.ID == "" {
		return TaskParams{}, &Error{Code: CodeInvalidParams, Message: "Invalid task params: id is required"}
	}
	return p, nil
}

// MessageText joins the text of a message's parts (data parts as their
// JSON) with newlines, capped at MaxTextBytes with TruncationMarker. It
// returns "" when nothing usable is there.
func MessageText(parts []Part) string {
	var texts []string
	for _, p := range parts {
		switch {
		case p.Text != nil:
			texts = append(texts, *p.Text)
		case len(p.Data) > 0 && string(p.Data) != "null":
			texts = append(texts, string(p.Data))
		}
	}
	text := strings.Join(texts, "\n")
	if strings.TrimSpace(text) == "" {
		return ""
	}
	return CapText(text)
}

// CapText cuts s to at most MaxTextBytes, ending it with TruncationMarker
// and never splitting a UTF-8 sequence.
func CapText(s string) string {
	if len(s) <= MaxTextBytes {
		return s
	}
	n := MaxTextBytes - len(TruncationMarker)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + TruncationMarker
}
