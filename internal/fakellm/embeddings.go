package fakellm

import (
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"strings"
)

const pathEmbeddings = "/v1/embeddings"

// defaultEmbeddingDims is the vector size when the request names none.
const defaultEmbeddingDims = 8

// embeddingsRequest is the part of an OpenAI embeddings request served.
type embeddingsRequest struct {
	Model      string          `json:"model"`
	Input      json.RawMessage `json:"input"`
	Dimensions int             `json:"dimensions"`
}

// Embedding returns the fake server's vector for text: dims unit-length
// floats derived from an FNV hash of the text, so that tests can predict
// them and equal texts get equal vectors.
func Embedding(text string, dims int) []float64 {
	if dims <= 0 {
		dims = defaultEmbeddingDims
	}
	v := make([]float64, dims)
	var norm float64
	for i := range v {
		h := fnv.New64a()
		var seed [8]byte
		binary.LittleEndian.PutUint64(seed[:], uint64(i))
		h.Write(seed[:])
		h.Write([]byte(text))
		v[i] = float64(int64(h.Sum64()>>11))/float64(1<<52) - 1
		norm += v[i] * v[i]
	}
	norm = math.Sqrt(norm)
	for i := range v {
		v[i] /= norm
	}
	return v
}

// serveEmbeddings answers POST /v1/embeddings in OpenAI's shape. Usage
// counts one token per whitespace-separated word.
func (s *Server) serveEmbeddings(w http.ResponseWriter, r *http.Request) {
	d := openAI{}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		d.writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed on "+r.URL.Path)
		return
	}
	body, err := readBody(w, r)
	s.record(r, body, nil)
	if msg := d.authError(r, s.apiKey); msg != "" {
		d.writeError(w, http.StatusUnauthorized, msg)
		return
	}
	var req embeddingsRequest
	if err != nil || decodeBody(body, &req) != nil || req.Model == "" {
		d.writeError(w, http.StatusBadRequest, "invalid embeddings request")
		return
	}
	var inputs []string
	if isString(req.Input) {
		var one string
		_ = json.Unmarshal(req.Input, &one)
		inputs = []string{one}
	} else if json.Unmarshal(req.Input, &inputs) != nil || len(inputs) == 0 {
		d.writeError(w, http.StatusBadRequest, "input must be a string or an array of strings")
		return
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	}
	out := struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
		Model  string `json:"model"`
		Usage  struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}{Object: "list", Model: req.Model}
	for i, in := range inputs {
		out.Data = append(out.Data, item{Object: "embedding", Index: i, Embedding: s.embed(in, req.Dimensions)})
		out.Usage.PromptTokens += len(strings.Fields(in))
	}
	out.Usage.TotalTokens = out.Usage.PromptTokens
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
