package wire

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/switchboardhq/switchboard/internal/jsonenc"
	"github.com/switchboardhq/switchboard/internal/lazy"
)

// Frame types (the "type" member of every frame).
const (
	FrameRequest  = "req"
	FrameResponse = "res"
	FrameEvent    = "event"
	FrameCancel   = "cancel"
)

// Size limits and policy defaults of the protocol.
const (
	// MaxPreConnectPayload caps inbound frames before hello-ok (64 KiB).
	MaxPreConnectPayload = 64 << 10
	// DefaultMaxPayload is policy.maxPayload: the inbound frame cap after
	// hello-ok (25 MiB).
	DefaultMaxPayload = 25 << 20
	// DefaultMaxBufferedBytes is policy.maxBufferedBytes: how much may wait
	// unsent for one client before it is disconnected as too slow (50 MiB).
	DefaultMaxBufferedBytes = 50 << 20
	// DefaultTickIntervalMs is policy.tickIntervalMs.
	DefaultTickIntervalMs = 30000
	// MaxTraceparent bounds a request's traceparent.
	MaxTraceparent = 128
)

// Frame is one protocol frame of any type. Type selects which fields are
// meaningful:
//
//   - req: ID, Method, Params, Traceparent, ExpectedProfileID
//   - res: ID, OK, Payload, Error
//   - event: Event, Payload, Seq, StateVersion, RecipientProfileID
//   - cancel: ID
//
// Params, Payload and Error.Details hold compact JSON; nil means absent.
type Frame struct {
	Type string

	ID                string
	Method            string
	Params            json.RawMessage
	Traceparent       string
	ExpectedProfileID string

	OK    bool
	Error *Error

	Event              string
	Payload            json.RawMessage
	Seq                *int64
	StateVersion       *StateVersion
	RecipientProfileID string
}

// StateVersion holds the snapshot counters events may carry.
type StateVersion struct {
	Presence int64 `json:"presence"`
	Health   int64 `json:"health"`
}

// DecodeError reports a frame the decoder rejected. Type and ID are set
// when the frame got far enough to have them, so a server can answer a
// malformed request by its id.
type DecodeError struct {
	Type   string
	ID     string
	Reason string
	// UnknownType is set when the frame is an object whose type is not one
	// of the four frame types; servers ignore such frames.
	UnknownType bool
}

// Error implements error.
func (e *DecodeError) Error() string { return "invalid frame: " + e.Reason }

// frameSchemaSet holds the closed schemas of the frame envelopes.
type frameSchemaSet struct{ request, response, event, cancel *Schema }

// frameSchemaTable is the set frameSchemas returns, built on first use
// (the package has no init-time work).
var frameSchemaTable = lazy.Value[*frameSchemaSet]{New: buildFrameSchemas}

// frameSchemas returns the frame envelopes' schemas.
func frameSchemas() *frameSchemaSet { return frameSchemaTable.Get() }

// buildFrameSchemas builds the frame envelopes' schemas.
func buildFrameSchemas() *frameSchemaSet {
	return &frameSchemaSet{
		request: Object([]string{"type", "id", "method"},
			P("type", Str()),
			P("id", NonEmptyStr()),
			P("method", NonEmptyStr()),
			P("params", Any()),
			P("traceparent", &Schema{Type: JSONString, MaxLength: MaxTraceparent}),
			P("expectedProfileId", Str()),
		),
		response: Object([]string{"type", "id", "ok"},
			P("type", Str()),
			P("id", NonEmptyStr()),
			P("ok", Bool()),
			P("payload", Any()),
			P("error", errorSchema()),
		),
		event: Object([]string{"type", "event"},
			P("type", Str()),
			P("event", NonEmptyStr()),
			P("payload", Any()),
			P("seq", Int(0)),
			P("stateVersion", Object([]string{"presence", "health"},
				P("presence", Int(0)), P("health", Int(0)))),
			P("recipientProfileId", Str()),
		),
		cancel: Object([]string{"type", "id"},
			P("type", Str()),
			P("id", NonEmptyStr()),
		),
	}
}

// frameType is str(raw), without its allocation for the four frame types.
func frameType(raw []byte) string {
	switch string(raw) {
	case `"` + FrameRequest + `"`:
		return FrameRequest
	case `"` + FrameResponse + `"`:
		return FrameResponse
	case `"` + FrameEvent + `"`:
		return FrameEvent
	case `"` + FrameCancel + `"`:
		return FrameCancel
	}
	return str(raw)
}

