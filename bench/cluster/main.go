// Command cluster is a benchmark harness for Switchboard on PostgreSQL with
// one or several gateway nodes. It starts real switchboard processes on
// free loopback ports, each with its own state dir, all on one database
// (a throwaway PostgreSQL cluster made with initdb, or -db), with the
// built-in instant offline model, and prints:
//
//   - warm chat.send → chat final latency on one node (p50/p99);
//   - cross-node agent.wait: how long after the run's final event on the
//     node that ran it the agent.wait on another node answers (p50/p99);
//   - throughput (turns/s) with 1, 2 and 3 nodes, clients spread evenly,
//     and the CPU time per turn of the gateways and of PostgreSQL (the
//     throwaway cluster's processes; not counted with -db), after the same
//     run on one SQLite gateway as the baseline.
//
// Usage: go run ./bench/cluster [-db postgres://… [-dbpid N]] [-turns 300] [-duration 5s] [-clients 60] [-sqlite=false]
// [-cpuprofiles dir]
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardhq/switchboard/bench/internal/benchgw"
	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/store/postgres/pgtest"
)

const token = "bench-cluster-token"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	idRun = strconv.FormatInt(time.Now().UnixNano(), 36)
	bin := flag.String("bin", "", "switchboard binary (default: build ./cmd/switchboard into a temp dir)")
	db := flag.String("db", "", "PostgreSQL URL of an empty database (default: a throwaway cluster)")
	nTurns := flag.Int("turns", 300, "turns to time for the latency figures")
	nClients := flag.Int("clients", 60, "clients sending turns in the throughput runs")
	duration := flag.Duration("duration", 5*time.Second, "how long each throughput run lasts")
	maxNodes := flag.Int("nodes", 3, "throughput runs with 1 to this many nodes")
	skipLat := flag.Bool("no-latency", false, "skip the latency figures")
	sqlite := flag.Bool("sqlite", true, "first a throughput run on one SQLite gateway, as the baseline")
	dbPID := flag.Int("dbpid", 0, "with -db, the postmaster's pid, to count PostgreSQL's CPU time")
	flag.Parse()

	tmp, err := os.MkdirTemp("", "sb-bench-cluster-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if *bin == "" {
		*bin = filepath.Join(tmp, "switchboard")
		build := exec.Command("go", "build", "-o", *bin, "./cmd/switchboard")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build: %w", err)
		}
	}
	// newDB returns a database's URL, the postmaster's pid (0: not ours
	// to measure) and how to stop it.
	newDB := func() (string, int, func(), error) {
		if *db != "" {
			return *db, *dbPID, func() {}, nil
		}
		c, err := pgtest.Start()
		if err != nil {
			return "", 0, nil, err
		}
		pid, err := c.PID()
		if err != nil {
			c.Stop()
			return "", 0, nil, err
		}
		return c.URL, pid, func() { c.Stop() }, nil
	}

	// Latencies: a warm turn on one node, then the cross-node wait on
	// a second node joining it.
	if !*skipLat {
		url, _, stop, err := newDB()
		if err != nil {
			return err
		}
		nodes, err := startNodes(*bin, tmp, url, 1)
		if err != nil {
			stop()
			return err
		}
		lat := warmTurns(nodes[0], *nTurns, "warm chat.send→final, one node:       ")
		if lat == nil {
			var second *benchgw.Gateway
			if second, err = startNode(*bin, filepath.Join(tmp, "n1"), url, "bench-n1"); err != nil {
				lat = err
			} else {
				nodes = append(nodes, second)
				if lat = warmTurns(nodes[0], *nTurns, "warm chat.send→final, two nodes:      "); lat == nil {
					lat = crossWait(nodes, *nTurns)
				}
			}
		}
		for _, n := range nodes {
			n.Stop()
		}
		stop()
		if lat != nil {
			return lat
		}
	}

	if *sqlite {
		g, err := benchgw.Start(*bin, filepath.Join(tmp, "sqlite"), "SWITCHBOARD_GATEWAY_TOKEN="+token)
		if err != nil {
			return err
		}
		err = throughput("SQLite", []*benchgw.Gateway{g}, *nClients, *duration, 0)
		g.Stop()
		if err != nil {
			return err
		}
	}
	// Throughput with 1, 2 and 3 nodes, each on a fresh database.
	for n := 1; n <= *maxNodes; n++ {
		url, pgPID, stop, err := newDB()
		if err != nil {
			return err
		}
		nodes, err := startNodes(*bin, filepath.Join(tmp, fmt.Sprint("t", n)), url, n)
		if err != nil {
			stop()
			return err
		}
		err = throughput("PostgreSQL", nodes, *nClients, *duration, pgPID)
		for _, g := range nodes {
			g.Stop()
		}
		stop()
		if err != nil {
			return err
		}
	}
	return nil
}

