// Command peer measures an OpenClaw-protocol gateway the way issue 37's
// side-by-side table does ("benchpeer"): Switchboard and, with -reference,
// the reference gateway (npm openclaw, from the npm cache that
// internal/interop uses), in one run on one machine, with the same instant
// fake model and the same client. It prints one table:
//
//   - cold start: exec until a client's connect is answered with hello-ok;
//   - RSS after ready (at that hello-ok) and after the workloads;
//   - chat warm turn p50: chat.send → final chat event, on a session that
//     has had turns;
//   - chat first turn p50: the same on a new session each time;
//   - sessions_send wait p50: a warm session's agent calls sessions_send
//     with timeoutSeconds into another warm session, whose run replies at
//     once; the time from the tool's start event to its result event;
//   - spawn fan-out K=3: one turn whose agent calls sessions_spawn three
//     times in one step; chat.send until the requester's runs have
//     carried every child's result (p50 of the samples).
//
// Switchboard runs its built-in instant offline model; the reference runs
// against internal/fakellm (the same scripted model over the OpenAI wire).
// Both get the same settings: session tools may address every session of
// the agent, and no reply-back ping-pong after sessions_send. With -url it
// drives a gateway that is already running (token -token) and prints the
// latency figures only.
//
// Usage:
//
//	go run ./bench/peer [-bin path] [-reference] [-starts 3] [-warm 200] [-first 50] [-send 30] [-spawn 20]
//	go run ./bench/peer -url ws://127.0.0.1:18789 -token T
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/switchboardhq/switchboard/bench/internal/benchgw"
	"github.com/switchboardhq/switchboard/internal/client"
	"github.com/switchboardhq/switchboard/internal/fakellm"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchpeer:", err)
		os.Exit(1)
	}
}

// sizes are how many samples each workload takes.
type sizes struct{ warm, first, send, spawn int }

// scaled caps s at n samples each (the reference takes seconds per turn).
func (s sizes) scaled(n int) sizes {
	return sizes{min(s.warm, n), min(s.first, n), min(s.send, n), min(s.spawn, n)}
}

// column is one gateway's figures, as printed.
type column struct {
	name                     string
	cold, rssReady, rssAfter string
	warm, first, send, spawn string
	notes                    []string
}

func run() error {
	bin := flag.String("bin", "", "switchboard binary (default: build ./cmd/switchboard into a temp dir)")
	url := flag.String("url", "", "drive this running gateway (ws://…) instead of starting one; latency figures only")
	token := flag.String("token", "", "with -url: the gateway's operator token")
	withRef := flag.Bool("reference", false, "also start the reference gateway (npm openclaw under $SWITCHBOARD_NPM_CACHE) and measure it")
	starts := flag.Int("starts", 3, "cold starts of Switchboard to time (the median is printed)")
	var sz sizes
	flag.IntVar(&sz.warm, "warm", 200, "warm turns to time")
	flag.IntVar(&sz.first, "first", 50, "first turns to time")
	flag.IntVar(&sz.send, "send", 30, "sessions_send waits to time")
	flag.IntVar(&sz.spawn, "spawn", 20, "spawn fan-outs (K=3) to time")
	refSamples := flag.Int("ref-samples", 5, "at most this many samples of each workload on the reference")
	keep := flag.Bool("keep", false, "keep the state directories and logs (printed) instead of removing them")
	flag.Parse()

	if *url != "" {
		c, err := client.Dial(context.Background(), client.Options{URL: *url, Token: *token, Caps: []string{"tool-events"}})
		if err != nil {
			return err
		}
		defer c.Close()
		col := column{name: *url, cold: "n/a", rssReady: "n/a", rssAfter: "n/a"}
		if err := workloads(&col, c, sz, 30*time.Second); err != nil {
			return err
		}
		printTable([]column{col})
		return nil
	}

	tmp, err := os.MkdirTemp("", "benchpeer-")
	if err != nil {
		return err
	}
	if *keep {
		fmt.Fprintln(os.Stderr, "state and logs kept in", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	var cols []column
	if *withRef {
		ref, err := findReference(os.Getenv("SWITCHBOARD_NPM_CACHE"))
		if err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "starting the reference (about 20 s on an idle machine) …")
		col, err := measure("reference", ref.launcherWithModel, filepath.Join(tmp, "ref"), 1, sz.scaled(*refSamples), 90*time.Second)
		if err != nil {
			return fmt.Errorf("reference: %w", err)
		}
		cols = append(cols, col)
	}
	if *bin == "" {
		*bin = filepath.Join(tmp, "switchboard")
		build := exec.Command("go", "build", "-o", *bin, "./cmd/switchboard")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build: %w", err)
		}
	}
	sb := func() (launcher, func(), error) { return switchboardLauncher(*bin), nil, nil }
	col, err := measure("Switchboard", sb, filepath.Join(tmp, "sb"), *starts, sz, 30*time.Second)
	if err != nil {
		return fmt.Errorf("switchboard: %w", err)
	}
	cols = append(cols, col)
	printTable(cols)
	return nil
}

