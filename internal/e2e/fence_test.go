package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/fakellm"
	"github.com/switchboardhq/switchboard/internal/gateway/wire"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store/postgres/pgtest"
)

// fenceSteps is how many exec calls each turn of the fencing test makes
// before it answers.
const fenceSteps = 4

// turnLog is a model shared by the fake LLM servers of the nodes of a
// test (one server per node, so it knows which node asks): every turn of a
// session whose input reads "fence <key> <id>" calls exec fenceSteps times
// (each call appends "<unix ns> <key> <cwd>" to a log file, then sleeps),
// then answers. It records each model request's node, session and
// interval.
type turnLog struct {
	execLog string

	mu   sync.Mutex
	reqs []modelReq
}

type modelReq struct {
	node, key  string
	start, end time.Time
}

// nodeModel is turnLog as node's model.
type nodeModel struct {
	l    *turnLog
	node string
}

func (m nodeModel) Stream(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Event, error] {
	return func(yield func(*provider.Event, error) bool) {
		start := time.Now()
		key, steps := "", 0
		for i := len(req.Messages) - 1; i >= 0; i-- {
			msg := req.Messages[i]
			if msg.Role == provider.RoleTool {
				steps++
				continue
			}
			if msg.Role == provider.RoleUser {
				if f := strings.Fields(msg.Text); len(f) >= 3 && f[0] == "fence" {
					key = f[1]
				}
				break
			}
		}
		var evs []provider.Event
		if key != "" && steps < fenceSteps {
			cmd := fmt.Sprintf(`echo "$(date +%%s%%N) %s $(pwd)" >> %s; sleep 0.1`, key, m.l.execLog)
			args, _ := json.Marshal(map[string]any{"command": cmd})
			evs = append(evs, provider.Event{Type: provider.EventToolCall, ToolCall: &provider.ToolCall{
				ID: fmt.Sprintf("call_%d", steps), Name: "exec", Arguments: args}},
				provider.Event{Type: provider.EventDone, StopReason: provider.StopToolUse})
		} else {
			evs = append(evs, provider.Event{Type: provider.EventTextDelta, Text: "done"},
				provider.Event{Type: provider.EventDone, StopReason: provider.StopEnd})
		}
		for i := range evs {
			if !yield(&evs[i], nil) {
				break
			}
		}
		m.l.mu.Lock()
		m.l.reqs = append(m.l.reqs, modelReq{node: m.node, key: key, start: start, end: time.Now()})
		m.l.mu.Unlock()
	}
}

// requested returns how many of keys node asked the model for, and
// whether some node asked for each.
func (l *turnLog) requested(node string, keys []string) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, all := 0, true
	for _, k := range keys {
		if slices.ContainsFunc(l.reqs, func(r modelReq) bool { return r.node == node && r.key == k }) {
			n++
		} else if !slices.ContainsFunc(l.reqs, func(r modelReq) bool { return r.key == k }) {
			all = false
		}
	}
	return n, all
}

// faultProxy forwards TCP connections to target and can hold their
// traffic (bytes stop flowing both ways, connections stay open) or cut
// them (every connection closed, new ones refused).
type faultProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu    sync.Mutex
	gate  chan struct{} // closed while traffic flows
	cut   bool
	conns []net.Conn
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, target: target, gate: make(chan struct{})}
	close(p.gate)
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		p.restore()
		p.setCut(true)
		p.wg.Wait()
	})
	return p
}

func (p *faultProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(up, c) })
		p.wg.Go(func() { p.pipe(c, up) })
	}
}

// pipe copies src to dst, each chunk only while the gate is open.
func (p *faultProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			gate := p.gate
			p.mu.Unlock()
			<-gate
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// hold stops the traffic of every connection, open or new.
func (p *faultProxy) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
		p.gate = make(chan struct{})
	default:
	}
}

// restore lets traffic flow again and accepts connections.
func (p *faultProxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
	default:
		close(p.gate)
	}
	p.cut = false
}

func (p *faultProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
	}
}

