package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// benchVocab is a vocabulary of made-up words; word i is drawn with weight
// ~1/(i+1) so that some words are common and most are rare, as in prose.
func benchVocab(n int) []string {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for range 4 + r.IntN(6) {
			b.WriteByte(byte('a' + r.IntN(26)))
		}
		out[i] = b.String()
	}
	return out
}

// writeCorpus writes files Markdown files of lines lines each (about 80
// characters a line) under dir/memory and returns the bytes written.
func writeCorpus(b *testing.B, dir string, files, lines int, vocab []string) int64 {
	b.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	zipf := rand.NewZipf(rand.New(rand.NewPCG(5, 6)), 1.1, 1, uint64(len(vocab)-1))
	var total int64
	if err := os.MkdirAll(filepath.Join(dir, "memory"), 0o700); err != nil {
		b.Fatal(err)
	}
	for f := range files {
		var sb strings.Builder
		fmt.Fprintf(&sb, "# Notes %d\n", f)
		for range lines {
			for w := range 12 {
				if w > 0 {
					sb.WriteByte(' ')
				}
				sb.WriteString(vocab[zipf.Uint64()])
			}
			if r.IntN(10) == 0 {
				sb.WriteString(".")
			}
			sb.WriteByte('\n')
		}
		p := filepath.Join(dir, "memory", fmt.Sprintf("2026-01-%03d.md", f))
		if err := os.WriteFile(p, []byte(sb.String()), 0o600); err != nil {
			b.Fatal(err)
		}
		total += int64(sb.Len())
	}
	return total
}

// BenchmarkSearchKeyword10k measures memory_search's keyword path (the
// per-search freshness check of 323 files included) over an index of about
// 10,000 chunks; it reports the p50 and p95 of one search in ms.
func BenchmarkSearchKeyword10k(b *testing.B) {
	ctx := context.Background()
	vocab := benchVocab(20000)
	dir := b.TempDir()
	writeCorpus(b, dir, 323, 404, vocab)
	idx, _ := openIndex(b)
	st, err := idx.Sync(ctx, "bench", dir)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	var durs []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		// Two words of middling frequency: a typical recall query.
		q := vocab[20+r.IntN(400)] + " " + vocab[20+r.IntN(400)]
		t0 := time.Now()
		if _, err := idx.Search(ctx, "bench", dir, q, 6, 0); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(t0))
	}
	cpu := cpuTime() - cpu0
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(durs[len(durs)*95/100].Microseconds())/1000, "p95-ms")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(len(durs)), "cpu-ms/op")
	b.ReportMetric(float64(st.Chunks), "chunks")
}

// BenchmarkIndexPerMB measures a full index of about 2 MB of Markdown into
// a fresh store; it reports ms per MB.
func BenchmarkIndexPerMB(b *testing.B) {
	ctx := context.Background()
	vocab := benchVocab(20000)
	dir := b.TempDir()
	size := writeCorpus(b, dir, 50, 500, vocab)
	var total time.Duration
	n := 0
	for b.Loop() {
		b.StopTimer()
		idx, _ := openIndex(b)
		b.StartTimer()
		t0 := time.Now()
		if _, err := idx.Sync(ctx, fmt.Sprint("s", n), dir); err != nil {
			b.Fatal(err)
		}
		total += time.Since(t0)
		n++
	}
	mb := float64(size) / (1 << 20)
	b.ReportMetric(float64(total.Milliseconds())/float64(n)/mb, "ms/MB")
	b.ReportMetric(mb, "MB")
}

// randEmbedder gives each text a pseudo-random unit vector of dims floats
// (seeded by the text), at memory cost, not network cost.
type randEmbedder struct{ dims int }

func (randEmbedder) Model() string { return "bench/rand" }

func (randEmbedder) Ready() error { return nil }

func (e randEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		var seed uint64
		for _, c := range []byte(t) {
			seed = seed*131 + uint64(c)
		}
		r := rand.New(rand.NewPCG(seed, 9))
		v := make([]float32, e.dims)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		out[i] = v
	}
	return out, nil
}

// BenchmarkSearchHybrid10k measures memory_search's hybrid path over about
// 10,000 chunks with 1,536-dimension vectors (OpenAI's small model), the
// index built and embedded before the timer starts; the query's embedding
// is local and cheap, so the figure is the search itself. It reports the
// p50 and p95 in ms and the vectors' memory in MB.
func BenchmarkSearchHybrid10k(b *testing.B) {
	ctx := context.Background()
	vocab := benchVocab(20000)
	dir := b.TempDir()
	writeCorpus(b, dir, 323, 404, vocab)
	plain, st := openIndex(b)
	idx := NewHybridIndex(plain.st, st, randEmbedder{dims: 1536})
	if _, err := idx.Sync(ctx, "bench", dir); err != nil {
		b.Fatal(err)
	}
	// The heap the vector index adds (its chunks' text and vectors).
	before := heapInuse()
	if _, err := idx.Query(ctx, "bench", dir, "warm up", 6, 0); err != nil {
		b.Fatal(err)
	}
	added := heapInuse() - before
	vi := idx.hy.scopes["bench"]
	r := rand.New(rand.NewPCG(7, 8))
	var durs []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		q := vocab[20+r.IntN(400)] + " " + vocab[20+r.IntN(400)]
		t0 := time.Now()
		res, err := idx.Query(ctx, "bench", dir, q, 6, 0)
		if err != nil || res.Mode != "hybrid" {
			b.Fatal(err, res.Mode)
		}
		durs = append(durs, time.Since(t0))
	}
	cpu := cpuTime() - cpu0
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(durs[len(durs)*95/100].Microseconds())/1000, "p95-ms")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(len(durs)), "cpu-ms/op")
	b.ReportMetric(float64(len(vi.rows)), "chunks")
	b.ReportMetric(float64(len(vi.rows)*1536*4)/(1<<20), "vec-MB")
	b.ReportMetric(float64(added)/(1<<20), "heap-added-MB")
}

// heapInuse is the heap in use after a collection.
func heapInuse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// timedEmbedder adds up the time spent in e's Embed calls.
type timedEmbedder struct {
	randEmbedder
	spent *time.Duration
}

func (e timedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	t0 := time.Now()
	defer func() { *e.spent += time.Since(t0) }()
	return e.randEmbedder.Embed(ctx, texts)
}

// BenchmarkIndexPerMBHybrid measures a full index of about 2 MB of
// Markdown into a fresh store with 1,536-dimension vectors: chunking,
// keyword index, hashing, storing and loading the vectors. It reports ms
// per MB without the (local, pseudo-random) embedding calls, and their
// share apart.
func BenchmarkIndexPerMBHybrid(b *testing.B) {
	ctx := context.Background()
	vocab := benchVocab(20000)
	dir := b.TempDir()
	size := writeCorpus(b, dir, 50, 500, vocab)
	var total, embed time.Duration
	n := 0
	for b.Loop() {
		b.StopTimer()
		plain, st := openIndex(b)
		idx := NewHybridIndex(plain.st, st, timedEmbedder{randEmbedder{dims: 1536}, &embed})
		b.StartTimer()
		t0 := time.Now()
		if _, err := idx.Index(ctx, fmt.Sprint("s", n), dir); err != nil {
			b.Fatal(err)
		}
		total += time.Since(t0)
		n++
	}
	mb := float64(size) / (1 << 20)
	b.ReportMetric(float64((total-embed).Milliseconds())/float64(n)/mb, "ms/MB")
	b.ReportMetric(float64(embed.Milliseconds())/float64(n)/mb, "embed-ms/MB")
	b.ReportMetric(mb, "MB")
}
