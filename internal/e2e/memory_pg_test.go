package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/store/postgres/pgtest"
)

// TestPostgresMemorySearchTwoNodes: two gateways on one PostgreSQL
// database and one workspace; a note written through the first is found by
// memory_search and read by memory_get through the second, from the index
// the database keeps.
func TestPostgresMemorySearchTwoNodes(t *testing.T) {
	dsn := pgtest.DB(t)
	env := "SWITCHBOARD_DATABASE_URL=" + dsn
	ws := filepath.Join(t.TempDir(), "shared-workspace")
	agents := fmt.Sprintf(`{ id: "main", default: true, workspace: %q }`, ws)
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g1 := startWith(t, t.TempDir(), llm, agents, "", env, "SWITCHBOARD_NODE_ID=n1")
	g2 := startWith(t, t.TempDir(), llm, agents, "", env, "SWITCHBOARD_NODE_ID=n2")
	c1, c2 := g1.dial(t), g2.dial(t)

	toolResult(t, c1, "agent:main:writer", "pgmem-write", "write", map[string]any{"path": "memory/infra.md",
		"content": "The backup bucket is named ORCA-7731 and lives in eu-west.\n"})
	res := toolResult(t, c1, "agent:main:writer", "pgmem-search1", "memory_search", map[string]any{"query": "backup bucket"})
	if hits, _ := res["results"].([]any); len(hits) != 1 {
		t.Fatalf("memory_search on n1 = %v", res)
	}
	res = toolResult(t, c2, "agent:main:reader", "pgmem-search2", "memory_search", map[string]any{"query": "ORCA 7731 bucket"})
	hits, _ := res["results"].([]any)
	if len(hits) != 1 || hits[0].(map[string]any)["path"] != "memory/infra.md" {
		t.Fatalf("memory_search on n2 = %v", res)
	}
	get := toolResult(t, c2, "agent:main:reader", "pgmem-get", "memory_get", map[string]any{"path": "memory/infra.md"})
	if get["status"] != "ok" || !strings.Contains(get["text"].(string), "ORCA-7731") {
		t.Fatalf("memory_get on n2 = %v", get)
	}
}

// TestPostgresMemoryHybridTwoNodes: the vectors live in the database, so
// the second node ranks by meaning with no embedding request but its
// query's.
func TestPostgresMemoryHybridTwoNodes(t *testing.T) {
	dsn := pgtest.DB(t)
	env := "SWITCHBOARD_DATABASE_URL=" + dsn
	ws := filepath.Join(t.TempDir(), "shared-workspace")
	agents := fmt.Sprintf(`{ id: "main", default: true, workspace: %q }`, ws)
	extra := `memory: { search: { provider: "fake", model: "embed-1" } },`
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key", Embed: conceptEmbedding})
	g1 := startWith(t, t.TempDir(), llm, agents, extra, env, "SWITCHBOARD_NODE_ID=n1")
	g2 := startWith(t, t.TempDir(), llm, agents, extra, env, "SWITCHBOARD_NODE_ID=n2")
	c1, c2 := g1.dial(t), g2.dial(t)

	toolResult(t, c1, "agent:main:writer", "pghy-write", "write", map[string]any{"path": "memory/garage.md",
		"content": "# Garage\nThe sedan needs new tyres before winter.\n\n# Plants\nWater the ferns on Sundays.\n"})
	res := toolResult(t, c1, "agent:main:writer", "pghy-1", "memory_search", map[string]any{"query": "vehicle maintenance"})
	if res["mode"] != "hybrid" {
		t.Fatalf("memory_search on n1 = %v", res)
	}
	n := embeddingRequests(llm)
	res = toolResult(t, c2, "agent:main:reader", "pghy-2", "memory_search", map[string]any{"query": "my automobile"})
	hits, _ := res["results"].([]any)
	if res["mode"] != "hybrid" || len(hits) == 0 || !strings.Contains(hits[0].(map[string]any)["snippet"].(string), "sedan") {
		t.Fatalf("memory_search on n2 = %v", res)
	}
	if got := embeddingRequests(llm) - n; got != 1 {
		t.Errorf("n2 made %d embedding requests, want 1 (its query): the vectors are in the database", got)
	}
}
