package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/switchboardhq/switchboard/internal/provider"
)

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 1 << 20

// failedResponse records the status and body of the last attempt of one
// request when it failed with an HTTP error. OpenAI-compatible servers do not
// all send OpenAI's {"error":{"message":...}} shape, and the SDK cannot
// decode the others; this keeps their status and message.
type failedResponse struct {
	status int
	body   []byte
}

// capture is an option.Middleware that fills f from error responses and
// hands the SDK an unread copy of the body.
func (f *failedResponse) capture(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	f.status, f.body = 0, nil
	res, err := next(req)
	if err != nil || res == nil || res.StatusCode < 400 {
		return res, err
	}
	body, readErr := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	res.Body.Close()
	if readErr != nil {
		return nil, readErr
	}
	f.status, f.body = res.StatusCode, body
	res.Body = io.NopCloser(bytes.NewReader(body))
	return res, nil
}

// classify maps a failure other than cancellation to a *provider.Error.
func classify(name string, err error, failed *failedResponse) *provider.Error {
	if aerr, ok := errors.AsType[*openai.Error](err); ok {
		msg := aerr.Message
		if msg == "" {
			msg = bodyMessage(aerr.StatusCode, failed.body)
		}
		return &provider.Error{Provider: name, StatusCode: aerr.StatusCode, Message: msg, Retryable: retryableStatus(aerr.StatusCode)}
	}
	if failed.status != 0 {
		// The SDK failed to decode a non-OpenAI error body.
		return &provider.Error{Provider: name, StatusCode: failed.status, Message: bodyMessage(failed.status, failed.body), Retryable: retryableStatus(failed.status)}
	}
	if serr, ok := errors.AsType[*ssestream.StreamError](err); ok {
		return streamError(name, serr.Event.Data)
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
