package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/store/postgres/pgtest"
)

// startNode starts node id of a cluster on dsn with its own state dir,
// every agent's workspace at workspace ("" keeps the per-node default).
func startNode(t *testing.T, llm *fakellm.Server, dsn, id, workspace string) *gateway {
	t.Helper()
	defaults := ""
	if workspace != "" {
		defaults = fmt.Sprintf("workspace: %q,", workspace)
	}
	return startDefaults(t, t.TempDir(), llm, `{ id: "fake-1" }`, defaults, `{ id: "main", default: true }`, clusterConfig,
		"SWITCHBOARD_DATABASE_URL="+dsn, "SWITCHBOARD_NODE_ID="+id)
}

// doctorWorkspaces runs switchboard doctor on node g's state dir and
// returns its "workspaces" line (status and detail; "" when absent).
func doctorWorkspaces(t *testing.T, g *gateway, dsn string) (status, detail string) {
	t.Helper()
	cmd := exec.Command(binPath, "doctor", "--json")
	cmd.Env = append(os.Environ(), "SWITCHBOARD_STATE_DIR="+g.dir, "SWITCHBOARD_CONFIG=", "SWITCHBOARD_GATEWAY_TOKEN=",
		"SWITCHBOARD_DATABASE_URL="+dsn)
	out, _ := cmd.Output() // non-zero when a check fails
	var res struct {
		Checks []struct{ Name, Status, Detail string }
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
	for _, c := range res.Checks {
		if c.Name == "workspaces" {
			return c.Status, c.Detail
		}
	}
	return "", ""
}

// runNodes counts the runs of sessions whose key contains part by the node
// that ran them.
func runNodes(t *testing.T, dsn, part string) map[string]int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT node_id, count(*) FROM runs WHERE strpos(session_key, $1) > 0 GROUP BY node_id`, part)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for rows.Next() {
		var node string
		var n int
		if err := rows.Scan(&node, &n); err != nil {
			t.Fatal(err)
		}
		out[node] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestClusterWorkspaceMarkers: two nodes whose agents share one workspace
// directory mark it and see each other's markers (serve logs it, doctor
// passes; TestClusterSharedWorkspace shows a file written on one node read
// by the next turn on the other). A third node with a workspace of its own
// is reported, by its serve (loudly), by the sharing nodes when it joins,
// and by doctor (failing), as not sharing it.
func TestClusterWorkspaceMarkers(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	dsn := pgtest.DB(t)
	shared := t.TempDir()
	a := startNode(t, llm, dsn, "n0", shared)
	b := startNode(t, llm, dsn, "n1", shared)
	for _, id := range []string{"n0", "n1"} {
		if _, err := os.Stat(filepath.Join(shared, ".switchboard", "nodes", id)); err != nil {
			t.Fatalf("marker of %s: %v", id, err)
		}
	}
	eventually(t, "node B's check of the workspaces", func() bool {
		return strings.Contains(b.stdio.String(), "agent workspaces are shared with every live node")
	})
	eventually(t, "node A's check of the workspaces when B joined", func() bool {
		return strings.Contains(a.stdio.String(), "agent workspaces are shared with every live node")
	})
	if st, detail := doctorWorkspaces(t, b, dsn); st != "ok" || !strings.Contains(detail, "n0, n1") {
		t.Errorf("doctor workspaces with shared storage = %s %q", st, detail)
	}

	// A node with a workspace of its own.
	c := startNode(t, llm, dsn, "n2", "")
	eventually(t, "node C's warning", func() bool {
		return strings.Contains(c.stdio.String(), "AGENT WORKSPACES ARE NOT SHARED")
	})
	eventually(t, "node A's warning when C joined", func() bool {
		return strings.Contains(a.stdio.String(), "AGENT WORKSPACES ARE NOT SHARED")
	})
	if st, detail := doctorWorkspaces(t, c, dsn); st != "FAIL" || !strings.Contains(detail, "node n0, n1") {
		t.Errorf("doctor workspaces on the node with its own = %s %q", st, detail)
	}
	if st, detail := doctorWorkspaces(t, a, dsn); st != "FAIL" || !strings.Contains(detail, "node n2") {
		t.Errorf("doctor workspaces on a sharing node with an unshared one up = %s %q", st, detail)
	}
}

// TestClusterSpawnSpread: 20 children spawned at once on node A while node
// B is idle do not all run on A: some run on B (as the runs' node ids
// show), and each announces back once.
func TestClusterSpawnSpread(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	dsn := pgtest.DB(t)
	shared := t.TempDir()
	a := startNode(t, llm, dsn, "n0", shared)
	startNode(t, llm, dsn, "n1", shared)
	// Node A has read B's load once it checked B's markers.
	eventually(t, "node A to see node B", func() bool {
		return strings.Contains(a.stdio.String(), "agent workspaces are shared with every live node")
	})
	ca := a.dial(t)
	const children = 20
	// The children run long enough that all 20 are under way together
	// even on a loaded machine: node A's lanes pile up while B has none.
	call(t, ca, "sessions.create", map[string]any{"key": "agent:main:boss"})
	keys := map[string]bool{}
	for i := range children {
		res := call(t, ca, "tools.invoke", map[string]any{"tool": "sessions_spawn", "sessionKey": "agent:main:boss",
			"args": map[string]any{"task": fmt.Sprintf("child %d\n/sleep 3s\n/reply result %d", i, i)}})
		d, _ := res["details"].(map[string]any)
		if d["status"] != "accepted" {
			t.Fatalf("spawn %d = %v", i, d)
		}
		keys[d["childSessionKey"].(string)] = true
	}
	var counts map[string]int
	// Twenty 3 s children and twenty announce turns on the boss's one
	// lane took 9–12 s alone on a slow machine, and passed 20 s beside
	// the rest of the suite.
	eventuallyWithin(t, time.Minute, "every child's announce", func() bool {
		counts, _ = announcesBySource(t, ca, "agent:main:boss")
		return len(counts) >= children
	})
	for k := range keys {
		if counts[k] != 1 {
			t.Errorf("child %s announced %d times, want once", k, counts[k])
		}
	}
	byNode := runNodes(t, dsn, ":subagent:")
	t.Logf("children's runs by node: %v", byNode)
	if byNode["n0"]+byNode["n1"] != children {
		t.Errorf("children's runs by node = %v, want %d on n0 and n1", byNode, children)
	}
	if byNode["n1"] == 0 {
		t.Errorf("no child ran on the idle node B: %v\nnode A's log:\n%s", byNode, a.stdio.String())
	}
}
