package cluster

import (
	"context"
	"fmt"
	"io"
	"iter"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboardhq/switchboard/internal/agent"
	"github.com/switchboardhq/switchboard/internal/provider"
	"github.com/switchboardhq/switchboard/internal/store"
	"github.com/switchboardhq/switchboard/internal/store/postgres"
	"github.com/switchboardhq/switchboard/internal/store/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// model is a fake provider shared by the nodes of a test: it answers
// "echo <text>" after delay, holds "hold <text>" until its run is
// cancelled, and records, per session (the text before '|'), how many of
// its turns run at once anywhere in the cluster.
type model struct {
	delay time.Duration

	mu      sync.Mutex
	running map[string]int
	overlap []string
	turns   atomic.Int64
}

func newModel(delay time.Duration) *model { return &model{delay: delay, running: map[string]int{}} }

func (m *model) Stream(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Event, error] {
	return func(yield func(*provider.Event, error) bool) {
		text := ""
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == provider.RoleUser {
				text = req.Messages[i].Text
				break
			}
		}
		lane, _, _ := strings.Cut(text, "|")
		m.mu.Lock()
		m.running[lane]++
		if m.running[lane] > 1 {
			m.overlap = append(m.overlap, lane)
		}
		m.mu.Unlock()
		defer func() {
			m.mu.Lock()
			m.running[lane]--
			m.mu.Unlock()
		}()
		m.turns.Add(1)
		if strings.Contains(text, "hold") {
			<-ctx.Done()
			yield(nil, ctx.Err())
			return
		}
		select {
		case <-time.After(m.delay):
		case <-ctx.Done():
			yield(nil, ctx.Err())
			return
		}
		for _, ev := range []provider.Event{
			{Type: provider.EventTextDelta, Text: "re: "},
			{Type: provider.EventTextDelta, Text: text},
			{Type: provider.EventDone, StopReason: provider.StopEnd},
		} {
			if !yield(&ev, nil) {
				return
			}
		}
	}
}

func (m *model) overlaps() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.overlap...)
}

type models struct{ p provider.Provider }

func (m models) ResolveModel(agentID, ref string) (agent.Model, error) {
	return agent.Model{Provider: m.p, ProviderID: "fake", ModelID: "fake-1", API: "openai-completions"}, nil
}

// member is one node of a test cluster: its store, runner and node.
type member struct {
	id     string
	dsn    string
	st     *postgres.Store
	runner *agent.Runner
	node   *Node

	mu     sync.Mutex
	events []agent.Event
}

func (m *member) eventsOf(runID string) []agent.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []agent.Event
	for _, ev := range m.events {
		if ev.RunID == runID {
			out = append(out, ev)
		}
	}
	return out
}

// join starts a node on dsn whose consumers want the events of every
// session's runs on the other nodes (agent.WantAll).
func join(t *testing.T, dsn, id string, p provider.Provider, lease time.Duration) *member {
	t.Helper()
	return joinWith(t, dsn, id, p, lease, true)
}

// joinWith starts a node on dsn; with wantAll it wants the events of
// every session's runs on the other nodes, else only their ends and posts
// (until a test calls Want).
func joinWith(t *testing.T, dsn, id string, p provider.Provider, lease time.Duration, wantAll bool) *member {
	t.Helper()
	return joinWrapped(t, dsn, id, p, lease, wantAll, nil)
}

// joinWrapped is joinWith whose node reaches the database through
// wrap(store) (nil: the store itself).
func joinWrapped(t *testing.T, dsn, id string, p provider.Provider, lease time.Duration, wantAll bool, wrap func(*postgres.Store) Store) *member {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, dsn, postgres.Options{MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	var nst Store = st
	if wrap != nil {
		nst = wrap(st)
	}
	node, err := New(Config{Store: nst, ID: id, Address: "127.0.0.1:0", Version: "test", Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	r, err := agent.New(agent.Config{Store: st, Models: models{p}, Lanes: node})
	if err != nil {
		t.Fatal(err)
	}
	m := &member{id: id, dsn: dsn, st: st, runner: r, node: node}
	r.Subscribe(func(ev agent.Event) {
		m.mu.Lock()
		m.events = append(m.events, ev)
		m.mu.Unlock()
	})
	// The subscriber wants every session's events but quietKey's.
	r.AddInterest(func(key, runID string) bool { return key != quietKey })
	if wantAll {
		r.WantRemote(agent.WantAll)
	}
	if err := node.Start(ctx, r); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.leave() })
	return m
}

// leave stops the member gracefully (idempotent).
func (m *member) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m.node.Leave(ctx)
	m.runner.Shutdown(ctx)
	m.node.Close()
	m.st.Close()
}

