package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/jackc/pgx/v5"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/store/postgres/pgtest"
)

// clusterConfig is the config of the nodes of a test cluster: the session
// tools open, and a short lease so that a killed node is adopted quickly.
const clusterConfig = sessionsConfig + `
  storage: { leaseMs: 2000 },`

// startCluster starts n nodes on one fresh database, each with its own
// state dir and node id n0, n1, ….
func startCluster(t *testing.T, n int, llm *fakellm.Server, extraConfig string) (string, []*gateway) {
	t.Helper()
	dsn := pgtest.DB(t)
	dir := t.TempDir()
	writeAgents(t, dir, "workspace", `/when "Agent-to-agent announce step." /reply ANNOUNCE_SKIP`)
	nodes := make([]*gateway, n)
	for i := range nodes {
		d := dir
		if i > 0 {
			d = t.TempDir()
			writeAgents(t, d, "workspace", `/when "Agent-to-agent announce step." /reply ANNOUNCE_SKIP`)
		}
		nodes[i] = startWith(t, d, llm, `{ id: "main", default: true }, { id: "ops" }`, clusterConfig+extraConfig,
			"SWITCHBOARD_DATABASE_URL="+dsn, fmt.Sprintf("SWITCHBOARD_NODE_ID=n%d", i))
	}
	return dsn, nodes
}

