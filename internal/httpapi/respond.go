package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"
)

const jsonContentType = "application/json; charset=utf-8"

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// setSecurityHeaders sets the headers the reference sets on every API
// response.
func setSecurityHeaders(h http.Header) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}

func plainText(w http.ResponseWriter, status int, body string) {
	setSecurityHeaders(w.Header())
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// methodNotAllowed answers 405 with Allow, as the reference does.
func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	plainText(w, http.StatusMethodNotAllowed, "Method Not Allowed")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"internal error","type":"api_error"}}`)
	}
	setSecurityHeaders(w.Header())
	w.Header().Set("Content-Type", jsonContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// apiError is the OpenAI-style error body {error:{message,type}}.
type apiError struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Message string `json:"message"`
	Type    string `json:"type"`
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, apiError{Error: errorBody{Message: msg, Type: typ}})
}

// invalidRequest answers 400 invalid_request_error with msg.
func invalidRequest(w http.ResponseWriter, msg string) {
	writeError(w, http.StatusBadRequest, "invalid_request_error", msg)
}

// readBody reads a JSON request body of at most limit bytes within
// timeout and returns it (an empty body reads as {}). On failure it has
// answered the reference's 413, 408 or 400 and returns false.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, limit int64) (json.RawMessage, bool) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(s.now().Add(s.cfg.BodyTimeout))
	defer rc.SetReadDeadline(time.Time{})
	if r.ContentLength > limit {
		writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "Payload too large")
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "Payload too large")
		case errors.Is(err, os.ErrDeadlineExceeded):
			writeError(w, http.StatusRequestTimeout, "invalid_request_error", "Request body timeout")
		default:
			invalidRequest(w, "request body could not be read")
		}
		return nil, false
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return json.RawMessage("{}"), true
	}
	if !json.Valid(body) {
		var v any
		invalidRequest(w, jsonSyntaxMessage(json.Unmarshal(body, &v)))
		return nil, false
	}
	return body, true
}

// jsonSyntaxMessage describes why a body is not JSON.
func jsonSyntaxMessage(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "Invalid JSON: " + se.Error() + " (at offset " + itoa(se.Offset) + ")"
	}
	if err != nil {
		return "Invalid JSON: " + err.Error()
	}
	return "Invalid JSON"
}
