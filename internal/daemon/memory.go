package daemon

import (
	"context"
	"errors"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/memory"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/provider/registry"
)

// memoryEmbedder serves memory search's vectors with memory.search's
// embedding model (memory.Embedder).
type memoryEmbedder struct{ r *registry.Registry }

func (e memoryEmbedder) Model() string { return e.r.EmbedModel() }

func (e memoryEmbedder) Ready() error {
	if err := e.r.EmbedReady(); err != nil {
		return fmt.Errorf("%w: %v", memory.ErrNoEmbeddings, err)
	}
	return nil
}

func (e memoryEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	res, _, err := e.r.Embed(ctx, "", "", texts, 0)
	if errors.Is(err, provider.ErrNoEmbeddings) {
		return nil, fmt.Errorf("%w: %v", memory.ErrNoEmbeddings, err)
	}
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(res.Vectors))
	for i, v := range res.Vectors {
		out[i] = make([]float32, len(v))
		for j, f := range v {
			out[i][j] = float32(f)
		}
	}
	return out, nil
}
