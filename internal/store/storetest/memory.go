package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard/internal/store"
)

// RunMemory runs the memory index conformance suite against the backend
// open returns (a new, empty store per subtest).
func RunMemory(t *testing.T, open func(t *testing.T) store.MemoryStore) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.MemoryStore)
	}{
		{"PutListReplace", testMemoryPutListReplace},
		{"Search", testMemorySearch},
		{"Delete", testMemoryDelete},
		{"ConcurrentPut", testMemoryConcurrentPut},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

func putMemory(t *testing.T, s store.MemoryStore, scope, path, hash string, texts ...string) {
	t.Helper()
	var chunks []store.MemoryChunk
	for i, tx := range texts {
		chunks = append(chunks, store.MemoryChunk{StartLine: i*10 + 1, EndLine: i*10 + 5, Text: tx, Search: tx})
	}
	f := store.MemoryFile{Path: path, Hash: hash, Size: int64(len(hash)), MtimeNs: 42}
	if err := s.PutMemoryFile(context.Background(), scope, f, chunks); err != nil {
		t.Fatalf("PutMemoryFile %s: %v", path, err)
	}
}

func searchMemory(t *testing.T, s store.MemoryStore, scope string, limit int, terms ...[]string) []store.MemoryHit {
	t.Helper()
	hits, err := s.SearchMemory(context.Background(), scope, terms, limit)
	if err != nil {
		t.Fatalf("SearchMemory %v: %v", terms, err)
	}
	return hits
}

func testMemoryPutListReplace(t *testing.T, s store.MemoryStore) {
	ctx := context.Background()
	putMemory(t, s, "a", "memory/b.md", "h1", "one")
	putMemory(t, s, "a", "MEMORY.md", "h2", "two")
	putMemory(t, s, "other", "MEMORY.md", "h3", "three")
	files, err := s.MemoryFiles(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Path != "MEMORY.md" || files[1].Path != "memory/b.md" {
		t.Fatalf("files = %+v, want MEMORY.md, memory/b.md", files)
	}
	if f := files[1]; f.Hash != "h1" || f.Size != 2 || f.MtimeNs != 42 {
		t.Fatalf("file = %+v", f)
	}
	// Replacing a file replaces its chunks.
	putMemory(t, s, "a", "memory/b.md", "h4", "four")
	if hits := searchMemory(t, s, "a", 10, []string{"one"}); len(hits) != 0 {
		t.Fatalf("old chunk still found: %+v", hits)
	}
	if hits := searchMemory(t, s, "a", 10, []string{"four"}); len(hits) != 1 || hits[0].Path != "memory/b.md" {
		t.Fatalf("new chunk: %+v", hits)
	}
	files, _ = s.MemoryFiles(ctx, "a")
	if len(files) != 2 || files[1].Hash != "h4" {
		t.Fatalf("files after replace = %+v", files)
	}
}

func testMemorySearch(t *testing.T, s store.MemoryStore) {
	putMemory(t, s, "a", "memory/x.md", "h", "the deploy key lives in vault", "lunch was pasta today",
		"deploy deploy deploy notes about the deploy pipeline")
	putMemory(t, s, "a", "MEMORY.md", "h", "東 京 is the capital")
	putMemory(t, s, "a", "memory/infra.md", "h", "The backup bucket is named ORCA 7731 and lives in eu west")
	// Numbers are words.
	if hits := searchMemory(t, s, "a", 10, []string{"orca"}, []string{"7731"}, []string{"bucket"}); len(hits) != 1 {
		t.Fatalf("orca 7731 bucket: %+v", hits)
	}
	putMemory(t, s, "b", "MEMORY.md", "h", "deploy elsewhere")

	hits := searchMemory(t, s, "a", 10, []string{"deploy"})
	if len(hits) != 2 {
		t.Fatalf("deploy: %d hits, want 2 (scope a only): %+v", len(hits), hits)
	}
	if hits[0].StartLine != 21 || hits[0].EndLine != 25 {
		t.Fatalf("first hit %+v, want the chunk that says deploy four times", hits[0])
	}
	if hits[0].Relevance < hits[1].Relevance || hits[1].Relevance < 0 {
		t.Fatalf("relevance not descending: %v, %v", hits[0].Relevance, hits[1].Relevance)
	}
	// Every term is required.
	if hits := searchMemory(t, s, "a", 10, []string{"deploy"}, []string{"vault"}); len(hits) != 1 || hits[0].StartLine != 1 {
		t.Fatalf("deploy AND vault: %+v", hits)
	}
	if hits := searchMemory(t, s, "a", 10, []string{"deploy"}, []string{"nowhere"}); len(hits) != 0 {
		t.Fatalf("deploy AND nowhere: %+v", hits)
	}
	// A phrase matches its words in order only.
	if hits := searchMemory(t, s, "a", 10, []string{"東", "京"}); len(hits) != 1 || hits[0].Path != "MEMORY.md" {
		t.Fatalf("phrase: %+v", hits)
	}
	if hits := searchMemory(t, s, "a", 10, []string{"京", "東"}); len(hits) != 0 {
		t.Fatalf("reversed phrase matched: %+v", hits)
	}
	// Case-insensitive; text comes back as written.
	if hits := searchMemory(t, s, "a", 10, []string{"vault"}); len(hits) != 1 || hits[0].Text != "the deploy key lives in vault" {
		t.Fatalf("text: %+v", hits)
	}
	if hits := searchMemory(t, s, "a", 1, []string{"deploy"}); len(hits) != 1 {
		t.Fatalf("limit 1: %d hits", len(hits))
	}
	if hits := searchMemory(t, s, "a", 10); len(hits) != 0 {
		t.Fatalf("no terms: %+v", hits)
	}
}

func testMemoryDelete(t *testing.T, s store.MemoryStore) {
	ctx := context.Background()
	putMemory(t, s, "a", "memory/x.md", "h", "alpha")
	putMemory(t, s, "a", "memory/y.md", "h", "alpha")
	if err := s.DeleteMemoryFile(ctx, "a", "memory/x.md"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMemoryFile(ctx, "a", "memory/missing.md"); err != nil {
		t.Fatalf("deleting a missing file: %v", err)
	}
	hits := searchMemory(t, s, "a", 10, []string{"alpha"})
	if len(hits) != 1 || hits[0].Path != "memory/y.md" {
		t.Fatalf("after delete: %+v", hits)
	}
	files, err := s.MemoryFiles(ctx, "a")
	if err != nil || len(files) != 1 || files[0].Path != "memory/y.md" {
		t.Fatalf("files after delete = %+v, %v", files, err)
	}
}

// testMemoryConcurrentPut: nodes re-indexing the same file at once leave
// one set of its chunks.
func testMemoryConcurrentPut(t *testing.T, s store.MemoryStore) {
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Go(func() {
			chunks := []store.MemoryChunk{
				{StartLine: 1, EndLine: 2, Text: "shared words", Search: "shared words"},
				{StartLine: 3, EndLine: 4, Text: "shared again", Search: "shared again"},
			}
			f := store.MemoryFile{Path: "memory/race.md", Hash: fmt.Sprint("h", i), Size: 1, MtimeNs: int64(i)}
			errs <- s.PutMemoryFile(context.Background(), "a", f, chunks)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if hits := searchMemory(t, s, "a", 100, []string{"shared"}); len(hits) != 2 {
		t.Fatalf("after %d concurrent puts: %d chunks, want 2", writers, len(hits))
	}
}
