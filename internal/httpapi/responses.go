package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// responseFields are the typed members of a /v1/responses request; the
// schema is strict, so any other member is refused.
var responseFields = []field{
	{name: "model", kinds: []string{"string"}},
	{name: "input", kinds: []string{"string", "array"}},
	{name: "instructions", kinds: []string{"string"}},
	{name: "tools", kinds: []string{"array"}},
	{name: "tool_choice", kinds: []string{"string", "object"}},
	{name: "text", kinds: []string{"object"}},
	{name: "stream", kinds: []string{"boolean"}},
	{name: "max_output_tokens", kinds: []string{"integer"}, positive: true},
	{name: "max_tool_calls", kinds: []string{"integer"}, positive: true},
	{name: "user", kinds: []string{"string"}},
	{name: "temperature", kinds: []string{"number"}},
	{name: "top_p", kinds: []string{"number"}},
	{name: "metadata", kinds: []string{"object"}},
	{name: "store", kinds: []string{"boolean"}},
	{name: "previous_response_id", kinds: []string{"string"}},
	{name: "reasoning", kinds: []string{"object"}},
	{name: "truncation", kinds: []string{"string"}},
}

// responseResource is an OpenResponses response object.
type responseResource struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	CreatedAt         int64             `json:"created_at"`
	Status            string            `json:"status"`
	Model             string            `json:"model"`
	Output            []any             `json:"output"` // outputItem and functionCallItem
	Usage             responseUsage     `json:"usage"`
	Error             *responseError    `json:"error,omitempty"`
	IncompleteDetails *incompleteReason `json:"incomplete_details,omitempty"`
}

type incompleteReason struct {
	Reason string `json:"reason"`
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type outputItem struct {
	Type    string       `json:"type"`
	ID      string       `json:"id"`
	Role    string       `json:"role"`
	Content []outputText `json:"content"`
	Phase   string       `json:"phase,omitempty"`
	Status  string       `json:"status"`
}

// functionCallItem is a pending call of a client function tool.
type functionCallItem struct {
	Type      string `json:"type"` // "function_call"
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Status    string `json:"status"`
}

type outputText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type responseUsage struct {
	InputTokens         int64            `json:"input_tokens"`
	InputTokensDetails  map[string]int64 `json:"input_tokens_details"`
	OutputTokens        int64            `json:"output_tokens"`
	OutputTokensDetails map[string]int64 `json:"output_tokens_details"`
	TotalTokens         int64            `json:"total_tokens"`
}

// responsesUsageOf maps a run's usage as toOpenAiResponsesUsage does.
func responsesUsageOf(u transcript.Usage) responseUsage {
	in := max(0, u.Input) + max(0, u.CacheRead) + max(0, u.CacheWrite)
	out := max(0, u.Output)
	return responseUsage{
		InputTokens:         in,
		InputTokensDetails:  map[string]int64{"cached_tokens": max(0, u.CacheRead), "cache_write_tokens": max(0, u.CacheWrite)},
		OutputTokens:        out,
		OutputTokensDetails: map[string]int64{"reasoning_tokens": 0},
		TotalTokens:         max(in+out, u.TotalTokens),
	}
}

// responsesPrompt folds OpenResponses input (a string or items) into one
// prompt as the reference does; the error is a 400 text.
func responsesPrompt(raw json.RawMessage) (prompt, string) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return prompt{Message: s}, ""
	}
	var items []map[string]json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return prompt{}, "input: Invalid input"
	}
	active := -1
	for i := len(items) - 1; i >= 0; i-- {
		t := str(items[i]["type"])
		if t == "function_call_output" {
			break
		}
		if t == "message" && str(items[i]["role"]) == "user" {
			active = i
			break
		}
	}
	var p prompt
	var system []string
	var entries []convEntry
	for i, it := range items {
		switch t := str(it["type"]); t {
		case "message":
			role := str(it["role"])
			switch role {
			case "system", "developer", "user", "assistant":
			default:
				return prompt{}, fmt.Sprintf("input.%d.role: Invalid option: expected one of \"system\"|\"developer\"|\"user\"|\"assistant\"", i)
			}
			text, ok := contentText(it["content"])
			if !ok && jsonKind(it["content"]) != "array" {
				return prompt{}, fmt.Sprintf("input.%d.content: Invalid input", i)
			}
			body := strings.TrimSpace(text)
			if i == active {
				srcs := imageSources(it["content"])
				p.ImageURLs = append(p.ImageURLs, srcs...)
				p.Images += len(srcs)
				if body == "" && len(srcs) > 0 {
					body = "User sent image(s) with no text."
				}
			}
			if body == "" {
				continue
			}
			if role == "system" || role == "developer" {
				system = append(system, body)
				continue
			}
			sender, r := "User", "user"
			if role == "assistant" {
				sender, r = "Assistant", "assistant"
			}
			entries = append(entries, convEntry{role: r, sender: sender, body: body})
		case "function_call":
			id := str(it["call_id"])
			if id == "" {
				id = str(it["id"])
			}
			var args string
			_ = json.Unmarshal(it["arguments"], &args)
			entries = append(entries, convEntry{role: "assistant", sender: "Assistant",
				body: "tool_call id=" + id + " name=" + str(it["name"]) + " arguments=" + args})
		case "function_call_output":
			var out string
			if json.Unmarshal(it["output"], &out) != nil {
				return prompt{}, fmt.Sprintf("input.%d.output: Invalid input: expected string, received %s", i, jsonKind(it["output"]))
			}
			entries = append(entries, convEntry{role: "tool", sender: "Tool:" + str(it["call_id"]), body: out})
		case "reasoning", "item_reference":
		default:
			return prompt{}, fmt.Sprintf("input.%d.type: Invalid input", i)
		}
	}
	p.Message = foldEntries(entries)
	p.ExtraSystem = strings.Join(system, "\n\n")
	return p, ""
}

