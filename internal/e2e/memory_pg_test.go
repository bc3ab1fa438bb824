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
