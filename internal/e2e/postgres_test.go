package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/store/postgres/pgtest"
)

// TestPostgresSessionTools runs the gateway on PostgreSQL and drives the
// session tools through the protocol: sessions_send with a wait, spawned
// children announcing back, listing and history. It then kills the gateway
// with SIGKILL mid-flight and starts another on a fresh state dir and the
// same database: everything is still there, and every child's outcome
// reaches the requester exactly once.
func TestPostgresSessionTools(t *testing.T) {
	dsn := pgtest.DB(t)
	env := "SWITCHBOARD_DATABASE_URL=" + dsn
	dir := t.TempDir()
	writeAgents(t, dir, "workspace", `/when "Agent-to-agent announce step." /reply ANNOUNCE_SKIP`)
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := startWith(t, dir, llm, `{ id: "main", default: true }, { id: "ops" }`, sessionsConfig, env, "SWITCHBOARD_NODE_ID=n1")
	c := g.dial(t)

	// The sessions methods name the database, without its password.
	list := call(t, c, "sessions.list", map[string]any{})
	if p, _ := list["path"].(string); !strings.HasPrefix(p, "postgres://") {
		t.Errorf("sessions.list path = %q, want the PostgreSQL URL", p)
	}

	call(t, c, "sessions.create", map[string]any{"key": "agent:main:tgt"})
	res := toolResult(t, c, "agent:main:req1", "s1", "sessions_send", map[string]any{
		"sessionKey": "agent:main:tgt", "message": "/reply /reply /reply REPLY_SKIP", "timeoutSeconds": 20,
	})
	if res["status"] != "ok" || res["reply"] != "/reply /reply REPLY_SKIP" {
		t.Fatalf("sessions_send = %v", res)
	}
	eventually(t, "the flow's turns", func() bool { return interSession(history(t, c, "agent:main:tgt")) == 3 })

	// A second gateway on the same database joins it as another node.
	other := startWith(t, t.TempDir(), llm, `{ id: "main", default: true }, { id: "ops" }`, sessionsConfig, env, "SWITCHBOARD_NODE_ID=n2")
	nodes := call(t, other.dial(t), "nodes.list", map[string]any{})
	if rows, _ := nodes["nodes"].([]any); nodes["nodeId"] != "n2" || nodes["backend"] != "postgres" || len(rows) != 2 {
		t.Errorf("nodes.list on the second node = %v", nodes)
	}
	other.kill()
	// Until the database sees n2's connections end, n2 still looks alive
	// to a spreading node (postgres.OfferLane): children would be handed
	// to it, and wait for its lease (10 s) to end before they start again.
	eventually(t, "the database to see n2's end", func() bool { return !leaseConnected(t, dsn, "n2") })

	const children = 20
	call(t, c, "sessions.create", map[string]any{"key": "agent:main:boss"})
	childKeys := map[string]bool{}
	for i := range children {
		task := fmt.Sprintf("child %d\n/reply quick result %d", i, i)
		if i%2 == 1 { // half are still running when the gateway dies
			task = fmt.Sprintf("child %d\n/sleep 30s\n/reply slow result %d", i, i)
		}
		res := call(t, c, "tools.invoke", map[string]any{"tool": "sessions_spawn", "sessionKey": "agent:main:boss", "args": map[string]any{"task": task}})
		d, _ := res["details"].(map[string]any)
		if d["status"] != "accepted" {
			t.Fatalf("spawn %d = %v", i, d)
		}
		childKeys[d["childSessionKey"].(string)] = true
	}
	time.Sleep(500 * time.Millisecond)
	g.kill()

	// A new state dir: everything the gateway knows comes from PostgreSQL.
	// The same node id: the restarted node adopts its own runs at once.
	g2 := startWith(t, t.TempDir(), llm, `{ id: "main", default: true }, { id: "ops" }`, sessionsConfig, env, "SWITCHBOARD_NODE_ID=n1")
	restarted := time.Now()
	c2 := g2.dial(t)
	tgt := texts(history(t, c2, "agent:main:tgt"))
	if len(tgt) < 4 || tgt[0] != "user: /reply /reply /reply REPLY_SKIP" || tgt[1] != "assistant: /reply /reply REPLY_SKIP" {
		t.Errorf("target transcript after restart = %q", tgt)
	}
	var counts map[string]int
	defer func() {
		if t.Failed() {
			var missing []string
			for k := range childKeys {
				if counts[k] == 0 {
					missing = append(missing, k)
				}
			}
			logAnnounces(t, dsn, missing)
		}
	}()
	eventually(t, "every child's announce", func() bool {
		counts, _ = announcesBySource(t, c2, "agent:main:boss")
		return len(counts) >= children
	})
	t.Logf("every child's announce in %v after the restart", time.Since(restarted).Round(time.Millisecond))
	time.Sleep(500 * time.Millisecond) // a late duplicate would show now
	counts, _ = announcesBySource(t, c2, "agent:main:boss")
	for k := range childKeys {
		if counts[k] != 1 {
			t.Errorf("child %s announced %d times, want once", k, counts[k])
		}
	}
	list = call(t, c2, "sessions.list", map[string]any{"spawnedBy": "agent:main:boss", "limit": 100})
	if rows, _ := list["sessions"].([]any); len(rows) != children {
		t.Errorf("sessions.list spawnedBy boss = %d rows, want %d", len(rows), children)
	}
}

