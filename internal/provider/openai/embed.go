package openai

import (
	"context"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchboardhq/switchboard/internal/provider"
)

// Embed asks the server's /embeddings endpoint for one vector per input.
// Failures are *provider.Error, or ctx.Err() once ctx is done.
func (p *Provider) Embed(ctx context.Context, req *provider.EmbedRequest) (*provider.EmbedResult, error) {
	if req == nil || req.Model == "" || len(req.Input) == 0 {
		return nil, errors.New("openai.Embed: a model and at least one input are required")
	}
	params := openai.EmbeddingNewParams{Model: req.Model, Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: req.Input}}
	if req.Dimensions > 0 {
		params.Dimensions = openai.Int(int64(req.Dimensions))
	}
	var failed failedResponse
	res, err := p.embed.New(ctx, params, option.WithMiddleware(failed.capture))
	if err != nil {
		return nil, p.mapError(ctx, err, &failed)
	}
	out := &provider.EmbedResult{Vectors: make([][]float64, len(req.Input)), PromptTokens: res.Usage.PromptTokens, TotalTokens: res.Usage.TotalTokens}
	for _, d := range res.Data {
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
