package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/switchboardhq/switchboard/internal/admission"
	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/transcript"
)

// Reference limits and texts of /v1/chat/completions.
const (
	maxImageParts  = 8
	maxImageTotal  = 20 << 20 // decoded bytes of all of a request's images
	noResponseText = "No response from OpenClaw."
	msgMissingUser = "Missing user message in `messages`."
	msgInternal    = "internal error"
)

// chatFields are the typed members of a chat completion request.
var chatFields = []field{
	{name: "model", kinds: []string{"string"}},
	{name: "stream", kinds: []string{"boolean"}, nullable: true},
	{name: "stream_options", kinds: []string{"object"}, nullable: true},
	{name: "tools", kinds: []string{"array"}},
	{name: "messages", kinds: []string{"array"}},
	{name: "user", kinds: []string{"string"}},
	{name: "max_tokens", kinds: []string{"integer"}, nullable: true, positive: true},
	{name: "max_completion_tokens", kinds: []string{"integer"}, nullable: true, positive: true},
	{name: "temperature", kinds: []string{"number"}, nullable: true},
	{name: "top_p", kinds: []string{"number"}, nullable: true},
	{name: "frequency_penalty", kinds: []string{"number"}, nullable: true},
	{name: "presence_penalty", kinds: []string{"number"}, nullable: true},
	{name: "seed", kinds: []string{"number"}, nullable: true},
	{name: "stop", kinds: []string{"string", "array"}, nullable: true},
}

// chatCompletion is a non-streamed reply.
type chatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   chatUsage    `json:"usage"`
}

type chatChoice struct {
	Index        int       `json:"index"`
	Message      chatReply `json:"message"`
	FinishReason string    `json:"finish_reason"`
}

type chatReply struct {
	Role      string         `json:"role"`
	Content   string         `json:"content"`
	ToolCalls []chatToolCall `json:"tool_calls,omitempty"`
}

// chatToolCall is a call of a client function tool, in a reply or (with
// Index, and the arguments in pieces) a stream chunk.
type chatToolCall struct {
	Index    *int             `json:"index,omitempty"`
	ID       string           `json:"id,omitempty"`
	Type     string           `json:"type,omitempty"`
	Function chatFunctionCall `json:"function"`
}

type chatFunctionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type chatUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// chatChunk is one SSE chunk of a streamed reply.
type chatChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *chatUsage    `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	FinishReason *string    `json:"finish_reason"`
}

type chunkDelta struct {
	Role      string         `json:"role,omitempty"`
	Content   *string        `json:"content,omitempty"`
	ToolCalls []chatToolCall `json:"tool_calls,omitempty"`
}

// usageOf maps a run's usage as the reference's
// toOpenAiChatCompletionsUsage does.
func usageOf(u transcript.Usage) chatUsage {
	prompt := max(0, u.Input+u.CacheRead)
	completion := max(0, u.Output)
	return chatUsage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: max(prompt+completion, u.TotalTokens)}
}

// chatRequest is a validated chat completion request.
type chatRequest struct {
	model        string
	stream       bool
	includeUsage bool
	target       target
	prompt       prompt
	modelRef     string
	sampling     *provider.Sampling
	// clientTools are the caller's function tools offered to the agent
	// (after tool_choice narrowed them); choice, when set, is the call the
	// reply must carry.
	clientTools []provider.ToolDef
	choice      *toolChoice
	images      []provider.Image
}

// parseChatRequest validates a chat completion request and resolves its
// target; on failure it has answered the reference's error.
func (s *Server) parseChatRequest(w http.ResponseWriter, r *http.Request, body json.RawMessage) (*chatRequest, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil || obj == nil {
		invalidRequest(w, ": Invalid input: expected object, received "+jsonKind(body))
		return nil, false
	}
	if msg := checkFields(obj, chatFields); msg != "" {
		invalidRequest(w, msg)
		return nil, false
	}
	if rf := obj["response_format"]; len(rf) > 0 && jsonKind(rf) != "null" {
		var f map[string]json.RawMessage
		if json.Unmarshal(rf, &f) != nil || f == nil {
			invalidRequest(w, "Invalid response_format: response_format must be an object")
			return nil, false
		}
		if t := str(f["type"]); t != "text" && t != "json_object" && t != "json_schema" {
			invalidRequest(w, "Invalid response_format: response_format.type must be text, json_object, or json_schema")
			return nil, false
		}
	}
	if msg := stopError(obj["stop"]); msg != "" {
		invalidRequest(w, msg)
		return nil, false
	}
	if msg := samplingError(obj); msg != "" {
		invalidRequest(w, msg)
		return nil, false
	}
	req := &chatRequest{model: modelOpenClaw}
	if m, ok := stringMember(obj, "model"); ok {
		req.model = m
	}
	req.stream = string(obj["stream"]) == "true"
	req.sampling = chatSampling(obj)
	var so struct {
		IncludeUsage bool `json:"include_usage"`
	}
	if req.stream && json.Unmarshal(obj["stream_options"], &so) == nil {
		req.includeUsage = so.IncludeUsage
	}
	user, _ := stringMember(obj, "user")
	t, err := s.resolveTarget(r, req.model, user, "openai")
	if err != nil {
		invalidRequest(w, err.Error())
		return nil, false
	}
	req.target = t
	if req.modelRef, err = s.modelOverride(r, req.model, t.AgentID); err != nil {
		invalidRequest(w, err.Error())
		return nil, false
	}
	var messages []json.RawMessage
	_ = json.Unmarshal(obj["messages"], &messages)
	req.prompt = chatPrompt(messages)
	choice, msg := chatToolsError(obj["tools"], obj["tool_choice"])
	if msg != "" {
		invalidRequest(w, msg)
		return nil, false
	}
	images, reason := s.decodeImages(req.prompt.ImageURLs)
	if reason != "" {
		invalidRequest(w, "Invalid image_url content in `messages`.")
		s.log.Warn("chat completion refused", "reason", reason)
		return nil, false
	}
	req.images = images
	if req.prompt.Message == "" {
		invalidRequest(w, msgMissingUser)
		return nil, false
	}
	req.choice = choice
	req.clientTools = applyToolChoice(clientToolDefs(obj["tools"]), obj["tool_choice"], choice)
	return req, true
}

func stringMember(obj map[string]json.RawMessage, name string) (string, bool) {
	var v string
	if json.Unmarshal(obj[name], &v) != nil {
		return "", false
	}
	return v, true
}

// modelOverride validates x-openclaw-model for the agent and returns the
// model ref the run uses ("" for the agent's own model).
func (s *Server) modelOverride(r *http.Request, model, agentID string) (string, error) {
	if strings.TrimSpace(model) != "" && !isAgentModelID(model) {
		return "", &targetError{msgInvalidModel}
	}
	raw := strings.TrimSpace(r.Header.Get("X-Openclaw-Model"))
	if raw == "" {
		return "", nil
	}
	if strings.ContainsAny(raw, " \t") || strings.HasPrefix(raw, "/") || strings.HasSuffix(raw, "/") {
		return "", &targetError{"Invalid `x-openclaw-model`."}
	}
	if s.cfg.Models != nil {
		if _, err := s.cfg.Models.ResolveModel(agentID, raw); err != nil {
			return "", &targetError{fmt.Sprintf("Model '%s' is not allowed for agent '%s'.", raw, agentID)}
		}
	}
	return raw, nil
}

// input builds the run of a chat or response request.
func (s *Server) input(runID string, t target, p prompt, modelRef string, sampling *provider.Sampling) agent.Input {
	return agent.Input{
		RunID: runID, SessionKey: t.SessionKey, AgentID: t.AgentID, Message: p.Message,
		IdempotencyKey: runID + ":user", ExtraSystemPrompt: p.ExtraSystem, Model: modelRef,
		Channel: t.Channel, Sampling: sampling,
	}
}

// submitError answers a turn that could not start.
func (s *Server) submitError(w http.ResponseWriter, err error) {
	if errors.Is(err, admission.ErrSendDenied) {
		writeError(w, http.StatusForbidden, "forbidden", err.Error())
		return
	}
	if full := (*admission.QueueFullError)(nil); errors.As(err, &full) {
		writeError(w, http.StatusTooManyRequests, "rate_limit_error", full.Error())
		return
	}
	if errors.Is(err, agent.ErrClosed) {
		writeError(w, http.StatusServiceUnavailable, "api_error", "gateway shutting down")
		return
	}
	s.log.Error("http turn failed to start", "err", err)
	writeError(w, http.StatusInternalServerError, "api_error", msgInternal)
}

// replyText is the reply of a finished run, and whether it succeeded.
func replyText(end runEnd) (string, bool) {
	return transcript.AssistantText(end.Last), end.Run.Status == store.RunOK
}

func finishReason(run *store.Run) string {
	if run.StopReason == provider.StopLength {
		return "length"
	}
	return "stop"
}

// handleChatCompletions serves POST /v1/chat/completions.
func (s *Server) handleChatCompletions(w http.ResponseWriter, r *http.Request) {
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
	req, ok := s.parseChatRequest(w, r, body)
	if !ok {
		return
	}
	runID := "chatcmpl_" + s.newID()
	created := s.now().Unix()
	in := s.input(runID, req.target, req.prompt, req.modelRef, req.sampling)
	in.ClientTools = req.clientTools
	in.Images = req.images
	in.ExtraSystemPrompt = strings.Join(nonEmpty(in.ExtraSystemPrompt, req.choice.instruction()), "\n\n")
	t, err := s.startTurn(r.Context(), in)
	if err != nil {
		s.submitError(w, err)
		return
	}
	if req.stream {
		s.streamChat(w, r, t, req, runID, created)
		return
	}
	end, err := s.follow(r.Context(), t, nil)
	if err != nil {
		if r.Context().Err() == nil {
			writeError(w, http.StatusServiceUnavailable, "api_error", "gateway shutting down")
		}
		return
	}
	text, ok := replyText(end)
	if !ok && toolConflict(end) {
		invalidRequest(w, msgToolConfig)
		return
	}
	if !ok {
		s.log.Warn("chat completion failed", "runId", runID, "status", end.Run.Status, "err", end.Run.Error)
		writeError(w, http.StatusInternalServerError, "api_error", msgInternal)
		return
	}
	pending := pendingClientCalls(end.Last, req.clientTools)
	if !req.choice.satisfied(pending) {
		writeError(w, http.StatusBadGateway, "api_error", req.choice.unsatisfied())
		return
	}
	if len(pending) > 0 {
		writeJSON(w, http.StatusOK, chatCompletion{
			ID: runID, Object: "chat.completion", Created: created, Model: req.model,
			Choices: []chatChoice{{Message: chatReply{Role: "assistant", Content: text, ToolCalls: pending}, FinishReason: "tool_calls"}},
			Usage:   usageOf(end.Run.Usage),
		})
		return
	}
	if text == "" {
		text = noResponseText
	}
	writeJSON(w, http.StatusOK, chatCompletion{
		ID: runID, Object: "chat.completion", Created: created, Model: req.model,
		Choices: []chatChoice{{Message: chatReply{Role: "assistant", Content: text}, FinishReason: finishReason(end.Run)}},
		Usage:   usageOf(end.Run.Usage),
	})
}

// streamChat streams the reply as chat.completion.chunk events: the
// assistant role, content deltas, the finish reason, usage when asked,
// then [DONE]. A failed run ends with an error object before [DONE].
func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, t *turn, req *chatRequest, runID string, created int64) {
	ev := newSSE(w)
	chunk := func(d chunkDelta, finish *string) error {
		return ev.data(chatChunk{ID: runID, Object: "chat.completion.chunk", Created: created, Model: req.model,
			Choices: []chunkChoice{{Delta: d, FinishReason: finish}}})
	}
	if err := chunk(chunkDelta{Role: "assistant"}, nil); err != nil {
		s.abort(runID)
		return
	}
	var streamed strings.Builder
	end, err := s.follow(r.Context(), t, func(delta string) error {
		streamed.WriteString(delta)
		return chunk(chunkDelta{Content: &delta}, nil)
	})
	if err != nil {
		if errors.Is(err, errClosed) {
			ev.data(apiError{Error: errorBody{Message: "gateway shutting down", Type: "api_error"}})
			ev.done()
		}
		return
	}
	text, ok := replyText(end)
	if !ok {
		e := errorBody{Message: msgInternal, Type: "api_error"}
		if toolConflict(end) {
			e = errorBody{Message: msgToolConfig, Type: "invalid_request_error"}
		}
		ev.data(apiError{Error: e})
		ev.done()
		return
	}
	pending := pendingClientCalls(end.Last, req.clientTools)
	if !req.choice.satisfied(pending) {
		ev.data(apiError{Error: errorBody{Message: req.choice.unsatisfied(), Type: "api_error"}})
		ev.done()
		return
	}
	sent := streamed.String()
	if sent == "" && text == "" && len(pending) == 0 {
		text = noResponseText
	}
	if rest, found := strings.CutPrefix(text, sent); found && rest != "" {
		_ = chunk(chunkDelta{Content: &rest}, nil)
	}
	reason := finishReason(end.Run)
	if len(pending) > 0 {
		for _, c := range streamedToolCalls(pending) {
			_ = chunk(chunkDelta{ToolCalls: []chatToolCall{c}}, nil)
		}
		reason = "tool_calls"
	}
	_ = chunk(chunkDelta{}, &reason)
	if req.includeUsage {
		u := usageOf(end.Run.Usage)
		_ = ev.data(chatChunk{ID: runID, Object: "chat.completion.chunk", Created: created, Model: req.model,
			Choices: []chunkChoice{}, Usage: &u})
	}
	ev.done()
}

// sse writes Server-Sent Events, flushing each one.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	setSecurityHeaders(h)
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	e := &sse{w: w, rc: http.NewResponseController(w)}
	_ = e.rc.Flush()
	return e
}

// event writes one event with an optional event name.
func (e *sse) event(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("httpapi: encode event: %w", err)
	}
	buf := make([]byte, 0, len(b)+len(name)+24)
	if name != "" {
		buf = append(append(append(buf, "event: "...), name...), '\n')
	}
	buf = append(append(append(buf, "data: "...), b...), "\n\n"...)
	if _, err := e.w.Write(buf); err != nil {
		return err
	}
	return e.rc.Flush()
}

func (e *sse) data(v any) error { return e.event("", v) }

func (e *sse) done() {
	if _, err := e.w.Write([]byte("data: [DONE]\n\n")); err == nil {
		_ = e.rc.Flush()
	}
}