// proxiedDSN returns dsn rewritten to reach the server over TCP through a
// new faultProxy (the test server listens on a unix socket and on
// 127.0.0.1 at the URL's port).
func proxiedDSN(t *testing.T, dsn string) (*faultProxy, string) {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	target := u.Host
	if port := q.Get("port"); q.Get("host") != "" && port != "" {
		target = net.JoinHostPort("127.0.0.1", port)
		q.Del("host")
		q.Del("port")
	}
	px := newFaultProxy(t, target)
	v := *u
	v.Host = px.ln.Addr().String()
	v.RawQuery = q.Encode()
	return px, v.String()
}

// Fault kinds of the fencing test's rounds.
const (
	faultHold  = "hold"  // the node's database traffic held, then released
	faultCut   = "cut"   // the node's database connections cut, then allowed
	faultPause = "pause" // the node SIGSTOPped, then SIGCONTinued
)

// TestClusterFencing runs rounds of faults on one node of two while it
// runs sessions' turns (each turn several exec calls): its database
// traffic held, its connections cut, or the process paused, each for
// longer than the lease, while follow-up messages for the same sessions
// arrive on the other node, which adopts them. Across every round: no
// model request or exec of the faulted node for a session comes after the
// adopter's first model request for it (no two turns of a session
// overlap), no transcript entry of the faulted node's runs lands after one
// of the adopter's, every acknowledged message is stored exactly once,
// and every run reaches a final status.
func TestClusterFencing(t *testing.T) {
	const (
		rounds   = 10
		sessions = 3
	)
	dsn := pgtest.DB(t)
	px, faultyDSN := proxiedDSN(t, dsn)
	work := t.TempDir()
	tl := &turnLog{execLog: filepath.Join(work, "exec.log")}
	llm0 := fakellm.Start(t, fakellm.Options{APIKey: "llm-key", Model: nodeModel{tl, "n0"}})
	llm1 := fakellm.Start(t, fakellm.Options{APIKey: "llm-key", Model: nodeModel{tl, "n1"}})
	cfg := clusterConfig + `
  tools: { exec: { timeoutSeconds: 30 } },
  messages: { queue: { mode: "followup" } },`
	n0 := startWith(t, t.TempDir(), llm0, "", cfg, "SWITCHBOARD_DATABASE_URL="+dsn, "SWITCHBOARD_NODE_ID=n0")
	n1 := startWith(t, t.TempDir(), llm1, "", cfg, "SWITCHBOARD_DATABASE_URL="+faultyDSN, "SWITCHBOARD_NODE_ID=n1")
	c0, c1 := n0.dial(t), n1.dial(t)
	db, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := db.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	defer func() {
		if t.Failed() {
			logFailure(t, []*gateway{n0, n1}, nil, nil)
			lines := strings.Split(n1.stdio.String(), "\n")
			t.Logf("n1's last log lines:\n%s", strings.Join(lines[max(0, len(lines)-80):], "\n"))
		}
	}()

	var acked []acked
	sendTo := func(c *client.Client, key, id string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		a, ok := send(ctx, c, false, key, id, fmt.Sprintf("fence %s %s", key, id))
		if !ok {
			t.Fatalf("message %s to %s not acknowledged", id, key)
		}
		acked = append(acked, a)
		return a.runID
	}
	faults := map[string]int{}
	cutTurns := 0 // turns in progress on n1 when its fault began
	var followups []string
	for round := range rounds {
		fault := []string{faultHold, faultCut, faultPause}[round%3]
		faults[fault]++
		keys := make([]string, sessions)
		for i := range keys {
			keys[i] = fmt.Sprintf("agent:main:r%02ds%d", round, i)
			sendTo(c1, keys[i], fmt.Sprintf("r%02ds%d-first", round, i))
		}
		// The faulted node is in the middle of the sessions' turns (of
		// those whose lane it claimed: the other node's sweep may claim
		// the lane of a message n1 accepted before n1 does).
		eventually(t, "the round's turns", func() bool {
			_, all := tl.requested("n1", keys)
			return all
		})
		onN1, _ := tl.requested("n1", keys)
		cutTurns += onN1
		faultAt := time.Now()
		switch fault {
		case faultHold:
			px.hold()
		case faultCut:
			px.setCut(true)
		case faultPause:
			if err := n1.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
		}
		for i, key := range keys {
			followups = append(followups, sendTo(c0, key, fmt.Sprintf("r%02ds%d-next", round, i)))
		}
		// The other node adopts the sessions and runs the follow-ups.
		eventually(t, fmt.Sprintf("round %d (%s): every run final", round, fault), func() bool {
			return count(`SELECT count(*) FROM runs WHERE session_key LIKE $1 AND status IN ('queued', 'running')`,
				fmt.Sprintf("agent:main:r%02ds%%", round)) == 0
		})
		switch fault {
		case faultHold, faultCut:
			px.restore()
		case faultPause:
			if err := n1.cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
		}
		// The faulted node notices it was adopted and joins again.
		eventually(t, fmt.Sprintf("round %d (%s): n1 back", round, fault), func() bool {
			return count(`SELECT count(*) FROM nodes WHERE node_id = 'n1' AND lease_until > now() AND started_at > $1`, faultAt) == 1
		})
	}
	// The faulted node serves again; whatever it held back has been sent.
	canary := sendTo(c1, "agent:main:canary", "canary")
	if w := call(t, c1, "agent.wait", map[string]any{"runId": canary, "timeoutMs": 30000}); w["status"] != "ok" {
		t.Fatalf("canary run on n1 = %v", w)
	}

	if n := count(`SELECT count(*) FROM runs WHERE status IN ('queued', 'running')`); n != 0 {
		t.Errorf("%d runs not final", n)
	}
	if cutTurns == 0 {
		t.Fatal("no turn of the faulted node was in progress at a fault")
	}
	for _, id := range followups {
		if n := count(`SELECT count(*) FROM runs WHERE run_id = $1 AND status = 'ok' AND node_id = 'n0'`, id); n != 1 {
			t.Errorf("follow-up run %s did not end ok on n0", id)
		}
	}
	for _, a := range acked {
		if n := count(`SELECT count(*) FROM messages m JOIN sessions s ON s.session_id = m.session_id
			WHERE s.key = $1 AND m.role = 'user' AND m.line LIKE '%' || $2 || '%'`, a.key, a.text); n != 1 {
			var status, errText string
			db.QueryRow(context.Background(), `SELECT status, error FROM runs WHERE run_id = $1`, a.runID).Scan(&status, &errText)
			t.Errorf("acknowledged message %q stored %d times (run %s: %s %q)", a.text, n, a.runID, status, errText)
		}
	}
	if n := count(`SELECT count(*) FROM messages m1 JOIN runs r1 ON r1.run_id = m1.run_id
		WHERE r1.node_id = 'n1' AND EXISTS (SELECT 1 FROM messages m0 JOIN runs r0 ON r0.run_id = m0.run_id
			WHERE r0.node_id = 'n0' AND m0.session_id = m1.session_id AND m0.seq < m1.seq)`); n != 0 {
		t.Errorf("%d transcript entries of the faulted node landed after the adopter's", n)
	}
	adopted := count(`SELECT count(*) FROM runs WHERE node_id = 'n1' AND status = 'aborted'`)

	// Per session: the faulted node's last model request ended, and its
	// last exec ran, before the adopter's first model request.
	type span struct{ lastN1, firstN0 time.Time }
	bySession := map[string]*span{}
	at := func(key string) *span {
		if bySession[key] == nil {
			bySession[key] = &span{}
		}
		return bySession[key]
	}
	tl.mu.Lock()
	reqs := slices.Clone(tl.reqs)
	tl.mu.Unlock()
	for _, r := range reqs {
		s := at(r.key)
		switch r.node {
		case "n1":
			if r.end.After(s.lastN1) {
				s.lastN1 = r.end
			}
		case "n0":
			if s.firstN0.IsZero() || r.start.Before(s.firstN0) {
				s.firstN0 = r.start
			}
		}
	}
	raw, err := os.ReadFile(tl.execLog)
	if err != nil {
		t.Fatal(err)
	}
	execs := 0
	for line := range strings.Lines(string(raw)) {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("exec log line %q", line)
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		execs++
		if strings.HasPrefix(f[2], n1.dir) {
			if s := at(f[1]); time.Unix(0, ns).After(s.lastN1) {
				s.lastN1 = time.Unix(0, ns)
			}
		}
	}
	for key, s := range bySession {
		if !s.firstN0.IsZero() && !s.lastN1.IsZero() && !s.lastN1.Before(s.firstN0) {
			t.Errorf("%s: the faulted node acted at %s, after the adopter's first turn began at %s",
				key, s.lastN1.Format(time.StampMicro), s.firstN0.Format(time.StampMicro))
		}
	}
	dropped := strings.Count(n1.stdio.String(), "fenced write dropped")
	t.Logf("rounds %d (%v), turns cut by a fault %d, acknowledged messages %d, model requests %d, execs %d, faulted node's runs aborted by adoption %d, fenced writes dropped %d",
		rounds, faults, cutTurns, len(acked), len(reqs), execs, adopted, dropped)
}

