package anthropic

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/switchboardhq/switchboard/internal/provider"
)

// errorStatus is the HTTP status Anthropic documents for each error type,
// used for errors sent inside a 200 event stream.
var errorStatus = map[string]int{
	"invalid_request_error": 400,
	"authentication_error":  401,
	"billing_error":         402,
	"permission_error":      403,
	"not_found_error":       404,
	"request_too_large":     413,
	"rate_limit_error":      429,
	"api_error":             500,
	"timeout_error":         504,
	"overloaded_error":      529,
}

// classify maps a failure other than cancellation to a *provider.Error.
func classify(name string, err error) *provider.Error {
	if aerr, ok := errors.AsType[*anthropic.Error](err); ok {
		typ, msg := errorBody([]byte(aerr.RawJSON()))
		status := aerr.StatusCode
		if status < 400 {
			// An "event: error" inside a stream that started with 200.
			status = errorStatus[typ]
		}
		if msg == "" {
			msg = strings.TrimSpace(aerr.RawJSON())
			if len(msg) > 512 {
				msg = msg[:512] + "…"
			}
		}
		if msg == "" {
			msg = http.StatusText(status)
		}
		return &provider.Error{Provider: name, StatusCode: status, Message: msg, Retryable: retryableStatus(status)}
	}
	_, isNet := errors.AsType[net.Error](err)
	return &provider.Error{
		Provider:  name,
		Message:   err.Error(),
		Retryable: isNet || errors.Is(err, io.ErrUnexpectedEOF),
	}
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