// warmRound numbers the warmTurns calls, for fresh run ids.
var warmRound int

// warmTurns prints the latency of warm turns on one session of node n.
func warmTurns(n *benchgw.Gateway, turns int, label string) error {
	warmRound++
	ctx := context.Background()
	a, err := dial(ctx, n)
	if err != nil {
		return err
	}
	defer a.Close()
	fa := benchgw.NewFinals(a)
	var warm []time.Duration
	for i := range turns + 20 { // the first 20 warm up the session and the pools
		id := fmt.Sprintf("%s-warm-%d-%d", idRun, warmRound, i)
		t0 := time.Now()
		if err := a.Call(ctx, "chat.send", map[string]any{"sessionKey": "agent:main:bench", "message": "hi", "idempotencyKey": id}, nil); err != nil {
			return err
		}
		if st := <-fa.Expect(id); st == benchgw.ConnClosed {
			return fmt.Errorf("run %s: %s before its final", id, st)
		}
		if i >= 20 {
			warm = append(warm, time.Since(t0))
		}
	}
	p50, p99 := benchgw.Percentiles(warm)
	fmt.Printf("%s p50 %v, p99 %v (%d turns, instant model)\n", label, benchgw.Round(p50), benchgw.Round(p99), len(warm))
	if *storeOps {
		printStoreOps(n, turns+20)
	}
	return nil
}

var storeOps = flag.Bool("storeops", false, "print the store calls (and their mean time) per warm turn, from /metrics")

// printStoreOps prints the store calls per turn and their mean latency,
// from the node's /metrics.
func printStoreOps(n *benchgw.Gateway, turns int) {
	req, _ := http.NewRequest("GET", "http"+strings.TrimPrefix(n.WSURL, "ws")+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println("metrics:", err)
		return
	}
	defer resp.Body.Close()
	count, sum := map[string]float64{}, map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	re := regexp.MustCompile(`^switchboard_store_operation_seconds_(count|sum)\{op="([^"]+)"\} (\S+)`)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			var v float64
			fmt.Sscan(m[3], &v)
			if m[1] == "count" {
				count[m[2]] = v
			} else {
				sum[m[2]] = v
			}
		}
	}
	var total float64
	for op, c := range count {
		fmt.Printf("  %-16s %5.2f calls/turn, mean %v\n", op, c/float64(turns), benchgw.Round(time.Duration(sum[op]/c*float64(time.Second))))
		total += sum[op]
	}
	fmt.Printf("  store time per turn: %v\n", benchgw.Round(time.Duration(total/float64(turns)*float64(time.Second))))
}

// crossWait prints how long after a run's final event on the node that ran
// it an agent.wait on another node answers.
func crossWait(nodes []*benchgw.Gateway, turns int) error {
	ctx := context.Background()
	a, err := dial(ctx, nodes[0])
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := dial(ctx, nodes[1])
	if err != nil {
		return err
	}
	defer b.Close()
	fa := benchgw.NewFinals(a)
	var cross []time.Duration
	for i := range turns {
		id := fmt.Sprintf("%s-x-%d", idRun, i)
		// The wait is registered on node b before the run starts on a.
		waited := make(chan time.Time, 1)
		go func() {
			var res map[string]any
			b.Call(ctx, "agent.wait", map[string]any{"runId": id, "timeoutMs": 30000}, &res)
			waited <- time.Now()
		}()
		time.Sleep(2 * time.Millisecond)
		if err := a.Call(ctx, "chat.send", map[string]any{"sessionKey": "agent:main:cross", "message": "hi", "idempotencyKey": id}, nil); err != nil {
			return err
		}
		if st := <-fa.Expect(id); st == benchgw.ConnClosed {
			return fmt.Errorf("run %s: %s before its final", id, st)
		}
		ended := time.Now()
		cross = append(cross, (<-waited).Sub(ended))
	}
	p50, p99 := benchgw.Percentiles(cross)
	fmt.Printf("cross-node agent.wait after run's end: p50 %v, p99 %v (%d runs)\n", benchgw.Round(p50), benchgw.Round(p99), len(cross))
	return nil
}

// tpRound numbers the throughput calls, for fresh run ids.
var tpRound int

// idRun tells this process's idempotency keys from those of an earlier
// process on the same -db database, whose acknowledged duplicates would
// bring no final and leave a client waiting for ever. Set by run.
var idRun string

