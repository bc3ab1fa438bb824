package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard/internal/lazy"
	"github.com/switchboardhq/switchboard/internal/store"
)

// Embedder turns texts into vectors for vector search.
type Embedder interface {
	// Model names the embedding model ("<provider>/<model>"): stored
	// vectors are kept by it, so a new model embeds again.
	Model() string
	// Ready says whether a model is configured, without calling it
	// (ErrNoEmbeddings, wrapped, when none is).
	Ready() error
	// Embed returns one vector per text, in order. ErrNoEmbeddings
	// (wrapped) says none is configured.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// ErrNoEmbeddings is an Embedder's answer when no embedding provider is
// configured: search is keyword-only, as intended.
var ErrNoEmbeddings = errors.New("memory: no embedding provider configured")

// Hybrid ranking (the reference's defaults).
const (
	vectorWeight = 0.7
	textWeight   = 0.3
	// halfLifeDays is the recency half-life of dated daily notes.
	halfLifeDays = 30
	// embedBatch is the number of chunks embedded per request.
	embedBatch = 64
)

// Result is a search's answer: the hits and how they were found.
type Result struct {
	Hits []Hit
	// Mode is "hybrid" (keywords and vectors) or "fts-only".
	Mode string
	// Model is the embedding model used ("" in fts-only mode).
	Model string
	// Warning says why a search meant to be hybrid was keyword-only.
	Warning string
}

// vecIndex is one scope's chunks with their unit vectors, valid while the
// model is model and the scope's files have the paths and hashes of files.
type vecIndex struct {
	files []store.MemoryFile
	model string
	rows  []store.MemoryChunkRow
	vecs  [][]float32
}

// current says whether vi is of model and of files' paths and contents.
func (vi *vecIndex) current(model string, files []store.MemoryFile) bool {
	return vi.model == model && slices.EqualFunc(vi.files, files, func(a, b store.MemoryFile) bool {
		return a.Path == b.Path && a.Hash == b.Hash
	})
}

// hybrid is the vector side of an Index.
type hybrid struct {
	emb Embedder
	vs  store.MemoryVectorStore
	now func() time.Time

	mu     sync.Mutex
	scopes map[string]*vecIndex
}

// NewHybridIndex returns an index kept in st that ranks by keywords and
// by the vectors of emb; st must keep vectors too.
func NewHybridIndex(st Store, vs store.MemoryVectorStore, emb Embedder) *Index {
	return &Index{st: st, hy: &hybrid{emb: emb, vs: vs, now: time.Now, scopes: map[string]*vecIndex{}}}
}

// Query searches scope (synced with workspace first): by keywords and,
// with an embedder, by meaning, merged as 0.7 × vector similarity + 0.3 ×
// keyword score, dated notes decaying with a 30-day half-life. Without an
// embedder, or when it fails, the keyword hits alone (Mode "fts-only",
// Warning saying why a failure happened).
func (x *Index) Query(ctx context.Context, scope, workspace, query string, maxResults int, minScore float64) (Result, error) {
	if maxResults <= 0 {
		maxResults = DefaultMaxResults
	}
	if x.hy == nil {
		hits, err := x.Search(ctx, scope, workspace, query, maxResults, minScore)
		return Result{Hits: hits, Mode: "fts-only"}, err
	}
	kw, files, err := x.search(ctx, scope, workspace, query, maxCandidates, 0)
	if err != nil {
		return Result{}, err
	}
	keyword := func(warn string) Result {
		out := make([]Hit, 0, maxResults)
		for _, h := range kw {
			if h.Score >= minScore && len(out) < maxResults {
				out = append(out, h)
			}
		}
		return Result{Hits: withSnippets(out), Mode: "fts-only", Warning: warn}
	}
	if err := x.hy.emb.Ready(); err != nil {
		return keyword(""), nil
	}
	vi, err := x.hy.index(ctx, scope, files)
	if err == nil && len(vi.rows) > 0 {
		var qv [][]float32
		qv, err = x.hy.emb.Embed(ctx, []string{query})
		if err == nil && len(qv) != 1 {
			err = fmt.Errorf("embedding provider returned %d vectors for 1 query", len(qv))
		}
		if err == nil {
			res := x.hy.merge(vi, normalize(qv[0]), kw, maxResults, minScore)
			res.Hits = withSnippets(res.Hits)
			return res, nil
		}
	}
	switch {
	case err == nil:
		return keyword(""), nil
	case errors.Is(err, ErrNoEmbeddings):
		return keyword(""), nil
	case ctx.Err() != nil:
		return Result{}, ctx.Err()
	}
	return keyword("vector search unavailable (" + err.Error() + "); keyword results only"), nil
}

// key identifies a chunk across the two legs.
type chunkKey struct {
	path  string
	start int
}

// merge ranks the union of the vector and keyword candidates.
func (h *hybrid) merge(vi *vecIndex, q []float32, kw []Hit, maxResults int, minScore float64) Result {
	type cand struct {
		hit       Hit
		vec, text float64
	}
	cands := map[chunkKey]*cand{}
	for _, k := range kw {
		cands[chunkKey{k.Path, k.StartLine}] = &cand{hit: k, text: k.Score}
	}
	// The vector leg's best candidates.
	for _, s := range topSimilar(vi.vecs, q, maxCandidates) {
		r := vi.rows[s.i]
		k := chunkKey{r.Path, r.StartLine}
		c, ok := cands[k]
		if !ok {
			c = &cand{hit: Hit{Path: r.Path, StartLine: r.StartLine, EndLine: r.EndLine,
				Snippet: r.Text, Source: "memory"}}
			cands[k] = c
		}
		c.vec = max(s.sim, 0)
	}
	now := h.now()
	out := make([]Hit, 0, len(cands))
	for _, c := range cands {
		c.hit.Score = (vectorWeight*c.vec + textWeight*c.text) * decay(c.hit.Path, now)
		if c.hit.Score >= minScore {
			out = append(out, c.hit)
		}
	}
	slices.SortFunc(out, func(a, b Hit) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return a.StartLine - b.StartLine
	})
	if len(out) == 0 {
		// Every ranked hit fell below the minimum: keyword matches stay.
		out = append(out, kw...)
	}
	return Result{Hits: out[:min(len(out), maxResults)], Mode: "hybrid", Model: vi.model}
}

