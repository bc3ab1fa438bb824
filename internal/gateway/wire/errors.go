package wire

import (
	"encoding/json"
	"github.com/switchboardhq/switchboard/internal/jsonenc"
	"strconv"
)

// Top-level error codes (a closed set in the reference).
const (
	CodeInvalidRequest   = "INVALID_REQUEST"
	CodeForbidden        = "FORBIDDEN"
	CodeUnavailable      = "UNAVAILABLE"
	CodeNotPaired        = "NOT_PAIRED"
	CodeApprovalNotFound = "APPROVAL_NOT_FOUND"
	// Deprecated codes some clients still recognise.
	CodeNotLinked    = "NOT_LINKED"
	CodeAgentTimeout = "AGENT_TIMEOUT"
)

// Detail codes carried in Error.Details["code"]; clients branch on them.
const (
	DetailMissingScope            = "MISSING_SCOPE"
	DetailAuthTokenMismatch       = "AUTH_TOKEN_MISMATCH"
	DetailAuthRateLimited         = "AUTH_RATE_LIMITED"
	DetailAuthPasswordMismatch    = "AUTH_PASSWORD_MISMATCH"
	DetailAuthModeUnsupported     = "AUTH_MODE_UNSUPPORTED"
	DetailProtocolMismatch        = "PROTOCOL_MISMATCH"
	DetailDeviceIdentityRequired  = "DEVICE_IDENTITY_REQUIRED"
	DetailPairingRequired         = "PAIRING_REQUIRED"
	DetailUnknownAgentID          = "UNKNOWN_AGENT_ID"
	DetailSessionChanged          = "SESSION_CHANGED"
	DetailTooManyRequests         = "TOO_MANY_REQUESTS"
	DetailRequestCancelled        = "REQUEST_CANCELLED"
	DetailSendBlockedBySendPolicy = "SEND_POLICY_DENY"
)

// Error is the error shape of a failed response or handshake: a code from
// the closed set, a human message, and optional details (an object clients
// branch on via details.code), retryable and retryAfterMs.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Details is a JSON object, or nil.
	Details      json.RawMessage `json:"details,omitempty"`
	Retryable    *bool           `json:"retryable,omitempty"`
	RetryAfterMs *int64          `json:"retryAfterMs,omitempty"`
}

// NewError returns an error with the code and message.
func NewError(code, message string) *Error {
	return &Error{Code: code, Message: message}
}

// Error implements error: "<code>: <message>".
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// WithDetails returns e with Details set to v marshalled as JSON. A value
// that cannot be marshalled leaves Details unset.
func (e *Error) WithDetails(v any) *Error {
	if b, err := json.Marshal(v); err == nil {
		e.Details = b
	}
	return e
}

// WithRetry returns e marked retryable after the given delay (ms; 0 omits
// retryAfterMs).
func (e *Error) WithRetry(afterMs int64) *Error {
	t := true
	e.Retryable = &t
	if afterMs > 0 {
		e.RetryAfterMs = &afterMs
	}
	return e
}

// detailCode returns details.code, or "" when there is none.
func (e *Error) detailCode() string {
	var d struct {
		Code string `json:"code"`
	}
	if len(e.Details) == 0 || json.Unmarshal(e.Details, &d) != nil {
		return ""
	}
	return d.Code
}

// appendError appends e as a JSON object.
func appendError(b []byte, e *Error) []byte {
	b = append(b, `{"code":`...)
	b = jsonenc.AppendString(b, e.Code)
	b = append(b, `,"message":`...)
	b = jsonenc.AppendString(b, e.Message)
	if e.Details != nil {
		b = append(b, `,"details":`...)
		b = append(b, e.Details...)
	}
	if e.Retryable != nil {
		b = append(b, `,"retryable":`...)
		b = strconv.AppendBool(b, *e.Retryable)
	}
	if e.RetryAfterMs != nil {
		b = append(b, `,"retryAfterMs":`...)
		b = strconv.AppendInt(b, *e.RetryAfterMs, 10)
	}
	return append(b, '}')
}

// MarshalJSON writes the error shape with the members in the reference's
// order.
func (e *Error) MarshalJSON() ([]byte, error) {
	if e.Details != nil && !json.Valid(e.Details) {
		return nil, &json.UnsupportedValueError{Str: "wire.Error.Details is not valid JSON"}
	}
	return appendError(nil, e), nil
}

// errorSchema builds the closed error shape.
func errorSchema() *Schema {
	return Object([]string{"code", "message"},
		P("code", NonEmptyStr()),
		P("message", NonEmptyStr()),
		P("details", Any()),
		P("retryable", Bool()),
		P("retryAfterMs", Int(0)),
	)
}

// decodeError decodes a validated error object.
func decodeError(raw []byte) *Error {
	m, _ := object(raw)
	e := &Error{Code: str(m["code"]), Message: str(m["message"])}
	if v, ok := m["details"]; ok {
		e.Details = compact(v)
	}
	if v, ok := m["retryable"]; ok {
		b := string(v) == "true"
		e.Retryable = &b
	}
	if v, ok := m["retryAfterMs"]; ok {
		i, _ := integer(v)
		e.RetryAfterMs = &i
	}
	return e
}