// TestClusterSessionTools runs the session tools with the requester and
// the target on different nodes of three: a sessions_send that waits for
// the reply (the target's lane held by another node), the agent-to-agent
// flow, spawned children announcing back to a requester on a third node,
// chat events and agent.wait for a run on another node, an abort sent to
// the wrong node, and nodes.list.
func TestClusterSessionTools(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	// Followup: a message to a busy session waits for its own turn (not
	// steered into the active one), so the reply is the target's answer
	// to it whatever the timing.
	dsn, nodes := startCluster(t, 3, llm, `messages: { queue: { mode: "followup" } },`)
	c := []*client.Client{nodes[0].dial(t), nodes[1].dial(t), nodes[2].dial(t)}

	list := call(t, c[1], "nodes.list", map[string]any{})
	if rows, _ := list["nodes"].([]any); list["nodeId"] != "n1" || len(rows) != 3 {
		t.Fatalf("nodes.list = %v", list)
	}
	// switchboard status lists the nodes, the answering one marked.
	out, err := exec.Command(binPath, "status", "--url", nodes[2].url, "--token", token).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "n2 *") || !strings.Contains(string(out), "n0 ") || !strings.Contains(string(out), "ends in") {
		t.Errorf("switchboard status on a cluster: %v\n%s", err, out)
	}
	health := call(t, c[2], "health", map[string]any{})
	if h, _ := health["nodes"].(map[string]any); h["nodeId"] != "n2" {
		t.Errorf("health nodes = %v", health["nodes"])
	}

	// The target's lane is busy on node 1 while node 0's requester sends.
	call(t, c[1], "chat.send", map[string]any{"sessionKey": "agent:main:tgt", "message": "/sleep 300ms\n/reply warm", "idempotencyKey": "warm"})
	res := toolResult(t, c[0], "agent:main:req", "s1", "sessions_send", map[string]any{
		"sessionKey": "agent:main:tgt", "message": "/reply /reply /reply REPLY_SKIP", "timeoutSeconds": 20,
	})
	if res["status"] != "ok" || res["reply"] != "/reply /reply REPLY_SKIP" {
		t.Fatalf("sessions_send across nodes = %v", res)
	}
	eventually(t, "the flow's turns", func() bool { return interSession(history(t, c[2], "agent:main:tgt")) == 3 })
	// sessions_list and sessions_history on a third node see both sides.
	listed := call(t, c[2], "tools.invoke", map[string]any{"tool": "sessions_list", "sessionKey": "agent:main:req", "args": map[string]any{}})
	if b, _ := json.Marshal(listed["details"]); !strings.Contains(string(b), "agent:main:tgt") || !strings.Contains(string(b), "agent:main:req") {
		t.Errorf("sessions_list on node 2 = %s", b)
	}
	hist := call(t, c[2], "tools.invoke", map[string]any{"tool": "sessions_history", "sessionKey": "agent:main:req", "args": map[string]any{"sessionKey": "agent:main:tgt"}})
	if b, _ := json.Marshal(hist["details"]); !strings.Contains(string(b), "/reply /reply REPLY_SKIP") {
		t.Errorf("sessions_history on node 2 = %s", b)
	}

	// agent.wait and chat events on node 2 for a run node 0 executes.
	events := c[2].Events()
	call(t, c[0], "chat.send", map[string]any{"sessionKey": "agent:main:watch", "message": "/sleep 200ms\n/reply watched", "idempotencyKey": "w1"})
	if w := call(t, c[2], "agent.wait", map[string]any{"runId": "w1", "timeoutMs": 20000}); w["status"] != "ok" {
		t.Fatalf("agent.wait on another node = %v", w)
	}
	final := false
	for deadline := time.After(10 * time.Second); !final; {
		select {
		case ev := <-events:
			if ev.Event == "chat" && strings.Contains(string(ev.Payload), `"state":"final"`) && strings.Contains(string(ev.Payload), "w1") {
				final = true
			}
		case <-deadline:
			t.Fatal("node 2's client got no final chat event for node 0's run")
		}
	}

	// A client follows node 0's run on node 1, loses its connection after
	// the first streamed text, and resumes on node 2 from the last seq it
	// saw: every event once, in order, and the final once.
	call(t, c[0], "chat.send", map[string]any{"sessionKey": "agent:main:resume", "message": "/reply partial\n/stall", "idempotencyKey": "rs1"})
	first := nodes[1].dial(t)
	go first.Call(context.Background(), "runs.watch", map[string]any{"runId": "rs1"}, nil) // ends with the connection
	var (
		seen       []int64
		lastStream string
	)
	for deadline := time.After(20 * time.Second); len(seen) == 0 || !strings.Contains(lastStream, "assistant"); {
		select {
		case ev := <-first.Events():
			var p struct {
				RunID, Stream string
				Seq           int64
			}
			if ev.Event == "runs.watch" && json.Unmarshal(ev.Payload, &p) == nil && p.RunID == "rs1" {
				seen, lastStream = append(seen, p.Seq), p.Stream
			}
		case <-deadline:
			t.Fatalf("node 1's watcher got %v of node 0's run", seen)
		}
	}
	first.Close()
	call(t, c[1], "chat.abort", map[string]any{"sessionKey": "agent:main:resume", "runId": "rs1"})
	second := watchRunsFrom(t, nodes[2], map[string]int64{"rs1": seen[len(seen)-1]})
	second.follow("rs1")
	second.wait()
	rs := second.results()["rs1"]
	all := append(seen, rs.seqs...)
	for i, seq := range all {
		if seq != int64(i+1) {
			t.Fatalf("resumed on another node: events %v, want 1..n each once", all)
		}
	}
	if rs.err != nil || rs.status != "error" || rs.final != int64(len(all)+1) {
		t.Fatalf("resumed on another node: final %+v after events %v", rs, all)
	}

	// An abort sent to a node that does not run the turn stops it.
	call(t, c[0], "chat.send", map[string]any{"sessionKey": "agent:main:long", "message": "/sleep 30s\n/reply never", "idempotencyKey": "long"})
	time.Sleep(300 * time.Millisecond)
	call(t, c[1], "chat.abort", map[string]any{"sessionKey": "agent:main:long", "runId": "long"})
	if w := call(t, c[2], "agent.wait", map[string]any{"runId": "long", "timeoutMs": 20000}); w["status"] != "aborted" && w["status"] != "error" {
		t.Fatalf("run after an abort on another node = %v", w)
	}

	// Children spawned on node 2 announce to their requester exactly once,
	// whichever node runs them and delivers the announce.
	const children = 12
	call(t, c[2], "sessions.create", map[string]any{"key": "agent:main:boss"})
	keys := map[string]bool{}
	for i := range children {
		res := call(t, c[i%3], "tools.invoke", map[string]any{"tool": "sessions_spawn", "sessionKey": "agent:main:boss",
			"args": map[string]any{"task": fmt.Sprintf("child %d\n/sleep 50ms\n/reply result %d", i, i)}})
		d, _ := res["details"].(map[string]any)
		if d["status"] != "accepted" {
			t.Fatalf("spawn %d = %v", i, d)
		}
		keys[d["childSessionKey"].(string)] = true
	}
	var counts map[string]int
	defer func() {
		if t.Failed() {
			logFailure(t, nodes, counts, keys)
			b, _ := json.Marshal(call(t, c[0], "announces.list", map[string]any{"status": "all"}))
			t.Logf("announces: %s", b)
			conn, err := pgx.Connect(context.Background(), dsn)
			if err == nil {
				rows, _ := conn.Query(context.Background(), `SELECT run_id, status, error, node_id, length(input::text), input::json->>'message' FROM runs WHERE session_key = 'agent:main:boss' ORDER BY created_at`)
				for rows.Next() {
					var id, st, e, node string
					var n int
					var msg *string
					rows.Scan(&id, &st, &e, &node, &n, &msg)
					m := -1
					if msg != nil {
						m = strings.Count(*msg, "\n---\n")
					}
					t.Logf("run %s %s %q node=%s inputLen=%d parts=%v", id, st, e, node, n, m)
				}
				conn.Close(context.Background())
			}
		}
	}()
	eventually(t, "every child's announce", func() bool {
		counts, _ = announcesBySource(t, c[0], "agent:main:boss")
		return len(counts) >= children
	})
	time.Sleep(time.Second) // a late duplicate would show now
	counts, _ = announcesBySource(t, c[1], "agent:main:boss")
	for k := range keys {
		if counts[k] != 1 {
			t.Errorf("child %s announced %d times, want once", k, counts[k])
		}
	}

	// A graceful stop (SIGTERM) leaves the cluster at once, its queued
	// work handed over: a turn queued behind a slow one on node 2's lane
	// runs on another node.
	call(t, c[2], "chat.send", map[string]any{"sessionKey": "agent:main:leave", "message": "/sleep 300ms\n/reply first", "idempotencyKey": "leave1"})
	call(t, c[2], "chat.send", map[string]any{"sessionKey": "agent:main:leave", "message": "/reply second", "idempotencyKey": "leave2"})
	nodes[2].cmd.Process.Signal(syscall.SIGTERM)
	<-nodes[2].done
	if rows, _ := call(t, c[0], "nodes.list", map[string]any{})["nodes"].([]any); len(rows) != 2 {
		t.Errorf("nodes after a graceful stop = %d, want 2 at once", len(rows))
	}
	for _, id := range []string{"leave1", "leave2"} {
		if w := call(t, c[0], "agent.wait", map[string]any{"runId": id, "timeoutMs": 20000}); w["status"] != "ok" {
			t.Errorf("run %s across a graceful stop = %v", id, w)
		}
	}
}

