package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// embedParams is the body of POST /embeddings.
type embedParams struct {
	Model      string   `json:"model"`
	Input      []string `json:"input"`
	Dimensions int      `json:"dimensions,omitempty"`
}

// embedResponse is the part of the /embeddings reply Embed reads.
type embedResponse struct {
	Data []struct {
		Index     int64     `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
	Usage struct {
		PromptTokens int64 `json:"prompt_tokens"`
		TotalTokens  int64 `json:"total_tokens"`
	} `json:"usage"`
}

// Embed asks the server's /embeddings endpoint for one vector per input.
// Failures are *provider.Error, or ctx.Err() once ctx is done.
func (p *Provider) Embed(ctx context.Context, req *provider.EmbedRequest) (*provider.EmbedResult, error) {
	if req == nil || req.Model == "" || len(req.Input) == 0 {
		return nil, errors.New("openai.Embed: a model and at least one input are required")
	}
	body, err := json.Marshal(embedParams{Model: req.Model, Input: req.Input, Dimensions: max(req.Dimensions, 0)})
	if err != nil {
		return nil, fmt.Errorf("openai.Embed: %s: %w", p.name, err)
	}
	res, err := p.post(ctx, "/embeddings", body)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, p.mapError(ctx, err)
	}
	var er embedResponse
	if err := json.Unmarshal(raw, &er); err != nil {
		return nil, &provider.Error{Provider: p.name, Message: "decode embeddings response: " + err.Error()}
	}
	out := &provider.EmbedResult{Vectors: make([][]float64, len(req.Input)), PromptTokens: er.Usage.PromptTokens, TotalTokens: er.Usage.TotalTokens}
	for _, d := range er.Data {
		if d.Index < 0 || int(d.Index) >= len(out.Vectors) || out.Vectors[d.Index] != nil {
			return nil, &provider.Error{Provider: p.name, Message: fmt.Sprintf("embeddings response has a bad index %d", d.Index)}
		}
		out.Vectors[d.Index] = d.Embedding
	}
	for i, v := range out.Vectors {
		if v == nil {
			return nil, &provider.Error{Provider: p.name, Message: fmt.Sprintf("embeddings response lacks input %d", i)}
		}
	}
	return out, nil
}
