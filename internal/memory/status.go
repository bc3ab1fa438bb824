package memory

import (
	"context"
	"fmt"
	"strings"
)

// Status is what the index holds for one scope, as `memory status` shows.
type Status struct {
	// Files and Chunks are indexed; Dirty says files on disk differ from
	// the index (the next search or index brings it up to date).
	Files  int  `json:"files"`
	Chunks int  `json:"chunks"`
	Dirty  bool `json:"dirty"`
	// Eligible is the number of memory files on disk (the reference's
	// sourceCounts[].eligible).
	Eligible int `json:"eligible"`
	// Mode is "hybrid" when an embedding model is configured, else
	// "fts-only"; Model names it, Vectors counts the chunks with a stored
	// vector of it, and Reason says why there is none.
	Mode    string `json:"mode"`
	Model   string `json:"model,omitempty"`
	Vectors int    `json:"vectors"`
	Reason  string `json:"reason,omitempty"`
	// RequestedProvider is the embedding provider memory.search names
	// (the reference's requestedProvider), "" when the store keeps no
	// vectors.
	RequestedProvider string `json:"requestedProvider,omitempty"`
}

// Status reports scope's index against workspace's files, changing
// nothing and calling no embedding model.
func (x *Index) Status(ctx context.Context, scope, workspace string) (Status, error) {
	st := Status{Mode: "fts-only"}
	files, err := listFiles(workspace)
	if err != nil {
		return st, err
	}
	indexed, err := x.st.MemoryFiles(ctx, scope)
	if err != nil {
		return st, fmt.Errorf("memory: status: %w", err)
	}
	st.Files, st.Eligible = len(indexed), len(files)
	byPath := make(map[string]bool, len(indexed))
	for _, f := range indexed {
		byPath[f.Path+"\x00"+fmt.Sprint(f.Size, f.MtimeNs)] = true
	}
	st.Dirty = len(files) != len(indexed)
	for _, f := range files {
		if !byPath[f.rel+"\x00"+fmt.Sprint(f.size, f.mtimeNs)] {
			st.Dirty = true
		}
	}
	if x.hy == nil {
		st.Reason = "the store keeps no vectors"
		return st, nil
	}
	rows, err := x.hy.vs.MemoryChunks(ctx, scope)
	if err != nil {
		return st, fmt.Errorf("memory: status: %w", err)
	}
	st.Chunks = len(rows)
	st.RequestedProvider, _, _ = strings.Cut(x.hy.emb.Model(), "/")
	if err := x.hy.emb.Ready(); err != nil {
		st.Reason = strings.TrimPrefix(err.Error(), ErrNoEmbeddings.Error()+": ")
		return st, nil
	}
	st.Mode, st.Model = "hybrid", x.hy.emb.Model()
	hashes := chunkHashes(rows)
	have, err := x.hy.vs.MemoryVectors(ctx, st.Model, hashes)
	if err != nil {
		return st, fmt.Errorf("memory: status: %w", err)
	}
	for _, h := range hashes {
		if _, ok := have[h]; ok {
			st.Vectors++
		}
	}
	return st, nil
}

// IndexStats is what an Index call did.
type IndexStats struct {
	SyncStats
	// Embedded is the number of chunks with a vector after it (hybrid
	// mode), Mode and Model as in Status.
	Embedded int    `json:"embedded"`
	Mode     string `json:"mode"`
	Model    string `json:"model,omitempty"`
}

// Index brings scope up to date with workspace now and, with an embedding
// model, embeds every chunk without a stored vector (what a search would
// do on its first use).
func (x *Index) Index(ctx context.Context, scope, workspace string) (IndexStats, error) {
	var out IndexStats
	out.Mode = "fts-only"
	s, files, err := x.sync(ctx, scope, workspace)
	out.SyncStats = s
	if err != nil {
		return out, err
	}
	if x.hy == nil || x.hy.emb.Ready() != nil {
		return out, nil
	}
	vi, err := x.hy.index(ctx, scope, files)
	if err != nil {
		return out, fmt.Errorf("memory: embedding: %w", err)
	}
	out.Mode, out.Model, out.Embedded = "hybrid", vi.model, len(vi.vecs)
	return out, nil
}
