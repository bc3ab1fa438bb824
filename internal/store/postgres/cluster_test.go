package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard/internal/store"
)

// liveNodes opens two stores on one database as nodes "a" and "b", each
// with a lease of a minute.
func liveNodes(t *testing.T) (a, b *Store) {
	t.Helper()
	nodes := openNodes(t, 2)
	a, b = nodes[0], nodes[1]
	a.SetNode("a")
	b.SetNode("b")
	register(t, a, "a", time.Minute)
	register(t, b, "b", time.Minute)
	return a, b
}

func register(t testing.TB, s *Store, id string, lease time.Duration) {
	t.Helper()
	if err := s.RegisterNode(context.Background(), NodeInfo{ID: id, Address: "127.0.0.1:1", Version: "test"}, lease); err != nil {
		t.Fatal(err)
	}
}

func queue(t *testing.T, s *Store, runID, key string) {
	t.Helper()
	if err := s.CreateRun(context.Background(), &store.Run{RunID: runID, SessionKey: key}); err != nil {
		t.Fatal(err)
	}
}

// TestClaimLaneOneOwner races claims of one lane from three nodes: one
// wins, the others learn its id; the lane is free again after its release,
// and a dead owner's lane is taken over.
func TestClaimLaneOneOwner(t *testing.T) {
	ctx := context.Background()
	nodes := openNodes(t, 3)
	for i, s := range nodes {
		register(t, s, fmt.Sprintf("n%d", i), time.Minute)
	}
	owners := make([]string, 3)
	var wg sync.WaitGroup
	for i, s := range nodes {
		wg.Go(func() {
			o, _, err := s.ClaimLane(ctx, fmt.Sprintf("n%d", i), "agent:main:a")
			if err != nil {
				t.Error(err)
			}
			owners[i] = o
		})
	}
	wg.Wait()
	if owners[0] != owners[1] || owners[1] != owners[2] || owners[0] == "" {
		t.Fatalf("owners = %q, want one node for all", owners)
	}
	winner := owners[0]
	w := int(winner[1] - '0')
	// Queued runs keep the lane; without them it is released.
	queue(t, nodes[0], "q1", "agent:main:a")
	if rel, err := nodes[w].ReleaseLanes(ctx, winner, []string{"agent:main:a"}); err != nil || len(rel) != 0 {
		t.Fatalf("ReleaseLanes with a queued run = %v, %v; want it kept", rel, err)
	}
	other := (w + 1) % 3
	if rel, err := nodes[other].ReleaseLanes(ctx, fmt.Sprintf("n%d", other), []string{"agent:main:a"}); err != nil || len(rel) != 0 {
		t.Fatalf("ReleaseLanes by a non-owner = %v, %v", rel, err)
	}
	if o, _ := nodes[other].LaneOwner(ctx, "agent:main:a"); o != winner {
		t.Fatalf("owner after a non-owner's release = %q, want %q", o, winner)
	}
	if _, err := nodes[0].FinishRun(ctx, "q1", store.RunResult{Status: store.RunAborted}); err != nil {
		t.Fatal(err)
	}
	if rel, err := nodes[w].ReleaseLanes(ctx, winner, []string{"agent:main:a", "agent:main:none"}); err != nil || len(rel) != 1 || rel[0] != "agent:main:a" {
		t.Fatalf("ReleaseLanes with nothing queued = %v, %v", rel, err)
	}
	if o, _ := nodes[0].LaneOwner(ctx, "agent:main:a"); o != "" {
		t.Fatalf("owner after release = %q", o)
	}
	// A lane held by a node whose lease ended goes to the next claimer.
	if o, _, _ := nodes[w].ClaimLane(ctx, winner, "agent:main:b"); o != winner {
		t.Fatalf("claim = %q", o)
	}
	if _, err := nodes[w].pool.Exec(ctx, `UPDATE nodes SET lease_until = now() - interval '1 second' WHERE node_id = $1`, winner); err != nil {
		t.Fatal(err)
	}
	if o, _, _ := nodes[other].ClaimLane(ctx, fmt.Sprintf("n%d", other), "agent:main:b"); o != fmt.Sprintf("n%d", other) {
		t.Fatalf("claim of a dead node's lane = %q", o)
	}
}