func submit(t *testing.T, m *member, key, runID, text string) {
	t.Helper()
	if _, _, err := m.runner.Submit(context.Background(), agent.Input{RunID: runID, SessionKey: key, AgentID: "main", Message: text}); err != nil {
		t.Fatalf("%s: Submit %s: %v", m.id, runID, err)
	}
}

func waitRun(t *testing.T, m *member, runID string, d time.Duration) *store.Run {
	t.Helper()
	run, done, err := m.runner.Wait(context.Background(), runID, d)
	if err != nil || !done {
		t.Fatalf("%s: Wait(%s) = %+v, done %v, err %v", m.id, runID, run, done, err)
	}
	return run
}

// TestLaneRunsOnOneNode sends one session's messages through three nodes
// at once: every run ends ok on whichever node took the message, its
// input is in the transcript once, and the session's turns never overlap.
func TestLaneRunsOnOneNode(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // after the nodes' own cleanups
	dsn := pgtest.DB(t)
	llm := newModel(3 * time.Millisecond)
	nodes := []*member{join(t, dsn, "a", llm, 5*time.Second), join(t, dsn, "b", llm, 5*time.Second), join(t, dsn, "c", llm, 5*time.Second)}
	const perNode, sessions = 12, 3
	var wg sync.WaitGroup
	for i, m := range nodes {
		wg.Go(func() {
			for j := range perNode {
				key := fmt.Sprintf("agent:main:s%d", j%sessions)
				submit(t, m, key, fmt.Sprintf("r-%d-%d", i, j), fmt.Sprintf("%s|msg %d/%d", key, i, j))
			}
		})
	}
	wg.Wait()
	for i := range nodes {
		for j := range perNode {
			// Every node can wait for every run, wherever it ran.
			run := waitRun(t, nodes[(i+j)%3], fmt.Sprintf("r-%d-%d", i, j), 20*time.Second)
			if run.Status != store.RunOK {
				t.Errorf("run r-%d-%d = %s %q", i, j, run.Status, run.Error)
			}
		}
	}
	if o := llm.overlaps(); len(o) > 0 {
		t.Errorf("turns of one session overlapped (on two nodes at once): %v", o)
	}
	ctx := context.Background()
	for s := range sessions {
		key := fmt.Sprintf("agent:main:s%d", s)
		sess, err := nodes[0].st.GetSession(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		hist, err := nodes[0].st.History(ctx, sess.SessionID, store.HistoryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, msg := range hist {
			if msg.Role == "user" {
				seen[msg.Entry.Message.Content.Text()]++
			}
		}
		if len(seen) != perNode*3/sessions {
			t.Errorf("%s: %d distinct inputs, want %d", key, len(seen), perNode*3/sessions)
		}
		for text, n := range seen {
			if n != 1 {
				t.Errorf("%s: input %q stored %d times", key, text, n)
			}
		}
	}
}

// TestCrossNodeEventsWaitAbort holds a session's lane on one node and
// talks to the session through another: the run's events and its end
// reach the other node's subscribers, a wait there returns its final
// state, and an abort asked there stops it.
func TestCrossNodeEventsWaitAbort(t *testing.T) {
	a, b := joinTwo(t)
	const key = "agent:main:x"
	submit(t, b, key, "hold", key+"|hold")
	waitActive(t, b, "hold")
	// Queued behind the held run, on b's lane, though sent to a.
	submit(t, a, key, "next", key+"|next")
	if ok, err := a.runner.Abort(context.Background(), "hold"); err != nil || !ok {
		t.Fatalf("Abort from another node = %v, %v", ok, err)
	}
	held := waitRun(t, a, "hold", 10*time.Second)
	if held.Status != store.RunAborted {
		t.Fatalf("held run after a cross-node abort = %s", held.Status)
	}
	next := waitRun(t, a, "next", 10*time.Second)
	if next.Status != store.RunOK {
		t.Fatalf("next = %s %q", next.Status, next.Error)
	}
	// Wait can learn of the end from the store (the run may have ended
	// before it was called) ahead of the relayed events: wait for the end
	// to reach a's subscriber, which the events before it precede.
	deadline := time.Now().Add(10 * time.Second)
	for !slices.ContainsFunc(a.eventsOf("next"), func(ev agent.Event) bool {
		return ev.Stream == agent.StreamLifecycle && ev.Phase == agent.PhaseEnd
	}) {
		if time.Now().After(deadline) {
			t.Fatal("the end of b's run never reached a's subscriber")
		}
		time.Sleep(2 * time.Millisecond)
	}
	var deltas, ends int
	for _, ev := range a.eventsOf("next") {
		if !ev.IsRemote() {
			t.Errorf("event %s/%s of a run on b emitted on a as local", ev.Stream, ev.Phase)
		}
		switch {
		case ev.Stream == agent.StreamAssistant:
			deltas++
		case ev.Stream == agent.StreamLifecycle && ev.Phase == agent.PhaseEnd:
			ends++
			if ev.Run == nil || ev.Run.Status != store.RunOK {
				t.Errorf("relayed end = %+v", ev.Run)
			}
		}
	}
	if deltas == 0 || ends != 1 {
		t.Errorf("a saw %d deltas and %d ends of b's run, want some and one", deltas, ends)
	}
}

// quietKey is the session whose events no test member's subscriber
// wants (see join).
const quietKey = "agent:main:quiet"

// TestUnwantedEventsReachWatchersOnly runs a session on one node that no
// subscriber of the other wants: there, subscribers get only each run's
// end, while a watcher that starts after the run ended still gets every
// event, in order, from the events logged undecoded. The first run's
// batches are small enough to travel in their notifications (no row in
// the events table); the second's reply is too long for one.
func TestUnwantedEventsReachWatchersOnly(t *testing.T) {
	a, b := joinTwo(t)
	for _, c := range []struct {
		run, text string
		rows      bool
	}{
		{"quiet-1", "hi", false},
		{"quiet-2", strings.Repeat("long reply ", 1000), true},
	} {
		submit(t, b, quietKey, c.run, quietKey+"|"+c.text)
		if run := waitRun(t, b, c.run, 10*time.Second); run.Status != store.RunOK {
			t.Fatalf("%s = %s %q", c.run, run.Status, run.Error)
		}
		// The end reached a's subscriber: every event before it was
		// relayed in an earlier batch or the same one.
		deadline := time.Now().Add(10 * time.Second)
		for len(a.eventsOf(c.run)) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the end of b's run %s never reached a's subscriber", c.run)
			}
			time.Sleep(2 * time.Millisecond)
		}
		if evs := a.eventsOf(c.run); len(evs) != 1 || evs[0].Stream != agent.StreamLifecycle || evs[0].Phase != agent.PhaseEnd {
			t.Fatalf("a's subscriber got %d events of an unwanted run (%s/%s first), want only its end", len(evs), evs[0].Stream, evs[0].Phase)
		}
		if rows := eventRows(t, a.dsn); (rows > 0) != c.rows {
			t.Errorf("after %s: %d batches in the events table", c.run, rows)
		}
		onB, onA := watched(t, b, c.run), watched(t, a, c.run)
		if !slices.Equal(onA, onB) || len(onA) < 3 {
			t.Fatalf("watched on the other node:\n%.300v\nwant as on the run's node:\n%.300v", onA, onB)
		}
	}
}