// launcherWithModel starts the fake model the reference talks to and
// returns the reference's launcher and the model's stop.
func (r *reference) launcherWithModel() (launcher, func(), error) {
	llm, err := fakellm.Listen("127.0.0.1:0", fakellm.Options{DiscardRequests: true})
	if err != nil {
		return nil, nil, err
	}
	r.llm = llm
	return r.launcher(), func() { _ = llm.Close() }, nil
}

// measure cold-starts a gateway starts times (each on a fresh state
// directory; the last one is kept), then runs the workloads on it.
func measure(name string, mk func() (launcher, func(), error), dir string, starts int, sz sizes, timeout time.Duration) (column, error) {
	col := column{name: name}
	var hellos []time.Duration
	var g *started
	for i := range max(starts, 1) {
		launch, stopLLM, err := mk()
		if err != nil {
			return col, err
		}
		g, err = start(launch, filepath.Join(dir, fmt.Sprint(i)), 3*time.Minute)
		if err != nil {
			if stopLLM != nil {
				stopLLM()
			}
			return col, err
		}
		g.stopLLM = stopLLM
		hellos = append(hellos, g.hello)
		if i < starts-1 {
			g.stop()
		}
	}
	defer g.stop()
	slices.Sort(hellos)
	col.cold = fmt.Sprintf("%v (median of %d)", benchgw.Round(hellos[len(hellos)/2]), len(hellos))
	if len(hellos) == 1 {
		col.cold = benchgw.Round(hellos[0]).String()
	}
	col.rssReady = fmt.Sprintf("%.1f MiB", benchgw.RSSMiB(g.pid()))
	if err := workloads(&col, g.first, sz, timeout); err != nil {
		return col, err
	}
	col.rssAfter = fmt.Sprintf("%.1f MiB", benchgw.RSSMiB(g.pid()))
	return col, nil
}

// workloads runs the four latency workloads through c. A workload the
// gateway cannot be driven through is "n/a" with a note saying why.
func workloads(col *column, c *client.Client, sz sizes, timeout time.Duration) error {
	d := newDriver(c, timeout)
	warm, err := d.warm(sz.warm)
	if err != nil {
		return fmt.Errorf("warm turns: %w", err)
	}
	col.warm = p50(warm)
	first, err := d.first(sz.first)
	if err != nil {
		return fmt.Errorf("first turns: %w", err)
	}
	col.first = p50(first)
	send, err := d.sessionsSend(sz.send)
	col.send = p50(send)
	if err != nil {
		col.send = "n/a"
		col.notes = append(col.notes, "sessions_send: "+err.Error())
	}
	spawn, err := d.spawn(sz.spawn, 3)
	col.spawn = p50(spawn)
	if err != nil {
		col.spawn = "n/a"
		col.notes = append(col.notes, "spawn: "+err.Error())
	}
	fmt.Fprintf(os.Stderr, "%s: %d warm, %d first, %d sessions_send, %d spawn samples\n", col.name, len(warm), len(first), len(send), len(spawn))
	return nil
}

// printTable prints the figures, one column per gateway, as Markdown.
func printTable(cols []column) {
	fmt.Print("| figure |")
	for _, c := range cols {
		fmt.Printf(" %s |", c.name)
	}
	fmt.Print("\n|---|")
	for range cols {
		fmt.Print("---|")
	}
	fmt.Println()
	rows := []struct {
		name string
		get  func(column) string
	}{
		{"cold start, exec → hello-ok", func(c column) string { return c.cold }},
		{"RSS after ready", func(c column) string { return c.rssReady }},
		{"RSS after the workloads", func(c column) string { return c.rssAfter }},
		{"chat warm turn p50", func(c column) string { return c.warm }},
		{"chat first turn p50", func(c column) string { return c.first }},
		{"`sessions_send` wait p50", func(c column) string { return c.send }},
		{"spawn fan-out K=3 p50", func(c column) string { return c.spawn }},
	}
	for _, r := range rows {
		fmt.Printf("| %s |", r.name)
		for _, c := range cols {
			fmt.Printf(" %s |", cmp.Or(r.get(c), "n/a"))
		}
		fmt.Println()
	}
	for _, c := range cols {
		for _, n := range c.notes {
			fmt.Printf("\n%s: %s\n", c.name, n)
		}
	}
}