// TestStartRunFenced checks that a node starts a run only while it holds
// the run's lane under a live lease, and records itself on the run.
func TestStartRunFenced(t *testing.T) {
	ctx := context.Background()
	a, b := liveNodes(t)
	queue(t, a, "r1", "agent:main:x")
	queue(t, a, "r2", "agent:main:x")
	if o, _, _ := a.ClaimLane(ctx, "a", "agent:main:x"); o != "a" {
		t.Fatal(o)
	}
	if _, _, err := b.StartRun(ctx, "r1", time.Now(), "sid", []store.Message{userMsg("hi")}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("StartRun by a node without the lane = %v, want ErrConflict", err)
	}
	if n, _ := b.CountMessages(ctx, "sid"); n != 0 {
		t.Fatalf("a refused start wrote %d messages", n)
	}
	if _, _, err := a.StartRun(ctx, "r1", time.Now(), "sid", []store.Message{userMsg("hi")}); err != nil {
		t.Fatalf("StartRun by the lane's owner: %v", err)
	}
	var node string
	if err := a.pool.QueryRow(ctx, `SELECT node_id FROM runs WHERE run_id = 'r1'`).Scan(&node); err != nil || node != "a" {
		t.Fatalf("run node = %q, %v", node, err)
	}
	// The owner's lease ends: it cannot start the next run any more.
	if _, err := a.pool.Exec(ctx, `UPDATE nodes SET lease_until = now() - interval '1 second' WHERE node_id = 'a'`); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.StartRun(ctx, "r2", time.Now(), "sid", nil); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("StartRun after the lease ended = %v, want ErrConflict", err)
	}
	if _, err := a.RenewNode(ctx, "a", time.Minute, NodeLoad{}); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("RenewNode after the lease ended = %v, want ErrLeaseLost", err)
	}
}

// TestAdoptDead kills a node's lease: one adopter aborts its running runs
// (sessions marked), frees its lanes and removes it; its queued runs are
// claimed once, by one of the sweeping nodes.
func TestAdoptDead(t *testing.T) {
	ctx := context.Background()
	nodes := openNodes(t, 3)
	dead := nodes[0]
	dead.SetNode("dead")
	register(t, dead, "dead", time.Minute)
	register(t, nodes[1], "b", time.Minute)
	register(t, nodes[2], "c", time.Minute)
	for i := range 5 {
		key := fmt.Sprintf("agent:main:s%d", i)
		if err := dead.CreateSession(ctx, &store.Session{Key: key, SessionID: "sid" + key}); err != nil {
			t.Fatal(err)
		}
		queue(t, dead, fmt.Sprintf("run%d", i), key)
		queue(t, dead, fmt.Sprintf("next%d", i), key)
		if o, _, _ := dead.ClaimLane(ctx, "dead", key); o != "dead" {
			t.Fatal(o)
		}
		if _, _, err := dead.StartRun(ctx, fmt.Sprintf("run%d", i), time.Now(), "sid"+key, nil); err != nil {
			t.Fatal(err)
		}
	}
	// While the lease lives, nothing is adopted.
	if a, err := nodes[1].AdoptDead(ctx, "interrupted"); err != nil || len(a.Nodes) != 0 {
		t.Fatalf("AdoptDead of live nodes = %+v, %v", a, err)
	}
	if _, err := dead.pool.Exec(ctx, `UPDATE nodes SET lease_until = now() - interval '1 second' WHERE node_id = 'dead'`); err != nil {
		t.Fatal(err)
	}
	var adopted [2]Adoption
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			a, err := nodes[i+1].AdoptDead(ctx, "interrupted")
			if err != nil {
				t.Error(err)
			}
			adopted[i] = a
		})
	}
	wg.Wait()
	total := len(adopted[0].Aborted) + len(adopted[1].Aborted)
	if total != 5 || len(adopted[0].Nodes)+len(adopted[1].Nodes) != 1 {
		t.Fatalf("adoptions = %+v / %+v; want the dead node adopted once, its 5 runs aborted", adopted[0], adopted[1])
	}
	for i := range 5 {
		r, _ := nodes[1].GetRun(ctx, fmt.Sprintf("run%d", i))
		if r.Status != store.RunAborted || r.Error != "interrupted" {
			t.Errorf("run%d = %s %q", i, r.Status, r.Error)
		}
		sess, _ := nodes[1].GetSession(ctx, fmt.Sprintf("agent:main:s%d", i))
		if !sess.AbortedLastRun {
			t.Errorf("session s%d: abortedLastRun not set", i)
		}
	}
	// The queued runs' lanes are claimed by exactly one of two sweepers.
	var got [2][]string
	for i := range 2 {
		wg.Go(func() {
			keys, err := nodes[i+1].ClaimOrphans(ctx, []string{"b", "c"}[i], 100)
			if err != nil {
				t.Error(err)
			}
			got[i] = keys
		})
	}
	wg.Wait()
	all := append(slices.Clone(got[0]), got[1]...)
	slices.Sort(all)
	if len(all) != 5 || len(slices.Compact(all)) != 5 {
		t.Fatalf("claimed lanes = %v / %v; want the 5 sessions once", got[0], got[1])
	}
	list, err := nodes[1].ListNodes(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("nodes after adoption = %+v, %v", list, err)
	}
}

