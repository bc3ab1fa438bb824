package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/switchboardhq/switchboard/internal/toolinvoke"
)

// toolResult is the reference's tool result on the wire: text content
// blocks and the structured details.
type toolResult struct {
	Content []textBlock `json:"content"`
	Details any         `json:"details"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type invokeOK struct {
	OK     bool       `json:"ok"`
	Result toolResult `json:"result"`
}

type invokeFailed struct {
	OK    bool              `json:"ok"`
	Error *toolinvoke.Error `json:"error"`
}

// handleToolsInvoke serves POST /tools/invoke.
func (s *Server) handleToolsInvoke(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/tools/invoke" {
		plainText(w, http.StatusNotFound, "Not Found")
		return
	}
	if r.Method != http.MethodPost {
		methodNotAllowed(w, http.MethodPost)
		return
	}
	if !s.authorize(w, r) {
		return
	}
	body, ok := s.readBody(w, r, s.cfg.ToolsBodyBytes)
	if !ok {
		return
	}
	req := parseInvokeBody(body)
	req.Channel = r.Header.Get("X-Openclaw-Message-Channel")
	req.AccountID = strings.TrimSpace(r.Header.Get("X-Openclaw-Account-Id"))
	req.To = strings.TrimSpace(r.Header.Get("X-Openclaw-Message-To"))
	req.ThreadID = strings.TrimSpace(r.Header.Get("X-Openclaw-Thread-Id"))
	o := s.cfg.Tools.Invoke(r.Context(), req)
	if r.Context().Err() != nil {
		return // the client left; nobody reads an answer
	}
	if !o.OK() {
		writeJSON(w, o.Status, invokeFailed{Error: o.Err})
		return
	}
	writeJSON(w, http.StatusOK, invokeOK{OK: true, Result: toolResult{
		Content: []textBlock{{Type: "text", Text: o.Result.Text}},
		Details: o.Result.Details,
	}})
}

// parseInvokeBody reads the body's fields the reference's way: a field of
// the wrong type counts as absent, name wins over tool, and args must be an
// object (anything else is {}).
func parseInvokeBody(body json.RawMessage) toolinvoke.Request {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		m = nil
	}
	str := func(k string) string {
		var v string
		if json.Unmarshal(m[k], &v) != nil {
			return ""
		}
		return strings.TrimSpace(v)
	}
	req := toolinvoke.Request{
		Tool:           str("name"),
		Action:         str("action"),
		SessionKey:     str("sessionKey"),
		AgentID:        str("agentId"),
		IdempotencyKey: str("idempotencyKey"),
	}
	if req.Tool == "" {
		req.Tool = str("tool")
	}
	if a := m["args"]; len(a) > 0 && a[0] == '{' {
		req.Args = a
	}
	return req
}
