package openai

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// httpError maps an HTTP error response to a *provider.Error.
func httpError(name string, status int, body []byte) *provider.Error {
	return &provider.Error{Provider: name, StatusCode: status, Message: bodyMessage(status, body), Retryable: retryableStatus(status)}
}

// transportError maps a failure to reach the server or to read its reply
// (other than cancellation) to a *provider.Error.
func transportError(name string, err error) *provider.Error {
	_, isNet := errors.AsType[net.Error](err)
	return &provider.Error{
		Provider:  name,
		Message:   err.Error() + provider.UnreachableHint(name, err),
		Retryable: isNet || errors.Is(err, io.ErrUnexpectedEOF),
	}
}

// retryableStatus reports whether an HTTP status is worth retrying later.
func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

// errorBody covers the error shapes of OpenAI and compatible servers:
// {"error":{"message":...}}, {"error":"..."}, {"message":...}, {"detail":...}.
type errorBody struct {
	Error   json.RawMessage `json:"error"`
	Message string          `json:"message"`
	Detail  json.RawMessage `json:"detail"`
}

type errorObject struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// bodyMessage extracts a human-readable message from an error body.
func bodyMessage(status int, body []byte) string {
	var eb errorBody
	if json.Unmarshal(body, &eb) == nil {
		var obj errorObject
		var s string
		switch {
		case json.Unmarshal(eb.Error, &obj) == nil && obj.Message != "":
			return obj.Message
		case json.Unmarshal(eb.Error, &s) == nil && s != "":
			return s
		case eb.Message != "":
			return eb.Message
		case json.Unmarshal(eb.Detail, &s) == nil && s != "":
			return s
		case len(eb.Detail) > 0 && string(eb.Detail) != "null":
			return string(eb.Detail)
		}
	}
	text := strings.TrimSpace(string(body))
	if len(text) > 512 {
		text = text[:512] + "…"
	}
	if text == "" {
		text = http.StatusText(status)
	}
	return text
}

// streamError maps an error sent inside the event stream, after the HTTP
// status was already 200.
func streamError(name string, data []byte) *provider.Error {
	e := &provider.Error{Provider: name, Message: bodyMessage(0, data)}
	var eb errorBody
	var obj errorObject
	if json.Unmarshal(data, &eb) == nil && json.Unmarshal(eb.Error, &obj) == nil {
		if code, err := strconv.Atoi(strings.Trim(string(obj.Code), `"`)); err == nil && code >= 400 && code < 600 {
			e.StatusCode = code
		}
		switch obj.Type {
		case "server_error", "rate_limit_exceeded", "rate_limit_error", "overloaded_error":
			e.Retryable = true
		}
	}
	if e.StatusCode != 0 {
		e.Retryable = e.Retryable || retryableStatus(e.StatusCode)
	}
	if e.Message == "" {
		e.Message = "error event in stream"
	}
	return e
}
