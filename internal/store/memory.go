package store

import (
	"context"
	"encoding/binary"
	"math"
)

// MemoryFile is the indexed state of one memory file of a scope (an agent's
// workspace): the slash-separated path relative to the workspace, the
// SHA-256 of its content (hex) and the size and modification time it had
// when indexed, which let a re-index skip unchanged files without reading
// them.
type MemoryFile struct {
	Path    string
	Hash    string
	Size    int64
	MtimeNs int64
}

// MemoryChunk is one indexed piece of a memory file: its 1-based line range,
// the text as written, and Search, the text the keyword index tokenizes:
// words of letters, digits, combining marks and '_' separated by spaces
// (memory.SearchText, which also sets every CJK character apart), so that
// both backends' tokenizers split it alike.
type MemoryChunk struct {
	StartLine, EndLine int
	Text               string
	Search             string
}

// MemoryHit is one keyword search result: the chunk and its relevance
// (greater is better, >= 0; backends differ in scale).
type MemoryHit struct {
	Path               string
	StartLine, EndLine int
	Text               string
	Relevance          float64
}

// MemoryStore keeps the keyword index of the agents' memory files (MEMORY.md,
// USER.md, memory/**/*.md), so that every gateway node on one PostgreSQL
// database searches one index. A scope is one agent's workspace (the
// memory tools use "<agentId>@<workspace path>").
type MemoryStore interface {
	// MemoryFiles lists the indexed files of scope, ordered by path.
	MemoryFiles(ctx context.Context, scope string) ([]MemoryFile, error)
	// PutMemoryFile replaces the indexed chunks of f.Path in scope with
	// chunks, in one transaction.
	PutMemoryFile(ctx context.Context, scope string, f MemoryFile, chunks []MemoryChunk) error
	// DeleteMemoryFile removes a file and its chunks from scope; a missing
	// file is not an error.
	DeleteMemoryFile(ctx context.Context, scope, path string) error
	// SearchMemory returns at most limit chunks of scope that contain every
	// term, most relevant first (ties by path, then line). A term is a
	// sequence of lower-case words that must appear next to each other in
	// that order (a phrase); words hold only letters, digits, combining marks and '_'.
	SearchMemory(ctx context.Context, scope string, terms [][]string, limit int) ([]MemoryHit, error)
}

// MemoryChunkRow is an indexed chunk as vector search reads it.
type MemoryChunkRow struct {
	Path               string
	StartLine, EndLine int
	Text               string
}

// MemoryVectorStore keeps the embeddings of memory chunks, keyed by the
// embedding model and the SHA-256 (hex) of the chunk's text: a cache that
// outlives re-indexing (an unchanged chunk is never embedded twice) and, on
// PostgreSQL, is shared by every node. A backend that keeps memory files
// implements it too.
type MemoryVectorStore interface {
	// MemoryChunks lists the indexed chunks of scope, by path and line.
	MemoryChunks(ctx context.Context, scope string) ([]MemoryChunkRow, error)
	// MemoryVectors returns the stored vectors of model whose hashes are
	// in hashes (absent ones are left out).
	MemoryVectors(ctx context.Context, model string, hashes []string) (map[string][]float32, error)
	// PutMemoryVectors stores vectors of model by hash; an existing one
	// is kept.
	PutMemoryVectors(ctx context.Context, model string, vecs map[string][]float32) error
}

// EncodeVector is v as little-endian float32s, the stored form.
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// DecodeVector reverses EncodeVector; a length not a multiple of 4 is nil.
func DecodeVector(b []byte) []float32 {
	if len(b)%4 != 0 {
		return nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