// responsesToolChoice validates tools and tool_choice of a /v1/responses
// request and returns the constraint (nil for auto or none).
func responsesToolChoice(toolsRaw, choiceRaw json.RawMessage) (*toolChoice, bool) {
	var names []string
	var list []map[string]json.RawMessage
	if len(toolsRaw) > 0 {
		if json.Unmarshal(toolsRaw, &list) != nil {
			return nil, false
		}
		for _, t := range list {
			if str(t["type"]) != "function" || str(t["name"]) == "" {
				return nil, false
			}
			names = append(names, str(t["name"]))
		}
	}
	var c *toolChoice
	switch jsonKind(choiceRaw) {
	case "undefined":
		return nil, true
	case "string":
		switch str(choiceRaw) {
		case "auto", "none":
			return nil, true
		case "required":
			c = &toolChoice{Required: true}
		default:
			return nil, false
		}
	case "object":
		var o struct {
			Type     string `json:"type"`
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(choiceRaw, &o) != nil || o.Type != "function" {
			return nil, false
		}
		c = &toolChoice{Function: strings.TrimSpace(o.Name + o.Function.Name)}
		if c.Function == "" {
			return nil, false
		}
	default:
		return nil, false
	}
	if c.Function != "" {
		for _, n := range names {
			if n == c.Function {
				return c, true
			}
		}
		return nil, false
	}
	return c, len(names) > 0
}

// authSubject identifies the caller for previous_response_id scoping: a
// hash of the bearer secret, else the auth mode.
func (s *Server) authSubject(r *http.Request) string {
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	if scheme, cred, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(cred) != "" {
		sum := sha256.Sum256([]byte(strings.TrimSpace(cred)))
		return "bearer:" + hex.EncodeToString(sum[:])
	}
	return "gateway-auth:" + s.conf.Auth.Mode
}

// handleResponses serves POST /v1/responses.
func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		methodNotAllowed(w, http.MethodPost)
		return
	}
	if !s.authorize(w, r) {
		return
	}
	body, ok := s.readBody(w, r, s.cfg.ChatBodyBytes)
	if !ok {
		return
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil || obj == nil {
		invalidRequest(w, ": Invalid input: expected object, received "+jsonKind(body))
		return
	}
	for k := range obj {
		if !knownResponseField(k) {
			invalidRequest(w, fmt.Sprintf(": Unrecognized key: %q", k))
			return
		}
	}
	for _, req := range []string{"model", "input"} {
		if _, ok := obj[req]; !ok {
			invalidRequest(w, req+": Invalid input: expected "+map[string]string{"model": "string", "input": "string"}[req]+", received undefined")
			return
		}
	}
	if msg := checkFields(obj, responseFields); msg != "" {
		invalidRequest(w, msg)
		return
	}
	if x, ok := number(obj, "temperature"); ok && (x < 0 || x > 2) {
		invalidRequest(w, "temperature: Too big: expected number to be <=2")
		return
	}
	if x, ok := number(obj, "top_p"); ok && (x < 0 || x > 1) {
		invalidRequest(w, "top_p: Too big: expected number to be <=1")
		return
	}
	model, _ := stringMember(obj, "model")
	user, _ := stringMember(obj, "user")
	t, err := s.resolveTarget(r, model, user, "openresponses")
	if err != nil {
		invalidRequest(w, err.Error())
		return
	}
	modelRef, err := s.modelOverride(r, model, t.AgentID)
	if err != nil {
		invalidRequest(w, err.Error())
		return
	}
	p, msg := responsesPrompt(obj["input"])
	if msg != "" {
		invalidRequest(w, msg)
		return
	}
	images, reason := s.decodeImages(p.ImageURLs)
	if reason != "" {
		invalidRequest(w, "Invalid input_image content in `input`.")
		s.log.Warn("response refused", "reason", reason)
		return
	}
	choice, ok := responsesToolChoice(obj["tools"], obj["tool_choice"])
	if !ok {
		invalidRequest(w, "invalid tool configuration")
		return
	}
	scope := responseScope{authSubject: s.authSubject(r), agentID: t.AgentID,
		requestedKey: strings.TrimSpace(r.Header.Get("X-Openclaw-Session-Key"))}
	if prev, _ := stringMember(obj, "previous_response_id"); prev != "" {
		if key := s.responses.lookup(prev, scope); key != "" {
			t.SessionKey = key
		}
	}
	if instr, _ := stringMember(obj, "instructions"); strings.TrimSpace(instr) != "" {
		p.ExtraSystem = strings.Join(nonEmpty(instr, p.ExtraSystem), "\n\n")
	}
	if p.Message == "" {
		invalidRequest(w, "Missing user message in `input`.")
		return
	}
	id := "resp_" + s.newID()
	res := responseResource{ID: id, Object: "response", CreatedAt: s.now().Unix(), Model: model, Output: []any{}}
	in := s.input(id, t, p, modelRef, responsesSampling(obj))
	in.Images = images
	in.ClientTools = applyToolChoice(responsesToolDefs(obj["tools"]), obj["tool_choice"], choice)
	in.ExtraSystemPrompt = strings.Join(nonEmpty(in.ExtraSystemPrompt, choice.instruction()), "\n\n")
	tr, err := s.startTurn(r.Context(), in)
	if err != nil {
		s.submitError(w, err)
		return
	}
	s.responses.store(id, t.SessionKey, scope)
	itemID := "msg_" + s.newID()
	if string(obj["stream"]) == "true" {
		s.streamResponse(w, r, tr, res, itemID, in.ClientTools, choice)
		return
	}
	end, err := s.follow(r.Context(), tr, nil)
	if err != nil {
		if r.Context().Err() == nil {
			writeError(w, http.StatusServiceUnavailable, "api_error", "gateway shutting down")
		}
		return
	}
	text, ok := replyText(end)
	res.Usage = responsesUsageOf(end.Run.Usage)
	if !ok && toolConflict(end) {
		res.Status, res.Error = "failed", &responseError{Code: "invalid_request_error", Message: msgToolConfig}
		writeJSON(w, http.StatusBadRequest, res)
		return
	}
	if !ok {
		res.Status, res.Error = "failed", &responseError{Code: "api_error", Message: msgInternal}
		writeJSON(w, http.StatusInternalServerError, res)
		return
	}
	pending := pendingClientCalls(end.Last, in.ClientTools)
	if !choice.satisfied(pending) {
		res.Status, res.Error = "failed", &responseError{Code: "api_error", Message: choice.unsatisfied()}
		writeJSON(w, http.StatusBadGateway, res)
		return
	}
	res.Status = "completed"
	if len(pending) > 0 {
		if text != "" {
			res.Output = append(res.Output, assistantItem(itemID, text, "commentary", "completed"))
		}
		for _, c := range pending {
			res.Output = append(res.Output, s.functionCall(c))
		}
		writeJSON(w, http.StatusOK, res)
		return
	}
	if text == "" {
		text = noResponseText
	}
	if end.Run.StopReason == provider.StopLength {
		res.Status, res.IncompleteDetails = "incomplete", &incompleteReason{Reason: "max_output_tokens"}
	}
	res.Output = []any{assistantItem(itemID, text, "final_answer", res.Status)}
	writeJSON(w, http.StatusOK, res)
}