// TestClusterSharedWorkspace: with the agents' workspace on storage both
// nodes share, a file a turn on one node writes is read by the session's
// next turn on the other (the README's model for workspaces on several
// nodes).
func TestClusterSharedWorkspace(t *testing.T) {
	dsn := pgtest.DB(t)
	shared := t.TempDir()
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	defaults := fmt.Sprintf("workspace: %q,", shared)
	var nodes []*gateway
	for i := range 2 {
		nodes = append(nodes, startDefaults(t, t.TempDir(), llm, `{ id: "fake-1" }`, defaults, "", clusterConfig,
			"SWITCHBOARD_DATABASE_URL="+dsn, fmt.Sprintf("SWITCHBOARD_NODE_ID=n%d", i)))
	}
	c0, c1 := nodes[0].dial(t), nodes[1].dial(t)
	db, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	ranOn := func(runID string) string {
		var node string
		if err := db.QueryRow(context.Background(), `SELECT node_id FROM runs WHERE run_id = $1`, runID).Scan(&node); err != nil {
			t.Fatal(err)
		}
		return node
	}
	const key = "agent:main:notes"
	if got := toolText(t, c0, key, "w1", "write", map[string]any{"path": "note.txt", "content": "written on n0"}); strings.Contains(got, "rror") {
		t.Fatalf("write = %q", got)
	}
	// The lane goes back when idle; the next turn is claimed by n1.
	eventually(t, "the idle lane given back", func() bool {
		var n int
		if err := db.QueryRow(context.Background(), `SELECT count(*) FROM lanes WHERE session_key = $1`, key).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
	var read struct{ Content string }
	got := toolText(t, c1, key, "r2", "read", map[string]any{"path": "note.txt"})
	if err := json.Unmarshal([]byte(got), &read); err != nil || read.Content != "written on n0" {
		t.Errorf("read on the other node = %q, want the file the first turn wrote", got)
	}
	if a, b := ranOn("w1"), ranOn("r2"); a != "n0" || b != "n1" {
		t.Errorf("turns ran on %s and %s, want n0 then n1", a, b)
	}
}

// TestClusterDatabaseRestart restarts PostgreSQL (fast: every connection
// cut) while two nodes run turns: every acknowledged message is stored
// exactly once, and every run reaches a final status (none is left
// running by a final write that failed). A client on the node the message
// was not sent to follows each run (runs.watch) through the restart: it
// gets the run's final exactly once, with the status the store recorded,
// after events in order and never twice, whatever the relay lost.
func TestClusterDatabaseRestart(t *testing.T) {
	llm := fakellm.Start(t, fakellm.Options{APIKey: "llm-key"})
	dsn, nodes := startCluster(t, 2, llm, `messages: { queue: { mode: "followup" } },`)
	c := []*client.Client{nodes[0].dial(t), nodes[1].dial(t)}
	chats := []*chatFinals{countChatFinals(c[0]), countChatFinals(c[1])}
	w := []*runWatcher{watchRuns(t, nodes[0]), watchRuns(t, nodes[1])}
	var (
		mu  sync.Mutex
		got []acked
		wg  sync.WaitGroup
	)
	const messages = 40
	restarted := make(chan struct{})
	for i := range messages {
		wg.Go(func() {
			if i >= messages/2 {
				<-restarted
			}
			key := fmt.Sprintf("agent:main:pg%02d", i%8)
			id := fmt.Sprintf("pg%03d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if a, ok := send(ctx, c[i%2], false, key, id, fmt.Sprintf("/sleep %dms\nmessage %s", 100+i%5*50, id)); ok {
				mu.Lock()
				got = append(got, a)
				mu.Unlock()
				w[(i+1)%2].follow(a.runID)
			}
		})
	}
	// The restart lands while the first half's turns run.
	eventually(t, "turns under way", func() bool { return len(llm.Requests()) >= 4 })
	pgtest.Restart(t)
	close(restarted)
	wg.Wait()
	if len(got) < messages/2 {
		t.Fatalf("only %d of %d messages acknowledged around the restart", len(got), messages)
	}
	db, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := db.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	eventually(t, "every run final", func() bool {
		return count(`SELECT count(*) FROM runs WHERE status IN ('queued', 'running')`) == 0
	})
	for _, a := range got {
		if n := count(`SELECT count(*) FROM messages m JOIN sessions s ON s.session_id = m.session_id
			WHERE s.key = $1 AND m.role = 'user' AND m.line LIKE '%' || $2 || '%'`, a.key, strings.SplitN(a.text, "\n", 2)[1]); n != 1 {
			var status, errText string
			db.QueryRow(context.Background(), `SELECT status, error FROM runs WHERE run_id = $1`, a.runID).Scan(&status, &errText)
			t.Errorf("acknowledged message %q stored %d times (run %s: %s %q)", a.text, n, a.runID, status, errText)
		}
	}
	ok := count(`SELECT count(*) FROM runs WHERE status = 'ok'`)
	finals, events := 0, 0
	for i, wr := range w {
		wr.wait()
		for id, f := range wr.results() {
			var status string
			if err := db.QueryRow(context.Background(), `SELECT status FROM runs WHERE run_id = $1`, id).Scan(&status); err != nil {
				t.Fatalf("run %s: %v", id, err)
			}
			if f.err != nil {
				t.Errorf("node n%d: watch of %s failed: %v", i, id, f.err)
				continue
			}
			finals++
			events += len(f.seqs)
			if want := map[string]string{"ok": "ok", "timeout": "timeout"}[status]; f.status != cmp.Or(want, "error") {
				t.Errorf("node n%d: final of %s is %q, the store says %q", i, id, f.status, status)
			}
			for j, seq := range f.seqs {
				if seq >= f.final || (j > 0 && seq <= f.seqs[j-1]) {
					t.Errorf("node n%d: run %s: events %v then final %d: out of order or repeated", i, id, f.seqs, f.final)
					break
				}
			}
		}
	}
	if finals != len(got) {
		t.Errorf("%d finals reached the watching clients for %d acknowledged runs", finals, len(got))
	}
	// Every client of the sessions, on either node, gets each run's final
	// chat event once: the ends whose relay the restart lost come from the
	// store.
	for i, cf := range chats {
		eventually(t, fmt.Sprintf("node n%d's client has every final", i), func() bool {
			for _, a := range got {
				if cf.count(a.runID) == 0 {
					return false
				}
			}
			return true
		})
	}
	for i, cf := range chats {
		c[i].Close()
		<-cf.read
		for _, a := range got {
			if n := cf.count(a.runID); n != 1 {
				t.Errorf("node n%d's client got %d final chat events of %s, want 1", i, n, a.runID)
			}
		}
	}
	recovered := strings.Count(nodes[0].stdio.String()+nodes[1].stdio.String(), "run end recovered from the store")
	t.Logf("acknowledged %d of %d messages around the restart; %d runs ended ok, all runs final; the watchers on the other node got %d finals (each once) after %d events; %d ends whose relay was lost came from the store",
		len(got), messages, ok, finals, events, recovered)

	// While the database refuses connections, a message is refused as
	// "database unreachable", marked retryable, and nothing is stored.
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	name := cfg.Database
	cfg.Database = "postgres"
	admin, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	if _, err := admin.Exec(context.Background(), `ALTER DATABASE `+name+` ALLOW_CONNECTIONS false`); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, name); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sender := nodes[0].dial(t)
	err = sender.Call(ctx, "chat.send", map[string]any{"sessionKey": "agent:main:outage", "message": "hello", "idempotencyKey": "outage-1"}, nil)
	if _, aerr := admin.Exec(context.Background(), `ALTER DATABASE `+name+` ALLOW_CONNECTIONS true`); aerr != nil {
		t.Fatal(aerr)
	}
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeUnavailable || we.Message != "database unreachable" || we.Retryable == nil || !*we.Retryable {
		t.Errorf("chat.send while the database refuses connections = %v (%+v), want UNAVAILABLE database unreachable, retryable", err, we)
	}
	db, err = pgx.Connect(context.Background(), dsn) // the old connection was ended with the others
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	if n := count(`SELECT count(*) FROM runs WHERE run_id = 'outage-1'`); n != 0 {
		t.Errorf("a refused message left %d runs", n)
	}
}

// chatFinals counts the terminal chat events (final, aborted, error) one
// client receives, by run.
type chatFinals struct {
	mu   sync.Mutex
	runs map[string]int
	read chan struct{} // closed when the connection's events are all read
}

func countChatFinals(c *client.Client) *chatFinals {
	cf := &chatFinals{runs: make(map[string]int), read: make(chan struct{})}
	go func() {
		defer close(cf.read)
		for ev := range c.Events() {
			var p struct {
				RunID string `json:"runId"`
				State string `json:"state"`
			}
			if ev.Event == "chat" && json.Unmarshal(ev.Payload, &p) == nil && p.State != "delta" {
				cf.mu.Lock()
				cf.runs[p.RunID]++
				cf.mu.Unlock()
			}
		}
	}()
	return cf
}

func (cf *chatFinals) count(runID string) int {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	return cf.runs[runID]
}

// runWatcher follows runs on one node with runs.watch, each from its
// start, on one connection.
type runWatcher struct {
	t     *testing.T
	c     *client.Client
	wg    sync.WaitGroup
	after map[string]int64 // afterSeq by run (none: from the start)

	mu     sync.Mutex
	seqs   map[string][]int64 // the runs.watch events' seqs, by run
	finals map[string]*watchedFinal
	read   chan struct{} // closed when the connection's events are all read
}

// watchedFinal is how one watch ended.
type watchedFinal struct {
	status string
	final  int64
	seqs   []int64
	err    error
}

func watchRuns(t *testing.T, g *gateway) *runWatcher {
	t.Helper()
	return watchRunsFrom(t, g, nil)
}

// watchRunsFrom is watchRuns resuming each run of after from the seq it
// names (the last its client saw).
func watchRunsFrom(t *testing.T, g *gateway, after map[string]int64) *runWatcher {
	t.Helper()
	c := g.dialScoped(t)
	w := &runWatcher{t: t, c: c, after: after, seqs: make(map[string][]int64), finals: make(map[string]*watchedFinal), read: make(chan struct{})}
	go func() {
		defer close(w.read)
		for ev := range c.Events() {
			if ev.Event != "runs.watch" {
				continue
			}
			var p struct {
				RunID string `json:"runId"`
				Seq   int64  `json:"seq"`
			}
			if json.Unmarshal(ev.Payload, &p) == nil {
				w.mu.Lock()
				w.seqs[p.RunID] = append(w.seqs[p.RunID], p.Seq)
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// follow watches runID until its final.
func (w *runWatcher) follow(runID string) {
	w.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		var res struct {
			Status string `json:"status"`
			Seq    int64  `json:"seq"`
		}
		err := w.c.Call(ctx, "runs.watch", map[string]any{"runId": runID, "afterSeq": w.after[runID]}, &res)
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, twice := w.finals[runID]; twice {
			w.t.Errorf("run %s followed twice", runID)
		}
		w.finals[runID] = &watchedFinal{status: res.Status, final: res.Seq, err: err}
	})
}

// wait waits for every watch's final, then for the connection's events.
func (w *runWatcher) wait() {
	w.wg.Wait()
	w.c.Close()
	<-w.read
}

// results are the watches' finals with their events.
func (w *runWatcher) results() map[string]*watchedFinal {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, f := range w.finals {
		f.seqs = w.seqs[id]
	}
	return w.finals
}
