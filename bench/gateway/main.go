// Command gateway is a benchmark harness for the Switchboard gateway. It
// starts the real switchboard binary on a free loopback port with a fresh
// state dir and the built-in instant offline model, and prints:
//
//   - cold start: process start until /readyz answers, and until a
//     client's first connect is answered with hello-ok;
//   - RSS after ready, and after 1000 sessions each with one turn;
//   - connect+handshake latency (p50/p99);
//   - warm chat.send → chat final latency on one session (p50/p99).
//
// With -clients it runs many-clients workloads instead: N connected clients,
// of which some send warm turns on their own sessions while all read the
// broadcast events; it prints turns/s, latency and server CPU per turn,
// and the CPU per turn of this load client beside it (each client decodes
// only its own runs' chat events, so that it does not set the pace), and
// the gateway's RSS at the end (with a long -duration: whether what it
// keeps per run is bounded).
//
// Without -bin it builds the binary as releases ship it
// (scripts/build-release.sh: CGO_ENABLED=0, -trimpath, -ldflags=-s -w), or
// with -cgo as a plain `go build` does here (cgo on); either way it runs a
// copy written with write(2), as `cat a > b` or a download writes it: the
// linker writes through a mapping, and the page cache then holds the file in
// larger folios, so the same bytes straight from the linker show about
// 4 MiB more file-backed RSS (docs/benchmarks.md, "Start and page faults,
// ninth round").
//
// Usage: go run ./bench/gateway [-bin path] [-cgo] [-sessions 1000] [-turns 500]
//
//	go run ./bench/gateway -clients 1,10,100,1000/100 [-duration 5s] [-rounds 1] [-cpuprofile file]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard/bench/internal/benchgw"
	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/settings"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	bin := flag.String("bin", "", "switchboard binary (default: build ./cmd/switchboard into a temp dir as the release build)")
	cgo := flag.Bool("cgo", false, "without -bin: build with the `go build` defaults (cgo on here) instead of the release build's flags")
	nSessions := flag.Int("sessions", 1000, "sessions to create for the RSS figure")
	nTurns := flag.Int("turns", 500, "warm chat.send turns to time")
	nDials := flag.Int("dials", 200, "connect+handshake samples")
	starts := flag.Int("starts", 5, "cold starts to time (the best and median are printed)")
	clientsSpec := flag.String("clients", "", "many-clients workloads instead: comma-separated N[/senders] (e.g. 1,10,100,1000/100)")
	duration := flag.Duration("duration", 5*time.Second, "how long each many-clients workload runs")
	rounds := flag.Int("rounds", 1, "many-clients: run the list this many times, alternating, and print each workload's server CPU per turn against the first's (the machine's speed drifts; pairs from one round compare)")
	scoped := flag.Bool("scoped", false, "many-clients: clients declare session-scoped events (each receives its own session's only)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of this load client to the file (SWITCHBOARD_CPUPROFILE does the same for the gateway)")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	tmp, err := os.MkdirTemp("", "sb-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if *bin == "" {
		if *bin, err = build(tmp, *cgo); err != nil {
			return err
		}
	}

	if *clientsSpec != "" {
		specs := strings.Split(*clientsSpec, ",")
		ratios := make([][]float64, len(specs))
		for round := range max(*rounds, 1) {
			var first float64
			for i, spec := range specs {
				n, senders, ok := strings.Cut(spec, "/")
				nc, err := strconv.Atoi(n)
				if err != nil {
					return fmt.Errorf("-clients %q: %w", spec, err)
				}
				ns := nc
				if ok {
					if ns, err = strconv.Atoi(senders); err != nil {
						return fmt.Errorf("-clients %q: %w", spec, err)
					}
				}
				cpu, err := manyClients(*bin, tmp, nc, ns, *duration, *scoped)
				if err != nil {
					return err
				}
				if i == 0 {
					first = cpu
				} else if first > 0 {
					ratios[i] = append(ratios[i], cpu/first)
				}
			}
			if *rounds > 1 && round < *rounds-1 {
				fmt.Println("--")
			}
		}
		for i, rs := range ratios {
			if i == 0 || len(rs) == 0 {
				continue
			}
			slices.Sort(rs)
			fmt.Printf("server CPU per turn, %s against %s clients, by round: %s (median %.2f×)\n",
				specs[i], specs[0], fmtRatios(rs), rs[len(rs)/2])
		}
		return nil
	}

	// Cold starts, each on a fresh state dir.
	var coldTimes, helloTimes []time.Duration
	for i := range *starts {
		dir := filepath.Join(tmp, fmt.Sprint("cold", i))
		g, err := benchgw.Start(*bin, dir)
		if err != nil {
			return err
		}
		coldTimes = append(coldTimes, g.Ready)
		// The first client of a fresh process: what the first request
		// pays for everything the start left to first use.
		tok, err := settings.ReadGatewayToken(dir)
		if err != nil {
			g.Stop()
			return err
		}
		c, err := client.Dial(context.Background(), client.Options{URL: g.WSURL, Token: tok})
		if err != nil {
			g.Stop()
			return err
		}
		helloTimes = append(helloTimes, time.Since(g.Started))
		c.Close()
		g.Stop()
	}
	slices.Sort(coldTimes)
	slices.Sort(helloTimes)
	fmt.Printf("cold start to ready:          best %v, median %v (%d starts)\n",
		benchgw.Round(coldTimes[0]), benchgw.Round(coldTimes[len(coldTimes)/2]), len(coldTimes))
	fmt.Printf("cold start to first hello-ok: best %v, median %v\n",
		benchgw.Round(helloTimes[0]), benchgw.Round(helloTimes[len(helloTimes)/2]))

	mainDir := filepath.Join(tmp, "main")
	g, err := benchgw.Start(*bin, mainDir)
	if err != nil {
		return err
	}
	defer g.Stop()
	fmt.Printf("RSS after ready:              %.1f MiB (%s)\n", benchgw.RSSMiB(g.PID()), rssParts(g))

	// The gateway generated its token in the state dir, as on a fresh host.
	tok, err := settings.ReadGatewayToken(mainDir)
	if err != nil {
		return err
	}
	ctx := context.Background()
	opts := client.Options{URL: g.WSURL, Token: tok}

	// The first client's hello-ok, as benchpeer's "RSS after ready"
	// measures it: what answering one connect makes resident.
	first, err := client.Dial(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Printf("RSS after the first hello-ok: %.1f MiB (%s)\n", benchgw.RSSMiB(g.PID()), rssParts(g))
	first.Close()

	// Connect + handshake latency.
	var dials []time.Duration
	for range *nDials {
		t0 := time.Now()
		c, err := client.Dial(ctx, opts)
		if err != nil {
			return err
		}
		dials = append(dials, time.Since(t0))
		c.Close()
	}
	p50, p99 := benchgw.Percentiles(dials)
	fmt.Printf("connect+handshake:            p50 %v, p99 %v (%d samples)\n", benchgw.Round(p50), benchgw.Round(p99), len(dials))

	c, err := client.Dial(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	waiter := benchgw.NewFinals(c)

	// Warm turns on one session.
	turn := func(key, msg string) (time.Duration, error) {
		id := "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		done := waiter.Expect(id)
		t0 := time.Now()
		if err := c.Call(ctx, "chat.send", map[string]any{"sessionKey": key, "message": msg, "idempotencyKey": id}, nil); err != nil {
			return 0, err
		}
		select {
		case state := <-done:
			if state != "final" {
				return 0, fmt.Errorf("run %s ended %s", id, state)
			}
		case <-time.After(30 * time.Second):
			return 0, fmt.Errorf("run %s: no final event", id)
		}
		return time.Since(t0), nil
	}
	for range 20 { // warm up
		if _, err := turn("main", "warm up"); err != nil {
			return err
		}
	}
	var turns []time.Duration
	for range *nTurns {
		d, err := turn("main", "hello")
		if err != nil {
			return err
		}
		turns = append(turns, d)
	}
	p50, p99 = benchgw.Percentiles(turns)
	fmt.Printf("warm chat.send→final:         p50 %v, p99 %v (%d turns, instant model)\n", benchgw.Round(p50), benchgw.Round(p99), len(turns))

	// Many sessions.
	t0 := time.Now()
	for i := range *nSessions {
		if _, err := turn(fmt.Sprintf("agent:main:bench-%d", i), "hi"); err != nil {
			return err
		}
	}
	fmt.Printf("%d sessions created:        %v (%.0f turns/s)\n", *nSessions, benchgw.Round(time.Since(t0)),
		float64(*nSessions)/time.Since(t0).Seconds())
	fmt.Printf("RSS after %d sessions:     %.1f MiB (%s)\n", *nSessions, benchgw.RSSMiB(g.PID()), rssParts(g))
	return nil
}

// build builds ./cmd/switchboard into dir and returns the path of a copy
// written with write(2) (see the package comment). Without cgo it builds as
// scripts/build-release.sh does, without the version stamp.
func build(dir string, cgo bool) (string, error) {
	linked := filepath.Join(dir, "switchboard.linked")
	args := []string{"build", "-o", linked}
	env := os.Environ()
	if !cgo {
		args = append(args, "-trimpath", "-buildvcs=false", "-ldflags=-s -w")
		env = append(env, "CGO_ENABLED=0")
	}
	cmd := exec.Command("go", append(args, "./cmd/switchboard")...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build: %w", err)
	}
	bin := filepath.Join(dir, "switchboard")
	if err := copyFile(bin, linked); err != nil {
		return "", fmt.Errorf("copy the binary: %w", err)
	}
	return bin, os.Remove(linked)
}

// copyFile writes src's bytes to a new executable dst with plain writes.
func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	// The wrapper hides out's ReadFrom: plain write(2)s, no copy_file_range.
	if _, err := io.Copy(struct{ io.Writer }{out}, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// rssParts splits the resident set as /proc/<pid>/smaps_rollup does: file
// pages (mostly the executable's own text and data, clean and shared) and
// anonymous pages (heap, stacks).
func rssParts(g *benchgw.Gateway) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", g.PID()))
	if err != nil {
		return "no smaps_rollup"
	}
	kb := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb[name], _ = strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
	}
	return fmt.Sprintf("file-backed %.1f MiB, anonymous %.1f MiB", kb["Pss_File"]/1024, kb["Pss_Anon"]/1024)
}

// fmtRatios formats ratios as "1.42×, 1.47×".
func fmtRatios(rs []float64) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%.2f×", r)
	}
	return strings.Join(parts, ", ")
}
