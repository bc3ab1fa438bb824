package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard/internal/store"
)

// Store is what the index needs of the store (store.MemoryStore).
type Store interface {
	MemoryFiles(ctx context.Context, scope string) ([]store.MemoryFile, error)
	PutMemoryFile(ctx context.Context, scope string, f store.MemoryFile, chunks []store.MemoryChunk) error
	DeleteMemoryFile(ctx context.Context, scope, path string) error
	SearchMemory(ctx context.Context, scope string, terms [][]string, limit int) ([]store.MemoryHit, error)
}

// Search defaults, the reference's.
const (
	DefaultMaxResults = 6
	// SnippetMaxChars caps a result's snippet.
	SnippetMaxChars = 700
	// maxCandidates caps the hits asked of the store.
	maxCandidates = 200
)

// Index is the keyword index of the agents' memory files, kept in a Store.
// Safe for concurrent use; concurrent syncs of one scope write the same
// rows.
type Index struct {
	st Store
	hy *hybrid // nil: keyword search only
}

// NewIndex returns an index kept in st.
func NewIndex(st Store) *Index { return &Index{st: st} }

// SyncStats says what a Sync did.
type SyncStats struct {
	// Files is the number of memory files found.
	Files int `json:"files"`
	// Indexed files were (re)chunked, Unchanged ones skipped (same size and
	// mtime, or same content hash), Removed ones had gone from disk.
	Indexed   int `json:"indexed"`
	Unchanged int `json:"unchanged"`
	Removed   int `json:"removed"`
	// Chunks is the number of chunks written.
	Chunks int `json:"chunks"`
}

// Sync brings scope's index up to date with the memory files of workspace:
// a file whose size or modification time differs from the indexed one is
// read and, when its content hash differs too, chunked again; files gone
// from disk are removed.
func (x *Index) Sync(ctx context.Context, scope, workspace string) (SyncStats, error) {
	stats, _, err := x.sync(ctx, scope, workspace)
	return stats, err
}

// sync is Sync, also returning the indexed files after it (sorted by
// path), so that a search needs no second read of them.
func (x *Index) sync(ctx context.Context, scope, workspace string) (SyncStats, []store.MemoryFile, error) {
	var stats SyncStats
	files, err := listFiles(workspace)
	if err != nil {
		return stats, nil, err
	}
	stats.Files = len(files)
	indexed, err := x.st.MemoryFiles(ctx, scope)
	if err != nil {
		return stats, nil, fmt.Errorf("memory: sync: %w", err)
	}
	now := make([]store.MemoryFile, 0, len(files))
	known := make(map[string]store.MemoryFile, len(indexed))
	for _, f := range indexed {
		known[f.Path] = f
	}
	for _, f := range files {
		old, had := known[f.rel]
		delete(known, f.rel)
		if had && old.Size == f.size && old.MtimeNs == f.mtimeNs {
			stats.Unchanged++
			now = append(now, old)
			continue
		}
		b, fi, err := readFile(os.Lstat, workspace, f.rel)
		if err != nil {
			// Gone, swapped for a link or unreadable since the listing: it
			// leaves the index rather than failing every search.
			if had {
				known[f.rel] = old
			}
			continue
		}
		sum := sha256.Sum256(b)
		mf := store.MemoryFile{Path: f.rel, Hash: hex.EncodeToString(sum[:]), Size: fi.Size(), MtimeNs: fi.ModTime().UnixNano()}
		chunks := ChunkMarkdown(string(b))
		rows := make([]store.MemoryChunk, len(chunks))
		for i, c := range chunks {
			rows[i] = store.MemoryChunk{StartLine: c.StartLine, EndLine: c.EndLine, Text: c.Text, Search: SearchText(c.Text)}
		}
		// A file touched without a change is written again too, so that its
		// new stat spares the next sync the read.
		if err := x.st.PutMemoryFile(ctx, scope, mf, rows); err != nil {
			return stats, nil, fmt.Errorf("memory: sync: %w", err)
		}
		now = append(now, mf)
		if had && old.Hash == mf.Hash {
			stats.Unchanged++
			continue
		}
		stats.Indexed++
		stats.Chunks += len(rows)
	}
	for p := range known {
		if err := x.st.DeleteMemoryFile(ctx, scope, p); err != nil {
			return stats, nil, fmt.Errorf("memory: sync: %w", err)
		}
		stats.Removed++
	}
	return stats, now, nil
}

// Hit is one search result in the reference's shape.
type Hit struct {
	Path      string  `json:"path"`
	StartLine int     `json:"startLine"`
	EndLine   int     `json:"endLine"`
	Score     float64 `json:"score"`
	Snippet   string  `json:"snippet"`
	Source    string  `json:"source"`
}

// Search syncs scope with workspace, then returns the chunks containing
// every term of query, best first: at most maxResults (DefaultMaxResults
// when <= 0), and only those scoring at least minScore. A score is the
// store's relevance r mapped to r/(1+r), in [0, 1).
func (x *Index) Search(ctx context.Context, scope, workspace, query string, maxResults int, minScore float64) ([]Hit, error) {
	if maxResults <= 0 {
		maxResults = DefaultMaxResults
	}
	hits, _, err := x.search(ctx, scope, workspace, query, maxResults, minScore)
	return withSnippets(hits), err
}

// search is Search without the snippets' truncation (a hit's Snippet is
// its chunk's whole text, cut by withSnippets for the hits returned only),
// also returning the indexed files after the sync.
func (x *Index) search(ctx context.Context, scope, workspace, query string, limit int, minScore float64) ([]Hit, []store.MemoryFile, error) {
	_, files, err := x.sync(ctx, scope, workspace)
	if err != nil {
		return nil, nil, err
	}
	terms := QueryTerms(query)
	if len(terms) == 0 {
		return []Hit{}, files, nil
	}
	hits, err := x.st.SearchMemory(ctx, scope, terms, min(max(limit, 1), maxCandidates))
	if err != nil {
		return nil, nil, fmt.Errorf("memory: search: %w", err)
	}
	out := make([]Hit, 0, len(hits))
	for _, h := range hits {
		r := max(h.Relevance, 0)
		score := r / (1 + r)
		if score < minScore {
			continue
		}
		out = append(out, Hit{Path: h.Path, StartLine: h.StartLine, EndLine: h.EndLine, Score: score,
			Snippet: h.Text, Source: "memory"})
	}
	return out, files, nil
}

// withSnippets cuts the snippets of hits to SnippetMaxChars, in place.
func withSnippets(hits []Hit) []Hit {
	for i := range hits {
		hits[i].Snippet = truncateRunes(hits[i].Snippet, SnippetMaxChars)
	}
	return hits
}

// truncateRunes cuts s to at most n runes.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:byteIndexOfRune(s, n)], "")
}
