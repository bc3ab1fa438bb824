package anthropic

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/provider/transport"
)

// errorStatuses are the HTTP status Anthropic documents for each error type,
// used for errors sent inside a 200 event stream.
var errorStatuses = [...]struct {
	typ    string
	status int
}{
	{"invalid_request_error", 400},
	{"authentication_error", 401},
	{"billing_error", 402},
	{"permission_error", 403},
	{"not_found_error", 404},
	{"request_too_large", 413},
	{"rate_limit_error", 429},
	{"api_error", 500},
	{"timeout_error", 504},
	{"overloaded_error", 529},
}

// errorStatus is the status of error type typ, 0 when it is not known.
func errorStatus(typ string) int {
	for _, e := range errorStatuses {
		if e.typ == typ {
			return e.status
		}
	}
	return 0
}

// classify maps a failure other than cancellation to a *provider.Error.
func classify(name string, err error) *provider.Error {
	if serr, ok := errors.AsType[*transport.StatusError](err); ok {
		return errorResponse(name, serr.Status, serr.Body)
	}
	_, isNet := errors.AsType[net.Error](err)
	return &provider.Error{
		Provider:  name,
		Message:   err.Error() + provider.UnreachableHint(name, err),
		Retryable: isNet || errors.Is(err, io.ErrUnexpectedEOF),
	}
}

// errorResponse maps an error body: of an HTTP error status, or (status
// 0) of an "event: error" inside a stream that started with 200, whose
// status comes from its error type.
func errorResponse(name string, status int, body []byte) *provider.Error {
	typ, msg := errorBody(body)
	if status < 400 {
		status = errorStatus(typ)
	}
	if msg == "" {
		msg = strings.TrimSpace(string(body))
		if len(msg) > 512 {
			msg = msg[:512] + "…"
		}
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return &provider.Error{Provider: name, StatusCode: status, Message: msg, Retryable: retryableStatus(status)}
}

// retryableStatus reports whether an HTTP status is worth retrying later.
func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

// errorBody extracts the type and message of
// {"type":"error","error":{"type":...,"message":...}}.
func errorBody(body []byte) (typ, msg string) {
	var eb struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &eb) != nil {
		return "", ""
	}
	return eb.Error.Type, eb.Error.Message
}