// throughput runs clients spread over the nodes, each sending turns on its
// own session back to back, and prints turns/s and the CPU time per turn
// of the gateways and of PostgreSQL (pgPID, the postmaster; 0: not
// counted), measured over d after a warm-up of a second (the clients'
// first turns create their sessions).
func throughput(backend string, nodes []*benchgw.Gateway, clients int, d time.Duration, pgPID int) error {
	tpRound++ // run ids stay fresh when -db keeps one database for every run
	round := tpRound
	ctx := context.Background()
	var (
		done  atomic.Int64
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	conns := make([]*client.Client, clients)
	for i := range conns {
		c, err := dial(ctx, nodes[i%len(nodes)])
		if err != nil {
			return err
		}
		defer c.Close()
		conns[i] = c
	}
	const warmUp = time.Second
	deadline := time.Now().Add(warmUp + d)
	var (
		t0, el       time.Time
		turns0       int64
		gw0, pg0     time.Duration
		gwCPU, pgCPU time.Duration
		turns        int64
	)
	cpu := func() (gw, pg time.Duration) {
		for _, n := range nodes {
			gw += benchgw.TreeCPU(n.PID())
		}
		if pgPID != 0 {
			pg = benchgw.TreeCPU(pgPID)
		}
		return gw, pg
	}
	measured := make(chan struct{})
	go func() {
		defer close(measured)
		time.Sleep(warmUp)
		t0, turns0 = time.Now(), done.Load()
		gw0, pg0 = cpu()
		time.Sleep(d)
		el, turns = time.Now(), done.Load()-turns0
		gwCPU, pgCPU = cpu()
		gwCPU, pgCPU = gwCPU-gw0, pgCPU-pg0
	}()
	for i, c := range conns {
		f := benchgw.NewFinals(c)
		wg.Go(func() {
			for j := 0; time.Now().Before(deadline); j++ {
				id := fmt.Sprintf("%s-t%d-c%d-%d", idRun, round, i, j)
				if err := c.Call(ctx, "chat.send", map[string]any{"sessionKey": fmt.Sprintf("agent:main:c%d", i), "message": "hi", "idempotencyKey": id}, nil); err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
					return
				}
				if st := <-f.Expect(id); st == benchgw.ConnClosed {
					mu.Lock()
					first = cmpErr(first, fmt.Errorf("run %s: %s before its final", id, st))
					mu.Unlock()
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	<-measured
	if first != nil {
		return first
	}
	perTurn := func(c time.Duration) float64 { return float64(c) / float64(time.Millisecond) / float64(max(turns, 1)) }
	fmt.Printf("throughput, %s, %d node(s), %d clients: %.0f turns/s; CPU per turn: gateways %.3f ms + PostgreSQL %.3f ms = %.3f ms\n",
		backend, len(nodes), clients, float64(turns)/el.Sub(t0).Seconds(), perTurn(gwCPU), perTurn(pgCPU), perTurn(gwCPU+pgCPU))
	return nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func dial(ctx context.Context, n *benchgw.Gateway) (*client.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// Session-scoped: a client receives its own sessions' events only
	// (and agent.wait answers), not every run's.
	return client.Dial(ctx, client.Options{URL: n.WSURL, Token: token, SessionScoped: true})
}

// startNodes starts n nodes on the database, one after the other.
func startNodes(bin, dir, url string, n int) ([]*benchgw.Gateway, error) {
	var out []*benchgw.Gateway
	for i := range n {
		g, err := startNode(bin, filepath.Join(dir, fmt.Sprint("n", i)), url, fmt.Sprint("bench-n", i))
		if err != nil {
			for _, g := range out {
				g.Stop()
			}
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

var cpuProfiles = flag.String("cpuprofiles", "", "a directory: each PostgreSQL node writes a CPU profile of its run there (<node id>-<n>.prof)")

// profiles numbers the nodes started, for the profiles' file names.
var profiles int

func startNode(bin, stateDir, url, id string) (*benchgw.Gateway, error) {
	env := []string{"SWITCHBOARD_GATEWAY_TOKEN=" + token, "SWITCHBOARD_DATABASE_URL=" + url, "SWITCHBOARD_NODE_ID=" + id}
	if *cpuProfiles != "" {
		profiles++
		env = append(env, "SWITCHBOARD_CPUPROFILE="+filepath.Join(*cpuProfiles, fmt.Sprintf("%s-%d.prof", id, profiles)))
	}
	return benchgw.Start(bin, stateDir, env...)
}
