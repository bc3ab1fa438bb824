package httpapi_test

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
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

	// encoding_format "base64" (the OpenAI client's default): each vector
	// as little-endian float32s, base64 encoded.
	status, _, b := g.do("POST", "/v1/embeddings", `{"model":"openclaw","input":["alpha beta"],"encoding_format":"base64"}`)
	var b64 struct{ Data []struct{ Embedding string } }
	if err := json.Unmarshal(b, &b64); status != 200 || err != nil || len(b64.Data) != 1 {
		t.Fatalf("base64: status %d, %v: %s", status, err, b)
	}
	raw, err := base64.StdEncoding.DecodeString(b64.Data[0].Embedding)
	want := fakellm.Embedding("alpha beta", 6)
	if err != nil || len(raw) != 4*len(want) {
		t.Fatalf("base64 vector %q: %v", b64.Data[0].Embedding, err)
	}
	for i, w := range want {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])); got != float32(w) {
			t.Errorf("base64 vector[%d] = %v, want %v", i, got, float32(w))
		}
	}
	if r := embed(`{"model":"openclaw","input":"x","encoding_format":"float"}`); len(r.Data) != 1 || len(r.Data[0].Embedding) != 6 {
		t.Errorf("float: %+v", r)
	}
	status, _, b = g.do("POST", "/v1/embeddings", `{"model":"openclaw","input":"x","encoding_format":"hex"}`)
	if _, msg := errorOf(t, b); status != 400 || !strings.Contains(msg, "encoding_format") {
		t.Errorf("encoding_format hex: status %d: %s", status, b)
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