// TestListenNotifyAndEvents sends lane, abort and event notifications
// from one node to a listener on another, in order.
func TestListenNotifyAndEvents(t *testing.T) {
	nodes := openNodes(t, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	var (
		mu  sync.Mutex
		got []string
	)
	done := make(chan error, 1)
	go func() {
		done <- nodes[1].Listen(ctx, []string{ChanLane, ChanEvents}, func() { close(ready) }, func(ch, p string) {
			mu.Lock()
			got = append(got, ch+"|"+p)
			mu.Unlock()
		})
	}()
	<-ready
	if err := nodes[0].Notify(ctx, ChanLane, "b agent:main:x"); err != nil {
		t.Fatal(err)
	}
	id, err := nodes[0].PublishEvents(ctx, "a", []byte(`[{"RunID":"r"}]`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ChanLane + "|b agent:main:x", fmt.Sprintf("%s|a %d", ChanEvents, id)}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	if !slices.Equal(got, want) {
		t.Errorf("notifications = %q, want %q", got, want)
	}
	mu.Unlock()
	body, err := nodes[1].ReadEvents(ctx, id)
	if err != nil || string(body) != `[{"RunID":"r"}]` {
		t.Fatalf("ReadEvents = %s, %v", body, err)
	}
	if n, err := nodes[1].PruneEvents(ctx, 0); err != nil || n != 1 {
		t.Errorf("PruneEvents = %d, %v", n, err)
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("Listen returned nil after its context ended")
	}
}

// TestNodesStartRunOnceWithLanes races starts from three nodes holding
// lanes: each run starts once, on the node that holds its lane.
func TestNodesStartRunOnceWithLanes(t *testing.T) {
	ctx := context.Background()
	nodes := openNodes(t, 3)
	for i, s := range nodes {
		s.SetNode(fmt.Sprintf("n%d", i))
		register(t, s, fmt.Sprintf("n%d", i), time.Minute)
	}
	const runs = 30
	for i := range runs {
		queue(t, nodes[0], fmt.Sprintf("r%d", i), fmt.Sprintf("agent:main:k%d", i%5))
	}
	var started atomic.Int32
	var wg sync.WaitGroup
	for n, s := range nodes {
		wg.Go(func() {
			id := fmt.Sprintf("n%d", n)
			for i := range runs {
				key := fmt.Sprintf("agent:main:k%d", i%5)
				if o, _, err := s.ClaimLane(ctx, id, key); err != nil || o != id {
					continue
				}
				if _, _, err := s.StartRun(ctx, fmt.Sprintf("r%d", i), time.Now(), "sid-"+key, nil); err == nil {
					started.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if started.Load() != runs {
		t.Fatalf("%d runs started, want each of %d once", started.Load(), runs)
	}
	rows, err := nodes[0].pool.Query(ctx, `SELECT r.session_key, count(DISTINCT r.node_id) FROM runs r GROUP BY r.session_key`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var n int
		if err := rows.Scan(&key, &n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("lane %s ran on %d nodes", key, n)
		}
	}
}