// functionCall is the output item of a pending client tool call.
func (s *Server) functionCall(c chatToolCall) functionCallItem {
	return functionCallItem{Type: "function_call", ID: "call_" + s.newID(), CallID: c.ID, Name: c.Function.Name,
		Arguments: c.Function.Arguments, Status: "completed"}
}

func knownResponseField(k string) bool {
	for _, f := range responseFields {
		if f.name == k {
			return true
		}
	}
	return false
}

func assistantItem(id, text, phase, status string) outputItem {
	content := []outputText{}
	if text != "" || status != "in_progress" {
		content = []outputText{{Type: "output_text", Text: text}}
	}
	return outputItem{Type: "message", ID: id, Role: "assistant", Content: content, Phase: phase, Status: status}
}

// namedEvent is one OpenResponses SSE event: its type and members (the
// type member is added when it is written).
type namedEvent struct {
	typ string
	v   map[string]any
}

// streamResponse streams the response as OpenResponses events, ending
// with response.completed (or .incomplete / .failed) and [DONE].
func (s *Server) streamResponse(w http.ResponseWriter, r *http.Request, tr *turn, res responseResource, itemID string, clientTools []provider.ToolDef, choice *toolChoice) {
	ev := newSSE(w)
	res.Status, res.Usage = "in_progress", responsesUsageOf(transcript.Usage{})
	part := outputText{Type: "output_text", Text: ""}
	head := []namedEvent{
		{"response.created", map[string]any{"response": res}},
		{"response.in_progress", map[string]any{"response": res}},
		{"response.output_item.added", map[string]any{"output_index": 0, "item": assistantItem(itemID, "", "", "in_progress")}},
		{"response.content_part.added", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "part": part}},
	}
	for _, h := range head {
		h.v["type"] = h.typ
		if err := ev.event(h.typ, h.v); err != nil {
			s.abort(tr.runID)
			return
		}
	}
	var streamed strings.Builder
	delta := func(d string) error {
		return ev.event("response.output_text.delta", map[string]any{"type": "response.output_text.delta",
			"item_id": itemID, "output_index": 0, "content_index": 0, "delta": d})
	}
	end, err := s.follow(r.Context(), tr, func(d string) error {
		streamed.WriteString(d)
		return delta(d)
	})
	if err != nil {
		if r.Context().Err() == nil {
			res.Status, res.Error = "failed", &responseError{Code: "api_error", Message: "gateway shutting down"}
			ev.event("response.failed", map[string]any{"type": "response.failed", "response": res})
			ev.done()
		}
		return
	}
	res.Usage = responsesUsageOf(end.Run.Usage)
	text, ok := replyText(end)
	pending := pendingClientCalls(end.Last, clientTools)
	var failure *responseError
	switch {
	case !ok && toolConflict(end):
		failure = &responseError{Code: "invalid_request_error", Message: msgToolConfig}
	case !ok:
		failure = &responseError{Code: "api_error", Message: msgInternal}
	case !choice.satisfied(pending):
		failure = &responseError{Code: "api_error", Message: choice.unsatisfied()}
	}
	if failure != nil {
		res.Status, res.Error = "failed", failure
		ev.event("response.failed", map[string]any{"type": "response.failed", "response": res})
		ev.done()
		return
	}
	sent := streamed.String()
	if sent == "" && text == "" && len(pending) == 0 {
		text = noResponseText
	}
	if rest, found := strings.CutPrefix(text, sent); found && rest != "" {
		_ = delta(rest)
	} else if !found {
		text = sent // the stream is append-only: what was sent is the text
	}
	res.Status = "completed"
	if end.Run.StopReason == provider.StopLength {
		res.Status, res.IncompleteDetails = "incomplete", &incompleteReason{Reason: "max_output_tokens"}
	}
	phase := "final_answer"
	if len(pending) > 0 {
		phase = "commentary"
	}
	item := assistantItem(itemID, text, phase, res.Status)
	res.Output = []any{item}
	tail := []namedEvent{
		{"response.output_text.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "text": text}},
		{"response.content_part.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "part": outputText{Type: "output_text", Text: text}}},
		{"response.output_item.done", map[string]any{"output_index": 0, "item": item}},
	}
	for _, c := range pending {
		call := s.functionCall(c)
		i := len(res.Output)
		res.Output = append(res.Output, call)
		tail = append(tail,
			namedEvent{"response.output_item.added", map[string]any{"output_index": i, "item": call}},
			namedEvent{"response.output_item.done", map[string]any{"output_index": i, "item": call}})
	}
	tail = append(tail, namedEvent{"response." + res.Status, map[string]any{"response": res}})
	for _, h := range tail {
		h.v["type"] = h.typ
		if ev.event(h.typ, h.v) != nil {
			return
		}
	}
	ev.done()
}