// watched is what a Watch of runID on m yields, from the start.
func watched(t *testing.T, m *member, runID string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []string
	for ev, err := range m.runner.Watch(ctx, runID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d:%s/%s:%s", ev.Seq, ev.Stream, ev.Phase, ev.Text))
	}
	return out
}

// eventRows counts the batches written to the events table.
func eventRows(t *testing.T, dsn string) int {
	t.Helper()
	return pgtest.Count(t, dsn, `SELECT count(*) FROM cluster_events`)
}

// joinTwo starts two nodes on a fresh database, each knowing the other.
func joinTwo(t *testing.T) (a, b *member) {
	t.Helper()
	dsn := pgtest.DB(t)
	llm := newModel(time.Millisecond)
	a, b = join(t, dsn, "a", llm, 5*time.Second), join(t, dsn, "b", llm, 5*time.Second)
	waitPeers(t, a, b)
	return a, b
}

// waitPeers waits until every member knows the others are there (events
// are relayed only when there are peers).
func waitPeers(t *testing.T, ms ...*member) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, m := range ms {
		for int(m.node.peers.Load()) < len(ms)-1 {
			if time.Now().After(deadline) {
				t.Fatalf("%s sees %d peers", m.id, m.node.peers.Load())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// waitActive waits until runID runs on m (started in the store).
func waitActive(t *testing.T, m *member, runID string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if run, err := m.st.GetRun(context.Background(), runID); err == nil && run.Status == store.RunRunning && slices.Contains(m.runner.ActiveRuns(), runID) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: run %s never became active", m.id, runID)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestGracefulLeaveHandsOver stops a node that holds a lane with queued
// runs: its running run finishes, and the queued ones run on another node.
func TestGracefulLeaveHandsOver(t *testing.T) {
	dsn := pgtest.DB(t)
	llm := newModel(50 * time.Millisecond)
	a := join(t, dsn, "a", llm, 5*time.Second)
	b := join(t, dsn, "b", llm, 5*time.Second)
	const key = "agent:main:leave"
	submit(t, a, key, "first", key+"|first")
	waitActive(t, a, "first")
	for i := range 3 {
		submit(t, a, key, fmt.Sprintf("q%d", i), fmt.Sprintf("%s|q%d", key, i))
	}
	a.leave()
	if run, _ := b.st.GetRun(context.Background(), "first"); run.Status != store.RunOK {
		t.Errorf("the leaving node's running run = %s %q, want it finished", run.Status, run.Error)
	}
	for i := range 3 {
		run := waitRun(t, b, fmt.Sprintf("q%d", i), 15*time.Second)
		if run.Status != store.RunOK {
			t.Errorf("q%d = %s %q", i, run.Status, run.Error)
		}
	}
	nodes, err := b.node.Nodes(context.Background())
	if err != nil || len(nodes) != 1 || nodes[0].ID != "b" {
		t.Errorf("nodes after a leave = %+v, %v", nodes, err)
	}
}

// proxy forwards TCP connections to target until cut: then it closes them
// all and refuses new ones (a network partition), until healed.
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns []net.Conn
	wg    sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		p.setCut(true)
		p.wg.Wait()
	})
	return p
}

func (p *proxy) accept() {
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
		p.wg.Go(func() { io.Copy(up, c); up.Close() })
		p.wg.Go(func() { io.Copy(c, up); c.Close() })
	}
}