// TestMigrateCommand moves a gateway from SQLite to PostgreSQL with
// "switchboard migrate": refused while the gateway runs, verified by counts
// and checksums, a no-op when re-run, and the gateway started on the
// database (with a fresh state dir) has the conversation.
func TestMigrateCommand(t *testing.T) {
	dsn := pgtest.DB(t)
	dir := t.TempDir()
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	g := start(t, dir, llm)
	c := g.dial(t)
	call(t, c, "chat.send", map[string]any{"sessionKey": "agent:main:main", "message": "/reply remember me", "idempotencyKey": "m1"})
	if w := call(t, c, "agent.wait", map[string]any{"runId": "m1", "timeoutMs": 20000}); w["status"] != "ok" {
		t.Fatalf("agent.wait = %v", w)
	}
	migrate := func() (string, error) {
		cmd := exec.Command(binPath, "migrate", "--to", dsn)
		cmd.Env = append(g.cmd.Env, "SWITCHBOARD_STATE_DIR="+dir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := migrate(); err == nil || !strings.Contains(out, "stop it first") {
		t.Errorf("migrate while the gateway runs: %v\n%s", err, out)
	}
	g.kill()

	out, err := migrate()
	if err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	for _, table := range []string{"sessions", "messages", "runs", "outbox"} {
		if !strings.Contains(out, "\n"+table+" ") {
			t.Errorf("no %s line in:\n%s", table, out)
		}
	}
	if strings.Contains(out, "NO") || strings.Contains(out, dsn) {
		t.Errorf("migrate output (a mismatch, or the URL with its secrets):\n%s", out)
	}
	again, err := migrate()
	if err != nil {
		t.Fatalf("second migrate: %v\n%s", err, again)
	}
	// The second run inserts nothing: every INSERTED column reads 0.
	for _, line := range strings.Split(again, "\n")[3:] {
		if f := strings.Fields(line); len(f) >= 4 && f[3] != "0" {
			t.Errorf("second migrate inserted rows: %q", line)
		}
	}

	g2 := start(t, t.TempDir(), llm, "SWITCHBOARD_DATABASE_URL="+dsn)
	c2 := g2.dial(t)
	got := texts(history(t, c2, "agent:main:main"))
	if len(got) != 2 || got[1] != "assistant: remember me" {
		t.Errorf("history on PostgreSQL after migrate = %q", got)
	}
}

// leaseConnected reports whether the database still has node's lease
// connection (which is what it takes a node to be offered lanes).
func leaseConnected(t *testing.T, dsn, node string) bool {
	t.Helper()
	return pgtest.Count(t, dsn, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, "switchboard-lease "+node) > 0
}
