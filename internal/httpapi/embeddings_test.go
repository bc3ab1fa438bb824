package httpapi_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// TestEmbeddings passes /v1/embeddings through to the embedding model of
// memory.search (or of x-openclaw-model) on an OpenAI-compatible provider.
func TestEmbeddings(t *testing.T) {
	g := startGatewayWith(t, "", `memory: { search: { provider: "fake", model: "embed-small", outputDimensionality: 6 } },`, fakellm.Options{}, false)
	type resp struct {
		Object string
		Model  string
		Data   []struct {
			Object    string
			Index     int
			Embedding []float64
		}
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		}
	}
	embed := func(body string, headers ...string) resp {
		t.Helper()
		status, _, b := g.do("POST", "/v1/embeddings", body, headers...)
		if status != 200 {
			t.Fatalf("status %d: %s", status, b)
		}
		var r resp
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	lastModel := func() map[string]any {
		reqs := g.llm.Requests()
		return decode(t, reqs[len(reqs)-1].Body)
	}

	r := embed(`{"model":"openclaw/main","input":["alpha beta","gamma"]}`)
	if r.Object != "list" || r.Model != "openclaw/main" || len(r.Data) != 2 || r.Usage.PromptTokens != 3 {
		t.Fatalf("response %+v", r)
	}
	for i, in := range []string{"alpha beta", "gamma"} {
		if d := r.Data[i]; d.Index != i || d.Object != "embedding" || !slices.Equal(d.Embedding, fakellm.Embedding(in, 6)) {
			t.Errorf("data[%d] = %+v", i, d)
		}
	}
	if m := lastModel(); m["model"] != "embed-small" || m["dimensions"] != 6.0 {
		t.Errorf("upstream request %v", m)
	}

	r = embed(`{"model":"openclaw","input":"one text","dimensions":3}`, "X-Openclaw-Model", "fake/embed-large")
	if len(r.Data) != 1 || len(r.Data[0].Embedding) != 3 {
		t.Errorf("override response %+v", r)
	}
	if m := lastModel(); m["model"] != "embed-large" || m["dimensions"] != 3.0 {
		t.Errorf("override upstream request %v", m)
	}

	for _, tt := range []struct{ name, header, want string }{
		{"unknown provider", "nope/x", "provider \"nope\" is not configured"},
		{"malformed override", "justone", "Invalid `x-openclaw-model`."},
	} {
		status, _, b := g.do("POST", "/v1/embeddings", `{"model":"openclaw","input":"x"}`, "X-Openclaw-Model", tt.header)
		if _, msg := errorOf(t, b); status != 400 || !strings.Contains(msg, tt.want) {
			t.Errorf("%s: status %d: %s", tt.name, status, b)
		}
	}
}