// datedNote matches a daily note's date in its file name.
func datedNote() *regexp.Regexp { return datedNoteValue.Get() }

// datedNoteValue is built on the first call of datedNote.
var datedNoteValue = lazy.Value[*regexp.Regexp]{New: buildDatedNote}

// buildDatedNote builds datedNote's value.
func buildDatedNote() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|/)(\d{4}-\d{2}-\d{2})(?:-[^/]*)?\.md$`)
}

// decay is a dated note's recency weight, 0.5 per 30 days of age; other
// files (MEMORY.md, USER.md, undated notes) are evergreen.
func decay(path string, now time.Time) float64 {
	m := datedNote().FindStringSubmatch(path)
	if m == nil {
		return 1
	}
	d, err := time.Parse(time.DateOnly, m[1])
	if err != nil {
		return 1
	}
	age := now.Sub(d).Hours() / 24
	if age <= 0 {
		return 1
	}
	return math.Pow(0.5, age/halfLifeDays)
}

// index returns scope's vector index, rebuilt when its files (as the
// sync before it left them) changed:
// vectors come from the store's cache by text hash; the missing ones are
// embedded (in batches) and stored.
func (h *hybrid) index(ctx context.Context, scope string, files []store.MemoryFile) (*vecIndex, error) {
	model := h.emb.Model()
	h.mu.Lock()
	vi := h.scopes[scope]
	h.mu.Unlock()
	if vi != nil && vi.current(model, files) {
		return vi, nil
	}
	rows, err := h.vs.MemoryChunks(ctx, scope)
	if err != nil {
		return nil, fmt.Errorf("memory: vectors: %w", err)
	}
	hashes := chunkHashes(rows)
	vecs := make([][]float32, len(rows))
	have, err := h.vs.MemoryVectors(ctx, model, hashes)
	if err != nil {
		return nil, fmt.Errorf("memory: vectors: %w", err)
	}
	var missing []int
	for i, hsh := range hashes {
		if v, ok := have[hsh]; ok {
			vecs[i] = normalize(v)
		} else {
			missing = append(missing, i)
		}
	}
	for start := 0; start < len(missing); start += embedBatch {
		batch := missing[start:min(start+embedBatch, len(missing))]
		texts := make([]string, len(batch))
		for j, i := range batch {
			texts[j] = rows[i].Text
		}
		got, err := h.emb.Embed(ctx, texts)
		if err != nil {
			return nil, err
		}
		if len(got) != len(batch) {
			return nil, fmt.Errorf("embedding provider returned %d vectors for %d texts", len(got), len(batch))
		}
		put := make(map[string][]float32, len(batch))
		for j, i := range batch {
			vecs[i] = normalize(got[j])
			put[hashes[i]] = got[j]
		}
		if err := h.vs.PutMemoryVectors(ctx, model, put); err != nil {
			return nil, fmt.Errorf("memory: vectors: %w", err)
		}
	}
	vi = &vecIndex{files: files, model: model, rows: rows, vecs: pack(vecs)}
	h.mu.Lock()
	h.scopes[scope] = vi
	h.mu.Unlock()
	return vi, nil
}

// pack copies vecs into one backing array, so that a scan of them all
// reads memory in order.
func pack(vecs [][]float32) [][]float32 {
	n := 0
	for _, v := range vecs {
		n += len(v)
	}
	flat := make([]float32, n)
	out := make([][]float32, len(vecs))
	o := 0
	for i, v := range vecs {
		out[i] = flat[o : o+len(v) : o+len(v)]
		o += copy(out[i], v)
	}
	return out
}

// normalize returns v scaled to unit length (a zero vector stays zero).
func normalize(v []float32) []float32 {
	var n float64
	for _, f := range v {
		n += float64(f) * float64(f)
	}
	out := make([]float32, len(v))
	if n == 0 {
		return out
	}
	inv := 1 / math.Sqrt(n)
	for i, f := range v {
		out[i] = float32(float64(f) * inv)
	}
	return out
}

// dot is the dot product of two vectors of one length, in four
// independent sums (the loop is the hot path of a search over thousands
// of chunks; one running sum would serialise every addition). Sum k adds
// the products of the indices ≡ k mod 4 in order, then sum 0 the tail;
// the loop takes eight at a time through fixed-length views, so that the
// compiler drops the bounds checks.
func dot(a, b []float32) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	for len(a) >= 8 && len(b) >= 8 {
		x, y := a[:8:8], b[:8:8]
		s0 += x[0] * y[0]
		s1 += x[1] * y[1]
		s2 += x[2] * y[2]
		s3 += x[3] * y[3]
		s0 += x[4] * y[4]
		s1 += x[5] * y[5]
		s2 += x[6] * y[6]
		s3 += x[7] * y[7]
		a, b = a[8:], b[8:]
	}
	if len(a) >= 4 && len(b) >= 4 {
		s0 += a[0] * b[0]
		s1 += a[1] * b[1]
		s2 += a[2] * b[2]
		s3 += a[3] * b[3]
		a, b = a[4:], b[4:]
	}
	for i := 0; i < len(a) && i < len(b); i++ {
		s0 += a[i] * b[i]
	}
	return float64(s0 + s1 + s2 + s3)
}

// chunkHashes are the SHA-256 (hex) of each chunk's text: the key its
// vector is stored by.
func chunkHashes(rows []store.MemoryChunkRow) []string {
	hashes := make([]string, len(rows))
	for i, r := range rows {
		sum := sha256.Sum256([]byte(r.Text))
		hashes[i] = hex.EncodeToString(sum[:])
	}
	return hashes
}
