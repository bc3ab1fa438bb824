package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/fakellm"
)

// TestMemoryFilesAndTools: MEMORY.md is in the system prompt of a new
// session's first request; a fact written by `write` into memory/ in one
// session is found by memory_search in a later session and read back by
// memory_get, which refuses files that are not memory; after /new the
// day's notes are in the prompt.
func TestMemoryFilesAndTools(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "workspace")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "MEMORY.md"), []byte("# Memory\nThe project codename is BLUEHERON.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := start(t, dir, llm)
	c := g.dial(t)

	// Session one writes a daily note with the write tool.
	today := time.Now().Format(time.DateOnly)
	note := "memory/" + today + ".md"
	w := toolResult(t, c, "agent:main:one", "mem-write", "write", map[string]any{"path": note,
		"content": "# Notes\n\nDecided: the release train leaves on Thursdays (ticket ZEPHYR-42).\n"})
	if w == nil {
		t.Fatal("write gave no result")
	}
	first := llm.Requests()[0]
	if body := string(first.Body); !strings.Contains(body, "## MEMORY.md") || !strings.Contains(body, "BLUEHERON") {
		t.Errorf("first request of a new session lacks MEMORY.md: %.800s", body)
	}

	// A later session finds it by keyword and reads it back.
	n := len(llm.Requests())
	res := toolResult(t, c, "agent:main:two", "mem-search", "memory_search", map[string]any{"query": "release train Thursdays"})
	if body := string(llm.Requests()[n].Body); !strings.Contains(body, "BLUEHERON") {
		t.Errorf("second session's first request lacks MEMORY.md")
	}
	if res["mode"] != "fts-only" || res["provider"] != "none" || !strings.Contains(res["note"].(string), "Keyword search only") {
		t.Errorf("memory_search result does not say it is keyword-only: %v", res)
	}
	hits, _ := res["results"].([]any)
	if len(hits) == 0 {
		t.Fatalf("memory_search found nothing: %v", res)
	}
	hit := hits[0].(map[string]any)
	if hit["path"] != note || hit["source"] != "memory" || hit["corpus"] != "memory" ||
		!strings.Contains(hit["snippet"].(string), "ZEPHYR-42") || hit["citation"] != note+"#L1-L3" {
		t.Errorf("hit = %v", hit)
	}
	get := toolResult(t, c, "agent:main:two", "mem-get", "memory_get", map[string]any{"path": note, "from": hit["startLine"], "lines": 3})
	if get["status"] != "ok" || get["path"] != note || !strings.Contains(get["text"].(string), "Decided: the release train leaves on Thursdays") {
		t.Errorf("memory_get = %v", get)
	}
	refused := toolResult(t, c, "agent:main:two", "mem-get-agents", "memory_get", map[string]any{"path": "AGENTS.md"})
	if refused["status"] != "error" || refused["code"] != "MEMORY_PATH_NOT_ALLOWED" || refused["error"] != "path is not an allowed Markdown memory file" {
		t.Errorf("memory_get AGENTS.md = %v", refused)
	}

	// After /new the day's notes are in the prompt.
	call(t, c, "chat.send", map[string]any{"sessionKey": "agent:main:two", "message": "/new", "idempotencyKey": "mem-new"})
	n = len(llm.Requests())
	if w := runTurn(t, c, "agent:main:two", "mem-after-new", "/reply ok\nhello"); w["status"] != "ok" {
		t.Fatalf("turn after /new: %v", w)
	}
	if body := string(llm.Requests()[n].Body); !strings.Contains(body, "## "+note) || !strings.Contains(body, "ZEPHYR-42") {
		t.Errorf("request after /new lacks today's note: %.1500s", body)
	}
	// A session not started by /new does not get them.
	n = len(llm.Requests())
	if w := runTurn(t, c, "agent:main:three", "mem-plain", "/reply ok\nhello"); w["status"] != "ok" {
		t.Fatalf("plain turn: %v", w)
	}
	if body := string(llm.Requests()[n].Body); strings.Contains(body, "ZEPHYR-42") {
		t.Errorf("a fresh session got the daily notes")
	}
}

// TestMemorySearchDisabled: memory.search.enabled false removes the memory
// tools, and a model that calls one anyway gets an error.
func TestMemorySearchDisabled(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := startWith(t, "", llm, "", `memory: { search: { enabled: false } },`)
	c := g.dial(t)
	got := toolText(t, c, "agent:main:main", "md-1", "memory_search", map[string]any{"query": "anything"})
	if !strings.Contains(got, "Tool memory_search not found") {
		t.Errorf("memory_search with memory search disabled = %q", got)
	}
	for _, name := range offeredTools(t, llm) {
		if strings.HasPrefix(name, "memory_") {
			t.Errorf("%s offered with memory search disabled", name)
		}
	}
}

// conceptEmbedding is a fake embeddings server's notion of meaning: one
// axis per concept whose words a text contains, so a paraphrase lands
// near the original without sharing a word with it.
func conceptEmbedding(text string, dims int) []float64 {
	concepts := [][]string{
		{"car", "automobile", "vehicle", "sedan"},
		{"weather", "rain", "forecast", "sunny"},
		{"birthday", "anniversary", "party"},
	}
	v := make([]float64, len(concepts)+1)
	v[len(concepts)] = 0.05
	low := strings.ToLower(text)
	for i, words := range concepts {
		for _, w := range words {
			if strings.Contains(low, w) {
				v[i] = 1
			}
		}
	}
	return v
}

// embeddingRequests counts llm's /v1/embeddings requests.
func embeddingRequests(llm *fakellm.Server) int {
	n := 0
	for _, r := range llm.Requests() {
		if r.Path == "/v1/embeddings" {
			n++
		}
	}
	return n
}

// TestMemorySearchHybrid: with memory.search naming an embedding model,
// memory_search ranks a paraphrase (no word shared with the note) above an
// unrelated note, says it searched in hybrid mode, and embeds each chunk
// once: a later search embeds only its query.
func TestMemorySearchHybrid(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "workspace")
	os.MkdirAll(filepath.Join(ws, "memory"), 0o700)
	os.WriteFile(filepath.Join(ws, "MEMORY.md"), []byte("# Memory\nBought a blue car in March.\n"), 0o600)
	os.WriteFile(filepath.Join(ws, "memory", "notes.md"), []byte("# Notes\nThe forecast says rain all week.\n"), 0o600)
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key", Embed: conceptEmbedding})
	g := startWith(t, dir, llm, "", `memory: { search: { provider: "fake", model: "embed-1" } },`)
	c := g.dial(t)

	res := toolResult(t, c, "agent:main:main", "hy-1", "memory_search", map[string]any{"query": "which automobile did I buy"})
	if res["mode"] != "hybrid" || res["provider"] != "fake" || res["model"] != "embed-1" || res["note"] != nil {
		t.Errorf("memory_search does not say hybrid: %v", res)
	}
	hits, _ := res["results"].([]any)
	if len(hits) < 2 {
		t.Fatalf("hits = %v", res)
	}
	first, second := hits[0].(map[string]any), hits[1].(map[string]any)
	if first["path"] != "MEMORY.md" || !(first["score"].(float64) > second["score"].(float64)) {
		t.Errorf("the paraphrase is not ranked first: %v", hits)
	}
	n := embeddingRequests(llm)
	toolResult(t, c, "agent:main:main", "hy-2", "memory_search", map[string]any{"query": "is it sunny tomorrow"})
	if got := embeddingRequests(llm) - n; got != 1 {
		t.Errorf("a second search made %d embedding requests, want 1 (its query)", got)
	}
}
