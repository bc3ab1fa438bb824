package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// conceptEmbedder embeds by concepts: each text gets one axis per concept
// whose words it contains, so a paraphrase ("automobile") lands near the
// original ("car") while sharing no word with it.
type conceptEmbedder struct {
	calls, texts atomic.Int64
	fail         error
	model        string
}

var concepts = [][]string{
	{"car", "automobile", "vehicle", "sedan"},
	{"weather", "rain", "forecast", "sunny"},
	{"birthday", "anniversary", "party"},
	{"deploy", "release", "ship"},
}

func (e *conceptEmbedder) Model() string {
	if e.model != "" {
		return e.model
	}
	return "fake/concepts-1"
}

func (e *conceptEmbedder) Ready() error {
	if errors.Is(e.fail, ErrNoEmbeddings) {
		return e.fail
	}
	return nil
}

func (e *conceptEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.calls.Add(1)
	e.texts.Add(int64(len(texts)))
	if e.fail != nil {
		return nil, e.fail
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, len(concepts)+1)
		v[len(concepts)] = 0.05 // no concept: a faint shared axis
		low := strings.ToLower(t)
		for c, words := range concepts {
			for _, w := range words {
				if strings.Contains(low, w) {
					v[c] = 1
				}
			}
		}
		out[i] = v
	}
	return out, nil
}

func openHybrid(t *testing.T, emb Embedder) *Index {
	t.Helper()
	plain, st := openIndex(t)
	return NewHybridIndex(plain.st, st, emb)
}

func TestHybridRanksAParaphrase(t *testing.T) {
	ctx := context.Background()
	emb := &conceptEmbedder{}
	idx := openHybrid(t, emb)
	dir := t.TempDir()
	writeFile(t, dir, "MEMORY.md", "# Memory\nBought a new car in March: a blue one.\n")
	writeFile(t, dir, "memory/notes.md", "# Notes\nThe forecast says rain all week.\n")
	writeFile(t, dir, "USER.md", "# User\nPrefers tea over coffee.\n")

	res, err := idx.Query(ctx, "main", dir, "which automobile did I buy", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != "hybrid" || res.Model != "fake/concepts-1" || res.Warning != "" {
		t.Fatalf("mode %q model %q warning %q", res.Mode, res.Model, res.Warning)
	}
	if len(res.Hits) == 0 || res.Hits[0].Path != "MEMORY.md" {
		t.Fatalf("paraphrase not ranked first: %+v", res.Hits)
	}
	for _, h := range res.Hits[1:] {
		if h.Score >= res.Hits[0].Score {
			t.Errorf("unrelated %s scores %v, not below %v", h.Path, h.Score, res.Hits[0].Score)
		}
	}
	// The keyword-only index finds nothing for it: no shared word.
	plain := NewIndex(idx.st)
	if hits, _ := plain.Search(ctx, "main", dir, "which automobile did I buy", 0, 0); len(hits) != 0 {
		t.Fatalf("keyword search found %+v", hits)
	}

	// Chunks are embedded once: a second search embeds the query only.
	before := emb.texts.Load()
	if _, err := idx.Query(ctx, "main", dir, "rain tomorrow?", 0, 0); err != nil {
		t.Fatal(err)
	}
	if got := emb.texts.Load() - before; got != 1 {
		t.Errorf("second search embedded %d texts, want 1 (the query)", got)
	}
	// An edit re-embeds the changed chunk only.
	writeFile(t, dir, "USER.md", "# User\nPrefers tea over coffee. Birthday party in May.\n")
	before = emb.texts.Load()
	res, _ = idx.Query(ctx, "main", dir, "anniversary plans", 0, 0)
	if got := emb.texts.Load() - before; got != 2 {
		t.Errorf("after an edit %d texts embedded, want 2 (the chunk and the query)", got)
	}
	if len(res.Hits) == 0 || res.Hits[0].Path != "USER.md" {
		t.Errorf("after the edit: %+v", res.Hits)
	}
	// A new index on the same store (another node, a restart) takes the
	// stored vectors.
	emb2 := &conceptEmbedder{}
	idx2 := NewHybridIndex(idx.st, idx.hy.vs, emb2)
	if _, err := idx2.Query(ctx, "main", dir, "sedan", 0, 0); err != nil {
		t.Fatal(err)
	}
	if got := emb2.texts.Load(); got != 1 {
		t.Errorf("a fresh index embedded %d texts, want 1 (the query)", got)
	}
	// Another model embeds again.
	emb3 := &conceptEmbedder{model: "fake/concepts-2"}
	idx3 := NewHybridIndex(idx.st, idx.hy.vs, emb3)
	idx3.Query(ctx, "main", dir, "sedan", 0, 0)
	if got := emb3.texts.Load(); got < 4 {
		t.Errorf("a new model embedded %d texts, want every chunk and the query", got)
	}
}

func TestHybridFallsBackToKeywords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeFile(t, dir, "MEMORY.md", "# Memory\nThe deploy key lives in the vault.\n")

	none := openHybrid(t, &conceptEmbedder{fail: fmt.Errorf("%w: no key", ErrNoEmbeddings)})
	res, err := none.Query(ctx, "main", dir, "deploy key", 0, 0)
	if err != nil || res.Mode != "fts-only" || res.Warning != "" || len(res.Hits) != 1 {
		t.Fatalf("no provider: %+v %v", res, err)
	}
	broken := openHybrid(t, &conceptEmbedder{fail: errors.New("HTTP 500 from the embeddings endpoint")})
	res, err = broken.Query(ctx, "main", dir, "deploy key", 0, 0)
	if err != nil || res.Mode != "fts-only" || !strings.Contains(res.Warning, "HTTP 500") || len(res.Hits) != 1 {
		t.Fatalf("failing provider: %+v %v", res, err)
	}
}