// Decode parses and strictly validates one frame of any type. It returns a
// *DecodeError for anything that is not a valid frame. Neither keeps a
// reference to data: a reader may reuse it for its next frame.
func Decode(data []byte) (*Frame, error) {
	if nestingExceeds(data, MaxNesting) {
		return nil, tooDeep(data)
	}
	members, ok := object(data)
	if !ok {
		if !json.Valid(data) {
			var v any
			err := json.Unmarshal(data, &v)
			return nil, &DecodeError{Reason: "not JSON: " + err.Error()}
		}
		return nil, &DecodeError{Reason: "must be object"}
	}
	f := &Frame{}
	if raw, ok := members["type"]; !ok || kindOf(raw) != kindString {
		return nil, &DecodeError{Reason: "must have required property 'type'"}
	} else {
		f.Type = frameType(raw)
	}
	if raw, ok := members["id"]; ok && kindOf(raw) == kindString {
		f.ID = str(raw)
	}
	var s *Schema
	switch f.Type {
	case FrameRequest:
		s = frameSchemas().request
	case FrameResponse:
		s = frameSchemas().response
	case FrameEvent:
		s = frameSchemas().event
	case FrameCancel:
		s = frameSchemas().cancel
	default:
		return nil, &DecodeError{Type: f.Type, ID: f.ID, Reason: "unknown frame type " + strconv.Quote(f.Type), UnknownType: true}
	}
	var buf [8]string
	if issues := s.checkMembers(members, data, rootPath(&buf)); len(issues) > 0 {
		return nil, &DecodeError{Type: f.Type, ID: f.ID, Reason: (&ValidationError{Issues: issues}).Error()}
	}
	for name, v := range members {
		switch name {
		case "method":
			f.Method = str(v)
		case "params":
			f.Params = compact(v)
		case "traceparent":
			f.Traceparent = str(v)
		case "expectedProfileId":
			f.ExpectedProfileID = str(v)
		case "ok":
			f.OK = string(v) == "true"
		case "payload":
			f.Payload = compact(v)
		case "error":
			f.Error = decodeError(v)
		case "event":
			f.Event = str(v)
		case "seq":
			i, _ := integer(v)
			f.Seq = &i
		case "stateVersion":
			sv := &StateVersion{}
			m, _ := object(v)
			sv.Presence, _ = integer(m["presence"])
			sv.Health, _ = integer(m["health"])
			f.StateVersion = sv
		case "recipientProfileId":
			f.RecipientProfileID = str(v)
		}
	}
	return f, nil
}

var errBadFrameType = errors.New("wire: frame has no valid type")

// AppendJSON appends f as one JSON object, writing only the members of its
// type. Absent optional members are omitted.
func (f *Frame) AppendJSON(b []byte) ([]byte, error) {
	switch f.Type {
	case FrameRequest:
		b = append(b, `{"type":"req","id":`...)
		b = jsonenc.AppendString(b, f.ID)
		b = append(b, `,"method":`...)
		b = jsonenc.AppendString(b, f.Method)
		if f.Params != nil {
			b = append(b, `,"params":`...)
			b = append(b, f.Params...)
		}
		if f.Traceparent != "" {
			b = append(b, `,"traceparent":`...)
			b = jsonenc.AppendString(b, f.Traceparent)
		}
		if f.ExpectedProfileID != "" {
			b = append(b, `,"expectedProfileId":`...)
			b = jsonenc.AppendString(b, f.ExpectedProfileID)
		}
		return append(b, '}'), nil
	case FrameResponse:
		b = append(b, `{"type":"res","id":`...)
		b = jsonenc.AppendString(b, f.ID)
		b = append(b, `,"ok":`...)
		b = strconv.AppendBool(b, f.OK)
		if f.Payload != nil {
			b = append(b, `,"payload":`...)
			b = append(b, f.Payload...)
		}
		if f.Error != nil {
			b = append(b, `,"error":`...)
			b = appendError(b, f.Error)
		}
		return append(b, '}'), nil
	case FrameEvent:
		b = append(b, `{"type":"event","event":`...)
		b = jsonenc.AppendString(b, f.Event)
		if f.Payload != nil {
			b = append(b, `,"payload":`...)
			b = append(b, f.Payload...)
		}
		if f.Seq != nil {
			b = append(b, `,"seq":`...)
			b = strconv.AppendInt(b, *f.Seq, 10)
		}
		if f.StateVersion != nil {
			b = append(b, `,"stateVersion":{"presence":`...)
			b = strconv.AppendInt(b, f.StateVersion.Presence, 10)
			b = append(b, `,"health":`...)
			b = strconv.AppendInt(b, f.StateVersion.Health, 10)
			b = append(b, '}')
		}
		if f.RecipientProfileID != "" {
			b = append(b, `,"recipientProfileId":`...)
			b = jsonenc.AppendString(b, f.RecipientProfileID)
		}
		return append(b, '}'), nil
	case FrameCancel:
		b = append(b, `{"type":"cancel","id":`...)
		b = jsonenc.AppendString(b, f.ID)
		return append(b, '}'), nil
	}
	return b, errBadFrameType
}

// MarshalJSON implements json.Marshaler with AppendJSON.
func (f *Frame) MarshalJSON() ([]byte, error) { return f.AppendJSON(nil) }

// AppendResponse appends a successful res frame; payload must be valid
// JSON (nil omits it).
func AppendResponse(b []byte, id string, payload json.RawMessage) []byte {
	b = append(b, `{"type":"res","id":`...)
	b = jsonenc.AppendString(b, id)
	b = append(b, `,"ok":true`...)
	if payload != nil {
		b = append(b, `,"payload":`...)
		b = append(b, payload...)
	}
	return append(b, '}')
}

// AppendErrorResponse appends a failed res frame. A nil payload is
// omitted.
func AppendErrorResponse(b []byte, id string, payload json.RawMessage, e *Error) []byte {
	b = append(b, `{"type":"res","id":`...)
	b = jsonenc.AppendString(b, id)
	b = append(b, `,"ok":false`...)
	if payload != nil {
		b = append(b, `,"payload":`...)
		b = append(b, payload...)
	}
	b = append(b, `,"error":`...)
	b = appendError(b, e)
	return append(b, '}')
}

// AppendEvent appends an event frame. A negative seq omits it; a nil
// payload is omitted.
func AppendEvent(b []byte, event string, payload json.RawMessage, seq int64) []byte {
	b = append(b, `{"type":"event","event":`...)
	b = jsonenc.AppendString(b, event)
	if payload != nil {
		b = append(b, `,"payload":`...)
		b = append(b, payload...)
	}
	if seq >= 0 {
		b = append(b, `,"seq":`...)
		b = strconv.AppendInt(b, seq, 10)
	}
	return append(b, '}')
}
