package httpapi

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// openAIModel is one entry of /v1/models.
type openAIModel struct {
	ID         string   `json:"id"`
	Object     string   `json:"object"`
	Created    int64    `json:"created"`
	OwnedBy    string   `json:"owned_by"`
	Permission []string `json:"permission"`
}

func toModel(id string) openAIModel {
	return openAIModel{ID: id, Object: "model", OwnedBy: "openclaw", Permission: []string{}}
}

// modelIDs lists the agent targets: openclaw, openclaw/default, then
// openclaw/<agentId> per configured agent (sub-agents are not targets).
func (s *Server) modelIDs() []string {
	ids := []string{modelOpenClaw, modelOpenClawDefault}
	for _, a := range s.agentIDs() {
		if id := "openclaw/" + a; !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

type modelList struct {
	Object string        `json:"object"`
	Data   []openAIModel `json:"data"`
}

// handleModels serves GET /v1/models and /v1/models/{id}.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, http.MethodGet)
		return
	}
	if !s.authorize(w, r) {
		return
	}
	ids := s.modelIDs()
	path := r.URL.EscapedPath()
	if path == "/v1/models" {
		list := modelList{Object: "list", Data: make([]openAIModel, len(ids))}
		for i, id := range ids {
			list.Data[i] = toModel(id)
		}
		writeJSON(w, http.StatusOK, list)
		return
	}
	encoded := strings.TrimPrefix(path, "/v1/models/")
	if encoded == "" {
		invalidRequest(w, "Missing model id.")
		return
	}
	id, err := url.PathUnescape(encoded)
	if err != nil {
		invalidRequest(w, "Invalid model id encoding.")
		return
	}
	if !isAgentModelID(id) {
		invalidRequest(w, "Invalid model id.")
		return
	}
	notFound := func() {
		writeError(w, http.StatusNotFound, "invalid_request_error", fmt.Sprintf("Model '%s' not found.", id))
	}
	if slices.Contains(ids, id) {
		writeJSON(w, http.StatusOK, toModel(id))
		return
	}
	// The switchboard/<agentId> alias of a configured agent.
	if l := strings.ToLower(id); strings.HasPrefix(l, "switchboard") {
		if a := agentFromModel(id, s.conf.DefaultAgent); a != "" && slices.Contains(s.agentIDs(), a) {
			writeJSON(w, http.StatusOK, toModel(id))
			return
		}
	}
	notFound()
}

// handleEmbeddings serves POST /v1/embeddings: the request is checked as
// the reference checks it and passed to the agent's embedding model (a
// clear 400 naming the agent when it has none); the vectors come back as
// numbers, or with encoding_format "base64" as base64 float32s.
func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
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
	model := str(obj["model"])
	if model == "" {
		invalidRequest(w, "Missing `model`.")
		return
	}
	if !isAgentModelID(model) {
		invalidRequest(w, msgInvalidModel)
		return
	}
	if !embeddingInputOK(obj["input"]) {
		invalidRequest(w, "`input` must be a string or an array of strings.")
		return
	}
	agentID, err := s.resolveAgent(r, model)
	if err != nil {
		invalidRequest(w, err.Error())
		return
	}
	dims := 0
	if raw, ok := obj["dimensions"]; ok && jsonKind(raw) != "null" {
		var n int
		if json.Unmarshal(raw, &n) != nil || n <= 0 {
			invalidRequest(w, "`dimensions` must be a positive integer.")
			return
		}
		dims = n
	}
	base64Vectors := false
	if raw, ok := obj["encoding_format"]; ok && jsonKind(raw) != "null" {
		switch str(raw) {
		case "float":
		case "base64":
			base64Vectors = true
		default:
			invalidRequest(w, "`encoding_format` must be \"float\" or \"base64\".")
			return
		}
	}
	override := strings.TrimSpace(r.Header.Get("X-Openclaw-Model"))
	if override != "" && (strings.ContainsAny(override, " \t") || !strings.Contains(strings.Trim(override, "/"), "/")) {
		invalidRequest(w, "Invalid `x-openclaw-model`.")
		return
	}
	if s.cfg.Embeddings == nil {
		invalidRequest(w, fmt.Sprintf("No embedding provider is configured for agent '%s'.", agentID))
		return
	}
	var input []string
	if jsonKind(obj["input"]) == "string" {
		input = make([]string, 1)
		_ = json.Unmarshal(obj["input"], &input[0])
	} else {
		_ = json.Unmarshal(obj["input"], &input)
	}
	if len(input) == 0 {
		invalidRequest(w, "`input` must be a string or an array of strings.")
		return
	}
	res, used, err := s.cfg.Embeddings.Embed(r.Context(), agentID, override, input, dims)
	switch {
	case errors.Is(err, provider.ErrNoEmbeddings):
		invalidRequest(w, fmt.Sprintf("No embedding provider is configured for agent '%s': %v", agentID, err))
		return
	case err != nil:
		s.log.Warn("embeddings failed", "agentId", agentID, "model", used, "err", err)
		writeError(w, http.StatusBadGateway, "api_error", "upstream provider error")
		return
	}
	type item struct {
		Object string `json:"object"`
		Index  int    `json:"index"`
		// Embedding is the vector as numbers, or with encoding_format
		// "base64" as a base64 string of little-endian float32s.
		Embedding any `json:"embedding"`
	}
	out := struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
		Model  string `json:"model"`
		Usage  struct {
			PromptTokens int64 `json:"prompt_tokens"`
			TotalTokens  int64 `json:"total_tokens"`
		} `json:"usage"`
	}{Object: "list", Data: make([]item, len(res.Vectors)), Model: model}
	for i, v := range res.Vectors {
		out.Data[i] = item{Object: "embedding", Index: i, Embedding: v}
		if base64Vectors {
			out.Data[i].Embedding = float32Base64(v)
		}
	}
	out.Usage.PromptTokens, out.Usage.TotalTokens = res.PromptTokens, max(res.TotalTokens, res.PromptTokens)
	writeJSON(w, http.StatusOK, out)
}

// float32Base64 is vector v in the "base64" encoding_format of OpenAI's
// embeddings API: its values as little-endian IEEE 754 float32s, base64
// encoded (standard alphabet, padded).
func float32Base64(v []float64) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(x)))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// embeddingInputOK reports whether input is a string or an array of
// strings.
func embeddingInputOK(raw json.RawMessage) bool {
	switch jsonKind(raw) {
	case "string":
		return true
	case "array":
		var list []string
		return json.Unmarshal(raw, &list) == nil
	}
	return false
}