// TestClusterNodeKilled runs 100 messages to 20 sessions and 50 spawned
// children over three nodes, kills one node with SIGKILL while they are in
// flight, and checks on the survivors: every acknowledged message is in
// its session's history once, every run has a final status (agent.wait
// answers), and every child's outcome reached its requester exactly once.
func TestClusterNodeKilled(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	dsn, nodes := startCluster(t, 3, llm, "")
	c := []*client.Client{nodes[0].dial(t), nodes[1].dial(t), nodes[2].dial(t)}
	const (
		messages = 100
		sessions = 20
		children = 50
	)
	var (
		mu  sync.Mutex
		got []acked
		wg  sync.WaitGroup
	)
	for i := range messages {
		wg.Go(func() {
			key := fmt.Sprintf("agent:main:s%02d", i%sessions)
			id := fmt.Sprintf("m%03d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if a, ok := send(ctx, c[i%3], i%4 == 3, key, id, fmt.Sprintf("/sleep %dms\nmessage %s", 50+i%7*40, id)); ok {
				mu.Lock()
				got = append(got, a)
				mu.Unlock()
			}
		})
	}
	for i := range 5 {
		call(t, c[i%3], "sessions.create", map[string]any{"key": fmt.Sprintf("agent:main:boss%d", i)})
	}
	spawned := map[string]string{} // child key → requester
	for i := range children {
		boss := fmt.Sprintf("agent:main:boss%d", i%5)
		res := call(t, c[i%3], "tools.invoke", map[string]any{"tool": "sessions_spawn", "sessionKey": boss,
			"args": map[string]any{"task": fmt.Sprintf("child %d\n/sleep %dms\n/reply result %d", i, 100+i%5*200, i)}})
		d, _ := res["details"].(map[string]any)
		if d["status"] != "accepted" {
			t.Fatalf("spawn %d = %v", i, d)
		}
		spawned[d["childSessionKey"].(string)] = boss
	}
	wg.Wait()
	if len(got) < messages {
		t.Fatalf("%d of %d messages acknowledged with every node up", len(got), messages)
	}
	// Node 1 dies with work running and queued on its lanes.
	time.Sleep(150 * time.Millisecond)
	nodes[1].kill()
	killed := time.Now()
	live := []*client.Client{c[0], c[2]}
	// The dead node's lease (2 s) ends, and a survivor adopts its work
	// within seconds.
	eventually(t, "the dead node's adoption", func() bool {
		rows, _ := call(t, c[0], "nodes.list", map[string]any{})["nodes"].([]any)
		return len(rows) == 2
	})
	if took := time.Since(killed); took > 2*time.Second+5*time.Second {
		t.Errorf("adopted %v after the kill, lease 2s: want at most 5s after the lease ended", took)
	} else {
		t.Logf("adopted %v after the kill (lease 2s)", took.Round(time.Millisecond))
	}

	for i, a := range got {
		w := call(t, live[i%2], "agent.wait", map[string]any{"runId": a.runID, "timeoutMs": 60000})
		switch w["status"] {
		case "ok", "error", "aborted":
		default:
			t.Errorf("run %s after the kill = %v, want a final status", a.runID, w)
		}
	}
	byKey := map[string][]string{}
	for _, a := range got {
		byKey[a.key] = append(byKey[a.key], a.text)
	}
	for key, want := range byKey {
		hist := texts(history(t, c[0], key))
		for _, text := range want {
			n := 0
			for _, line := range hist {
				if line == "user: "+text {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s: acknowledged message %q stored %d times", key, text, n)
			}
		}
	}
	bosses := map[string]bool{}
	for _, b := range spawned {
		bosses[b] = true
	}
	counts := map[string]int{}
	defer func() {
		if t.Failed() {
			keys := map[string]bool{}
			var missing []string
			for k := range spawned {
				keys[k] = true
				if counts[k] == 0 {
					missing = append(missing, k)
				}
			}
			logFailure(t, nodes, counts, keys)
			logAnnounces(t, dsn, missing)
		}
	}()
	eventually(t, "every child's announce", func() bool {
		clear(counts)
		for b := range bosses {
			got, _ := announcesBySource(t, c[2], b)
			for k, n := range got {
				counts[k] += n
			}
		}
		return len(counts) >= children
	})
	t.Logf("every child's announce in %v after the kill", time.Since(killed).Round(time.Millisecond))
	time.Sleep(time.Second) // a late duplicate would show now
	clear(counts)
	for b := range bosses {
		got, _ := announcesBySource(t, c[0], b)
		for k, n := range got {
			counts[k] += n
		}
	}
	for k := range spawned {
		if counts[k] != 1 {
			t.Errorf("child %s announced %d times, want once", k, counts[k])
		}
	}
	list := call(t, c[0], "nodes.list", map[string]any{})
	if rows, _ := list["nodes"].([]any); len(rows) != 2 {
		t.Errorf("nodes after the kill = %v, want the dead one adopted and gone", list)
	}
}

// logAnnounces logs, from the database, where the results of the children
// in missing stand: their runs, and every announce not delivered yet with
// its batch claim (which process claimed it, for which run, and whether
// that run exists).
func logAnnounces(t *testing.T, dsn string, missing []string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Logf("announces not read: %v", err)
		return
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT session_key, run_id, status, node_id, error FROM runs WHERE session_key = ANY($1) ORDER BY created_at`, missing)
	if err == nil {
		for rows.Next() {
			var key, id, status, node, e string
			if rows.Scan(&key, &id, &status, &node, &e) == nil {
				t.Logf("child run %s %s: %s on %q %s", key, id, status, node, e)
			}
		}
		rows.Close()
	}
	rows, err = conn.Query(ctx, `SELECT o.id, o.session_key, o.status, o.attempts, o.last_error,
			o.next_attempt_at - (extract(epoch FROM clock_timestamp()) * 1000)::bigint,
			(extract(epoch FROM clock_timestamp()) * 1000)::bigint - o.updated_at,
			coalesce(o.payload->>'batchRunId', ''), coalesce(o.payload->>'claimedBy', ''), coalesce(r.status, '(none)')
		FROM outbox o LEFT JOIN runs r ON r.run_id = o.payload->>'batchRunId'
		WHERE o.kind = 'announce' AND o.status <> 'delivered' ORDER BY o.created_at`)
	if err != nil {
		t.Logf("announces not read: %v", err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var id, key, status, lastErr, batch, by, runStatus string
		var attempts int
		var dueIn, age int64
		if err := rows.Scan(&id, &key, &status, &attempts, &lastErr, &dueIn, &age, &batch, &by, &runStatus); err != nil {
			t.Logf("announce row: %v", err)
			return
		}
		t.Logf("announce %s to %s: %s, %d attempts (%q), due in %dms, updated %dms ago, batch %q (run %s) claimed by %q",
			id, key, status, attempts, lastErr, dueIn, age, batch, runStatus, by)
	}
}

// logFailure logs what a failed cluster test needs to be understood: the
// children without exactly one announce, and the nodes' warnings.
func logFailure(t *testing.T, nodes []*gateway, counts map[string]int, children map[string]bool) {
	for k := range children {
		if counts[k] != 1 {
			t.Logf("child %s: %d announces", k, counts[k])
		}
	}
	for i, g := range nodes {
		for _, line := range strings.Split(g.stdio.String(), "\n") {
			if strings.Contains(line, "WARN") || strings.Contains(line, "ERROR") {
				t.Logf("n%d: %s", i, line)
			}
		}
	}
}
