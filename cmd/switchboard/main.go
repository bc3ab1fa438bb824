// Command switchboard is the Switchboard gateway and its command-line client.
//
// "switchboard serve" runs the gateway daemon; every other subcommand talks to
// a running gateway. See the README for set-up.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"

	"github.com/switchboardhq/switchboard/internal/cli"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/doctor"
	"github.com/switchboardhq/switchboard/internal/procs"
	"github.com/switchboardhq/switchboard/internal/storage"
	"github.com/switchboardhq/switchboard/internal/timerslack"

	_ "github.com/switchboardhq/switchboard/internal/stackstart"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" { // the root command has no flags of its own
		slackServe()
	}
	runtime.MemProfileRate = memProfileRate(os.Getenv("SWITCHBOARD_MEMPROFILE"))
	// Before anything can start a command: descriptors inherited from the
	// launcher must not leak into exec or the sandbox.
	if err := cloexecInherited(); err != nil {
		fmt.Fprintln(os.Stderr, "switchboard: warning: cannot mark inherited file descriptors close-on-exec:", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.Run(ctx, os.Args[1:], cli.Options{Serve: serve, Doctor: runDoctor, Migrate: migrate})
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "switchboard:", err)
		os.Exit(1)
	}
}

// slackServe gives serve its timer slack (package timerslack) before
// anything else runs: it executes the binary again, and the new image
// comes back through main and goes on. A bad SWITCHBOARD_TIMER_SLACK stops
// serve; a failed exec leaves the gateway with the slack it inherited.
func slackServe() {
	slack, err := timerslack.Wanted(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "switchboard:", err)
		os.Exit(1)
	}
	if err := timerslack.Reexec(slack); err != nil {
		fmt.Fprintf(os.Stderr, "switchboard: warning: %v (%s=0 skips this)\n", err, timerslack.Env)
	}
}

// serve adapts the CLI's serve flags to the daemon. With
// SWITCHBOARD_CPUPROFILE set, it writes a CPU profile of the whole run to
// that file; with SWITCHBOARD_MEMPROFILE set, a heap profile taken when
// the stop signal arrives, before the daemon shuts anything down (both are
// developer's knobs for bench/gateway; see docs/benchmarks.md).
func serve(ctx context.Context, o cli.ServeOptions) error {
	procs.LowerAtStart() // the daemon's controller raises it under load
	if path := os.Getenv("SWITCHBOARD_MEMPROFILE"); path != "" {
		var stop func()
		ctx, stop = heapProfileAtStop(ctx, path)
		defer stop()
	}
	if path := os.Getenv("SWITCHBOARD_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("SWITCHBOARD_CPUPROFILE: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("SWITCHBOARD_CPUPROFILE: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	return daemon.Serve(ctx, daemon.Options{ConfigPath: o.ConfigPath, Port: o.Port, Bind: o.Bind, Version: cli.Version,
		LogLevel: o.LogLevel, LogFormat: o.LogFormat, AdaptProcs: true, TuneGC: true})
}

// runDoctor adapts the CLI's doctor flags and result lines to doctor.
func runDoctor(ctx context.Context, o cli.DoctorOptions) []cli.DoctorCheck {
	checks := doctor.Run(ctx, doctor.Options{ConfigPath: o.ConfigPath, Port: o.Port})
	out := make([]cli.DoctorCheck, len(checks))
	for i, c := range checks {
		out[i] = cli.DoctorCheck{Name: c.Name, Status: string(c.Status), Detail: c.Detail, Fix: c.Fix}
	}
	return out
}

// migrate adapts the CLI's migrate flags and report to storage.
func migrate(ctx context.Context, o cli.MigrateOptions) (cli.MigrateResult, error) {
	res, err := storage.Migrate(ctx, storage.MigrateOptions{ConfigPath: o.ConfigPath, From: o.From, To: o.To})
	out := cli.MigrateResult{From: res.From, To: res.To}
	for _, t := range res.Report.Tables {
		out.Tables = append(out.Tables, cli.MigrateTable{Table: t.Table, SourceRows: t.SourceRows, DestRows: t.DestRows,
			Inserted: t.Inserted, Updated: t.Updated, SourceSum: t.SourceSum, DestSum: t.DestSum, Match: t.Match()})
	}
	return out, err
}

// memProfileRate is the heap profile's sampling rate: every 4 KiB with
// SWITCHBOARD_MEMPROFILE set (per-session costs show), else none. Nothing
// else reads the heap profile, and each sample walks its stack (the
// pclntab pages of every frame: 0.8 MiB of the resident set at ready)
// and keeps a record.
func memProfileRate(knob string) int {
	if knob != "" {
		return 4096
	}
	return 0
}

// heapProfileAtStop returns a context that ends after ctx does, once the
// heap profile (after a collection, so it shows what is live) has been
// written to path: the daemon shuts down only then.
func heapProfileAtStop(ctx context.Context, path string) (context.Context, func()) {
	inner, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		defer cancel()
		if err := writeHeapProfile(path); err != nil {
			fmt.Fprintln(os.Stderr, "switchboard: SWITCHBOARD_MEMPROFILE:", err)
		}
	})
	return inner, func() { stop(); cancel() }
}

// writeHeapProfile writes the live heap's profile to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
