package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/switchboardhq/switchboard/internal/memory"
	"github.com/switchboardhq/switchboard/internal/provider"
)

// MemoryEmbedder serves memory search's vectors with memory.search's
// embedding model (memory.Embedder).
type MemoryEmbedder struct{ R *Registry }

// Model implements memory.Embedder.
func (e MemoryEmbedder) Model() string { return e.R.EmbedModel() }

// Ready implements memory.Embedder.
func (e MemoryEmbedder) Ready() error {
	if err := e.R.EmbedReady(); err != nil {
		return fmt.Errorf("%w: %v", memory.ErrNoEmbeddings, err)
	}
	return nil
}

// Embed implements memory.Embedder.
func (e MemoryEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	res, _, err := e.R.Embed(ctx, "", "", texts, 0)
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