func (p *proxy) setCut(cut bool) {
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

// TestPartitionedNodeStops cuts a node off the database while it runs a
// session's turn: it stops the turn before its lease ends, another node
// adopts the session (the turn reported aborted, a queued message run
// there), and when the cut node comes back it does not run the session
// again: no turn of the session ever overlaps.
func TestPartitionedNodeStops(t *testing.T) {
	dsn := pgtest.DB(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	// The test server listens on a unix socket and on 127.0.0.1 at the
	// URL's port; the cut node reaches it over TCP through the proxy.
	q := u.Query()
	target := u.Host
	if p := q.Get("port"); q.Get("host") != "" && p != "" {
		target = net.JoinHostPort("127.0.0.1", p)
		q.Del("host")
		q.Del("port")
	}
	px := newProxy(t, target)
	cutDSN := *u
	cutDSN.Host = px.ln.Addr().String()
	cutDSN.RawQuery = q.Encode()
	llm := newModel(time.Millisecond)
	const lease = 2 * time.Second
	a := join(t, dsn, "a", llm, lease)
	b := join(t, cutDSN.String(), "b", llm, lease)
	waitPeers(t, a, b)
	const key = "agent:main:part"
	submit(t, b, key, "held", key+"|hold")
	waitActive(t, b, "held")
	submit(t, a, key, "after", key+"|after")
	cutAt := time.Now()
	px.setCut(true)
	held := waitRun(t, a, "held", 15*time.Second)
	adopted := time.Since(cutAt)
	// By the time the other node adopted the lane, the cut node no longer
	// counts itself valid: its lease is judged on its own clock, with a
	// margin, so this holds however late its heartbeat runs.
	if b.node.Valid() {
		t.Errorf("the cut node still counts itself valid after its lane was adopted")
	}
	if held.Status != store.RunAborted || held.Error != agent.InterruptedError {
		t.Errorf("the cut node's run = %s %q, want aborted %q", held.Status, held.Error, agent.InterruptedError)
	}
	// The cut node stops its turn on its own (its final write cannot
	// reach the database; how long that takes depends on the machine).
	for len(b.runner.ActiveRuns()) > 0 {
		if time.Since(cutAt) > 20*time.Second {
			t.Fatalf("the cut node still runs %v 20 s after the cut", b.runner.ActiveRuns())
		}
		time.Sleep(10 * time.Millisecond)
	}
	after := waitRun(t, a, "after", 15*time.Second)
	if after.Status != store.RunOK {
		t.Errorf("the message queued behind it = %s %q", after.Status, after.Error)
	}
	// Adoption follows the lease's end within seconds.
	if adopted > lease+5*time.Second {
		t.Errorf("adopted %v after the cut (lease %v)", adopted, lease)
	}
	px.setCut(false)
	// Back on the network, the node joins again and takes new work.
	submit(t, b, "agent:main:back", "back", "agent:main:back|back")
	if run := waitRun(t, b, "back", 20*time.Second); run.Status != store.RunOK {
		t.Errorf("run on the rejoined node = %s %q", run.Status, run.Error)
	}
	if o := llm.overlaps(); len(o) > 0 {
		t.Errorf("turns of one session overlapped: %v", o)
	}
}