func TestHybridMinScoreKeepsKeywordMatches(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeFile(t, dir, "MEMORY.md", "# Memory\nTicket ZX-9 is blocked.\n")
	idx := openHybrid(t, &conceptEmbedder{})
	res, err := idx.Query(ctx, "main", dir, "ZX-9", 0, 0.99)
	if err != nil || len(res.Hits) != 1 {
		t.Fatalf("every hit below minScore dropped the keyword match: %+v %v", res, err)
	}
}

func TestDecay(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		path string
		want float64
	}{
		{"MEMORY.md", 1},
		{"memory/ideas.md", 1},
		{"memory/2026-11-27.md", 1},
		{"memory/2026-10-28.md", 0.5},
		{"memory/deep/2026-09-28-standup.md", 0.25},
		{"memory/2026-12-01.md", 1},
	} {
		if got := decay(tt.path, now); math.Abs(got-tt.want) > 0.02 {
			t.Errorf("decay(%s) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

func TestDot(t *testing.T) {
	for n := range 11 {
		a, b := make([]float32, n), make([]float32, n)
		want := 0.0
		for i := range n {
			a[i], b[i] = float32(i+1), float32(2*i-3)
			want += float64(a[i]) * float64(b[i])
		}
		if got := dot(a, b); got != want {
			t.Errorf("dot of %d = %v, want %v", n, got, want)
		}
	}
}

func BenchmarkDot1536(b *testing.B) {
	x, y := make([]float32, 1536), make([]float32, 1536)
	for i := range x {
		x[i], y[i] = float32(i%7), float32(i%5)
	}
	for b.Loop() {
		dot(x, y)
	}
}

// TestHybridSnippetsAndRemovals checks what the search path's shortcuts
// must keep: snippets cut to SnippetMaxChars whichever leg found the chunk,
// and a file removed since the last search gone from the vector leg too.
func TestHybridSnippetsAndRemovals(t *testing.T) {
	ctx := context.Background()
	idx := openHybrid(t, &conceptEmbedder{})
	dir := t.TempDir()
	long := "# Car\nThe sedan " + strings.Repeat("é", 900) + "\n"
	writeFile(t, dir, "MEMORY.md", long)
	writeFile(t, dir, "memory/rain.md", "# Weather\nThe forecast says rain all week.\n")
	for _, q := range []string{"sedan", "automobile"} { // keyword and vector leg
		res, err := idx.Query(ctx, "main", dir, q, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) == 0 || res.Hits[0].Path != "MEMORY.md" {
			t.Fatalf("%s: %+v", q, res.Hits)
		}
		if n := len([]rune(res.Hits[0].Snippet)); n != SnippetMaxChars {
			t.Errorf("%s: snippet of %d characters, want %d", q, n, SnippetMaxChars)
		}
	}
	res, _ := idx.Query(ctx, "main", dir, "sunny", 0, 0)
	if len(res.Hits) == 0 || res.Hits[0].Path != "memory/rain.md" {
		t.Fatalf("before removal: %+v", res.Hits)
	}
	if err := os.Remove(filepath.Join(dir, "memory/rain.md")); err != nil {
		t.Fatal(err)
	}
	res, _ = idx.Query(ctx, "main", dir, "sunny", 0, 0)
	for _, h := range res.Hits {
		if h.Path == "memory/rain.md" {
			t.Errorf("removed file still found: %+v", res.Hits)
		}
	}
}
